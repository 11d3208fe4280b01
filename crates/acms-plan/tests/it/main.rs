//! Integration tests of `acms-plan`: the store's tiers under a fake clock, its faults
//! (unknown ids, newer schema, busy database, clock going backwards, concurrent writers),
//! the tier rules as properties, and the warm-memory strategy.

mod faults;
mod memory;
mod rules;
mod strategy;

use std::sync::Arc;

use acms_core::{Depth, NodeId};
use acms_plan::{FakeClock, FragmentRef, NewPhase, PlanId, PlanStore, TierPolicy};

pub const T0: i64 = 1_700_000_000;
pub const HOUR: i64 = 3_600;
pub const DAY: i64 = 86_400;

/// A store in a fresh directory with a fake clock at `T0`.
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub clock: FakeClock,
    pub store: PlanStore,
}

impl Default for Fixture {
    fn default() -> Fixture {
        Fixture::new()
    }
}

impl Fixture {
    pub fn new() -> Fixture {
        Fixture::with_policy(TierPolicy::default())
    }

    pub fn with_policy(policy: TierPolicy) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let clock = FakeClock::at(T0);
        let store = PlanStore::open(dir.path(), policy, Arc::new(clock.clone())).unwrap();
        Fixture { dir, clock, store }
    }

    /// Another connection on the same database (another process, as far as SQLite knows).
    pub fn reopen(&self) -> PlanStore {
        PlanStore::open(
            self.dir.path(),
            *self.store.policy(),
            Arc::new(self.clock.clone()),
        )
        .unwrap()
    }

    /// Records phase `name` of `plan` showing nodes `nodes`.
    pub fn phase(&mut self, plan: PlanId, name: &str, nodes: &[u64]) -> acms_plan::PhaseRecord {
        self.store
            .record_phase(NewPhase {
                plan,
                name: name.into(),
                focus: String::new(),
                budget: 4000,
                tokens: 100 * nodes.len(),
                refreshed: 0,
                manifest: manifest(nodes),
                inputs: acms_plan::PhaseInputs::default(),
            })
            .unwrap()
            .0
    }
}

/// A manifest of the given node ids.
pub fn manifest(nodes: &[u64]) -> Vec<FragmentRef> {
    nodes
        .iter()
        .map(|&n| FragmentRef {
            node: NodeId(n),
            path: format!("src/m{n}.py"),
            start_line: 1,
            end_line: 10,
            name: format!("m{n}.f"),
            depth: Depth::Full,
            tokens: 100,
            score: 0.5,
        })
        .collect()
}
