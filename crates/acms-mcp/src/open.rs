//! Opening the workspace behind the server, on its own thread, while `initialize` and every
//! request that does not need it are answered.
//!
//! On a repository without an index the work comes in three steps, each published as a
//! [`Status`] that tool calls turn into MCP progress notifications and the server into log
//! messages: the symbol pass (files analyzed of files walked), the keyword index, then the
//! vectors. Queries need only the first two, so the workspace is handed to the server as soon
//! as they are committed ([`Stage::Embedding`]); until the vectors are complete a result says
//! that its semantic part is missing, and when they are, a fresh workspace (whose engine sees
//! them) replaces the first one.
//!
//! This module decides nothing about a repository: the same calls as `acms index` and
//! [`acms::Workspace::open_with`], in an order that lets queries start early.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use acms::{ContextConfig, Workspace, WorkspaceOptions};
use tokio::sync::watch;

/// Where the server's workspace comes from (what `acms mcp` was started with).
#[derive(Debug, Clone)]
pub struct OpenSpec {
    /// The repository.
    pub repo: PathBuf,
    /// The index directory; `None` picks the default ([`acms::index::default_index_dir`]).
    pub index_dir: Option<PathBuf>,
    /// The configuration in force (the user's file and the repository's `acms.toml`).
    pub config: ContextConfig,
}

/// How far opening has come.
#[derive(Debug, Clone, PartialEq)]
pub enum Stage {
    /// Reading an existing index (or finding out there is none).
    Opening,
    /// No index yet: analyzing files.
    Symbols,
    /// Writing the keyword index.
    Keyword,
    /// Queries work; the vectors are being computed.
    Embedding,
    /// Everything is in place.
    Ready,
    /// Opening failed: every call that needs the workspace answers with this message.
    Failed(String),
}

/// A published step: the stage and, where it counts something, how far it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    pub stage: Stage,
    pub done: usize,
    pub total: usize,
    /// Since the server started opening.
    pub elapsed: Duration,
    /// The repository had no index: this run builds it from scratch.
    pub fresh: bool,
}

impl Status {
    /// Whether a call can be served (possibly without the semantic strategy).
    pub fn servable(&self) -> bool {
        matches!(
            self.stage,
            Stage::Embedding | Stage::Ready | Stage::Failed(_)
        )
    }

    /// Progress towards a servable workspace, 0 to 100: what a waiting call reports.
    pub fn percent(&self) -> f64 {
        match self.stage {
            Stage::Opening => 0.0,
            // The symbol pass is most of the work before queries can run.
            Stage::Symbols if self.total > 0 => 90.0 * self.done as f64 / self.total as f64,
            Stage::Symbols => 0.0,
            Stage::Keyword => 95.0,
            _ => 100.0,
        }
    }

    /// One line for a person or a model.
    pub fn message(&self) -> String {
        let secs = self.elapsed.as_secs_f64();
        match &self.stage {
            Stage::Opening => "acms: opening the index".to_string(),
            Stage::Symbols if self.fresh && self.total == 0 => format!(
                "acms: indexing the repository (no index yet): walking its files, {secs:.1} s; tool calls wait for the symbol pass"
            ),
            Stage::Symbols if self.fresh => format!(
                "acms: indexing the repository (no index yet): {} of {} files analyzed, {secs:.1} s; tool calls wait for this pass",
                self.done, self.total
            ),
            Stage::Symbols => format!(
                "acms: bringing the index up to date before finishing its vectors: {} of {} changed files analyzed, {secs:.1} s",
                self.done, self.total
            ),
            Stage::Keyword => format!(
                "acms: files analyzed; resolving references and writing the keyword index, {secs:.1} s"
            ),
            Stage::Embedding if self.total > 0 => format!(
                "acms: queries work (keyword and graph); embedding {} of {} symbols for semantic search, {secs:.1} s",
                self.done, self.total
            ),
            Stage::Embedding => format!(
                "acms: queries work (keyword and graph); loading the embedding model, {secs:.1} s"
            ),
            Stage::Ready => format!("acms: index ready, {secs:.1} s"),
            Stage::Failed(why) => format!("acms: cannot open the repository: {why}"),
        }
    }

    /// The note a result carries while the vectors are incomplete.
    pub fn semantic_note(&self) -> Option<String> {
        (self.stage == Stage::Embedding).then(|| {
            let progress = if self.total > 0 {
                format!("{} of {} symbols embedded", self.done, self.total)
            } else {
                "the embedding model is loading".to_string()
            };
            format!(
                "semantic-embedding: incomplete ({progress}; the vectors are being computed in the background): semantic matches are missing from this result or partial, keyword and graph retrieval are complete; call again later for all of them"
            )
        })
    }
}

/// The workspace, once there is one.
pub(crate) enum Slot {
    Waiting,
    Ready(Box<Workspace>),
    Failed(String),
}

/// What the opening thread and the server share.
pub(crate) struct Shared {
    pub(crate) slot: Mutex<Slot>,
    pub(crate) status: watch::Sender<Status>,
    /// See [`Opening::note`].
    pub(crate) note: Mutex<Option<String>>,
    started: Instant,
    /// Set when the server closes: the opening thread starts no model and stops embedding at
    /// its next batch.
    pub(crate) closing: AtomicBool,
    /// Set by the opening thread before anything that may start ONNX Runtime.
    model_in_use: AtomicBool,
    /// The opening thread, joined when the server closes ([`Shared::close`]).
    pub(crate) opener: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Shared {
    pub(crate) fn new(slot: Slot) -> Arc<Shared> {
        let stage = match &slot {
            Slot::Waiting => Stage::Opening,
            Slot::Ready(_) => Stage::Ready,
            Slot::Failed(why) => Stage::Failed(why.clone()),
        };
        let (status, _) = watch::channel(Status {
            stage,
            done: 0,
            total: 0,
            elapsed: Duration::ZERO,
            fresh: false,
        });
        Arc::new(Shared {
            slot: Mutex::new(slot),
            status,
            note: Mutex::new(None),
            started: Instant::now(),
            closing: AtomicBool::new(false),
            model_in_use: AtomicBool::new(false),
            opener: Mutex::new(None),
        })
    }

    /// Stops the opening thread at its next embedding batch (or, fetching the model on first
    /// use, at its next read: the partial download is deleted) and waits for it if it may run
    /// ONNX Runtime: a process must not exit with ONNX Runtime running on another thread (its
    /// teardown fails the run, then crashes the process). The vectors embedded so far are
    /// saved; the next start resumes. An opener still in its symbol pass (minutes on a large
    /// repository) is not waited for: it sets `model_in_use` before it reads `closing`, this
    /// reads `model_in_use` after setting `closing`, so one of the two sees the other.
    pub(crate) fn close(&self) {
        self.closing.store(true, Ordering::SeqCst);
        if !self.model_in_use.load(Ordering::SeqCst) {
            return;
        }
        let opener = self
            .opener
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(opener) = opener {
            let _ = opener.join();
        }
    }

    pub(crate) fn slot(&self) -> std::sync::MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The opening thread's handle on the server: publish progress, hand over the workspace.
pub struct Opening {
    shared: Arc<Shared>,
    /// Last time a count was published, to publish a few times a second rather than once per
    /// file.
    last: Mutex<Instant>,
}

/// Counts are published at most this often (stage changes always are).
const PUBLISH_EVERY: Duration = Duration::from_millis(100);

impl Opening {
    pub(crate) fn new(shared: Arc<Shared>) -> Opening {
        Opening {
            shared,
            last: Mutex::new(Instant::now() - PUBLISH_EVERY),
        }
    }

    /// Whether the opening may go on to start the model (not when the server is closing),
    /// recording that it may ([`Shared::close`]).
    fn may_start_model(&self) -> bool {
        self.shared.model_in_use.store(true, Ordering::SeqCst);
        !self.shared.closing.load(Ordering::SeqCst)
    }

    /// Publishes a stage with its counts.
    pub fn stage(&self, stage: Stage, done: usize, total: usize) {
        let elapsed = self.shared.started.elapsed();
        self.shared.status.send_modify(|s| {
            *s = Status {
                stage,
                done,
                total,
                elapsed,
                fresh: s.fresh,
            }
        });
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    /// Publishes new counts within the current stage, a few times a second and at the end.
    pub fn count(&self, done: usize, total: usize) {
        {
            let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
            if done < total && last.elapsed() < PUBLISH_EVERY {
                return;
            }
            *last = Instant::now();
        }
        let elapsed = self.shared.started.elapsed();
        self.shared.status.send_modify(|s| {
            s.done = done;
            s.total = total;
            s.elapsed = elapsed;
        });
    }

    /// Hands the workspace to the server (replacing any earlier one) at `stage`.
    pub fn install(&self, ws: Workspace, stage: Stage) {
        *self.shared.slot() = Slot::Ready(Box::new(ws));
        self.stage(stage, 0, 0);
    }

    /// Opening failed: every call that needs the workspace gets `why`.
    pub fn fail(&self, why: String) {
        *self.shared.slot() = Slot::Failed(why.clone());
        self.stage(Stage::Failed(why), 0, 0);
    }

    /// Says whether this run builds the index from scratch (in messages).
    pub fn fresh(&self, fresh: bool) {
        self.shared.status.send_modify(|s| s.fresh = fresh);
    }

    /// A condition every later result states (the vectors failed after queries started).
    pub fn note(&self, note: String) {
        *self
            .shared
            .note
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(note);
    }

    /// Whether opening failed.
    pub fn failed(&self) -> bool {
        matches!(*self.shared.slot(), Slot::Failed(_))
    }

    /// Whether a workspace was handed over already.
    pub fn installed(&self) -> bool {
        matches!(*self.shared.slot(), Slot::Ready(_))
    }
}

/// Opens a workspace on its own thread: `FnOnce(&Opening)` publishes its progress and hands
/// over the workspace (or the reason there is none).
pub type Opener = Box<dyn FnOnce(&Opening) + Send>;

/// The opener `acms mcp` uses: see the module documentation.
pub fn staged(spec: OpenSpec) -> Opener {
    Box::new(move |opening: &Opening| open_staged(&spec, opening))
}

fn options(spec: &OpenSpec) -> WorkspaceOptions {
    WorkspaceOptions {
        index_dir: spec.index_dir.clone(),
        config: Some(spec.config.clone()),
        // A server answers many calls: file events spare each one a walk of the repository.
        watch: true,
        ..WorkspaceOptions::default()
    }
}

fn open(spec: &OpenSpec) -> Result<Workspace, String> {
    Workspace::open_with(&spec.repo, options(spec)).map_err(|e| crate::reply::error_text(&e))
}

/// What opening has to do beyond [`Workspace::open_with`].
struct Work {
    repo: PathBuf,
    index_dir: PathBuf,
    /// No index yet.
    fresh: bool,
    /// Compute (or finish) the vectors.
    vectors: bool,
}

/// Whether the repository needs an index run before queries (none yet) or after them (its
/// vectors are incomplete: a session that ended while they were computed). `None`: open it
/// as it is; that includes every question with an error, which `open` then reports.
fn work(spec: &OpenSpec) -> Option<Work> {
    let repo = spec.repo.canonicalize().ok().filter(|p| p.is_dir())?;
    let index_dir = match &spec.index_dir {
        Some(dir) => dir.clone(),
        None => acms::index::default_index_dir(&repo).ok()?.0,
    };
    let vectors = spec.config.strategies.enabled.iter().any(|s| s == SEMANTIC);
    let fresh = match acms::index::Store::open(&index_dir) {
        Ok(store) => {
            let meta = store.meta().ok()?;
            if meta.generation > 0 {
                let semantic = &spec.config.strategies.semantic_embedding;
                let stored =
                    acms::retrieve::vector_generation(&index_dir, semantic, &meta.store_id);
                if !vectors || stored == Some(meta.generation) {
                    return None;
                }
            }
            meta.generation == 0
        }
        Err(acms::index::Error::IndexNotFound(_)) => true,
        Err(_) => return None,
    };
    Some(Work {
        repo,
        index_dir,
        fresh,
        vectors,
    })
}

/// The semantic strategy's name: vectors matter only when it is enabled.
const SEMANTIC: &str = "semantic-embedding";

fn open_staged(spec: &OpenSpec, opening: &Opening) {
    opening.stage(Stage::Opening, 0, 0);
    let Some(work) = work(spec) else {
        if !opening.may_start_model() {
            return;
        }
        match open(spec) {
            Ok(ws) => opening.install(ws, Stage::Ready),
            Err(why) => opening.fail(why),
        }
        return;
    };
    opening.fresh(work.fresh);
    opening.stage(Stage::Symbols, 0, 0);
    // `index_repo` gives no callback between the symbol commit and the keyword index: the
    // last file counted is where the keyword stage starts.
    let files = |done: usize, total: usize| {
        if done == total && total > 0 {
            opening.stage(Stage::Keyword, done, total);
        } else {
            opening.count(done, total);
        }
    };
    let searchable = || {
        // The symbols and the keyword index are committed: queries work from here on.
        if !opening.may_start_model() {
            return;
        }
        match open(spec) {
            Ok(ws) => opening.install(ws, Stage::Embedding),
            Err(why) => opening.fail(why),
        }
    };
    let embedded = |done: usize, total: usize| opening.count(done, total);
    let mut index = acms::index::IndexOptions::new(&work.repo);
    index.index_dir = work.index_dir.clone();
    index.config = spec.config.clone();
    index.progress = Some(&files);
    let embedding = acms::EmbeddingOptions {
        stop: Some(&opening.shared.closing),
        enabled: work.vectors,
        on_searchable: Some(&searchable),
        progress: Some(&embedded),
        embedder: None,
        // A missing model is fetched here, after queries already work (keyword and graph).
        fetch_model: true,
        fetch_progress: None,
    };
    match acms::index_repository_with(&work.repo, &index, &embedding) {
        // A fresh engine sees the vectors (or says why there are none).
        Ok(_) if !opening.may_start_model() => {}
        Ok(_) => match open(spec) {
            Ok(ws) => opening.install(ws, Stage::Ready),
            Err(why) => opening.fail(why),
        },
        Err(e) if opening.installed() => {
            // Queries work without vectors: say why semantic matches are missing.
            opening.note(format!(
                "semantic-embedding: the vectors could not be computed ({}): results come from keyword and graph retrieval only",
                crate::reply::error_text(&e)
            ));
            opening.stage(Stage::Ready, 0, 0);
        }
        Err(e) => opening.fail(crate::reply::error_text(&e)),
    }
}
