//! The evaluation run: per corpus, fetch it, make the tasks and the stripped copy, index the
//! copy with acms, assemble a context per task × budget × set, run the peers on the same
//! tasks, run the ablations, and score everything with the same rules and the same tokenizer.
//!
//! It owns orchestration and metrics (recall, mean tokens, exact-recount violations, latency
//! percentiles). It does not own task rules (`tasks`, `text`), hit decisions (`score`) or the
//! markdown (`report`). Scripts it calls: `scripts/fetch-corpus.sh`, `eval/make_tasks.py`,
//! `eval/peers/setup.sh` and the peer scripts; the model comes from `acms::model::install`.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use acms::core::StrategyId;
use acms::{AssemblyRequest, Budget, ContextConfig, Engine, Query, TokenCounter};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, io};
use crate::score::{self, Hit, Target};
use crate::tasks::{self, Task, TsStats};

/// The ablation budget and the peers' default list.
pub const ABLATION_BUDGET: usize = 4000;
pub const STRATEGIES: [StrategyId; 3] = [
    StrategyId::Keyword,
    StrategyId::Semantic,
    StrategyId::Navigator,
];

/// What to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The acms checkout (scripts and `eval/` are found here).
    pub repo_root: PathBuf,
    /// Where fetched corpora live (`$ACMS_CORPUS_DIR` or `<repo>/.cache/corpora`).
    pub corpus_dir: PathBuf,
    /// Scratch: stripped copies, indexes, raw results (`<repo>/.cache/acms-eval`; not
    /// `.cache/eval`, which `eval/run_peer.py` rewrites).
    pub work_dir: PathBuf,
    pub corpora: Vec<String>,
    /// Tasks per corpus and set (after sampling); `None` = every sampled task.
    pub tasks: Option<usize>,
    pub budgets: Vec<usize>,
    pub sets: Vec<u8>,
    pub peers: Vec<String>,
    pub ablations: bool,
    /// Use a real embedding model (installed by `acms::model::install`); `false` = acms'
    /// built-in hashing embedder, chosen explicitly (fast in debug builds).
    pub model: bool,
    /// Which model (`acms model list`); `None` = acms' default.
    pub model_name: Option<String>,
    /// The model's token limit per text (`max-tokens`); `None` = acms' default.
    pub max_tokens: Option<usize>,
    /// Embed every place, tests and vendored code included (`all-places`).
    pub all_places: bool,
    /// Also run acms without the semantic strategy (keyword + navigator) on every set and
    /// budget: what the semantic strategy contributes.
    pub without_semantic: bool,
    pub seed: u64,
    pub cap: usize,
    /// Progress lines on stderr.
    pub verbose: bool,
    /// Recorded in each [`CorpusReport`] (commit, command, load).
    pub provenance: Option<String>,
}

impl RunOptions {
    /// Defaults for the checkout at `repo_root`: every budget and set, no peers, no ablations.
    pub fn new(repo_root: &Path) -> RunOptions {
        let corpus_dir = std::env::var_os("ACMS_CORPUS_DIR")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| repo_root.join(".cache/corpora"));
        RunOptions {
            repo_root: repo_root.to_path_buf(),
            corpus_dir,
            work_dir: repo_root.join(".cache/acms-eval"),
            corpora: Vec::new(),
            tasks: None,
            budgets: vec![2000, 4000, 8000],
            sets: vec![1, 2],
            peers: Vec::new(),
            ablations: false,
            model: true,
            model_name: None,
            max_tokens: None,
            all_places: false,
            without_semantic: false,
            seed: tasks::DEFAULT_SEED,
            cap: tasks::DEFAULT_CAP,
            verbose: false,
            provenance: None,
        }
    }
}

/// Metrics of one system on one set at one budget.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    pub tasks: usize,
    pub symbol_recall: f64,
    pub code_recall: f64,
    pub mean_tokens: f64,
    /// Results whose exact recount exceeds the budget.
    pub violations: usize,
    /// Tasks the system failed to answer (counted as misses).
    pub errors: usize,
    pub p50_ms: f64,
    pub p95_ms: f64,
}

/// One row of a corpus table: a system (acms, a peer, an ablation) on one task set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub system: String,
    pub set: u8,
    /// Budget → metrics (ablations have only the ablation budget).
    pub budgets: BTreeMap<usize, Metrics>,
    /// Free-text remark (e.g. "same configuration as the default").
    pub note: Option<String>,
}

/// Everything measured on one corpus.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CorpusReport {
    pub corpus: String,
    /// `pypi requests 2.32.3` from the corpus marker.
    pub source: String,
    pub language: String,
    pub files_indexed: usize,
    pub nodes_indexed: usize,
    pub index_seconds: f64,
    pub embedder: String,
    /// Sampled tasks, and how many are used per set.
    pub tasks_sampled: usize,
    pub tasks_per_set: BTreeMap<u8, usize>,
    /// Targets the analyzer located in the stripped copy.
    pub targets_resolved: usize,
    pub rows: Vec<Row>,
    /// TypeScript generator counts (TS corpora only).
    pub ts_candidates: Option<usize>,
    /// How this corpus was measured (commit, command, machine load); set by the caller.
    #[serde(default)]
    pub provenance: Option<String>,
}

/// One scored result, written to `<work>/results/<corpus>.jsonl` for later analysis.
#[derive(Debug, Clone, Serialize)]
struct RawResult<'a> {
    system: &'a str,
    set: u8,
    budget: usize,
    id: &'a str,
    symbol: bool,
    code: bool,
    tokens: usize,
    ms: f64,
    /// acms only: the target's depth in the manifest, and whether its file is there at all.
    depth: Option<u8>,
    file_in_context: bool,
    error: Option<String>,
}

fn log(opts: &RunOptions, msg: impl AsRef<str>) {
    if opts.verbose {
        eprintln!("acms-eval: {}", msg.as_ref());
    }
}

fn run_script(cmd: &mut Command, what: &str) -> Result<String> {
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| Error::Command {
            command: what.to_string(),
            message: e.to_string(),
        })?;
    if !out.status.success() {
        return Err(Error::Command {
            command: what.to_string(),
            message: format!("exit status {}", out.status),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The corpora `scripts/fetch-corpus.sh --list` marks with the `eval` role.
pub fn eval_corpora(repo_root: &Path) -> Result<Vec<String>> {
    let script = repo_root.join("scripts/fetch-corpus.sh");
    let list = run_script(
        Command::new(&script).arg("--list"),
        "fetch-corpus.sh --list",
    )?;
    Ok(list
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .last()
                .is_some_and(|r| r.split(',').any(|r| r == "eval"))
        })
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect())
}

/// `(registry, "registry package version")` from a fetched corpus's marker, fetching it first
/// when it is absent.
pub fn ensure_corpus(opts: &RunOptions, name: &str) -> Result<(String, String)> {
    let marker = opts.corpus_dir.join(name).join(".acms-corpus");
    if !marker.is_file() {
        log(opts, format!("fetching corpus {name}"));
        let script = opts.repo_root.join("scripts/fetch-corpus.sh");
        run_script(
            Command::new(&script)
                .arg(name)
                .env("ACMS_CORPUS_DIR", &opts.corpus_dir),
            &format!("scripts/fetch-corpus.sh {name}"),
        )?;
    }
    let text = std::fs::read_to_string(&marker).map_err(io(&marker))?;
    let field = |k: &str| {
        text.split_whitespace()
            .find_map(|w| w.strip_prefix(k).and_then(|v| v.strip_prefix('=')))
            .unwrap_or("?")
            .to_string()
    };
    let registry = field("registry");
    if registry == "?" {
        return Err(Error::UnknownCorpus(name.to_string()));
    }
    let source = format!("{} {} {}", registry, field("package"), field("version"));
    Ok((registry, source))
}

/// The model directory from `acms::model::install` (the model), or `None` (built-in embedder) when the
/// script fails.
pub fn ensure_model(opts: &RunOptions) -> Option<PathBuf> {
    if !opts.model {
        return None;
    }
    let name = opts
        .model_name
        .as_deref()
        .unwrap_or(acms::model::DEFAULT_MODEL);
    match acms::model::install(name, None) {
        Ok(dir) => Some(dir),
        Err(e) => {
            eprintln!("acms-eval: {e}; using the built-in embedder");
            None
        }
    }
}

/// The tasks of one corpus and its stripped copy (written under `<work>/stripped/<name>`).
pub fn prepare_tasks(
    opts: &RunOptions,
    name: &str,
    registry: &str,
) -> Result<(Vec<Task>, PathBuf, Option<TsStats>)> {
    let stripped_parent = opts.work_dir.join("stripped");
    std::fs::create_dir_all(&stripped_parent).map_err(io(&stripped_parent))?;
    let stripped = stripped_parent.join(name);
    if registry == "pypi" {
        let tasks = tasks::python_tasks(
            &opts.repo_root,
            &opts.corpus_dir,
            name,
            &stripped_parent,
            opts.seed,
            opts.cap,
        )?;
        Ok((tasks, stripped, None))
    } else {
        let root = opts.corpus_dir.join(name);
        let (tasks, stats) = tasks::typescript_tasks(name, &root, opts.seed, opts.cap)?;
        tasks::write_stripped(&root, &stripped, &tasks)?;
        Ok((tasks, stripped, Some(stats)))
    }
}

/// The tasks used for `set`: those with a query for it, then at most `opts.tasks` of them.
pub fn tasks_for_set<'t>(
    opts: &RunOptions,
    corpus: &str,
    all: &'t [Task],
    set: u8,
) -> Vec<&'t Task> {
    let with: Vec<Task> = all
        .iter()
        .filter(|t| t.query(set).is_some())
        .cloned()
        .collect();
    let chosen = match opts.tasks {
        Some(n) => tasks::sample(with, &format!("{}:pick:{corpus}", opts.seed), n),
        None => with,
    };
    let ids: HashSet<&str> = chosen.iter().map(|t| t.id.as_str()).collect();
    all.iter().filter(|t| ids.contains(t.id.as_str())).collect()
}

/// Nearest-rank percentile of `xs` (sorted here).
pub fn percentile(xs: &[f64], q: f64) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let i = (q * (v.len() - 1) as f64).round() as usize;
    v[i.min(v.len() - 1)]
}

/// Accumulates one (system, set, budget) cell.
#[derive(Default)]
struct Cell {
    hits: Vec<Hit>,
    tokens: Vec<usize>,
    ms: Vec<f64>,
    violations: usize,
    errors: usize,
}

impl Cell {
    fn metrics(&self) -> Metrics {
        let n = self.hits.len().max(1) as f64;
        Metrics {
            tasks: self.hits.len(),
            symbol_recall: self.hits.iter().filter(|h| h.symbol).count() as f64 / n,
            code_recall: self.hits.iter().filter(|h| h.code).count() as f64 / n,
            mean_tokens: self.tokens.iter().sum::<usize>() as f64 / n,
            violations: self.violations,
            errors: self.errors,
            p50_ms: percentile(&self.ms, 0.5),
            p95_ms: percentile(&self.ms, 0.95),
        }
    }
}

/// Runs acms with `config` on `tasks` at `budgets`; appends raw results to `raw`.
#[allow(clippy::too_many_arguments)]
fn run_acms(
    index_dir: &Path,
    config: &ContextConfig,
    system: &str,
    set: u8,
    tasks: &[&Task],
    targets: &BTreeMap<String, Target>,
    budgets: &[usize],
    raw: &mut Vec<String>,
) -> Result<Row> {
    let engine = Engine::open(index_dir, config)?;
    let counter = config.tokenizer.counter();
    let mut cells: BTreeMap<usize, Cell> = BTreeMap::new();
    for t in tasks {
        let (Some(q), Some(target)) = (t.query(set), targets.get(&t.id)) else {
            continue;
        };
        for &b in budgets {
            let cell = cells.entry(b).or_default();
            let started = Instant::now();
            let res = engine.assemble(&AssemblyRequest {
                query: Query::new(q),
                budget: Budget::Tokens(b),
                parent: None,
            });
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            cell.ms.push(ms);
            let (hit, tokens, depth, file_in, error) = match res {
                Ok(ctx) => {
                    // Never trust the reported count: recount the text we would send.
                    let tokens = counter.count(&ctx.text);
                    if tokens > b {
                        cell.violations += 1;
                    }
                    let hit = score::score_acms(target, &ctx.manifest, &ctx.text);
                    let depth = score::manifest_depth(target, &ctx.manifest);
                    let file_in = ctx.manifest.iter().any(|e| e.path == target.path);
                    (hit, tokens, depth, file_in, None)
                }
                Err(e) => {
                    cell.errors += 1;
                    (Hit::default(), 0, None, false, Some(e.to_string()))
                }
            };
            cell.hits.push(hit);
            cell.tokens.push(tokens);
            raw.push(raw_line(&RawResult {
                system,
                set,
                budget: b,
                id: &t.id,
                symbol: hit.symbol,
                code: hit.code,
                tokens,
                ms,
                depth,
                file_in_context: file_in,
                error,
            }));
        }
    }
    Ok(Row {
        system: system.to_string(),
        set,
        budgets: cells.iter().map(|(b, c)| (*b, c.metrics())).collect(),
        note: None,
    })
}

fn raw_line(r: &RawResult<'_>) -> String {
    serde_json::to_string(r).unwrap_or_default()
}

/// One peer task line and one peer result line (`eval/peers/common.py`'s protocol).
#[derive(Serialize)]
pub(crate) struct PeerTask<'a> {
    pub id: String,
    pub repo: &'a str,
    pub query: &'a str,
    pub mentioned_idents: &'a [String],
    pub budget: usize,
}

#[derive(Deserialize)]
pub(crate) struct PeerResult {
    pub id: String,
    #[serde(default)]
    pub map: String,
    #[serde(default)]
    pub seconds: f64,
    #[serde(default)]
    pub error: Option<String>,
}

/// The peers' Python: `$ACMS_EVAL_PYTHON`, else the venv `eval/peers/setup.sh` builds.
pub fn ensure_peer_python(opts: &RunOptions) -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("ACMS_EVAL_PYTHON").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let venv = opts.repo_root.join(".cache/eval-venv/bin/python");
    if venv.exists() {
        return Ok(venv);
    }
    let script = opts.repo_root.join("eval/peers/setup.sh");
    let out = run_script(&mut Command::new(&script), "eval/peers/setup.sh")?;
    Ok(out
        .lines()
        .last()
        .map(|l| PathBuf::from(l.trim()))
        .unwrap_or(venv))
}

fn peer_script(peer: &str) -> Result<(&'static str, &'static [&'static str])> {
    match peer {
        "aider" => Ok(("aider_map.py", &[])),
        "bm25" => Ok(("bm25_files.py", &[])),
        "bm25-first-fit" => Ok(("bm25_files.py", &["--first-fit"])),
        other => Err(Error::Argument(format!(
            "unknown peer '{other}' (known: aider, bm25, bm25-first-fit)"
        ))),
    }
}

/// Runs one peer once over every (set, task, budget) and scores its maps.
#[allow(clippy::too_many_arguments)]
fn run_peer(
    opts: &RunOptions,
    python: &Path,
    peer: &str,
    stripped: &Path,
    by_set: &BTreeMap<u8, Vec<&Task>>,
    targets: &BTreeMap<String, Target>,
    counter: &dyn TokenCounter,
    raw: &mut Vec<String>,
) -> Result<Vec<Row>> {
    let repo = stripped.to_string_lossy().into_owned();
    let mut input = String::new();
    for (&set, tasks) in by_set {
        for t in tasks {
            let Some(q) = t.query(set) else { continue };
            for &b in &opts.budgets {
                let line = serde_json::to_string(&PeerTask {
                    id: format!("{}#{set}#{b}", t.id),
                    repo: &repo,
                    query: q,
                    mentioned_idents: t.idents(set),
                    budget: b,
                })
                .unwrap_or_default();
                input.push_str(&line);
                input.push('\n');
            }
        }
    }
    let corpus = stripped
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let results = peer_maps(opts, python, peer, input, &corpus)?;
    let files: HashSet<String> = tasks::list_files(stripped)?.into_iter().collect();

    let mut rows = Vec::new();
    for (&set, tasks) in by_set {
        let mut cells: BTreeMap<usize, Cell> = BTreeMap::new();
        for t in tasks {
            let Some(target) = targets.get(&t.id) else {
                continue;
            };
            if t.query(set).is_none() {
                continue;
            }
            for &b in &opts.budgets {
                let cell = cells.entry(b).or_default();
                let r = results.get(&format!("{}#{set}#{b}", t.id));
                let (hit, tokens, ms, error) = match r {
                    Some(r) if r.error.is_none() => {
                        let tokens = counter.count(&r.map);
                        if tokens > b {
                            cell.violations += 1;
                        }
                        let hit = score::score_peer(target, &r.map, &files);
                        (hit, tokens, r.seconds * 1000.0, None)
                    }
                    other => {
                        cell.errors += 1;
                        let why = other
                            .and_then(|r| r.error.clone())
                            .unwrap_or_else(|| "no result".into());
                        (Hit::default(), 0, 0.0, Some(why))
                    }
                };
                if error.is_none() {
                    cell.ms.push(ms);
                }
                cell.hits.push(hit);
                cell.tokens.push(tokens);
                raw.push(raw_line(&RawResult {
                    system: peer,
                    set,
                    budget: b,
                    id: &t.id,
                    symbol: hit.symbol,
                    code: hit.code,
                    tokens,
                    ms,
                    depth: None,
                    file_in_context: false,
                    error,
                }));
            }
        }
        rows.push(Row {
            system: peer.to_string(),
            set,
            budgets: cells.iter().map(|(b, c)| (*b, c.metrics())).collect(),
            note: None,
        });
    }
    Ok(rows)
}

/// Feeds `input` (peer task lines) to one peer and returns its results by id. The peer's own
/// log (Aider's progress, per-repo setup time) is kept next to the results as
/// `<peer>-<log_name>.stderr`.
pub(crate) fn peer_maps(
    opts: &RunOptions,
    python: &Path,
    peer: &str,
    input: String,
    log_name: &str,
) -> Result<BTreeMap<String, PeerResult>> {
    let (script, args) = peer_script(peer)?;
    let script_path = opts.repo_root.join("eval/peers").join(script);
    let what = format!("peer {peer} ({})", script_path.display());
    // A peer's answers are a function of its script, its arguments and the tasks (trees are
    // named by commit), so a run whose input is unchanged reuses them: Aider's map over a
    // hundred sympy trees takes most of an hour.
    let mut key = blake3::Hasher::new();
    key.update(peer.as_bytes());
    key.update(args.join(" ").as_bytes());
    key.update(&std::fs::read(&script_path).unwrap_or_default());
    key.update(&std::fs::read(script_path.with_file_name("common.py")).unwrap_or_default());
    key.update(input.as_bytes());
    let cache_dir = opts.work_dir.join("peer-answers");
    let cached = cache_dir.join(format!("{peer}-{}.jsonl", key.finalize().to_hex()));
    if let Ok(text) = std::fs::read_to_string(&cached) {
        let results: Vec<PeerResult> = tasks::parse_json_lines(&text, &what)?;
        return Ok(results.into_iter().map(|r| (r.id.clone(), r)).collect());
    }
    let log_dir = opts.work_dir.join("results");
    std::fs::create_dir_all(&log_dir).map_err(io(&log_dir))?;
    let log_path = log_dir.join(format!("{peer}-{log_name}.stderr"));
    let stderr = std::fs::File::create(&log_path).map_err(io(&log_path))?;
    let mut child = Command::new(python)
        .arg(&script_path)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .map_err(|e| Error::Command {
            command: what.clone(),
            message: e.to_string(),
        })?;
    // Feed stdin from a thread: the peer answers while it reads, and a full stdout pipe would
    // otherwise deadlock both sides.
    let mut stdin = child.stdin.take();
    let writer = std::thread::spawn(move || {
        if let Some(s) = stdin.as_mut() {
            let _ = s.write_all(input.as_bytes());
        }
        drop(stdin);
    });
    let out = child.wait_with_output().map_err(|e| Error::Command {
        command: what.clone(),
        message: e.to_string(),
    })?;
    let _ = writer.join();
    let text = String::from_utf8_lossy(&out.stdout);
    let results: Vec<PeerResult> = tasks::parse_json_lines(&text, &what)?;
    if out.status.success() {
        std::fs::create_dir_all(&cache_dir).map_err(io(&cache_dir))?;
        let tmp = cached.with_extension("tmp");
        std::fs::write(&tmp, text.as_bytes()).map_err(io(&tmp))?;
        std::fs::rename(&tmp, &cached).map_err(io(&cached))?;
    }
    Ok(results.into_iter().map(|r| (r.id.clone(), r)).collect())
}

/// The ablation configurations: `(row name, sets, config)`; `None` config = identical to the
/// default configuration (its row is reused).
fn ablations(base: &ContextConfig) -> Vec<(String, Vec<u8>, ContextConfig)> {
    let mut out = Vec::new();
    for s in STRATEGIES {
        let mut c = base.clone();
        c.strategies.enabled = vec![s.to_string()];
        out.push((format!("only {s}"), vec![1, 2], c));
    }
    let mut c = base.clone();
    c.strategies.enabled = STRATEGIES.iter().map(|s| s.to_string()).collect();
    out.push(("all three strategies".into(), vec![1, 2], c));
    let mut c = base.clone();
    c.packer.depth_fallback = vec![acms::Depth::Full, acms::Depth::Skeleton];
    out.push(("depth fallback off [9, 4]".into(), vec![1], c));
    for p in acms::pack::PACKER_NAMES
        .iter()
        .filter(|p| **p != acms::pack::DEFAULT_PACKER)
    {
        let mut c = base.clone();
        c.pipeline.budget_packer = (*p).into();
        out.push((format!("packer {p}"), vec![1], c));
    }
    for f in acms::core::Fusion::ALL {
        let mut c = base.clone();
        c.scoring.fusion = f;
        out.push((format!("fusion {}", f.name()), vec![1], c));
    }
    out
}

/// Whether two configurations assemble identically (`default` packer = `hull`).
fn same_config(a: &ContextConfig, b: &ContextConfig) -> bool {
    let norm = |c: &ContextConfig| {
        let mut c = c.clone();
        if c.pipeline.budget_packer == "default" {
            c.pipeline.budget_packer = acms::pack::DEFAULT_PACKER.into();
        }
        c
    };
    norm(a) == norm(b)
}

/// Runs the whole evaluation of one corpus.
pub fn run_corpus(opts: &RunOptions, name: &str, model_dir: Option<&Path>) -> Result<CorpusReport> {
    let (registry, source) = ensure_corpus(opts, name)?;
    log(opts, format!("{name}: tasks and stripped copy"));
    let (all, stripped, ts_stats) = prepare_tasks(opts, name, &registry)?;
    let targets: BTreeMap<String, Target> = all
        .iter()
        .map(|t| (t.id.clone(), score::resolve_target(t, &stripped)))
        .collect();
    for (id, t) in targets.iter().filter(|(_, t)| !t.resolved) {
        log(
            opts,
            format!(
                "{name}: target not located by the analyzer: {id} ({}:{})",
                t.path, t.start_line
            ),
        );
    }
    let by_set: BTreeMap<u8, Vec<&Task>> = opts
        .sets
        .iter()
        .map(|&s| (s, tasks_for_set(opts, name, &all, s)))
        .collect();

    let mut config = ContextConfig::default();
    match model_dir {
        Some(d) => {
            config.strategies.semantic_embedding.model_dir = Some(d.to_string_lossy().into_owned())
        }
        None => config.strategies.semantic_embedding.embedder = acms::core::EmbedderKind::Hash,
    }
    if let Some(t) = opts.max_tokens {
        config.strategies.semantic_embedding.max_tokens = t;
    }
    config.strategies.semantic_embedding.all_places = opts.all_places;
    let index_dir = opts.work_dir.join("index").join(name);
    let mut iopts = acms::index::IndexOptions::new(&stripped);
    iopts.index_dir = index_dir.clone();
    iopts.config = config.clone();
    iopts.rebuild = true;
    log(opts, format!("{name}: indexing {}", stripped.display()));
    let started = Instant::now();
    let indexed = acms::index_repository(&stripped, &iopts, true)?;
    let index_seconds = started.elapsed().as_secs_f64();
    let embedder = indexed.embedder.clone().unwrap_or_else(|| "none".into());
    log(
        opts,
        format!("{name}: indexed in {index_seconds:.1}s with {embedder}"),
    );

    let mut raw = Vec::new();
    let mut rows = Vec::new();
    for (&set, tasks) in &by_set {
        log(
            opts,
            format!("{name}: acms set {set}, {} tasks", tasks.len()),
        );
        rows.push(run_acms(
            &index_dir,
            &config,
            "acms",
            set,
            tasks,
            &targets,
            &opts.budgets,
            &mut raw,
        )?);
    }
    if opts.without_semantic {
        let mut c = config.clone();
        c.strategies
            .enabled
            .retain(|s| StrategyId::Semantic != s.as_str());
        for (&set, tasks) in &by_set {
            log(opts, format!("{name}: acms without semantic, set {set}"));
            let mut r = run_acms(
                &index_dir,
                &c,
                "acms without semantic-embedding",
                set,
                tasks,
                &targets,
                &opts.budgets,
                &mut raw,
            )?;
            r.system = "acms without semantic-embedding".into();
            rows.push(r);
        }
    }
    if !opts.peers.is_empty() {
        let python = ensure_peer_python(opts)?;
        let counter = config.tokenizer.counter();
        for peer in &opts.peers {
            log(opts, format!("{name}: peer {peer}"));
            rows.extend(run_peer(
                opts, &python, peer, &stripped, &by_set, &targets, &counter, &mut raw,
            )?);
        }
    }
    if opts.ablations {
        for (label, sets, c) in ablations(&config) {
            for set in sets {
                let tasks = match by_set.get(&set) {
                    Some(t) => t.clone(),
                    None => tasks_for_set(opts, name, &all, set),
                };
                let reuse = same_config(&c, &config)
                    .then(|| {
                        rows.iter()
                            .find(|r| r.system == "acms" && r.set == set)
                            .and_then(|r| r.budgets.get(&ABLATION_BUDGET))
                    })
                    .flatten()
                    .cloned();
                let row = match reuse {
                    Some(m) => Row {
                        system: label.clone(),
                        set,
                        budgets: BTreeMap::from([(ABLATION_BUDGET, m)]),
                        note: Some("= default configuration".into()),
                    },
                    None => {
                        log(opts, format!("{name}: ablation {label}, set {set}"));
                        let mut r = run_acms(
                            &index_dir,
                            &c,
                            &label,
                            set,
                            &tasks,
                            &targets,
                            &[ABLATION_BUDGET],
                            &mut raw,
                        )?;
                        r.system = label.clone();
                        r
                    }
                };
                rows.push(row);
            }
        }
    }

    let results_dir = opts.work_dir.join("results");
    std::fs::create_dir_all(&results_dir).map_err(io(&results_dir))?;
    let raw_path = results_dir.join(format!("{name}.jsonl"));
    std::fs::write(&raw_path, raw.join("\n") + "\n").map_err(io(&raw_path))?;

    Ok(CorpusReport {
        corpus: name.to_string(),
        source,
        language: if registry == "pypi" {
            "Python"
        } else {
            "TypeScript"
        }
        .into(),
        files_indexed: indexed.index.files,
        nodes_indexed: indexed.index.nodes,
        index_seconds,
        embedder,
        tasks_sampled: all.len(),
        tasks_per_set: by_set.iter().map(|(s, t)| (*s, t.len())).collect(),
        targets_resolved: targets.values().filter(|t| t.resolved).count(),
        rows,
        ts_candidates: ts_stats.map(|s| s.qualifying),
        provenance: opts.provenance.clone(),
    })
}

/// The model directory acms is configured with: the fetched model, or `None` (`opts.model`
/// off, or the fetch failed), which means the built-in hashing embedder, chosen explicitly.
pub fn model_dir_for(opts: &RunOptions) -> Result<Option<PathBuf>> {
    Ok(if opts.model { ensure_model(opts) } else { None })
}

/// Runs every requested corpus (default: the `eval` corpora of `scripts/fetch-corpus.sh`).
pub fn run(opts: &RunOptions) -> Result<Vec<CorpusReport>> {
    let corpora = if opts.corpora.is_empty() {
        eval_corpora(&opts.repo_root)?
    } else {
        opts.corpora.clone()
    };
    if opts.budgets.is_empty() || opts.budgets.contains(&0) {
        return Err(Error::Argument(
            "budgets must be positive token counts".into(),
        ));
    }
    if opts.sets.iter().any(|s| !matches!(s, 1 | 2)) {
        return Err(Error::Argument("task sets are 1 and 2".into()));
    }
    for p in &opts.peers {
        peer_script(p)?;
    }
    let model = model_dir_for(opts)?;
    let mut out = Vec::new();
    for name in &corpora {
        let report = run_corpus(opts, name, model.as_deref())?;
        let json = opts
            .work_dir
            .join("results")
            .join(format!("{name}.report.json"));
        if let Ok(text) = serde_json::to_string_pretty(&report) {
            std::fs::write(&json, text).map_err(io(&json))?;
        }
        out.push(report);
    }
    Ok(out)
}

/// The per-corpus reports a previous `run` saved under `<work>/results/`, in `corpora` order;
/// corpora without a saved report are skipped.
pub fn saved_reports(work_dir: &Path, corpora: &[String]) -> Result<Vec<CorpusReport>> {
    let mut out = Vec::new();
    for name in corpora {
        let path = work_dir.join("results").join(format!("{name}.report.json"));
        if !path.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&path).map_err(io(&path))?;
        out.push(serde_json::from_str(&text).map_err(|e| Error::Json {
            origin: path.display().to_string(),
            message: e.to_string(),
        })?);
    }
    Ok(out)
}
