use std::path::PathBuf;

/// Errors of `acms-retrieve`. A failing *strategy* is not an error of a retrieval: it is
/// reported in the executor's diagnostics and the other strategies' hits are used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error(transparent)]
    Index(#[from] acms_index::Error),
    /// An embedding run stopped at a caller's request (the vectors done are saved; the next
    /// run resumes after them).
    #[error("stopped before the vectors were complete")]
    Stopped,
    #[error("keyword index: {0}")]
    Keyword(#[from] acms_keyword::Error),
    #[error("vector index: {0}")]
    Vector(#[from] acms_vector::Error),
    #[error("language model: {0}")]
    Llm(#[from] acms_llm::Error),
    /// A strategy named in the configuration is not registered.
    #[error(
        "unknown strategy `{0}`: use one of {known}, or a name registered under context.strategies.custom",
        known = built_in_names()
    )]
    UnknownStrategy(String),
    /// A strategy cannot run with this index (for example no vectors were built).
    #[error("strategy {strategy} is unavailable: {reason}")]
    Unavailable { strategy: String, reason: String },
    /// A derived index file is missing or unreadable.
    #[error("{path}: {message}")]
    Derived { path: PathBuf, message: String },
}

/// The built-in strategies' names, comma-separated.
fn built_in_names() -> String {
    acms_core::StrategyId::BUILT_IN
        .map(|s| s.as_str().to_string())
        .join(", ")
}

/// Result alias for `acms-retrieve`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    #[test]
    fn an_unknown_strategy_lists_the_built_in_ones() {
        assert_eq!(
            super::Error::UnknownStrategy("bogus".into()).to_string(),
            "unknown strategy `bogus`: use one of simple-keyword, semantic-embedding, \
             breadth-depth-navigator, arce, or a name registered under context.strategies.custom"
        );
    }
}
