//! Why a phase run again looks the way it does.
//!
//! A phase's context is a function of what it was assembled from: the plan's task, the
//! phase's focus, budget and mentions, the phase whose selection seeds the graph walk (the
//! latest phase of *another* name, so running a phase again never feeds on itself), the
//! parent's skeleton, the index, the strategies' state and decision memory. Each phase records
//! those [`PhaseInputs`](crate::PhaseInputs); running a phase again compares them with the previous run of the
//! same name ([`compare`]) and says what changed — or that nothing did and the context is the
//! same.

use serde::{Deserialize, Serialize};

use crate::model::{FragmentRef, PhaseRecord};

/// How a phase run differs from the previous run of the same name in the same plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseChanges {
    /// The previous run compared with.
    pub since: i64,
    /// What differs among the inputs, one short line each; empty when nothing does.
    pub inputs: Vec<String>,
    /// Whether the context holds the same fragments at the same depths.
    pub same_context: bool,
}

impl PhaseChanges {
    /// One line for a person.
    pub fn line(&self) -> String {
        match (self.inputs.is_empty(), self.same_context) {
            (true, true) => format!("same inputs as phase #{}: the same context", self.since),
            (true, false) => format!(
                "same inputs as phase #{} but a different context (please report this)",
                self.since
            ),
            (false, same) => format!(
                "since phase #{}: {}{}",
                self.since,
                self.inputs.join("; "),
                if same {
                    " (the context is the same)"
                } else {
                    ""
                }
            ),
        }
    }
}

/// What changed from `before` (an earlier run of the same phase) to `now`.
pub fn compare(before: &PhaseRecord, now: &PhaseRecord) -> PhaseChanges {
    let (a, b) = (&before.inputs, &now.inputs);
    let mut out = Vec::new();
    if before.focus != now.focus {
        out.push("focus changed".to_string());
    }
    if before.budget != now.budget {
        out.push(format!("budget {} → {}", before.budget, now.budget));
    }
    if a.mentioned_files != b.mentioned_files || a.mentioned_symbols != b.mentioned_symbols {
        out.push("mentioned files or symbols changed".to_string());
    }
    if a.seeded_by != b.seeded_by {
        out.push(format!(
            "seeded by {} (was {})",
            seed(b.seeded_by),
            seed(a.seeded_by)
        ));
    }
    if a.parent_phase != b.parent_phase {
        out.push("the parent plan ran another phase (new inherited skeleton)".to_string());
    }
    if a.index != b.index {
        out.push(if now.refreshed > 0 {
            format!(
                "the index changed (files re-indexed before this run: {})",
                now.refreshed
            )
        } else {
            "the index changed (re-indexed since)".to_string()
        });
    }
    if a.strategy_notes != b.strategy_notes {
        out.push(format!(
            "strategy state changed: {}",
            listed(&b.strategy_notes, "all available")
        ));
    }
    if a.strategies_missing != b.strategies_missing {
        out.push(format!(
            "strategies without an answer: {} (was {})",
            listed(&b.strategies_missing, "none"),
            listed(&a.strategies_missing, "none")
        ));
    }
    if a.corrections != b.corrections {
        out.push(format!(
            "corrected decisions demote {} fragments (was {})",
            b.corrections, a.corrections
        ));
    }
    if a.warm != b.warm {
        out.push(format!(
            "warm decisions offered {} (was {})",
            b.warm.len(),
            a.warm.len()
        ));
    }
    PhaseChanges {
        since: before.seq,
        inputs: out,
        same_context: same_fragments(&before.manifest, &now.manifest),
    }
}

fn seed(seq: Option<i64>) -> String {
    seq.map_or_else(|| "no earlier phase".to_string(), |s| format!("phase #{s}"))
}

fn listed(items: &[String], empty: &str) -> String {
    if items.is_empty() {
        empty.to_string()
    } else {
        items.join(", ")
    }
}

fn same_fragments(a: &[FragmentRef], b: &[FragmentRef]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.node == y.node && x.depth == y.depth)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{PhaseInputs, PlanId};

    fn record(seq: i64, inputs: PhaseInputs) -> PhaseRecord {
        PhaseRecord {
            plan: PlanId(1),
            seq,
            name: "explore".into(),
            focus: String::new(),
            budget: 4_000,
            tokens: 3_900,
            refreshed: 0,
            manifest: Vec::new(),
            created: 0,
            inputs,
        }
    }

    #[test]
    fn the_same_inputs_say_so_and_each_difference_is_named() {
        let a = record(1, PhaseInputs::default());
        let same = compare(&a, &record(2, PhaseInputs::default()));
        assert!(same.inputs.is_empty() && same.same_context);
        assert_eq!(same.line(), "same inputs as phase #1: the same context");

        let mut b = record(
            3,
            PhaseInputs {
                seeded_by: Some(2),
                index: "s:5".into(),
                corrections: 2,
                ..PhaseInputs::default()
            },
        );
        b.budget = 8_000;
        b.refreshed = 1;
        let c = compare(&a, &b);
        assert_eq!(
            c.inputs,
            [
                "budget 4000 → 8000",
                "seeded by phase #2 (was no earlier phase)",
                "the index changed (files re-indexed before this run: 1)",
                "corrected decisions demote 2 fragments (was 0)",
            ]
        );
        assert!(c.line().starts_with("since phase #1: budget 4000 → 8000; "));
    }

    #[test]
    fn inputs_recorded_before_they_existed_read_as_empty() {
        let i: PhaseInputs = serde_json::from_str("{}").unwrap();
        assert_eq!(i, PhaseInputs::default());
    }
}
