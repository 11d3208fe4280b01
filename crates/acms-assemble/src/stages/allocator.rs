//! Stage 2, BudgetAllocator: each selected strategy's share of the token budget, which
//! tells it how many hits are worth returning.

use std::collections::HashMap;

use acms_core::StrategyId;

use super::selector::Selection;

/// Stage 2.
pub trait BudgetAllocator: Send + Sync {
    fn allocate(&self, budget: u32, selected: &[Selection]) -> HashMap<StrategyId, u32>;
}

/// Splits the budget in proportion to the selector's confidence. Shares overlap in what
/// they find, so each gets at least half the budget: the packer, not the allocator, enforces
/// the total.
pub struct ProportionalAllocator;

impl BudgetAllocator for ProportionalAllocator {
    fn allocate(&self, budget: u32, selected: &[Selection]) -> HashMap<StrategyId, u32> {
        let total: f32 = selected.iter().map(|s| s.confidence.max(0.0)).sum();
        selected
            .iter()
            .map(|s| {
                let share = if total > 0.0 {
                    s.confidence.max(0.0) / total
                } else {
                    1.0 / selected.len() as f32
                };
                let tokens = (budget as f32 * share.max(0.5)).round() as u32;
                (StrategyId::from(s.strategy.as_str()), tokens.min(budget))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_follow_confidence_and_never_exceed_the_budget() {
        let sel = |n: &str, c: f32| Selection {
            strategy: n.into(),
            confidence: c,
        };
        let shares = ProportionalAllocator.allocate(1000, &[sel("a", 0.8), sel("b", 0.2)]);
        assert!(shares["a"] >= shares["b"]);
        assert!(shares.values().all(|t| (500..=1000).contains(t)));
        assert!(ProportionalAllocator.allocate(1000, &[]).is_empty());
        assert_eq!(ProportionalAllocator.allocate(0, &[sel("a", 0.0)])["a"], 0);
    }
}
