//! acms retrieval: the ways of finding relevant nodes in a knowledge index, and the executor
//! that runs them in parallel.
//!
//! Strategies: `simple-keyword` (tantivy BM25), `semantic-embedding` (fastembed or the
//! built-in embedder, exact scan or HNSW), `breadth-depth-navigator` (petgraph traversal in
//! both directions), `arce` (LLM search-refine loop) and custom strategies registered in a
//! [`StrategyRegistry`].
//!
//! **Architecture Invariant:** a strategy failure is data ([`StrategyRun`]), never an error
//! of a retrieval. This crate does not score across strategies, deduplicate or pack: that is
//! `acms-assemble`.

mod arce;
mod corpus;
mod derived;
mod dirs;
mod embedding;
mod error;
mod executor;
mod graph;
mod keyword;
mod place;
mod query;
mod retriever;
mod semantic;
mod shared;
mod strategy;
pub mod task;

pub use arce::ArceStrategy;
pub use corpus::{Corpus, Mention};
pub use derived::{DerivedReport, update_derived};
pub use dirs::{keyword_dir, vector_dir};
pub use embedding::{
    VectorOptions, VectorReport, embedding_text, embeds, update_vectors, vector_generation,
};
pub use error::{Error, Result};
pub use executor::{Execution, RunStatus, StrategyExecutor, StrategyRun};
pub use graph::NavigatorStrategy;
pub use keyword::KeywordStrategy;
pub use place::{Place, place};
pub use query::{Hit, PathEdge, Query, Reason};
pub use retriever::Retriever;
pub use semantic::SemanticStrategy;
pub use shared::{SharedVectors, shared_vectors, start_models_in_background};
pub use strategy::{Stage, Strategy, StrategyFactory, StrategyInput, StrategyRegistry};

pub use acms_core::StrategyId;

/// Names of the built-in strategies, as [`StrategyId::as_str`] spells them.
pub mod names {
    use acms_core::StrategyId;

    pub const ARCE: &str = StrategyId::Arce.as_str();
    pub const NAVIGATOR: &str = StrategyId::Navigator.as_str();
    pub const KEYWORD: &str = StrategyId::Keyword.as_str();
    pub const SEMANTIC: &str = StrategyId::Semantic.as_str();
}
