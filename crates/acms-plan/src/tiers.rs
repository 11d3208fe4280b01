//! The tier rules, as one pure function of (decisions, policy, now) so they can be tested
//! exhaustively and run identically in every process:
//!
//! - **hot**: recorded in the current (latest) phase of an open plan — its fragments are
//!   what the window holds — and used within warm retention (an abandoned plan cools);
//! - **warm**: otherwise, used within `context.tiers.warm.retention-hours`, the
//!   `context.warm.max-decisions` most recently used;
//! - **cold**: the rest, until unused for `context.tiers.cold.retention-days` or beyond the
//!   `context.cold.max-decisions` most recently used, when they expire.
//!
//! A corrected decision is never hot or warm: it stays cold for audit until it expires.
//! "Used" means recorded, or its fragments were in a later window again (promotion).

use acms_core::ContextConfig;

use crate::Tier;

/// Retention and caps of warm and cold memory, in seconds and decisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TierPolicy {
    pub warm_seconds: i64,
    pub warm_max: usize,
    pub cold_seconds: i64,
    pub cold_max: usize,
}

impl TierPolicy {
    /// The policy of `context.tiers.*`, `context.warm.*` and `context.cold.*`.
    pub fn from_config(config: &ContextConfig) -> TierPolicy {
        let secs = |v: u64, unit: u64| i64::try_from(v.saturating_mul(unit)).unwrap_or(i64::MAX);
        TierPolicy {
            warm_seconds: secs(config.tiers.warm.retention_hours, 3_600),
            warm_max: config.warm.max_decisions,
            cold_seconds: secs(config.tiers.cold.retention_days, 86_400),
            cold_max: config.cold.max_decisions,
        }
    }
}

impl Default for TierPolicy {
    fn default() -> Self {
        TierPolicy::from_config(&ContextConfig::default())
    }
}

/// What the rules need to know about one decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TierInput {
    pub id: i64,
    /// Recorded in the latest phase of an open plan.
    pub current: bool,
    pub corrected: bool,
    pub last_used: i64,
}

/// The tier of each decision of `rows` at `now` (same order); `None` means it expires.
pub fn assign(rows: &[TierInput], policy: &TierPolicy, now: i64) -> Vec<Option<Tier>> {
    let mut out: Vec<Option<Tier>> = vec![None; rows.len()];
    // Most recently used first; the id breaks ties so the result never depends on order.
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|&a, &b| {
        rows[b]
            .last_used
            .cmp(&rows[a].last_used)
            .then(rows[b].id.cmp(&rows[a].id))
    });
    let (mut warm, mut cold) = (0usize, 0usize);
    for i in order {
        let r = &rows[i];
        let age = now.saturating_sub(r.last_used).max(0);
        out[i] = if r.current && !r.corrected && age <= policy.warm_seconds {
            Some(Tier::Hot)
        } else if !r.corrected && age <= policy.warm_seconds && warm < policy.warm_max {
            warm += 1;
            Some(Tier::Warm)
        } else if age <= policy.cold_seconds && cold < policy.cold_max {
            cold += 1;
            Some(Tier::Cold)
        } else {
            None
        };
    }
    out
}
