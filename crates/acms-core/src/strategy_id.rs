//! [`StrategyId`]: which retrieval strategy found a hit, ran, or gets a budget share.

use crate::named::by_name;

/// A retrieval strategy: one of the built-ins, or a custom one by the name it is configured
/// under (`context.strategies.custom.<name>`). Serialized as that name.
///
/// Built from a name with `From`, which recognises the built-in names. Values compare and
/// order by name (see `named`), as the strings they replaced did.
#[derive(Debug, Clone)]
pub enum StrategyId {
    /// `simple-keyword`: BM25 over names, paths, signatures, docs and bodies.
    Keyword,
    /// `semantic-embedding`: nearest neighbours of the task's embedding.
    Semantic,
    /// `breadth-depth-navigator`: a walk of the graph from the other strategies' best hits.
    Navigator,
    /// `arce`: a language model's search-refine loop.
    Arce,
    /// A strategy registered in Rust, by its configured name.
    Custom(String),
}

impl StrategyId {
    /// The built-in strategies.
    pub const BUILT_IN: [StrategyId; 4] = [
        StrategyId::Keyword,
        StrategyId::Semantic,
        StrategyId::Navigator,
        StrategyId::Arce,
    ];

    /// The name configurations, hits and diagnostics use (`const`, for
    /// `acms_retrieve::names`).
    pub const fn as_str(&self) -> &str {
        match self {
            StrategyId::Keyword => "simple-keyword",
            StrategyId::Semantic => "semantic-embedding",
            StrategyId::Navigator => "breadth-depth-navigator",
            StrategyId::Arce => "arce",
            StrategyId::Custom(name) => name.as_str(),
        }
    }

    /// The built-in strategy called `name`, if any.
    fn parse_built_in(name: &str) -> Option<StrategyId> {
        StrategyId::BUILT_IN
            .into_iter()
            .find(|s| s.as_str() == name)
    }
}

impl From<&str> for StrategyId {
    fn from(name: &str) -> StrategyId {
        StrategyId::parse_built_in(name).unwrap_or_else(|| StrategyId::Custom(name.to_string()))
    }
}

impl From<String> for StrategyId {
    fn from(name: String) -> StrategyId {
        StrategyId::parse_built_in(&name).unwrap_or(StrategyId::Custom(name))
    }
}

by_name!(StrategyId);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_names_round_trip_and_order_as_strings() {
        for s in StrategyId::BUILT_IN {
            assert!(!matches!(
                StrategyId::from(s.as_str()),
                StrategyId::Custom(_)
            ));
            assert_eq!(
                serde_json::to_string(&s).unwrap(),
                format!("\"{}\"", s.as_str())
            );
        }
        let custom = StrategyId::from("warm-memory");
        assert!(matches!(&custom, StrategyId::Custom(n) if n == "warm-memory"));
        let mut ids = [
            StrategyId::Keyword,
            custom.clone(),
            StrategyId::Navigator,
            StrategyId::Semantic,
        ];
        ids.sort();
        let names: Vec<&str> = ids.iter().map(StrategyId::as_str).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        assert_eq!(StrategyId::Custom("arce".into()), StrategyId::Arce);
    }
}
