//! The budget arithmetic of one assembly: how the whole budget divides between the parent's
//! skeleton, the preamble and the fragments ([`Allowance`], [`preamble_reserve`]).

use acms_core::{BudgetConfig, TokenCounter};

use crate::types::{Budget, Skeleton};

/// The packer works in `u32` tokens; a larger budget can hold everything it could ever pack,
/// so it saturates rather than wrapping.
pub(crate) fn pack_tokens(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// How one assembly's budget divides.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Allowance {
    /// The whole budget: the final text, preamble included, is verified against it.
    pub total: usize,
    /// Why the stages run on nothing: the budget is under `context.budget.min-useful-budget`.
    pub skipped: Option<String>,
    /// `context.budget.skeleton-ratio` of the budget: the most an inherited skeleton may
    /// take, and the size of this context's own skeleton.
    pub skeleton: usize,
    /// The parent's skeleton, cut to whole lines within `skeleton`.
    pub inherited: String,
    pub inherited_tokens: usize,
    /// What the inherited skeleton leaves for the preamble and the fragments.
    pub fragments: u32,
}

impl Allowance {
    pub fn new(
        budget: Budget,
        parent: Option<&Skeleton>,
        config: &BudgetConfig,
        counter: &dyn TokenCounter,
    ) -> Allowance {
        let total = tokens(budget, config);
        let skipped = (total < config.min_useful_budget).then(|| {
            format!(
                "budget {total} is below context.budget.min-useful-budget ({})",
                config.min_useful_budget
            )
        });
        let skeleton = (total as f64 * config.skeleton_ratio) as usize;
        let inherited = match (parent, &skipped) {
            (Some(parent), None) => fit_lines(&parent.text, skeleton, counter),
            _ => String::new(),
        };
        let inherited_tokens = counter.count(&inherited);
        Allowance {
            total,
            skipped,
            skeleton,
            fragments: pack_tokens(total.saturating_sub(inherited_tokens)),
            inherited,
            inherited_tokens,
        }
    }

    /// The whole budget in the packer's tokens.
    pub fn verified(&self) -> u32 {
        pack_tokens(self.total)
    }
}

/// The token budget for `budget`: a window less the response reserve and the tools.
fn tokens(budget: Budget, config: &BudgetConfig) -> usize {
    match budget {
        Budget::Tokens(n) => n,
        Budget::Window {
            model_context_window,
            tool_definitions,
        } => model_context_window
            .saturating_sub(config.response_reserve)
            .saturating_sub(tool_definitions),
    }
}

/// What to keep free for a preamble whose longest form is `draft`: its tokens and the blank
/// lines joining it to the rest.
pub(crate) fn preamble_reserve(draft: &str, counter: &dyn TokenCounter) -> u32 {
    pack_tokens(counter.count(draft) + 4)
}

/// The longest prefix of whole lines of `text` within `max` tokens.
fn fit_lines(text: &str, max: usize, counter: &dyn TokenCounter) -> String {
    if counter.count(text) <= max {
        return text.to_string();
    }
    let lines: Vec<&str> = text.lines().collect();
    let (mut lo, mut hi) = (0, lines.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if counter.count(&lines[..mid].join("\n")) <= max {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lines[..lo].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts words: enough to check the arithmetic.
    struct Words;

    impl TokenCounter for Words {
        fn name(&self) -> &str {
            "words"
        }
        fn count(&self, text: &str) -> usize {
            text.split_whitespace().count()
        }
    }

    #[test]
    fn a_window_leaves_the_response_reserve_and_the_tools() {
        let config = BudgetConfig::default();
        let window = Budget::Window {
            model_context_window: 8192,
            tool_definitions: 1000,
        };
        let a = Allowance::new(window, None, &config, &Words);
        assert_eq!(a.total, 8192 - 4096 - 1000);
        assert_eq!(a.fragments, 8192 - 4096 - 1000);
        assert_eq!(a.skipped, None);
    }

    #[test]
    fn the_inherited_skeleton_is_cut_to_whole_lines_within_its_share() {
        let config = BudgetConfig {
            skeleton_ratio: 0.5,
            min_useful_budget: 0,
            ..BudgetConfig::default()
        };
        let parent = Skeleton {
            text: "a b\nc d\ne f".into(),
            tokens: 6,
            nodes: Vec::new(),
        };
        let a = Allowance::new(Budget::Tokens(9), Some(&parent), &config, &Words);
        assert_eq!((a.skeleton, a.inherited.as_str()), (4, "a b\nc d"));
        assert_eq!((a.inherited_tokens, a.fragments), (4, 5));
    }

    #[test]
    fn a_budget_under_the_useful_minimum_inherits_nothing() {
        let config = BudgetConfig::default();
        let parent = Skeleton {
            text: "a b".into(),
            tokens: 2,
            nodes: Vec::new(),
        };
        let a = Allowance::new(Budget::Tokens(100), Some(&parent), &config, &Words);
        assert!(
            a.skipped
                .is_some_and(|why| why.contains("min-useful-budget"))
        );
        assert_eq!((a.inherited.as_str(), a.fragments), ("", 100));
        assert_eq!(pack_tokens(usize::MAX), u32::MAX);
    }
}
