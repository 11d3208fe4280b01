//! acms gives LLM agents the right context at the right size.
//!
//! This facade re-exports the public API of the acms crates so a user depends on one crate,
//! and adds the few calls that span them:
//!
//! ```no_run
//! use std::path::Path;
//! let repo = Path::new(".");
//! let config = acms::Config::for_repo(repo)?.context;
//! // Index once (incremental afterwards): symbols, keyword index, vectors.
//! let mut opts = acms::index::IndexOptions::new(repo);
//! opts.config = config.clone();
//! let report = acms::index_repository(repo, &opts, true)?;
//! println!("{} files, {} nodes", report.index.files, report.index.nodes);
//! // Assemble the context for a task within 8 000 tokens.
//! let engine = acms::Engine::open(&opts.index_dir, &config)?;
//! let ctx = engine.assemble(&acms::AssemblyRequest {
//!     query: acms::Query::new("where are HTTP redirects followed?"),
//!     budget: acms::Budget::Tokens(8_000),
//!     parent: None,
//! })?;
//! assert!(ctx.tokens <= 8_000);
//! println!("{}", ctx.text);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::path::Path;

pub use acms_assemble::{
    AssembledContext, AssemblyRequest, Budget, Diagnostics, DropReason, Engine, ManifestEntry,
    PipelineRegistry, PlanSession, Skeleton,
};
pub use acms_core::{Config, ContextConfig, Depth, NodeId, TokenCounter, Tokenizer};
pub use acms_retrieve::{Hit, Query, Reason, Retriever, Strategy, StrategyRegistry};
pub use {
    acms_assemble as assemble, acms_compact as compact, acms_core as core, acms_index as index,
    acms_llm as llm, acms_pack as pack, acms_retrieve as retrieve, acms_vector as vector,
};

/// Errors of the cross-crate calls.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error(transparent)]
    Index(#[from] acms_index::Error),
    #[error(transparent)]
    Retrieve(#[from] acms_retrieve::Error),
    #[error(transparent)]
    Assemble(#[from] acms_assemble::Error),
}

/// What [`index_repository`] did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct RepositoryIndex {
    /// The symbol index run.
    pub index: acms_index::IndexReport,
    /// The keyword index and vectors refresh.
    pub derived: acms_retrieve::DerivedReport,
    /// Which embedder built the vectors (one line), if vectors were built.
    pub embedder: Option<String>,
}

/// Indexes `repo` (incrementally), then refreshes the keyword index and, when `vectors`,
/// the embeddings — with the model configured under
/// `context.strategies.semantic-embedding.model-dir` (or `$ACMS_MODEL_DIR`), else the
/// built-in embedder.
pub fn index_repository(
    repo: &Path,
    opts: &acms_index::IndexOptions<'_>,
    vectors: bool,
) -> Result<RepositoryIndex, Error> {
    let index = acms_index::index_repo(repo, opts)?;
    let (embedder, choice) = if vectors {
        let dir = opts
            .config
            .strategies
            .semantic_embedding
            .model_dir
            .as_deref()
            .map(Path::new);
        let (e, c) = acms_vector::load_embedder(dir);
        (Some(e), Some(c.to_string()))
    } else {
        (None, None)
    };
    let derived = acms_retrieve::update_derived(
        &opts.index_dir,
        &index.changes,
        &opts.config,
        embedder.as_deref(),
    )?;
    Ok(RepositoryIndex {
        index,
        derived,
        embedder: choice,
    })
}
