//! [`Workspace`]: acms as a plan-based agent uses it — one handle on a repository that
//! indexes it when needed, keeps the index current before every assembly (never stale), and
//! runs plans with phases, child plans and decision memory ([`acms_plan`]).
//!
//! Before every assembly — a plan phase, a plain query, a search, an expansion — the
//! [`ChangeTracker`] compares the repository with the index (size + mtime, then the content
//! hash); when a file changed, the index, the keyword index and the vectors of the changed
//! symbols are updated incrementally and the engine is reopened on the new generation. The
//! assembly's diagnostics say how many files were refreshed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use acms_assemble::stages::StageContext;
use acms_assemble::{
    AssembledContext, AssemblyRequest, Budget, Engine, Fragment, PipelineRegistry, Placed, Skeleton,
};
use acms_core::{ContextConfig, Depth, NodeId, TokenCounter};
use acms_index::{IndexOptions, Store};
use acms_llm::LlmClient;
use acms_plan::{
    Clock, Decision, DecisionId, FragmentRef, History, MemoryView, NewPhase, PhaseChanges,
    PhaseInputs, PhaseRecord, Plan, PlanId, PlanStore, SystemClock, Tier, TierPolicy, TierReport,
};
use acms_retrieve::{Hit, Query, RunStatus, StrategyRegistry, StrategyRun};
use acms_vector::Embedder;
use serde::Serialize;

use crate::refresh::ChangeTracker;
use crate::{Error, Result};

/// How a [`Workspace`] is opened.
pub struct WorkspaceOptions {
    /// Index directory (default `<repo>/.acms`, or a folder of the user's cache when that
    /// holds an index acms did not write for this user: [`acms_index::default_index_dir`]).
    pub index_dir: Option<PathBuf>,
    /// Configuration (default `<repo>/acms.toml`, else the spec defaults).
    pub config: Option<ContextConfig>,
    /// Build vectors when the repository has to be indexed from scratch (fetching the
    /// configured model first when it is missing, as `acms index` does).
    pub vectors: bool,
    /// The clock of decision memory (tests pass a [`acms_plan::FakeClock`]).
    pub clock: Arc<dyn Clock>,
    /// The language model for ARCE (default: from `context.llm` when its base URL is set).
    pub llm: Option<Arc<dyn LlmClient>>,
    /// Watch the repository's files, so a call after no change skips the walk (for a process
    /// that serves many calls, like the MCP server; default off).
    pub watch: bool,
}

impl Default for WorkspaceOptions {
    fn default() -> Self {
        WorkspaceOptions {
            index_dir: None,
            config: None,
            vectors: true,
            clock: Arc::new(SystemClock),
            llm: None,
            watch: false,
        }
    }
}

/// A token budget as an agent states it: tokens, a model's context window, or both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct BudgetSpec {
    /// Tokens for the assembled context.
    pub tokens: Option<usize>,
    /// The model's context window; the budget is derived from it
    /// (`window - context.budget.response-reserve - tool_definitions`).
    pub window: Option<usize>,
    /// Tokens the tool definitions take in the window.
    #[serde(default)]
    pub tool_definitions: usize,
}

impl BudgetSpec {
    /// Exactly `n` tokens (capped at `context.hot.max-tokens`).
    pub fn tokens(n: usize) -> BudgetSpec {
        BudgetSpec {
            tokens: Some(n),
            ..BudgetSpec::default()
        }
    }

    /// Derived from a model's context window.
    pub fn window(window: usize) -> BudgetSpec {
        BudgetSpec {
            window: Some(window),
            ..BudgetSpec::default()
        }
    }
}

/// What the refresh before an assembly did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RefreshReport {
    /// Files compared with the index.
    pub checked: usize,
    /// Files whose content was hashed because their size or mtime moved.
    pub hashed: usize,
    /// Files new, changed or deleted since the last index run (re-indexed now).
    pub refreshed: usize,
    /// Their repository-relative paths (at most 20).
    pub paths: Vec<String>,
    /// Keyword documents and vectors rewritten.
    pub keyword_docs: usize,
    pub embedded: usize,
    /// Time to detect changes, to re-index, and to reopen the engine.
    pub scan_ms: f64,
    pub index_ms: f64,
    pub reopen_ms: f64,
    /// Why nothing was checked (the indexed repository is not on this machine).
    pub skipped: Option<String>,
    /// Nothing was walked: the file watch saw no change since the last check.
    pub watched: bool,
    /// Nothing was walked: only the files the watch named (`checked` of them) were looked at.
    pub named: bool,
    /// Why a watch was asked for but every call walks (the system's watch limit, …).
    pub watch_off: Option<String>,
}

impl RefreshReport {
    /// The lines for a context's notes: what was refreshed, and why the file watch is off
    /// when one was asked for and every call walks.
    pub fn notes(&self) -> Vec<String> {
        let off = self
            .watch_off
            .as_ref()
            .map(|why| format!("file watch off, every call walks the repository: {why}"));
        std::iter::once(self.note()).chain(off).collect()
    }

    /// What `checked` counts: every walked file, or only those the file watch named.
    fn checked_what(&self) -> &'static str {
        if self.named {
            "named by the file watch and checked"
        } else {
            "checked"
        }
    }

    /// One line for diagnostics.
    pub fn note(&self) -> String {
        match &self.skipped {
            Some(why) => format!("refresh skipped: {why}"),
            None if self.watched => {
                "refreshed 0 files before assembly (the file watch saw no change)".into()
            }
            None if self.refreshed == 0 => format!(
                "refreshed 0 files before assembly ({} {}, {:.0} ms)",
                self.checked,
                self.checked_what(),
                self.scan_ms
            ),
            None => format!(
                "refreshed {} files before assembly ({} {}, {:.0} ms: scan {:.0}, index \
                 {:.0}, reopen {:.0})",
                self.refreshed,
                self.checked,
                self.checked_what(),
                self.scan_ms + self.index_ms + self.reopen_ms,
                self.scan_ms,
                self.index_ms,
                self.reopen_ms
            ),
        }
    }
}

/// An assembled context with what was refreshed before it.
#[derive(Debug, Clone, Serialize)]
pub struct Context {
    pub context: AssembledContext,
    pub refresh: RefreshReport,
}

/// A phase of a plan: its context and what memory maintenance did.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseContext {
    pub plan: Plan,
    pub phase: PhaseRecord,
    pub context: AssembledContext,
    pub refresh: RefreshReport,
    pub memory: TierReport,
    /// Tokens of the parent plan's skeleton handed to the assembly (child plans).
    pub inherited_tokens: usize,
    /// How this run differs from the previous run of the same phase (none: the first run).
    pub changes: Option<PhaseChanges>,
}

/// What a phase should look at beyond the plan's task.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct PhaseRequest {
    /// What this phase focuses on (added to the plan's task).
    #[serde(default)]
    pub focus: String,
    pub budget: BudgetSpec,
    #[serde(default)]
    pub mentioned_files: Vec<String>,
    #[serde(default)]
    pub mentioned_symbols: Vec<String>,
}

/// One hit of a search, with where it is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    pub node: NodeId,
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub name: String,
    pub kind: String,
    pub relevance: f32,
    pub strategy: String,
    pub reason: acms_retrieve::Reason,
}

/// Raw strategy hits for a query.
#[derive(Debug, Clone, Serialize)]
pub struct SearchResult {
    pub hits: Vec<SearchHit>,
    pub runs: Vec<StrategyRun>,
    pub refresh: RefreshReport,
}

/// A symbol or line range expanded to its text within a budget.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Expanded {
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    /// The symbol's qualified name and node id, when the target is a symbol.
    pub name: Option<String>,
    #[serde(with = "opt_hex")]
    pub node: Option<NodeId>,
    /// Depth shown (symbols fall back 9 → 4 → 2 → 0 to fit).
    pub depth: Option<Depth>,
    pub text: String,
    /// Exact tokens of `text`; never more than the budget.
    pub tokens: usize,
    /// Lines were cut at the end to fit the budget (line ranges only).
    pub truncated: bool,
}

mod opt_hex {
    use acms_core::NodeId;
    use serde::Serializer;
    pub fn serialize<S: Serializer>(id: &Option<NodeId>, s: S) -> Result<S::Ok, S::Error> {
        match id {
            Some(id) => s.collect_str(id),
            None => s.serialize_none(),
        }
    }
}

/// A repository opened for agents: never-stale assembly and plans.
pub struct Workspace {
    repo: Option<PathBuf>,
    index_dir: PathBuf,
    config: ContextConfig,
    /// The configuration index runs use (the index's own tokenizer).
    index_config: ContextConfig,
    engine: Engine,
    components: PipelineRegistry,
    memory: MemoryView,
    clock: Arc<dyn Clock>,
    policy: TierPolicy,
    plans: Option<PlanStore>,
    tracker: Option<ChangeTracker>,
    embedder: Option<Box<dyn Embedder>>,
    llm: Option<Arc<dyn LlmClient>>,
    counter: acms_core::ExactCounter,
    /// See [`Workspace::location_note`].
    location: Option<String>,
}

/// The LLM client `context.llm` configures, if any.
fn configured_llm(config: &ContextConfig) -> Option<Arc<dyn LlmClient>> {
    config.llm.base_url.as_ref()?;
    acms_llm::HttpClient::from_config(&config.llm)
        .ok()
        .map(|c| Arc::new(c) as Arc<dyn LlmClient>)
}

impl Workspace {
    /// Opens `repo` with its `acms.toml` and index `<repo>/.acms`, indexing it first when
    /// there is no index yet.
    pub fn open(repo: &Path) -> Result<Workspace> {
        Workspace::open_with(repo, WorkspaceOptions::default())
    }

    /// [`Workspace::open`] with options.
    pub fn open_with(repo: &Path, opts: WorkspaceOptions) -> Result<Workspace> {
        let repo = repo
            .canonicalize()
            .ok()
            .filter(|p| p.is_dir())
            .ok_or_else(|| acms_index::Error::RepoNotFound(repo.to_path_buf()))?;
        let config = match opts.config.clone() {
            Some(c) => c,
            None => acms_core::Config::for_repo(&repo)?.context,
        };
        let (index_dir, location) = match opts.index_dir.clone() {
            Some(dir) => (dir, None),
            None => acms_index::default_index_dir(&repo)?,
        };
        let needs_index = match Store::open(&index_dir) {
            Ok(store) => store.meta()?.generation == 0,
            Err(acms_index::Error::IndexNotFound(_)) => true,
            Err(e) => return Err(e.into()),
        };
        let mut ws = Workspace::assemble_parts(Some(repo), index_dir, config, opts, needs_index)?;
        ws.location = location;
        Ok(ws)
    }

    /// Why the index is not in the repository's `.acms` (it holds one acms did not write for
    /// this user, left untouched), when that is so: said in every context's notes.
    pub fn location_note(&self) -> Option<&str> {
        self.location.as_deref()
    }

    /// Opens an existing index; the repository is the one it was built from (refreshed when
    /// it is on this machine). `config` defaults to the spec's.
    pub fn open_index(index_dir: &Path, opts: WorkspaceOptions) -> Result<Workspace> {
        let store = Store::open(index_dir)?;
        let root = store.meta()?.repo_root;
        drop(store);
        let repo = (!root.as_os_str().is_empty() && root.is_dir()).then_some(root);
        let config = opts.config.clone().unwrap_or_default();
        Workspace::assemble_parts(repo, index_dir.to_path_buf(), config, opts, false)
    }

    fn assemble_parts(
        repo: Option<PathBuf>,
        index_dir: PathBuf,
        mut config: ContextConfig,
        opts: WorkspaceOptions,
        unindexed: bool,
    ) -> Result<Workspace> {
        acms_plan::complete_config(&mut config);
        let memory = MemoryView::default();
        let mut components = PipelineRegistry::default();
        acms_plan::wrap_scorers(&mut components, &memory);
        let llm = opts.llm.clone().or_else(|| configured_llm(&config));
        let mut index_config = config.clone();
        if !unindexed && let Ok(store) = Store::open(&index_dir) {
            let tokenizer = store.meta()?.tokenizer;
            if let Ok(t) = tokenizer.parse() {
                index_config.tokenizer = t;
            }
        }
        if unindexed {
            // A first index run must exist before an engine can open.
            let repo = repo.as_deref().expect("a repository to index");
            let mut o = IndexOptions::new(repo);
            o.index_dir = index_dir.clone();
            o.config = index_config.clone();
            // As `acms index` does: a missing model is fetched first (unless `auto-fetch`
            // or ACMS_MODEL_FETCH says not to), and a failed fetch is the run's one note.
            crate::index_repository_with(
                repo,
                &o,
                &crate::EmbeddingOptions {
                    enabled: opts.vectors,
                    fetch_model: opts.vectors,
                    ..crate::EmbeddingOptions::default()
                },
            )?;
        }
        // The token counter's tables are built while the engine opens, not at the first count
        // (20 of a one-shot query's 100 ms on a small repository).
        let counter = config.tokenizer.counter();
        std::thread::spawn(move || counter.prepare());
        let engine = open_engine(&index_dir, &config, &components, &memory, llm.clone(), None)?;
        let tracker = match &repo {
            Some(r) => {
                let mut t = ChangeTracker::new(r, &index_dir, engine.store(), &index_config)?;
                if opts.watch {
                    t.watch();
                }
                Some(t)
            }
            None => None,
        };
        let policy = TierPolicy::from_config(&config);
        let plans = PlanStore::open_existing(&index_dir, policy, Arc::clone(&opts.clock))?;
        Ok(Workspace {
            counter,
            repo,
            index_dir,
            config,
            index_config,
            engine,
            components,
            memory,
            clock: opts.clock,
            policy,
            plans,
            tracker,
            embedder: None,
            llm,
            location: None,
        })
    }

    /// The repository (when it is on this machine).
    pub fn repo(&self) -> Option<&Path> {
        self.repo.as_deref()
    }

    /// The index directory.
    pub fn index_dir(&self) -> &Path {
        &self.index_dir
    }

    /// The configuration in force.
    pub fn config(&self) -> &ContextConfig {
        &self.config
    }

    /// The engine on the current index generation.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The plan database, created on first use.
    pub fn plans(&mut self) -> Result<&mut PlanStore> {
        if self.plans.is_none() {
            self.plans = Some(PlanStore::open(
                &self.index_dir,
                self.policy,
                Arc::clone(&self.clock),
            )?);
        }
        Ok(self.plans.as_mut().expect("opened above"))
    }

    /// Opens the engine on the index as the last run left it: a new corpus reads the new
    /// generation on demand, so nothing is loaded whole again.
    fn reopen(&mut self) -> Result<()> {
        self.engine = open_engine(
            &self.index_dir,
            &self.config,
            &self.components,
            &self.memory,
            self.llm.clone(),
            None,
        )?;
        if let Some(t) = &mut self.tracker {
            t.reload(self.engine.store())?;
        }
        Ok(())
    }

    /// Runs the incremental index and derived-index update on `repo`: the keyword documents
    /// and vectors rewritten.
    fn reindex(&mut self, repo: &Path) -> Result<(usize, usize)> {
        let walked = self.tracker.as_mut().and_then(ChangeTracker::take_walk);
        let mut o = IndexOptions::new(repo);
        o.index_dir = self.index_dir.clone();
        o.config = self.index_config.clone();
        o.walked = walked.as_ref();
        let with_vectors = acms_retrieve::vector_dir(&self.index_dir).exists();
        if with_vectors && self.embedder.is_none() {
            // Loaded once per workspace: a model load costs hundreds of milliseconds.
            self.embedder = acms_vector::load_embedder(&self.config.strategies.semantic_embedding)
                .ok()
                .map(|l| l.embedder);
        }
        let report = crate::index_repository_with(
            repo,
            &o,
            &crate::EmbeddingOptions {
                enabled: with_vectors && self.embedder.is_some(),
                embedder: self.embedder.as_deref(),
                ..crate::EmbeddingOptions::default()
            },
        )?;
        Ok((report.derived.keyword_docs, report.derived.embedded))
    }

    /// Brings the index up to date with the repository: a no-op (one walk and stat) when
    /// nothing changed.
    pub fn refresh(&mut self) -> Result<RefreshReport> {
        self.refresh_beside(|_| ()).map(|(report, _)| report)
    }

    /// [`Workspace::refresh`], with `work` done on the engine as it stands while the
    /// repository is walked (without a file watch: a one-shot process): `work`'s result when
    /// the scan found no change (the usual case, where the walk then costs no wall time),
    /// `None` when the index was refreshed and `work` must be done again on the new engine.
    fn refresh_beside<T>(
        &mut self,
        work: impl FnOnce(&Engine) -> T,
    ) -> Result<(RefreshReport, Option<T>)> {
        let mut report = RefreshReport::default();
        let (Some(repo), Some(tracker)) = (self.repo.clone(), self.tracker.as_mut()) else {
            report.skipped = Some(
                "the indexed repository is not on this machine: texts come from the index".into(),
            );
            return Ok((report, Some(work(&self.engine))));
        };
        let timed_scan = |tracker: &mut ChangeTracker| {
            let t = Instant::now();
            (tracker.scan(), t.elapsed())
        };
        let engine = &self.engine;
        let ((scan, took), done) = if tracker.watching() {
            // A watch answers at once when nothing moved and walks when something did, which
            // is then usually a change: work beside that walk would be thrown away and slow it.
            let scanned = timed_scan(tracker);
            let done = scanned.0.changed.is_empty().then(|| work(engine));
            (scanned, done)
        } else {
            std::thread::scope(|s| {
                let scanning = s.spawn(|| timed_scan(tracker));
                let done = work(engine);
                let scanned = scanning
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                (scanned, Some(done))
            })
        };
        report.scan_ms = took.as_secs_f64() * 1000.0;
        report.checked = scan.files;
        report.hashed = scan.hashed;
        report.watched = scan.unchanged_by_watch;
        report.named = scan.named_by_watch;
        report.watch_off = scan.watch_off;
        if scan.changed.is_empty() {
            return Ok((report, done));
        }
        report.refreshed = scan.changed.len();
        report.paths = scan.changed.iter().take(20).cloned().collect();
        let t = Instant::now();
        let (keyword_docs, embedded) = self.reindex(&repo)?;
        report.keyword_docs = keyword_docs;
        report.embedded = embedded;
        report.index_ms = t.elapsed().as_secs_f64() * 1000.0;
        let t = Instant::now();
        self.reopen()?;
        report.reopen_ms = t.elapsed().as_secs_f64() * 1000.0;
        Ok((report, None))
    }

    /// The budget `spec` asks for, checked: never 0, never more than the window, capped at
    /// `context.hot.max-tokens`. Returns the tokens and notes on any cap applied.
    pub fn resolve_budget(&self, spec: BudgetSpec) -> Result<(usize, Vec<String>)> {
        let b = &self.config.budget;
        let mut notes = Vec::new();
        if spec.tokens == Some(0) {
            return Err(Error::Budget(format!(
                "a budget of 0 tokens holds nothing: ask for at least context.budget.min-useful-budget ({})",
                b.min_useful_budget
            )));
        }
        let derived = match spec.window {
            Some(0) => {
                return Err(Error::Budget(
                    "a model window of 0 tokens holds nothing: give the model's context window"
                        .into(),
                ));
            }
            Some(w) => {
                if let Some(t) = spec.tokens
                    && t > w
                {
                    return Err(Error::Budget(format!(
                        "budget {t} is larger than the model window {w}: ask for at most {w} tokens"
                    )));
                }
                let d = w
                    .saturating_sub(b.response_reserve)
                    .saturating_sub(spec.tool_definitions);
                if d == 0 {
                    return Err(Error::Budget(format!(
                        "window {w} leaves no room after the response reserve ({}) and tool definitions ({})",
                        b.response_reserve, spec.tool_definitions
                    )));
                }
                Some(d)
            }
            None => None,
        };
        let mut tokens = match (spec.tokens, derived) {
            (Some(t), Some(d)) if t > d => {
                notes.push(format!(
                    "budget {t} lowered to {d}: the window minus the response reserve and tool definitions"
                ));
                d
            }
            (Some(t), _) => t,
            (None, Some(d)) => d,
            (None, None) => self.config.hot.max_tokens,
        };
        if tokens > self.config.hot.max_tokens {
            notes.push(format!(
                "budget {tokens} capped at context.hot.max-tokens ({})",
                self.config.hot.max_tokens
            ));
            tokens = self.config.hot.max_tokens;
        }
        Ok((tokens, notes))
    }

    /// Loads the current memory snapshot (warm decisions, demoted fragments) for retrieval
    /// and scoring; creates no database.
    fn sync_memory(&mut self) -> Result<()> {
        if self.plans.is_none() {
            self.plans =
                PlanStore::open_existing(&self.index_dir, self.policy, Arc::clone(&self.clock))?;
        }
        if let Some(p) = &self.plans {
            self.memory.set(p.snapshot()?);
        }
        Ok(())
    }

    /// The context for a task: refresh, then assemble within the budget. Without a file
    /// watch the assembly runs beside the scan for changed files, again only if it found some.
    pub fn context(&mut self, query: Query, budget: BudgetSpec) -> Result<Context> {
        let (tokens, notes) = self.resolve_budget(budget)?;
        self.sync_memory()?;
        let request = AssemblyRequest {
            query,
            budget: Budget::Tokens(tokens),
            parent: None,
        };
        let (refresh, early) = self.refresh_beside(|engine| engine.assemble(&request))?;
        let mut context = match early {
            Some(assembled) => assembled?,
            None => self.engine.assemble(&request)?,
        };
        context.diagnostics.notes.extend(notes);
        context.diagnostics.notes.extend(refresh.notes());
        context.diagnostics.notes.extend(self.location.clone());
        Ok(Context { context, refresh })
    }

    /// Raw strategy hits for `query` (all configured strategies when `strategies` is empty),
    /// best first, at most `limit`. A name that is not a configured strategy is an error.
    pub fn search(
        &mut self,
        query: &Query,
        strategies: &[String],
        limit: usize,
    ) -> Result<SearchResult> {
        let configured = self.engine.retriever().strategies();
        if let Some(unknown) = strategies
            .iter()
            .find(|s| !configured.iter().any(|c| c.name() == s.as_str()))
        {
            return Err(acms_retrieve::Error::UnknownStrategy(unknown.clone()).into());
        }
        let refresh = self.refresh()?;
        self.sync_memory()?;
        let budget = self.config.hot.max_tokens as u32;
        let execution =
            self.engine
                .retriever()
                .retrieve(query, strategies, &HashMap::new(), budget);
        let corpus = self.engine.retriever().corpus();
        let mut hits: Vec<&Hit> = execution.hits.iter().collect();
        hits.sort_by(|a, b| {
            b.relevance
                .total_cmp(&a.relevance)
                .then(a.node.cmp(&b.node))
                .then(a.strategy.cmp(&b.strategy))
        });
        let hits = hits
            .into_iter()
            .filter_map(|h| {
                let n = corpus.node(h.node)?;
                Some(SearchHit {
                    node: n.id,
                    path: n.path.clone(),
                    start_line: n.start_line,
                    end_line: n.end_line,
                    name: n.qualified_name.clone(),
                    kind: n.kind.name().to_string(),
                    relevance: h.relevance,
                    strategy: h.strategy.to_string(),
                    reason: h.reason.clone(),
                })
            })
            .take(limit)
            .collect();
        if let Some(e) = corpus.take_failure() {
            return Err(e.into());
        }
        Ok(SearchResult {
            hits,
            runs: execution.runs,
            refresh,
        })
    }

    /// The full text of a symbol (its 16-hex-digit id, or a qualified name that names one
    /// symbol) or of a line range `path:start-end`, within `budget` tokens: a symbol falls
    /// back 9 → 4 → 2 → 0, a line range is cut at a line end.
    pub fn expand(&mut self, target: &str, budget: usize) -> Result<Expanded> {
        if budget == 0 {
            return Err(Error::Budget(
                "a budget of 0 tokens holds nothing: give the tokens the text may take".into(),
            ));
        }
        self.refresh()?;
        let target = target.trim();
        if let Some((path, range)) = target.rsplit_once(':')
            && let Some((start, end)) = parse_range(range)
        {
            return self.expand_lines(path, start, end, budget);
        }
        let corpus = self.engine.retriever().corpus();
        let node = match acms_plan::hex_id::parse(target).and_then(|id| corpus.node(id)) {
            Some(n) => n,
            None => {
                let found = if target.is_empty() {
                    Vec::new()
                } else {
                    corpus.find_symbol(target)
                };
                match found.as_slice() {
                    [one] => *one,
                    [] => {
                        return Err(Error::UnknownSymbol(format!(
                            "unknown symbol `{target}`: use a node id (16 hex digits) or path:start-end from a manifest"
                        )));
                    }
                    many => {
                        let names: Vec<String> = many
                            .iter()
                            .take(5)
                            .map(|n| format!("{} {}", n.id, n.qualified_name))
                            .collect();
                        return Err(Error::UnknownSymbol(format!(
                            "`{target}` names {} symbols: use one id ({})",
                            many.len(),
                            names.join(", ")
                        )));
                    }
                }
            }
        };
        let store = self.engine.store();
        let mut smallest = None;
        for depth in Depth::FALLBACK {
            let text = store.text(node.id, depth)?;
            let rendered = acms_assemble::render::fragment(node, depth, &text);
            let tokens = self.counter.count(&rendered);
            if tokens <= budget {
                return Ok(Expanded {
                    path: node.path.clone(),
                    start_line: node.start_line,
                    end_line: node.end_line,
                    name: Some(node.qualified_name.clone()),
                    node: Some(node.id),
                    depth: Some(depth),
                    text: rendered,
                    tokens,
                    truncated: false,
                });
            }
            smallest = Some(tokens);
        }
        Err(Error::Budget(format!(
            "budget {budget} is too small for even the signature of {} ({} tokens)",
            node.qualified_name,
            smallest.unwrap_or(0)
        )))
    }

    fn expand_lines(&self, path: &str, start: u32, end: u32, budget: usize) -> Result<Expanded> {
        let Some(content) = self.engine.store().file_content(path)? else {
            return Err(Error::UnknownSymbol(format!(
                "`{path}` is not an indexed file: use a path from a manifest"
            )));
        };
        let lines: Vec<&str> = content.lines().collect();
        if start as usize > lines.len() {
            return Err(Error::UnknownSymbol(format!(
                "{path} has {} lines: line {start} is past its end",
                lines.len()
            )));
        }
        let end = end.min(lines.len() as u32);
        let render = |last: u32| {
            let mut s = format!("# {path}:{start}-{last}\n");
            for l in &lines[start as usize - 1..last as usize] {
                s.push_str(l);
                s.push('\n');
            }
            s
        };
        let full = render(end);
        let tokens = self.counter.count(&full);
        if tokens <= budget {
            return Ok(Expanded {
                path: path.to_string(),
                start_line: start,
                end_line: end,
                name: None,
                node: None,
                depth: None,
                text: full,
                tokens,
                truncated: false,
            });
        }
        // The longest prefix of whole lines that fits (at least the first line).
        let (mut lo, mut hi) = (start, end);
        if self.counter.count(&render(start)) > budget {
            return Err(Error::Budget(format!(
                "budget {budget} is too small for even line {start} of {path}"
            )));
        }
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if self.counter.count(&render(mid)) <= budget {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let text = render(lo);
        Ok(Expanded {
            path: path.to_string(),
            start_line: start,
            end_line: lo,
            name: None,
            node: None,
            depth: None,
            tokens: self.counter.count(&text),
            text,
            truncated: true,
        })
    }

    /// Starts a plan for `task`.
    pub fn start_plan(&mut self, task: &str) -> Result<(Plan, TierReport)> {
        Ok(self.plans()?.start(task, None)?)
    }

    /// Starts a child plan of `parent`; its phases inherit the skeleton of the parent's
    /// latest phase within `context.budget.skeleton-ratio` of their budget.
    pub fn child_plan(&mut self, parent: PlanId, task: &str) -> Result<(Plan, TierReport)> {
        Ok(self.plans()?.start(task, Some(parent))?)
    }

    /// The context of phase `name` of `plan`: maintenance, refresh, assembly (with the
    /// parent's skeleton for a child plan), then the phase is recorded.
    pub fn phase(
        &mut self,
        plan: PlanId,
        name: &str,
        request: PhaseRequest,
    ) -> Result<PhaseContext> {
        let name = acms_plan::check_phase_name(name)?.to_string();
        let p = self.plans()?.plan(plan)?;
        if p.closed.is_some() {
            return Err(acms_plan::Error::PlanClosed(plan.to_string()).into());
        }
        let (tokens, notes) = self.resolve_budget(request.budget)?;
        self.plans()?.maintain()?;
        self.sync_memory()?;
        // Seeds come from the latest phase of another name: a phase run again sees what it
        // saw before, not its own previous selection (which made re-runs drift).
        let seeds = self.plans()?.last_phase_before(plan, &name)?;
        let before = self.plans()?.last_run(plan, &name)?;
        let parent_phase = match p.parent {
            Some(parent) => self.plans()?.last_phase(parent)?.map(|ph| (parent, ph.seq)),
            None => None,
        };
        let mut text = p.task.clone();
        if !request.focus.trim().is_empty() {
            text.push('\n');
            text.push_str(request.focus.trim());
        }
        let query = Query {
            text,
            mentioned_files: request.mentioned_files.clone(),
            mentioned_symbols: request.mentioned_symbols.clone(),
            previous: seeds
                .as_ref()
                .map(|ph| ph.manifest.iter().map(|f| f.node).collect())
                .unwrap_or_default(),
        };
        // The parent's skeleton is recompressed from the index: after a refresh, again.
        let mut assembly = AssemblyRequest {
            query,
            budget: Budget::Tokens(tokens),
            parent: self.parent_skeleton(p.parent, tokens)?,
        };
        let (refresh, early) = self.refresh_beside(|engine| engine.assemble(&assembly))?;
        let mut context = match early {
            Some(assembled) => assembled?,
            None => {
                assembly.parent = self.parent_skeleton(p.parent, tokens)?;
                self.engine.assemble(&assembly)?
            }
        };
        let inherited_tokens = assembly.parent.as_ref().map_or(0, |s| s.tokens);
        context.diagnostics.notes.extend(notes);
        context.diagnostics.notes.extend(refresh.notes());
        context.diagnostics.notes.extend(self.location.clone());
        let manifest: Vec<FragmentRef> = context
            .manifest
            .iter()
            .map(|m| FragmentRef {
                node: m.node,
                path: m.path.clone(),
                start_line: m.start_line,
                end_line: m.end_line,
                name: m.name.clone(),
                depth: m.depth,
                tokens: m.tokens,
                score: m.score,
            })
            .collect();
        let inputs = self.phase_inputs(&request, seeds.map(|ph| ph.seq), parent_phase, &context);
        let (phase, memory) = self.plans()?.record_phase(NewPhase {
            plan,
            name,
            focus: request.focus.trim().to_string(),
            budget: tokens,
            tokens: context.tokens,
            refreshed: refresh.refreshed,
            manifest,
            inputs,
        })?;
        let changes = before.map(|b| acms_plan::compare(&b, &phase));
        Ok(PhaseContext {
            plan: p,
            phase,
            context,
            refresh,
            memory,
            inherited_tokens,
            changes,
        })
    }

    /// What a phase is assembled from besides its task, focus and budget.
    fn phase_inputs(
        &self,
        request: &PhaseRequest,
        seeded_by: Option<i64>,
        parent_phase: Option<(PlanId, i64)>,
        context: &AssembledContext,
    ) -> PhaseInputs {
        let retriever = self.engine.retriever();
        let corpus = retriever.corpus();
        let warm_on = self
            .config
            .strategies
            .enabled
            .iter()
            .any(|s| s == acms_plan::WARM_MEMORY);
        let (corrections, warm) = self.memory.with(|m| {
            let warm = if warm_on {
                m.warm.iter().map(|d| d.id).collect()
            } else {
                Vec::new()
            };
            (m.demoted.values().sum(), warm)
        });
        PhaseInputs {
            seeded_by,
            mentioned_files: request.mentioned_files.clone(),
            mentioned_symbols: request.mentioned_symbols.clone(),
            parent_phase,
            index: format!("{}:{}", corpus.store_id(), corpus.generation()),
            strategy_notes: retriever.notes().to_vec(),
            strategies_missing: context
                .diagnostics
                .strategies
                .iter()
                .filter_map(|r| match &r.status {
                    RunStatus::Ok { .. } => None,
                    RunStatus::Failed { .. } => Some(format!("{} failed", r.strategy)),
                    RunStatus::Panicked => Some(format!("{} panicked", r.strategy)),
                    RunStatus::TimedOut => Some(format!("{} timed out", r.strategy)),
                    RunStatus::CircuitOpen => Some(format!("{} breaker open", r.strategy)),
                })
                .collect(),
            corrections,
            warm,
        }
    }

    /// The skeleton of `parent`'s latest phase, recompressed from the current index for a
    /// child budget of `total` tokens.
    fn parent_skeleton(
        &mut self,
        parent: Option<PlanId>,
        total: usize,
    ) -> Result<Option<Skeleton>> {
        let Some(parent) = parent else {
            return Ok(None);
        };
        let Some(last) = self.plans()?.last_phase(parent)? else {
            return Ok(None);
        };
        let placed: Vec<Placed> = last
            .manifest
            .iter()
            .map(|f| Placed {
                fragment: Fragment {
                    node: f.node,
                    hits: Vec::new(),
                    max_depth: f.depth,
                    cost: [0; 4],
                    relevance: f.score,
                    score: f.score,
                },
                depth: f.depth,
            })
            .collect();
        let pipeline = self.components.pipeline(&self.config.pipeline)?;
        let quality: HashMap<String, f32> = self
            .engine
            .retriever()
            .strategies()
            .iter()
            .map(|s| (s.name().to_string(), s.max_quality()))
            .collect();
        let ctx = StageContext {
            corpus: self.engine.retriever().corpus(),
            store: self.engine.store(),
            counter: &self.counter,
            config: &self.config,
            strategy_quality: &quality,
        };
        let target = (total as f64 * self.config.budget.skeleton_ratio) as usize;
        let skeleton = pipeline
            .skeleton_compressor
            .component
            .compress(&ctx, &placed, target);
        Ok((!skeleton.text.is_empty()).then_some(skeleton))
    }

    /// Records a decision taken in the latest run of `phase`, on the fragments `fragments`
    /// (node ids from that phase's manifest; all of them when empty).
    pub fn decide(
        &mut self,
        plan: PlanId,
        phase: &str,
        notes: Option<&str>,
        fragments: &[String],
    ) -> Result<(Decision, TierReport)> {
        let mut nodes = Vec::with_capacity(fragments.len());
        for f in fragments {
            nodes.push(acms_plan::hex_id::parse(f).ok_or_else(|| {
                Error::UnknownSymbol(format!(
                    "`{f}` is not a node id: use the 16-hex-digit ids of the phase's manifest"
                ))
            })?);
        }
        Ok(self.plans()?.decide(plan, phase, notes, &nodes)?)
    }

    /// Closes a plan.
    pub fn close_plan(&mut self, plan: PlanId) -> Result<(Plan, TierReport)> {
        Ok(self.plans()?.close(plan)?)
    }

    /// Phases, decisions and children of a plan.
    pub fn history(&mut self, plan: PlanId) -> Result<(History, TierReport)> {
        Ok(self.plans()?.history(plan)?)
    }

    /// Decisions, newest first (of one tier when given), after maintenance.
    pub fn decisions(&mut self, tier: Option<Tier>) -> Result<(Vec<Decision>, TierReport)> {
        let report = self.plans()?.maintain()?;
        Ok((self.plans()?.decisions(tier, None)?, report))
    }

    /// One decision, for audit.
    pub fn decision(&mut self, id: DecisionId) -> Result<(Decision, TierReport)> {
        let report = self.plans()?.maintain()?;
        Ok((self.plans()?.decision(id)?, report))
    }

    /// Marks a decision corrected: it goes cold and its fragments are demoted in later
    /// scoring.
    pub fn correct(
        &mut self,
        id: DecisionId,
        note: Option<&str>,
    ) -> Result<(Decision, TierReport)> {
        Ok(self.plans()?.correct(id, note)?)
    }
}

/// `12-40` → (12, 40), 1-based and ordered.
fn parse_range(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.split_once('-')?;
    let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
    (a >= 1 && a <= b).then_some((a, b))
}

fn open_engine(
    index_dir: &Path,
    config: &ContextConfig,
    components: &PipelineRegistry,
    memory: &MemoryView,
    llm: Option<Arc<dyn LlmClient>>,
    corpus: Option<acms_retrieve::Corpus>,
) -> Result<Engine> {
    let mut strategies = StrategyRegistry::new();
    acms_plan::register(&mut strategies, memory);
    Ok(Engine::open_with_corpus(
        index_dir,
        config,
        &strategies,
        components,
        llm,
        corpus,
    )?)
}
