//! Stage 1, StrategySelector: which strategies run for this query, with what confidence.

use acms_retrieve::{Query, Stage};
use serde::{Deserialize, Serialize};

/// A strategy the selector can choose.
#[derive(Debug, Clone, PartialEq)]
pub struct StrategyInfo {
    pub name: String,
    pub max_quality: f32,
    pub stage: Stage,
}

/// A chosen strategy and how much the selector trusts it for this query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Selection {
    pub strategy: String,
    pub confidence: f32,
}

/// Stage 1.
pub trait StrategySelector: Send + Sync {
    fn select(&self, query: &Query, available: &[StrategyInfo]) -> Vec<Selection>;
}

/// Runs every configured strategy that can contribute: text strategies need text, the graph
/// navigator needs text (for seeds) or mentions.
pub struct DefaultSelector;

impl StrategySelector for DefaultSelector {
    fn select(&self, query: &Query, available: &[StrategyInfo]) -> Vec<Selection> {
        let has_text = query.text.chars().any(char::is_alphanumeric);
        let has_hints = !query.mentioned_files.is_empty()
            || !query.mentioned_symbols.is_empty()
            || !query.previous.is_empty();
        available
            .iter()
            .filter(|s| has_text || (has_hints && s.stage == Stage::Expansion))
            .map(|s| Selection {
                strategy: s.name.clone(),
                confidence: s.max_quality,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(name: &str, stage: Stage) -> StrategyInfo {
        StrategyInfo {
            name: name.into(),
            max_quality: 0.5,
            stage,
        }
    }

    #[test]
    fn selects_by_what_the_query_offers() {
        let all = [info("kw", Stage::Primary), info("nav", Stage::Expansion)];
        let names = |q: &Query| -> Vec<String> {
            DefaultSelector
                .select(q, &all)
                .into_iter()
                .map(|s| s.strategy)
                .collect()
        };
        assert_eq!(names(&Query::new("render a page")), ["kw", "nav"]);
        assert!(names(&Query::new("  ?! ")).is_empty());
        let mut q = Query::new("");
        q.mentioned_symbols.push("App".into());
        assert_eq!(names(&q), ["nav"]);
        assert!(DefaultSelector.select(&Query::new("x"), &[]).is_empty());
    }
}
