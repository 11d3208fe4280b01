//! acms plans and decision memory.
//!
//! A plan is a task worked through named phases (explore, design, implement, verify, ...);
//! a child plan inherits its parent's skeleton. Decisions taken in a phase are remembered in
//! three tiers (ADR-014 "Context Tiers"): **hot** (the current window), **warm** (recent,
//! offered to retrieval by the `warm-memory` strategy) and **cold** (archived for audit and
//! correction; a corrected decision's fragments are demoted in later scoring). Everything is
//! kept in one SQLite database in the index directory ([`PlanStore`]); tier maintenance runs
//! in the transaction of every plan operation under an injectable [`Clock`].
//!
//! This crate does not assemble, refresh the index or render text: the `acms` facade does,
//! and hands this crate references (node ids, depths, tokens) to remember.

mod clock;
mod error;
mod model;
mod rerun;
mod store;
mod tiers;
mod warm;

pub use clock::{Clock, FakeClock, SystemClock};
pub use error::{Error, Result};
pub use model::{
    Decision, DecisionId, FragmentRef, History, PhaseInputs, PhaseRecord, Plan, PlanId, Tier,
    TierReport, hex_id,
};
pub use rerun::{PhaseChanges, compare};
pub use store::{
    DB_FILE, DEFAULT_BUSY_TIMEOUT, NewPhase, PlanStore, SCHEMA_VERSION, check_phase_name,
};
pub use tiers::{TierInput, TierPolicy, assign};
pub use warm::{
    DEFAULT_WARM_QUALITY, DEMOTION, DemotingScorer, MemorySnapshot, MemoryView, WARM_MEMORY,
    WarmDecision, WarmMemoryStrategy, complete_config, register, terms, wrap_scorers,
};
