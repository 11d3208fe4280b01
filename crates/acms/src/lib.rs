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
mod watch;
mod workspace;

pub mod model;

pub use refresh::{ChangeTracker, Scan};
pub use workspace::{
    BudgetSpec, Context, Expanded, PhaseContext, PhaseRequest, RefreshReport, SearchHit,
    SearchResult, Workspace, WorkspaceOptions,
};

pub use acms_assemble::{
    AssembledContext, AssemblyRequest, Budget, Diagnostics, DropReason, Engine, ManifestEntry,
    PipelineRegistry, Skeleton,
};
pub use acms_core::{Config, ContextConfig, Depth, NodeId, TokenCounter, Tokenizer};
pub use acms_plan::{
    Clock, Decision, DecisionId, FakeClock, FragmentRef, History, PhaseChanges, PhaseInputs,
    PhaseRecord, Plan, PlanId, SystemClock, Tier, TierReport,
};
pub use acms_retrieve::{
    Hit, Query, Reason, Retriever, Strategy, StrategyRegistry, start_models_in_background,
};
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
    #[error(transparent)]
    Model(#[from] acms_model::Error),
    #[error(transparent)]
    Vector(#[from] acms_vector::Error),
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
    /// Why no vectors were computed although they were asked for: no model installed, or
    /// which file of it is broken, with the fix (one line). Keyword and graph retrieval work.
    pub semantic_unavailable: Option<String>,
    /// The model fetched on first use by this run, if one was (one line: what, how much,
    /// where).
    pub model_fetched: Option<String>,
}

/// How [`index_repository_with`] treats embeddings.
#[derive(Default)]
pub struct EmbeddingOptions<'a> {
    /// Compute embeddings (false: keyword and graph only; the semantic strategy then reports
    /// itself unavailable).
    pub enabled: bool,
    /// Called once the symbols and the keyword index are committed (queries work from then
    /// on), before the embedder is loaded.
    pub on_searchable: Option<&'a dyn Fn()>,
    /// Called with (texts embedded, texts to embed) after every batch.
    pub progress: Option<&'a (dyn Fn(usize, usize) + Sync)>,
    /// An embedder already loaded (a long-lived caller keeps one instead of loading the
    /// model on every run); `None` loads the one the configuration names.
    pub embedder: Option<&'a dyn acms_vector::Embedder>,
    /// Before loading the model, fetch it when it is missing and the configuration allows it
    /// ([`model::ensure_model`]); a failed fetch is the run's one note on semantic retrieval.
    pub fetch_model: bool,
    /// Sees the model's download, when there is one.
    pub fetch_progress: Option<&'a (dyn Fn(model::Event<'_>) + Sync)>,
    /// Stops the embedding between two batches when set, and the model's download at its next
    /// read: the run saves what it embedded and returns `Error::Stopped` (see
    /// [`acms_retrieve::VectorOptions::stop`]).
    pub stop: Option<&'a std::sync::atomic::AtomicBool>,
}

/// Indexes `repo` (incrementally), then refreshes the keyword index and, when `vectors`,
/// the embeddings with the model the configuration names (see
/// [`acms_vector::load_embedder`]). Without a model the run succeeds without vectors and says
/// why in [`RepositoryIndex::semantic_unavailable`].
pub fn index_repository(
    repo: &Path,
    opts: &acms_index::IndexOptions<'_>,
    vectors: bool,
) -> Result<RepositoryIndex, Error> {
    index_repository_with(
        repo,
        opts,
        &EmbeddingOptions {
            enabled: vectors,
            ..EmbeddingOptions::default()
        },
    )
}

/// [`index_repository`] with progress callbacks. The symbols and the keyword index are
/// committed first, so queries (keyword and graph) work while the embeddings are computed;
/// an embedding run that is interrupted resumes where it stopped on the next call.
pub fn index_repository_with(
    repo: &Path,
    opts: &acms_index::IndexOptions<'_>,
    embedding: &EmbeddingOptions<'_>,
) -> Result<RepositoryIndex, Error> {
    let index = acms_index::index_repo(repo, opts)?;
    let mut derived =
        acms_retrieve::update_derived(&opts.index_dir, &index.changes, &opts.config, None)?;
    if let Some(ready) = embedding.on_searchable {
        ready();
    }
    // Checked after `on_searchable` (a server that closes reads the stage it publishes first)
    // and again before ONNX Runtime starts.
    let stopped = || {
        embedding
            .stop
            .is_some_and(|s| s.load(std::sync::atomic::Ordering::SeqCst))
    };
    if stopped() {
        return Err(acms_retrieve::Error::Stopped.into());
    }
    let mut report = RepositoryIndex {
        index,
        ..RepositoryIndex::default()
    };
    let mut fetch_failed = None;
    if embedding.enabled && embedding.embedder.is_none() && embedding.fetch_model {
        let semantic = &opts.config.strategies.semantic_embedding;
        match model::ensure_model(semantic, embedding.fetch_progress, embedding.stop) {
            model::Ensured::Failed(why) => fetch_failed = Some(why),
            model::Ensured::Fetched(f) => {
                report.model_fetched = Some(format!(
                    "model {} fetched on first use: {:.1} MB downloaded, {} files written, \
                     digests checked (`acms model verify` checks them again)",
                    semantic.model,
                    f.downloaded_bytes as f64 / 1e6,
                    f.written.len()
                ));
            }
            model::Ensured::Present | model::Ensured::Disabled => {}
        }
    }
    if embedding.enabled {
        let loaded;
        if stopped() {
            return Err(acms_retrieve::Error::Stopped.into());
        }
        let embedder: Result<&dyn acms_vector::Embedder, String> = match embedding.embedder {
            Some(e) => Ok(e),
            None => match acms_vector::load_embedder(&opts.config.strategies.semantic_embedding) {
                Ok(l) => {
                    loaded = l;
                    report.embedder = Some(loaded.description.clone());
                    Ok(loaded.embedder.as_ref())
                }
                Err(e) => Err(e.to_string()),
            },
        };
        match embedder {
            Ok(embedder) => {
                let options = acms_retrieve::VectorOptions {
                    progress: embedding.progress,
                    stop: embedding.stop,
                    ..acms_retrieve::VectorOptions::default()
                };
                let v = acms_retrieve::update_vectors(
                    &opts.index_dir,
                    &report.index.changes,
                    &opts.config,
                    embedder,
                    &options,
                )?;
                derived.record_vectors(v);
                if report.embedder.is_none() {
                    report.embedder = Some(embedder.id().to_string());
                }
            }
            Err(why) => report.semantic_unavailable = Some(fetch_failed.unwrap_or(why)),
        }
    }
    report.derived = derived;
    Ok(report)
}
