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
//!
//! Agents working through plans use a [`Workspace`]: it indexes the repository when needed,
//! re-indexes changed files before every assembly (never stale), and keeps plans, phases,
//! child plans and hot/warm/cold decision memory next to the index:
//!
//! ```no_run
//! use acms::{BudgetSpec, PhaseRequest, Workspace};
//! let mut ws = Workspace::open(std::path::Path::new("."))?;
//! let (plan, _) = ws.start_plan("make the packer report its certified gap")?;
//! let explore = ws.phase(plan.id, "explore", PhaseRequest {
//!     budget: BudgetSpec::tokens(6_000),
//!     ..PhaseRequest::default()
//! })?;
//! println!("{}", explore.context.text);
//! ws.decide(plan.id, "explore", Some("the gap comes from the hull packer's LP bound"), &[])?;
//! ws.close_plan(plan.id)?;
//! # Ok::<(), acms::Error>(())
//! ```

use std::path::Path;

mod refresh;
mod workspace;

pub use refresh::{ChangeTracker, Scan};
pub use workspace::{
    BudgetSpec, Context, Expanded, PhaseContext, PhaseRequest, RefreshReport, SearchHit,
    SearchResult, Workspace, WorkspaceOptions,
};

pub use acms_assemble::{
    AssembledContext, AssemblyRequest, Budget, Diagnostics, DropReason, Engine, ManifestEntry,
    PipelineRegistry, PlanSession, Skeleton,
};
pub use acms_core::{Config, ContextConfig, Depth, NodeId, TokenCounter, Tokenizer};
pub use acms_plan::{
    Clock, Decision, DecisionId, FakeClock, FragmentRef, History, PhaseRecord, Plan, PlanId,
    SystemClock, Tier, TierReport,
};
pub use acms_retrieve::{Hit, Query, Reason, Retriever, Strategy, StrategyRegistry};
pub use {
    acms_assemble as assemble, acms_compact as compact, acms_core as core, acms_index as index,
    acms_llm as llm, acms_pack as pack, acms_plan as plan, acms_retrieve as retrieve,
    acms_vector as vector,
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
    #[error(transparent)]
    Plan(#[from] acms_plan::Error),
    #[error(transparent)]
    Config(#[from] acms_core::Error),
    /// A budget that can never be met (0, larger than the window, too small for the text).
    #[error("{0}")]
    Budget(String),
    /// A symbol id, name or line range that is not in the index.
    #[error("{0}")]
    UnknownSymbol(String),
}

/// Result alias for the facade.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The error and its causes on one line (`outer: inner: ...`), as the CLI prints it and the
/// MCP server returns it.
pub fn error_line(err: &(dyn std::error::Error + 'static)) -> String {
    let mut line = err.to_string();
    let mut cur = err.source();
    while let Some(e) = cur {
        let s = e.to_string();
        if !line.ends_with(&s) {
            line.push_str(": ");
            line.push_str(&s);
        }
        cur = e.source();
    }
    line
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
