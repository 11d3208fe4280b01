//! The real-issue benchmark: does the context hold **the code the agent has to change**?
//!
//! Per task (an issue text or a commit message, see [`crate::realtasks`]): export the base
//! tree, index it with acms, assemble a context per budget, hand the peers (BM25 over whole
//! files, Aider's repo map) the same task and budget, and score every result with the same
//! rules and the same tokenizer:
//! - **files**: every gold file is in the context (acms: a fragment of it; peers: its block);
//! - **symbols**: a gold symbol's declaration line is in its file's part of the context
//!   (micro-averaged over all gold symbols);
//! - **changed lines** (code visible): the fraction of the golden patch's removed lines
//!   (trimmed, at least [`crate::patch::MIN_CHANGED_LINE`] characters) that appear verbatim in
//!   their file's part of the context, averaged over the tasks that have such lines;
//! - tokens (exact recount), over budget, errors, assembly latency.
//!
//! It owns orchestration and these metrics. Task loading and trees are in `realtasks`, the
//! markdown in `report`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use acms::{AssemblyRequest, Budget, ContextConfig, Engine, Query, TokenCounter};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, io};
use crate::harness::{self, PeerTask, RunOptions, percentile};
use crate::realtasks::{self, Gold, IssueTask};
use crate::score::norm;

/// The budget ablations are measured at.
pub const ABLATION_BUDGET: usize = 16_000;

/// What to run, beyond the shared [`RunOptions`] (budgets, peers, model, work dir).
#[derive(Debug, Clone)]
pub struct IssueOptions {
    pub run: RunOptions,
    /// Directory holding the git repositories the tasks name.
    pub repos: PathBuf,
    /// Set names (`swe`, `hono`, `axum`) or task files.
    pub sets: Vec<String>,
    /// Only these task ids (empty = all).
    pub only: Vec<String>,
    /// Re-index trees even when an index exists.
    pub reindex: bool,
    /// Ablation names to run at [`ABLATION_BUDGET`] (see [`ablations`]).
    pub ablations: Vec<String>,
    /// Suffix of the result files (`issues-<set>-<tag>.jsonl`), to keep experiments apart.
    pub tag: Option<String>,
}

impl IssueOptions {
    fn results_name(&self, set: &str, ext: &str) -> String {
        let set = crate::realtasks::set_name(set);
        match &self.tag {
            Some(t) => format!("issues-{set}-{t}.{ext}"),
            None => format!("issues-{set}.{ext}"),
        }
    }
}

/// Metrics of one system on one set at one budget.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IssueMetrics {
    pub tasks: usize,
    /// Fraction of tasks with every gold file in the context.
    pub files_all: f64,
    /// Gold symbols whose declaration line is visible, over all gold symbols located.
    pub symbols: f64,
    pub symbols_total: usize,
    /// Mean changed-line coverage over the tasks that have changed lines.
    pub changed: f64,
    pub changed_tasks: usize,
    pub mean_tokens: f64,
    pub over_budget: usize,
    pub errors: usize,
    pub p50_ms: f64,
    pub p95_ms: f64,
}

/// One row: a system on one set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IssueRow {
    pub system: String,
    pub budgets: BTreeMap<usize, IssueMetrics>,
    pub note: Option<String>,
}

/// Everything measured on one set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetReport {
    pub set: String,
    pub language: String,
    pub tasks: usize,
    pub repos: Vec<String>,
    pub symbols_unresolved: usize,
    pub embedder: String,
    pub index_seconds: f64,
    pub rows: Vec<IssueRow>,
    pub provenance: Option<String>,
}

/// One task's score for one system and budget.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TaskScore {
    pub files_all: bool,
    pub symbols_visible: usize,
    pub symbols_total: usize,
    pub changed_found: usize,
    pub changed_total: usize,
}

/// The context split into per-file blocks of normalized lines.
pub type Blocks = HashMap<String, Vec<String>>;

/// Splits an acms context at its fragment headers (`# path:start-end …`, path a file of the
/// tree) into per-file blocks.
pub fn acms_blocks(text: &str, files: &HashSet<String>) -> Blocks {
    let mut blocks: Blocks = HashMap::new();
    let mut cur: Option<String> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# ") {
            let head = rest.split(' ').next().unwrap_or("");
            if let Some((path, span)) = head.rsplit_once(':')
                && span.split('-').all(|n| n.parse::<u32>().is_ok())
                && files.contains(path)
            {
                blocks.entry(path.to_string()).or_default();
                cur = Some(path.to_string());
                continue;
            }
        }
        if let Some(p) = &cur {
            blocks
                .entry(p.clone())
                .or_default()
                .push(norm(line).to_string());
        }
    }
    blocks
}

/// A peer's map split at its `path:` lines.
pub fn peer_blocks(text: &str, files: &HashSet<String>) -> Blocks {
    crate::score::file_blocks(text, files)
        .into_iter()
        .map(|(p, lines)| {
            (
                p.to_string(),
                lines.into_iter().map(|l| norm(l).to_string()).collect(),
            )
        })
        .collect()
}

/// `line` without an opening brace at its end.
fn without_brace(line: &str) -> &str {
    line.strip_suffix('{').map_or(line, str::trim_end)
}

/// Scores one context given as per-file blocks.
pub fn score(gold: &Gold, blocks: &Blocks) -> TaskScore {
    let sets: HashMap<&str, HashSet<&str>> = blocks
        .iter()
        .map(|(p, ls)| (p.as_str(), ls.iter().map(String::as_str).collect()))
        .collect();
    let has = |path: &str, line: &str| sets.get(path).is_some_and(|s| s.contains(line));
    // A declaration shown as a signature (depth 0 or 2) lacks the block's opening brace that
    // ends its source line (`pub struct MultipartError {`): found as written or without it.
    let declared = |path: &str, line: &str| has(path, line) || has(path, without_brace(line));
    TaskScore {
        files_all: gold.files.iter().all(|f| sets.contains_key(f.as_str())),
        symbols_visible: gold
            .symbols
            .iter()
            .filter(|s| !s.def_line.is_empty() && declared(&s.path, &s.def_line))
            .count(),
        symbols_total: gold.symbols.len(),
        changed_found: gold
            .changed
            .iter()
            .map(|(p, ls)| ls.iter().filter(|l| has(p, l)).count())
            .sum(),
        changed_total: gold.changed_count(),
    }
}

#[derive(Default)]
struct Cell {
    scores: Vec<TaskScore>,
    tokens: Vec<usize>,
    ms: Vec<f64>,
    over: usize,
    errors: usize,
}

impl Cell {
    fn push(&mut self, s: TaskScore, tokens: usize, budget: usize, ms: Option<f64>) {
        if tokens > budget {
            self.over += 1;
        }
        if let Some(ms) = ms {
            self.ms.push(ms);
        }
        self.scores.push(s);
        self.tokens.push(tokens);
    }

    fn metrics(&self) -> IssueMetrics {
        let n = self.scores.len().max(1) as f64;
        let sym_total: usize = self.scores.iter().map(|s| s.symbols_total).sum();
        let sym_vis: usize = self.scores.iter().map(|s| s.symbols_visible).sum();
        let with_changed: Vec<f64> = self
            .scores
            .iter()
            .filter(|s| s.changed_total > 0)
            .map(|s| s.changed_found as f64 / s.changed_total as f64)
            .collect();
        IssueMetrics {
            tasks: self.scores.len(),
            files_all: self.scores.iter().filter(|s| s.files_all).count() as f64 / n,
            symbols: sym_vis as f64 / sym_total.max(1) as f64,
            symbols_total: sym_total,
            changed: with_changed.iter().sum::<f64>() / with_changed.len().max(1) as f64,
            changed_tasks: with_changed.len(),
            mean_tokens: self.tokens.iter().sum::<usize>() as f64 / n,
            over_budget: self.over,
            errors: self.errors,
            p50_ms: percentile(&self.ms, 0.5),
            p95_ms: percentile(&self.ms, 0.95),
        }
    }
}

/// A prepared task: its tree, index and gold.
#[derive(Clone)]
struct Prepared {
    task: IssueTask,
    tree: PathBuf,
    index: PathBuf,
    gold: Gold,
    files: HashSet<String>,
}

fn log(opts: &IssueOptions, msg: impl AsRef<str>) {
    if opts.run.verbose {
        eprintln!("acms-eval: {}", msg.as_ref());
    }
}

/// The configuration acms runs with: the defaults, with the model directory when one is used.
pub fn base_config(model_dir: Option<&Path>) -> ContextConfig {
    let mut config = ContextConfig::default();
    match model_dir {
        Some(d) => {
            config.strategies.semantic_embedding.model_dir = Some(d.to_string_lossy().into_owned())
        }
        // No model: the built-in hashing embedder, which acms uses only when told to.
        None => config.strategies.semantic_embedding.embedder = acms::core::EmbedderKind::Hash,
    }
    config
}

/// Where the tasks' indexes built with `config` live under `work_dir`. Indexes with a model's
/// vectors and without them live apart, and so do two models' (or two token limits'): the
/// marker of one is not the other's, and a mismatched index would open with the semantic
/// strategy unavailable and be measured without it.
pub fn index_root(work_dir: &Path, model_dir: Option<&Path>, config: &ContextConfig) -> PathBuf {
    match model_dir {
        Some(dir) => work_dir.join("issue-index-model").join(format!(
            "{}-t{}",
            dir.file_name().unwrap_or_default().to_string_lossy(),
            config.strategies.semantic_embedding.max_tokens
        )),
        None => work_dir.join("issue-index"),
    }
}

/// The named ablations of the real-issue benchmark: each switches one of the relevance or
/// packing changes back off (or a strategy out), so the report shows what each bought.
pub fn ablations(base: &ContextConfig) -> Vec<(String, ContextConfig)> {
    let mut out = Vec::new();
    for s in harness::STRATEGIES {
        let mut c = base.clone();
        c.strategies.enabled.retain(|e| s != e.as_str());
        out.push((format!("without {s}"), c));
    }
    let mut c = base.clone();
    c.pipeline.fragment_scorer = "weighted-sum".into();
    out.push(("scorer weighted-sum (the spec's composite)".into(), c));
    for p in ["greedy", "hull"] {
        debug_assert!(acms::pack::PACKER_NAMES.contains(&p));
        let mut c = base.clone();
        c.pipeline.budget_packer = p.into();
        out.push((format!("packer {p}"), c));
    }
    out
}

/// Indexes `tree` into `index` unless a complete index is there (a marker is written last).
/// A new index starts as a copy of `seed` (the previous task's index of the same repository)
/// and is updated incrementally, so only the files that differ between the two base commits
/// are parsed again — the same path a user's re-index takes. A complete index is re-indexed
/// too, which costs a walk when nothing changed and brings an index of an older acms (other
/// analyzers, another keyword schema) up to date, as `acms index` does for a user.
fn ensure_index(
    opts: &IssueOptions,
    tree: &Path,
    index: &Path,
    seed: Option<&Path>,
    config: &ContextConfig,
) -> Result<Option<(f64, String)>> {
    let marker = index.join(".acms-eval-indexed");
    let mut iopts = acms::index::IndexOptions::new(tree);
    iopts.index_dir = index.to_path_buf();
    iopts.config = config.clone();
    if marker.is_file() && !opts.reindex && Engine::open(index, config).is_ok() {
        acms::index_repository(tree, &iopts, opts.run.model)?;
        return Ok(None);
    }
    if index.exists() {
        std::fs::remove_dir_all(index).map_err(io(index))?;
    }
    let seeded = match seed.filter(|s| s.join(".acms-eval-indexed").is_file() && !opts.reindex) {
        Some(seed) => {
            copy_dir(seed, index)?;
            std::fs::remove_file(&marker).map_err(io(&marker))?;
            true
        }
        None => false,
    };
    iopts.rebuild = !seeded;
    let started = Instant::now();
    // Without the model there are no vectors at all (the semantic strategy is then
    // unavailable, as it is for a user without the model), which also keeps the ~100 task
    // indexes small.
    let report = acms::index_repository(tree, &iopts, opts.run.model)?;
    let secs = started.elapsed().as_secs_f64();
    std::fs::write(&marker, format!("{secs}")).map_err(io(&marker))?;
    Ok(Some((
        secs,
        report.embedder.unwrap_or_else(|| "none".into()),
    )))
}

/// `cp -a src dst` (an index directory: a few files and the keyword index's segments).
fn copy_dir(src: &Path, dst: &Path) -> Result<()> {
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(src)
        .arg(dst)
        .status()
        .map_err(io(dst))?;
    if !status.success() {
        return Err(Error::Command {
            command: format!("cp -a {} {}", src.display(), dst.display()),
            message: format!("exit status {status}"),
        });
    }
    Ok(())
}

/// Commit time of `commit` (seconds), for ordering a repository's tasks.
fn commit_time(git_dir: &Path, commit: &str) -> i64 {
    realtasks::git(git_dir, &["show", "-s", "--format=%ct", commit])
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

fn sample(tasks: Vec<IssueTask>, n: Option<usize>, only: &[String]) -> Vec<IssueTask> {
    let mut tasks: Vec<IssueTask> = tasks
        .into_iter()
        .filter(|t| only.is_empty() || only.contains(&t.instance_id))
        .collect();
    tasks.sort_by(|a, b| a.instance_id.cmp(&b.instance_id));
    if let Some(n) = n {
        // Every k-th task, so a quick run still spans the set's repositories and years.
        let step = (tasks.len() as f64 / n.max(1) as f64).max(1.0);
        tasks = (0..n.min(tasks.len()))
            .map(|i| tasks[(i as f64 * step) as usize].clone())
            .collect();
    }
    tasks
}

/// Runs one set: acms (default), the requested ablations, and the peers.
pub fn run_set(opts: &IssueOptions, set: &str, model_dir: Option<&Path>) -> Result<SetReport> {
    let file = realtasks::set_file(&opts.run.repo_root, set)?;
    let tasks = sample(realtasks::load(&file)?, opts.run.tasks, &opts.only);
    if tasks.is_empty() {
        return Err(Error::Argument(format!("set {set}: no tasks selected")));
    }
    // Every repository up front, so a missing one is named before any work.
    let mut git_dirs: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut missing = Vec::new();
    for t in &tasks {
        if git_dirs.contains_key(&t.repo) {
            continue;
        }
        match realtasks::find_repo(&opts.repos, &t.repo) {
            Ok(d) => {
                git_dirs.insert(t.repo.clone(), d);
            }
            Err(e) => missing.push(e.to_string()),
        }
    }
    if !missing.is_empty() {
        missing.dedup();
        return Err(Error::Argument(missing.join("; ")));
    }

    let config = base_config(model_dir);
    let trees = opts.run.work_dir.join("trees");
    let indexes = index_root(&opts.run.work_dir, model_dir, &config);
    let mut index_seconds = 0.0;
    let mut embedder = String::from("(cached indexes)");
    let mut unresolved = 0;
    // Per repository in commit order, so each index is the previous one plus a small delta.
    let mut order: Vec<(String, i64, usize)> = tasks
        .iter()
        .enumerate()
        .map(|(i, t)| {
            (
                t.repo.clone(),
                commit_time(&git_dirs[&t.repo], &t.base_commit),
                i,
            )
        })
        .collect();
    order.sort();
    let mut last_index: HashMap<String, PathBuf> = HashMap::new();
    let mut by_task: Vec<Option<Prepared>> = vec![None; tasks.len()];
    for (n, (_, _, i)) in order.iter().enumerate() {
        let t = &tasks[*i];
        let git_dir = &git_dirs[&t.repo];
        let tree = realtasks::export_tree(git_dir, &trees, &t.repo, &t.base_commit)?;
        let index = indexes.join(t.repo.replace('/', "+")).join(&t.base_commit);
        let seed = last_index.insert(t.repo.clone(), index.clone());
        if let Some((secs, e)) = ensure_index(opts, &tree, &index, seed.as_deref(), &config)? {
            log(
                opts,
                format!(
                    "{set} {}/{}: indexed {} in {secs:.1}s ({e})",
                    n + 1,
                    tasks.len(),
                    t.instance_id
                ),
            );
            index_seconds += secs;
            embedder = e;
        }
        let gold = realtasks::resolve_gold(t, &tree);
        unresolved += gold.unresolved.len();
        let files: HashSet<String> = crate::tasks::list_files(&tree)?.into_iter().collect();
        by_task[*i] = Some(Prepared {
            task: t.clone(),
            tree,
            index,
            gold,
            files,
        });
    }
    let prepared: Vec<Prepared> = by_task.into_iter().flatten().collect();

    let results_dir = opts.run.work_dir.join("results");
    std::fs::create_dir_all(&results_dir).map_err(io(&results_dir))?;
    let mut raw: Vec<String> = Vec::new();
    let mut rows = vec![run_acms(
        opts,
        "acms",
        &config,
        &prepared,
        &opts.run.budgets,
        &mut raw,
        true,
    )?];
    let known = ablations(&config);
    for name in &opts.ablations {
        let Some((label, c)) = known.iter().find(|(l, _)| l == name) else {
            return Err(Error::Argument(format!(
                "unknown ablation '{name}' (known: {})",
                known
                    .iter()
                    .map(|(l, _)| l.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        log(opts, format!("{set}: ablation {label}"));
        rows.push(run_acms(
            opts,
            label,
            c,
            &prepared,
            &[ABLATION_BUDGET],
            &mut raw,
            false,
        )?);
    }
    if !opts.run.peers.is_empty() {
        let python = harness::ensure_peer_python(&opts.run)?;
        let counter = config.tokenizer.counter();
        for peer in &opts.run.peers {
            log(opts, format!("{set}: peer {peer}"));
            rows.push(run_peer(
                opts, &python, peer, set, &prepared, &counter, &mut raw,
            )?);
        }
    }
    let raw_path = results_dir.join(opts.results_name(set, "jsonl"));
    std::fs::write(&raw_path, raw.join("\n") + "\n").map_err(io(&raw_path))?;

    Ok(SetReport {
        set: set.to_string(),
        language: realtasks::set_language(set, &tasks),
        tasks: prepared.len(),
        repos: git_dirs.keys().cloned().collect(),
        symbols_unresolved: unresolved,
        embedder,
        index_seconds,
        rows,
        provenance: opts.run.provenance.clone(),
    })
}

/// Where a gold symbol ended up in an acms assembly (for the loss analysis).
#[derive(Debug, Serialize)]
struct GoldFate {
    spec: String,
    /// `packed N` (depth), `dropped <reason>`, `not retrieved`, or `not indexed`.
    fate: String,
    /// 1-based rank by score among the packed fragments, when packed.
    rank: Option<usize>,
    /// 1-based rank of the symbol's file among the context's files (by best fragment score).
    file_rank: Option<usize>,
}

#[derive(Debug, Serialize)]
struct RawAcms<'a> {
    system: &'a str,
    id: &'a str,
    budget: usize,
    #[serde(flatten)]
    score: &'a TaskScore,
    tokens: usize,
    ms: f64,
    fragments: usize,
    files: usize,
    /// blake3 of the context text: two runs packed the same context exactly when these match.
    text_hash: String,
    gold: Vec<GoldFate>,
    error: Option<String>,
}

fn gold_fates(gold: &Gold, engine: &Engine, ctx: &acms::AssembledContext) -> Vec<GoldFate> {
    let corpus = engine.retriever().corpus();
    let mut by_score: Vec<&acms::ManifestEntry> = ctx.manifest.iter().collect();
    by_score.sort_by(|a, b| b.score.total_cmp(&a.score));
    let mut files: Vec<&str> = Vec::new();
    for e in &by_score {
        if !files.contains(&e.path.as_str()) {
            files.push(&e.path);
        }
    }
    let file_rank = |path: &str| files.iter().position(|f| *f == path).map(|i| i + 1);
    gold.symbols
        .iter()
        .map(|s| {
            let node = corpus
                .nodes()
                .iter()
                .find(|n| n.path == s.path && n.start_line == s.start_line);
            let Some(node) = node else {
                return GoldFate {
                    spec: s.spec.clone(),
                    fate: "not indexed".into(),
                    rank: None,
                    file_rank: file_rank(&s.path),
                };
            };
            if let Some(pos) = by_score.iter().position(|e| e.node == node.id) {
                return GoldFate {
                    spec: s.spec.clone(),
                    fate: format!("packed {}", by_score[pos].depth),
                    rank: Some(pos + 1),
                    file_rank: file_rank(&s.path),
                };
            }
            let fate = match ctx.dropped.iter().find(|d| d.node == node.id) {
                Some(d) => format!("dropped {:?}", d.reason),
                None => "not retrieved".into(),
            };
            GoldFate {
                spec: s.spec.clone(),
                fate,
                rank: None,
                file_rank: file_rank(&s.path),
            }
        })
        .collect()
}

fn run_acms(
    opts: &IssueOptions,
    system: &str,
    config: &ContextConfig,
    prepared: &[Prepared],
    budgets: &[usize],
    raw: &mut Vec<String>,
    fates: bool,
) -> Result<IssueRow> {
    let counter = config.tokenizer.counter();
    let mut cells: BTreeMap<usize, Cell> = BTreeMap::new();
    for (i, p) in prepared.iter().enumerate() {
        let engine = match Engine::open(&p.index, config) {
            Ok(e) => e,
            Err(e) => {
                for &b in budgets {
                    let cell = cells.entry(b).or_default();
                    cell.errors += 1;
                    cell.push(score(&p.gold, &Blocks::new()), 0, b, None);
                }
                log(
                    opts,
                    format!("{}: engine failed to open: {e}", p.task.instance_id),
                );
                continue;
            }
        };
        for &b in budgets {
            let cell = cells.entry(b).or_default();
            let started = Instant::now();
            let res = engine.assemble(&AssemblyRequest {
                query: Query::new(&p.task.problem_statement),
                budget: Budget::Tokens(b),
                parent: None,
            });
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            let (s, tokens, frags, nfiles, text_hash, gold, error) = match res {
                Ok(ctx) => {
                    // Never trust the reported count: recount the text we would send.
                    let tokens = counter.count(&ctx.text);
                    let s = score(&p.gold, &acms_blocks(&ctx.text, &p.files));
                    let nfiles = ctx
                        .manifest
                        .iter()
                        .map(|e| e.path.as_str())
                        .collect::<HashSet<_>>()
                        .len();
                    let gold = if fates {
                        gold_fates(&p.gold, &engine, &ctx)
                    } else {
                        Vec::new()
                    };
                    (
                        s,
                        tokens,
                        ctx.manifest.len(),
                        nfiles,
                        blake3::hash(ctx.text.as_bytes()).to_hex().to_string(),
                        gold,
                        None,
                    )
                }
                Err(e) => {
                    cell.errors += 1;
                    let s = score(&p.gold, &Blocks::new());
                    (s, 0, 0, 0, String::new(), Vec::new(), Some(e.to_string()))
                }
            };
            cell.push(s.clone(), tokens, b, Some(ms));
            raw.push(
                serde_json::to_string(&RawAcms {
                    system,
                    id: &p.task.instance_id,
                    budget: b,
                    score: &s,
                    tokens,
                    ms,
                    fragments: frags,
                    files: nfiles,
                    text_hash,
                    gold,
                    error,
                })
                .unwrap_or_default(),
            );
        }
        if opts.run.verbose && (i + 1) % 10 == 0 {
            log(
                opts,
                format!("{system}: {}/{} tasks", i + 1, prepared.len()),
            );
        }
    }
    Ok(IssueRow {
        system: system.to_string(),
        budgets: cells.iter().map(|(b, c)| (*b, c.metrics())).collect(),
        note: None,
    })
}

#[derive(Debug, Serialize)]
struct RawPeer<'a> {
    system: &'a str,
    id: &'a str,
    budget: usize,
    #[serde(flatten)]
    score: &'a TaskScore,
    tokens: usize,
    ms: f64,
    error: Option<String>,
}

fn run_peer(
    opts: &IssueOptions,
    python: &Path,
    peer: &str,
    set: &str,
    prepared: &[Prepared],
    counter: &dyn TokenCounter,
    raw: &mut Vec<String>,
) -> Result<IssueRow> {
    let mut input = String::new();
    let idents: Vec<Vec<String>> = prepared
        .iter()
        .map(|p| crate::text::ident_mentions(&p.task.problem_statement))
        .collect();
    let trees: Vec<String> = prepared
        .iter()
        .map(|p| p.tree.to_string_lossy().into_owned())
        .collect();
    for (i, p) in prepared.iter().enumerate() {
        for &b in &opts.run.budgets {
            let line = serde_json::to_string(&PeerTask {
                id: format!("{}#{b}", p.task.instance_id),
                repo: &trees[i],
                query: &p.task.problem_statement,
                mentioned_idents: &idents[i],
                budget: b,
            })
            .unwrap_or_default();
            input.push_str(&line);
            input.push('\n');
        }
    }
    let results = harness::peer_maps(
        &opts.run,
        python,
        peer,
        input,
        &format!("issues-{}", crate::realtasks::set_name(set)),
    )?;
    let mut cells: BTreeMap<usize, Cell> = BTreeMap::new();
    for p in prepared {
        for &b in &opts.run.budgets {
            let cell = cells.entry(b).or_default();
            let (s, tokens, ms, error) = match results.get(&format!("{}#{b}", p.task.instance_id)) {
                Some(r) if r.error.is_none() => {
                    let tokens = counter.count(&r.map);
                    (
                        score(&p.gold, &peer_blocks(&r.map, &p.files)),
                        tokens,
                        Some(r.seconds * 1000.0),
                        None,
                    )
                }
                other => {
                    cell.errors += 1;
                    let why = other
                        .and_then(|r| r.error.clone())
                        .unwrap_or_else(|| "no result".into());
                    (score(&p.gold, &Blocks::new()), 0, None, Some(why))
                }
            };
            cell.push(s.clone(), tokens, b, ms);
            raw.push(
                serde_json::to_string(&RawPeer {
                    system: peer,
                    id: &p.task.instance_id,
                    budget: b,
                    score: &s,
                    tokens,
                    ms: ms.unwrap_or(0.0),
                    error,
                })
                .unwrap_or_default(),
            );
        }
    }
    Ok(IssueRow {
        system: peer.to_string(),
        budgets: cells.iter().map(|(b, c)| (*b, c.metrics())).collect(),
        note: None,
    })
}

/// Runs every requested set; each set's report is saved as
/// `<work>/results/issues-<set>.report.json`.
pub fn run(opts: &IssueOptions) -> Result<Vec<SetReport>> {
    if opts.run.budgets.is_empty() || opts.run.budgets.contains(&0) {
        return Err(Error::Argument(
            "budgets must be positive token counts".into(),
        ));
    }
    if !opts.ablations.is_empty() && !opts.run.budgets.contains(&ABLATION_BUDGET) {
        return Err(Error::Argument(format!(
            "ablations are measured at {ABLATION_BUDGET} tokens: include it in --budgets"
        )));
    }
    let model = harness::model_dir_for(&opts.run)?;
    let mut out = Vec::new();
    for set in &opts.sets {
        let report = run_set(opts, set, model.as_deref())?;
        let json = opts
            .run
            .work_dir
            .join("results")
            .join(opts.results_name(set, "report.json"));
        if let Ok(text) = serde_json::to_string_pretty(&report) {
            std::fs::write(&json, text).map_err(io(&json))?;
        }
        out.push(report);
    }
    Ok(out)
}

/// The set reports saved by earlier runs, in `sets` order (missing ones skipped).
pub fn saved_reports(work_dir: &Path, sets: &[&str]) -> Result<Vec<SetReport>> {
    let mut out = Vec::new();
    for set in sets {
        let path = work_dir.join("results").join(format!(
            "issues-{}.report.json",
            crate::realtasks::set_name(set)
        ));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::realtasks::GoldSymbol;

    #[test]
    fn a_declaration_shown_as_a_signature_is_visible_without_its_brace() {
        let symbol = |name: &str, def: &str| GoldSymbol {
            spec: format!("src/lib.rs::{name}"),
            path: "src/lib.rs".into(),
            start_line: 1,
            end_line: 9,
            def_line: def.into(),
        };
        let gold = Gold {
            files: vec!["src/lib.rs".into()],
            symbols: vec![
                symbol("MultipartError", "pub struct MultipartError {"),
                symbol("body_text", "pub fn body_text(&self) -> String {"),
                symbol("status", "pub fn status(&self) -> StatusCode {"),
            ],
            changed: [("src/lib.rs".to_string(), vec!["x: 1 {".to_string()])].into(),
            ..Gold::default()
        };
        let blocks: Blocks = [(
            "src/lib.rs".to_string(),
            vec![
                "pub struct MultipartError".to_string(),
                "pub fn body_text(&self) -> String {".to_string(),
                "x: 1".to_string(),
            ],
        )]
        .into();
        let s = score(&gold, &blocks);
        assert_eq!((s.symbols_visible, s.symbols_total), (2, 3));
        // Changed lines are still compared as written.
        assert_eq!(s.changed_found, 0);
    }
}
