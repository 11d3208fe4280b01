//! One index run: walk, detect changes by content hash, analyze changed files in parallel,
//! render and count tokens, resolve edges, and commit everything in one store transaction.
//!
//! **Architecture Invariant:** a bad file is a [`Warning`] in the [`IndexReport`], never an
//! error; only a missing repository or an unwritable index directory fails a run.

use std::collections::BTreeMap;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use acms_core::{ContentHash, ContextConfig, NodeId, TokenCounter};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::analyze::{ParseLimits, analyzer_for, detect_language};
use crate::escape::controls_escaped;
use crate::model::{Language, NodeKind, ParsedFile, RefKind, Warning};
use crate::resolve::{EdgeDiff, Reparsed, RunChanges, incremental_edges, resolve_edges};
use crate::store::{
    EdgeRecord, FileRecord, FileRows, Meta, NodeRecord, NodeRow, SkippedFile, Store, Tx,
};
use crate::walk::{Deny, WalkEntry, Walked, git_commit_times, walk};
use crate::{Error, Result};

/// Nodes whose derived entries (keyword, vector) must be refreshed after a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeChanges {
    /// Nodes of changed or deleted files as they were before the run.
    pub removed: Vec<NodeId>,
    /// Nodes of new or changed files as they are now.
    pub upserted: Vec<NodeId>,
}

/// What an index run did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IndexReport {
    /// Files found by the walk.
    pub files: usize,
    /// Files (re-)parsed because they are new or their content changed.
    pub parsed: usize,
    /// Files whose content was unchanged.
    pub unchanged: usize,
    /// Files removed from the index (deleted, or no longer indexable).
    pub removed: usize,
    /// Nodes and edges in the index after the run.
    pub nodes: usize,
    pub edges: usize,
    /// Indexed files per language.
    pub languages: BTreeMap<String, usize>,
    /// Bytes of source analyzed in this run.
    pub bytes_parsed: u64,
    pub warnings: Vec<Warning>,
    pub seconds: f64,
    pub generation: u64,
    /// True when the run resolved only the edges the changed files can affect (a few changed
    /// files, none added or removed); false when it resolved every edge again.
    #[serde(default)]
    pub edges_incremental: bool,
    /// Set when `context.file.max-total-size` left indexable files out: the index is partial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_out: Option<LeftOut>,
    #[serde(skip)]
    pub changes: NodeChanges,
}

/// The indexable files a run left out because `context.file.max-total-size` was reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftOut {
    pub files: usize,
    pub bytes: u64,
    /// The cap, in bytes.
    pub limit: u64,
}

impl std::fmt::Display for LeftOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "partial index: {} indexable files ({:.1} MB) left out because              context.file.max-total-size ({:.1} MB) was reached; raise it under [context.file]              in the user's config.toml (~/.config/acms) to index them",
            self.files,
            self.bytes as f64 / 1e6,
            self.limit as f64 / 1e6
        )
    }
}

/// Settings of an index run.
pub struct IndexOptions<'a> {
    pub index_dir: PathBuf,
    pub config: ContextConfig,
    /// Discard the existing index and build from scratch.
    pub rebuild: bool,
    /// Called with (files done, files to do) while files are analyzed.
    pub progress: Option<&'a (dyn Fn(usize, usize) + Sync)>,
    /// A walk of the repository made moments ago with this configuration's deny list (the
    /// change check's, which found what this run is for): used instead of walking again.
    /// A file changed since is read as it is now; its older stat only makes the next check
    /// hash it once more.
    pub walked: Option<&'a Walked>,
}

impl<'a> IndexOptions<'a> {
    /// Defaults for `repo`: index dir `<repo>/.acms`, spec configuration.
    pub fn new(repo: &Path) -> IndexOptions<'a> {
        IndexOptions {
            index_dir: repo.join(".acms"),
            config: ContextConfig::default(),
            rebuild: false,
            progress: None,
            walked: None,
        }
    }
}

/// The result of looking at one walked file.
enum Outcome {
    Unchanged {
        path: String,
        mtime: i64,
    },
    Changed(Box<ChangedFile>),
    Skipped(Warning),
    /// The file could not be read this time: what the index holds for it stays as it is.
    Kept(Warning),
    /// Not a file acms indexes, by its content: binary or empty (with the warning), or of a
    /// kind acms does not read (none).
    Unindexable(Option<Warning>),
}

struct ChangedFile {
    record: FileRecord,
    content: String,
    rows: FileRows,
    warnings: Vec<Warning>,
}

/// Indexes `repo` into `opts.index_dir`, incrementally unless `opts.rebuild`.
pub fn index_repo(repo: &Path, opts: &IndexOptions<'_>) -> Result<IndexReport> {
    let started = Instant::now();
    let repo = repo_root(repo)?;
    let counter = opts.config.tokenizer.counter();
    let store = open_store(&repo, opts)?;
    let before = Before::read(&store, opts.rebuild, counter.name())?;
    let (entries, found) = find_files(&repo, opts);
    let commit_times = git_commit_times(&repo);
    let tx = store.begin()?;
    let mut merged = Merged::new(found, &opts.config, entries.len());
    let look = Look {
        before: &before,
        commit_times: &commit_times,
        repo: &repo,
        opts,
        counter: &counter,
    };
    look_at_all(&entries, &look, |out, entry| {
        merged.add(out, entry, &look, &store, &tx)
    })?;
    merged.finish(&before);
    let (edges, changes) = resolve(&store, &before, &mut merged)?;
    commit(tx, &before, &merged, &edges, counter.name())?;
    store.reseal(&opts.index_dir)?;
    // Committed already: a compaction that fails costs space, not the run.
    if let Err(e) = store.compact_if_loose(before.meta.generation == 0 || before.recount) {
        let db = opts.index_dir.join(crate::seal::DB_FILE);
        merged.warnings.push(Warning::new(
            db.display().to_string(),
            format!("the store was not compacted: {e}"),
        ));
    }
    // Closed first: closing may checkpoint the WAL into the database file.
    drop(store);
    crate::store::record_stamp(&opts.index_dir);
    Ok(merged.into_report(changes, before.generation(), started))
}

/// The repository root, canonical: an error when it is missing or cannot be listed.
fn repo_root(repo: &Path) -> Result<PathBuf> {
    let root = repo
        .canonicalize()
        .ok()
        .filter(|p| p.is_dir())
        .ok_or_else(|| Error::RepoNotFound(repo.to_path_buf()))?;
    // An unreadable root would walk as an empty tree and wipe the index.
    std::fs::read_dir(&root).map_err(|source| Error::RepoUnreadable {
        path: root.clone(),
        source,
    })?;
    Ok(root)
}

/// Opens the store for this run, checked for damage when it may have been changed since.
///
/// A damaged store is found before anything read from it is trusted: an incremental run
/// would otherwise carry garbled rows forward and report success. The whole file is read
/// only when it is not byte-for-byte as the last committed run left it (its size and
/// modification times differ from that run's stamp); otherwise damage shows as an error of
/// the pages this run reads, which checks the whole file then (`Store::err`).
fn open_store(repo: &Path, opts: &IndexOptions<'_>) -> Result<Store> {
    let trusted = !opts.rebuild && crate::store::stamp_matches(&opts.index_dir);
    let checked = Store::open_for_write(&opts.index_dir, repo).and_then(|store| {
        if !trusted {
            store.check_integrity()?;
        }
        Ok(store)
    });
    match checked {
        // Only a rebuild may discard an index this build cannot read (and only one acms wrote:
        // `remove_db` refuses any other file).
        Err(Error::FormatVersion { .. } | Error::Store { .. } | Error::Damaged { .. })
            if opts.rebuild =>
        {
            crate::store::remove_db(&opts.index_dir)?;
            Store::open_for_write(&opts.index_dir, repo)
        }
        other => other,
    }
}

/// What the store held before the run.
struct Before {
    meta: Meta,
    /// Every file is parsed again, changed or not.
    recount: bool,
    files: HashMap<String, FileRecord>,
    skipped: BTreeMap<String, SkippedFile>,
    /// The warnings of the indexed files' analysis, repeated while a file is not read again.
    warnings: std::collections::HashMap<String, Vec<String>>,
}

impl Before {
    /// The generation of the index this run commits.
    fn generation(&self) -> u64 {
        self.meta.generation + 1
    }

    fn read(store: &Store, rebuild: bool, tokenizer: &str) -> Result<Before> {
        let meta = store.meta()?;
        // Counts made with another tokenizer are worthless, and symbols found by older
        // analyzers are stale (an upgrade must not wait for each file to change): re-parse
        // everything. A rebuild is the same thing asked for explicitly, and stays one
        // transaction.
        let recount = rebuild
            || (meta.generation > 0
                && (meta.tokenizer != tokenizer || meta.analyzers != crate::ANALYZERS_VERSION));
        let files = store
            .files()?
            .into_iter()
            .map(|f| (f.path.clone(), f))
            .collect();
        let skipped = store.skipped_files()?;
        let warnings = store.file_warnings()?;
        Ok(Before {
            meta,
            recount,
            files,
            skipped,
            warnings,
        })
    }
}

/// What the walk found besides the files to look at.
struct Found {
    warnings: Vec<Warning>,
    /// Files the index does not hold, by stat: the change check before an assembly compares
    /// with these, so a file that is not indexed is not taken for a new one on every check.
    skipped: BTreeMap<String, SkippedFile>,
    /// Directories whose listing failed.
    unreadable: Vec<String>,
}

/// Walks the repository (or takes the caller's fresh walk): returns the files to look at, and
/// sets aside the files the deny list holds back and those over `context.file.max-size`.
fn find_files(repo: &Path, opts: &IndexOptions<'_>) -> (Vec<WalkEntry>, Found) {
    let (deny, deny_warnings) = Deny::new(repo, &opts.config.file.deny);
    let walked = match opts.walked {
        Some(w) => w.clone(),
        None => walk(repo, &opts.index_dir, &deny),
    };
    let (entries, mut warnings) = (walked.entries, walked.warnings);
    warnings.extend(deny_warnings);
    let mut skipped: BTreeMap<String, SkippedFile> = BTreeMap::new();
    for (entry, rule) in &walked.held_back {
        warnings.push(Warning::new(
            &entry.rel,
            format!(
                "held back: its name matches the secret rule `{rule}` (acms never indexes such \
                 files; `context.file.deny` and `.acmsignore` add rules)"
            ),
        ));
        skipped.insert(entry.rel.clone(), skipped_file(entry, None));
    }
    let (entries, capped, size_warnings) = over_max_size(entries, &opts.config);
    warnings.extend(size_warnings);
    skipped.extend(
        capped
            .iter()
            .map(|e| (e.rel.clone(), skipped_file(e, None))),
    );
    let found = Found {
        warnings,
        skipped,
        unreadable: walked.unreadable,
    };
    (entries, found)
}

/// What looking at one file needs besides the file.
struct Look<'a> {
    before: &'a Before,
    commit_times: &'a std::collections::HashMap<String, i64>,
    repo: &'a Path,
    opts: &'a IndexOptions<'a>,
    counter: &'a dyn TokenCounter,
}

/// Files analyzed at a time: the outcomes of one batch are handed on (and written) while the
/// next is analyzed, so a run holds two batches of parsed files, not the whole repository.
const LOOK_BATCH_FILES: usize = 256;

/// Looks at every file on all cores ([`look_at`]: unchanged, or read and analyzed) and hands
/// each outcome to `take`, in walk order.
fn look_at_all<'e>(
    entries: &'e [WalkEntry],
    look: &Look<'_>,
    mut take: impl FnMut(Outcome, &'e WalkEntry) -> Result<()>,
) -> Result<()> {
    let opts = look.opts;
    let index_dir = opts
        .index_dir
        .canonicalize()
        .unwrap_or_else(|_| opts.index_dir.clone());
    let limits = ParseLimits {
        timeout: Duration::from_millis(opts.config.index.parse_timeout_ms),
        chunk_lines: opts.config.index.chunk_lines.max(1),
    };
    let total = entries.len();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let analyze = |batch: &'e [WalkEntry]| -> Vec<Outcome> {
        batch
            .par_iter()
            .map(|entry| {
                let old = look.before.files.get(&entry.rel);
                let old = old.filter(|_| !look.before.recount);
                if let Some(out) = repeated_verdict(entry, look.before) {
                    return out;
                }
                let modified = look.commit_times.get(&entry.rel).copied();
                let modified = modified.unwrap_or(entry.mtime);
                let out = look_at(
                    entry,
                    old,
                    modified,
                    &limits,
                    look.counter,
                    look.repo,
                    &index_dir,
                );
                let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                if let Some(progress) = opts.progress {
                    progress(n, total);
                }
                out
            })
            .collect()
    };
    let analyze = &analyze;
    let mut batches = entries.chunks(LOOK_BATCH_FILES);
    let mut current = batches.next().map(|b| (b, analyze(b)));
    while let Some((batch, outcomes)) = current.take() {
        let next = batches.next();
        // The next batch is analyzed on the pool while this thread hands this one on.
        let (taken, analyzed) = std::thread::scope(|scope| {
            let worker = next.map(|b| scope.spawn(move || (b, analyze(b))));
            let taken = outcomes
                .into_iter()
                .zip(batch)
                .try_for_each(|(out, entry)| take(out, entry));
            let analyzed =
                worker.map(|w| w.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
            (taken, analyzed)
        });
        taken?;
        current = analyzed;
    }
    Ok(())
}

/// The index after the run, edges aside: the old state merged with this run's outcomes.
struct Merged {
    report: IndexReport,
    warnings: Vec<Warning>,
    skipped: BTreeMap<String, SkippedFile>,
    /// Indexed files kept as they are.
    keep: HashSet<String>,
    /// Changed files not yet written (all of them while they are few enough for the
    /// incremental edge path).
    changed: Vec<ChangedFile>,
    /// Every changed file, written or not.
    changed_paths: HashSet<String>,
    /// Set once the changed files are too many to hold: they are written as they come.
    streamed: Option<Streamed>,
    /// Unchanged files whose stat or commit time changed: (path, mtime, modified).
    touched: Vec<(String, i64, i64)>,
    /// Indexed files no longer indexed.
    gone: Vec<String>,
    /// The language of every file indexed after the run.
    languages: HashMap<String, Language>,
    /// What `context.file.max-total-size` left out.
    left_out: LeftOut,
    /// Bytes indexed so far, against `left_out.limit`.
    indexed_bytes: u64,
    /// Directories whose listing failed.
    unreadable: Vec<String>,
}

/// Changed files written to the run's transaction as they were analyzed: too many to resolve
/// their edges incrementally, so the full path reads the index after the run from the store.
struct Streamed {
    /// Every node the store held before the run: (id, path).
    old_nodes: Vec<(NodeId, String)>,
    /// Nodes of the written files.
    upserted: Vec<NodeId>,
}

/// Whether `changed` files of an index of `files` are few enough to resolve their edges from
/// indexed lookups; more (beyond an eighth of the index) resolve every edge, which is then
/// the cheaper way.
fn few_changed(changed: usize, files: usize) -> bool {
    changed <= INCREMENTAL_MAX_FILES.max(files / 8)
}

impl Merged {
    fn new(found: Found, config: &ContextConfig, files: usize) -> Merged {
        Merged {
            report: IndexReport {
                files,
                ..IndexReport::default()
            },
            warnings: found.warnings,
            skipped: found.skipped,
            keep: HashSet::default(),
            changed: Vec::new(),
            changed_paths: HashSet::default(),
            streamed: None,
            touched: Vec::new(),
            gone: Vec::new(),
            languages: HashMap::default(),
            left_out: LeftOut {
                files: 0,
                bytes: 0,
                limit: config.file.max_total_size,
            },
            indexed_bytes: 0,
            unreadable: found.unreadable,
        }
    }

    /// Counts one file's outcome; a changed file is written to `tx` at once when the changed
    /// files are too many to hold.
    fn add(
        &mut self,
        out: Outcome,
        entry: &WalkEntry,
        look: &Look<'_>,
        store: &Store,
        tx: &Tx<'_>,
    ) -> Result<()> {
        let before = look.before;
        // The total cap counts only what is indexed (data files, binaries and files acms does
        // not index cost nothing against it), first come in walk order.
        if matches!(out, Outcome::Unchanged { .. } | Outcome::Changed(_)) {
            if self.indexed_bytes + entry.size > self.left_out.limit {
                self.left_out.files += 1;
                self.left_out.bytes += entry.size;
                self.skipped
                    .insert(entry.rel.clone(), skipped_file(entry, None));
                return Ok(());
            }
            self.indexed_bytes += entry.size;
        }
        let verdict = match &out {
            Outcome::Unindexable(w) => Some(Some(w.as_ref().map_or("", |w| &w.message))),
            Outcome::Skipped(_) => Some(None),
            Outcome::Kept(_) if !before.files.contains_key(&entry.rel) => Some(None),
            _ => None,
        };
        if let Some(verdict) = verdict {
            self.skipped
                .insert(entry.rel.clone(), skipped_file(entry, verdict));
        }
        match out {
            Outcome::Unchanged { path, mtime } => {
                self.report.unchanged += 1;
                let repeated = before.warnings.get(&path).into_iter().flatten();
                self.warnings
                    .extend(repeated.map(|m| Warning::new(path.as_str(), controls_escaped(m))));
                let old = &before.files[&path];
                let modified = look.commit_times.get(&path).copied().unwrap_or(mtime);
                if old.mtime != mtime || old.modified != modified {
                    self.touched.push((path.clone(), mtime, modified));
                }
                self.keep.insert(path);
            }
            Outcome::Changed(file) => {
                self.report.parsed += 1;
                self.report.bytes_parsed += file.record.size;
                self.warnings.extend(file.warnings.iter().cloned());
                self.languages
                    .insert(file.record.path.clone(), file.record.language);
                self.changed_paths.insert(file.record.path.clone());
                self.changed.push(*file);
                self.stream_if_many(before, store, tx)?;
            }
            Outcome::Skipped(warning) => self.warnings.push(warning),
            Outcome::Kept(warning) => {
                if before.files.contains_key(&warning.path) {
                    self.keep.insert(warning.path.clone());
                }
                self.warnings.push(warning);
            }
            Outcome::Unindexable(warning) => self.warnings.extend(warning),
        }
        Ok(())
    }

    /// Writes the changed files held so far once they are too many for the incremental edge
    /// path: a cold index of a monorepo held every file's nodes and renderings (1.8 GB).
    fn stream_if_many(&mut self, before: &Before, store: &Store, tx: &Tx<'_>) -> Result<()> {
        if self.streamed.is_none() {
            if few_changed(self.changed.len(), before.files.len()) {
                return Ok(());
            }
            self.streamed = Some(Streamed {
                old_nodes: store.node_paths()?,
                upserted: Vec::new(),
            });
        }
        let streamed = self.streamed.as_mut().expect("set above");
        for f in self.changed.drain(..) {
            tx.put_file(&f.record, &f.content, &f.rows, &f.warnings)?;
            streamed
                .upserted
                .extend(f.rows.nodes.iter().map(|r| r.record.id));
        }
        Ok(())
    }

    /// Completes the state after the last outcome: what is kept, gone, and each file's language.
    fn finish(&mut self, before: &Before) {
        // A directory that could not be listed hides its files, it does not delete them.
        for dir in std::mem::take(&mut self.unreadable) {
            let prefix = format!("{dir}/");
            self.keep.extend(
                before
                    .files
                    .keys()
                    .filter(|p| p.starts_with(&prefix) || dir == ".")
                    .cloned(),
            );
        }
        self.gone = before
            .files
            .keys()
            .filter(|p| !self.keep.contains(*p) && !self.changed_paths.contains(*p))
            .cloned()
            .collect();
        self.report.removed = self.gone.len();
        for (p, f) in &before.files {
            if self.keep.contains(p) {
                self.languages.insert(p.clone(), f.language);
            }
        }
    }

    /// What `context.file.max-total-size` left out, if anything.
    fn left_out(&self) -> Option<&LeftOut> {
        (self.left_out.files > 0).then_some(&self.left_out)
    }

    /// The run's report, once committed.
    fn into_report(
        self,
        mut changes: NodeChanges,
        generation: u64,
        started: Instant,
    ) -> IndexReport {
        let left_out = self.left_out().cloned();
        let mut report = self.report;
        for lang in self.languages.values() {
            *report.languages.entry(lang.name().to_string()).or_default() += 1;
        }
        changes.removed.sort();
        changes.upserted.sort();
        let mut warnings = self.warnings;
        warnings.sort_by(|a, b| a.path.cmp(&b.path).then(a.message.cmp(&b.message)));
        report.warnings = warnings;
        report.generation = generation;
        report.left_out = left_out;
        report.changes = changes;
        report.seconds = started.elapsed().as_secs_f64();
        report
    }
}

/// Resolves the edges of the index after the run, and counts its nodes and edges.
///
/// A few changed files (analyzed, new or gone) change only the edges of their own nodes, of
/// the references named like their symbols, and of the files whose imports find or miss a
/// file that came or went: those are resolved from indexed lookups
/// ([`incremental_edges`]). Anything else resolves every edge again.
fn resolve(
    store: &Store,
    before: &Before,
    merged: &mut Merged,
) -> Result<(EdgeWrite, NodeChanges)> {
    let changed = &merged.changed;
    // Held files are few by construction: past `few_changed` they are written as they come.
    let few = merged.streamed.is_none()
        && few_changed(changed.len() + merged.gone.len(), before.files.len());
    let diff = if !before.recount && before.meta.generation > 0 && few {
        let run = RunChanges {
            reparsed: changed
                .iter()
                .map(|f| Reparsed {
                    path: &f.record.path,
                    language: f.record.language,
                    rows: &f.rows,
                    new: !before.files.contains_key(&f.record.path),
                })
                .collect(),
            gone: merged
                .gone
                .iter()
                .map(|p| (p.as_str(), before.files[p].language))
                .collect(),
            languages: &merged.languages,
        };
        incremental_edges(store, &run)?
    } else {
        None
    };
    let mut changes = NodeChanges::default();
    let (nodes, edges) = match diff {
        Some(diff) => {
            let nodes = store.count("nodes")?;
            let edges = store.count("edges")?;
            changes.removed = diff.removed_nodes.clone();
            for f in changed {
                changes
                    .upserted
                    .extend(f.rows.nodes.iter().map(|r| r.record.id));
            }
            merged.report.edges = edges + diff.added.len() - diff.gone.len();
            merged.report.edges_incremental = true;
            let nodes = nodes + changes.upserted.len() - changes.removed.len();
            (nodes, EdgeWrite::Diff(diff))
        }
        None => {
            let (nodes, edges) = resolve_all(store, merged, &mut changes)?;
            merged.report.edges = edges.len();
            (nodes, EdgeWrite::All(edges))
        }
    };
    merged.report.nodes = nodes;
    Ok((edges, changes))
}

/// Writes what the run did not write as it went, and commits its one transaction.
fn commit(
    tx: Tx<'_>,
    before: &Before,
    merged: &Merged,
    edges: &EdgeWrite,
    tokenizer: &str,
) -> Result<()> {
    for path in &merged.gone {
        tx.remove_file(path)?;
    }
    for (path, mtime, modified) in &merged.touched {
        tx.touch_file(path, *mtime, *modified)?;
    }
    for f in &merged.changed {
        tx.put_file(&f.record, &f.content, &f.rows, &f.warnings)?;
    }
    match edges {
        EdgeWrite::All(edges) => tx.replace_edges(edges)?,
        EdgeWrite::Diff(diff) => tx.edit_edges(&diff.gone, &diff.added)?,
    }
    if merged.skipped != before.skipped {
        tx.replace_skipped(&merged.skipped)?;
    }
    tx.set_meta("tokenizer", tokenizer)?;
    tx.set_meta("analyzers", crate::ANALYZERS_VERSION)?;
    tx.set_meta("generation", &before.generation().to_string())?;
    tx.set_meta(
        "left_out",
        &merged
            .left_out()
            .map(ToString::to_string)
            .unwrap_or_default(),
    )?;
    tx.commit()
}

/// Changed files an incremental run resolves edges for by lookups (see [`few_changed`]).
const INCREMENTAL_MAX_FILES: usize = 32;

/// How a run writes its edges.
enum EdgeWrite {
    /// Every edge of the index (the table is made to hold exactly these).
    All(Vec<EdgeRecord>),
    /// The difference for the sources the changed files affect.
    Diff(EdgeDiff),
}

/// The full path: every node, reference and import of the index after the run, and every
/// edge resolved from them. Returns the number of nodes and the edges; fills `changes`.
///
/// The store holds the files written as they came (`merged.streamed`) already, and still the
/// old rows of the files not yet written and of those gone.
fn resolve_all(
    store: &Store,
    merged: &Merged,
    changes: &mut NodeChanges,
) -> Result<(usize, Vec<EdgeRecord>)> {
    let written = |path: &str| merged.streamed.is_some() && merged.changed_paths.contains(path);
    let live = |path: &str| merged.keep.contains(path) || written(path);
    if let Some(streamed) = &merged.streamed {
        let replaced = streamed
            .old_nodes
            .iter()
            .filter(|(_, p)| !merged.keep.contains(p));
        changes.removed.extend(replaced.map(|(id, _)| *id));
        changes.upserted.extend(&streamed.upserted);
    }
    let stored_nodes = store.nodes()?;
    let mut all_nodes: Vec<NodeRecord> = Vec::with_capacity(stored_nodes.len());
    let mut stale_ids = HashSet::default();
    for n in stored_nodes {
        if live(&n.path) {
            all_nodes.push(n);
        } else {
            if merged.streamed.is_none() {
                changes.removed.push(n.id);
            }
            stale_ids.insert(n.id);
        }
    }
    let mut all_refs: Vec<(NodeId, String, RefKind)> = store
        .refs()?
        .into_iter()
        .filter(|(src, _, _)| !stale_ids.contains(src))
        .collect();
    let mut all_imports: Vec<(String, String)> = store
        .imports()?
        .into_iter()
        .filter(|(p, _)| live(p))
        .collect();
    for f in &merged.changed {
        for row in &f.rows.nodes {
            changes.upserted.push(row.record.id);
            all_nodes.push(row.record.clone());
        }
        all_refs.extend(f.rows.refs.iter().cloned());
        all_imports.extend(
            f.rows
                .imports
                .iter()
                .map(|i| (f.record.path.clone(), i.module.clone())),
        );
    }
    let edges = resolve_edges(&all_nodes, &all_refs, &all_imports, &merged.languages);
    Ok((all_nodes.len(), edges))
}

/// Drops files over `context.file.max-size`: returns the files kept, the files dropped, and
/// the warnings.
fn over_max_size(
    entries: Vec<WalkEntry>,
    config: &ContextConfig,
) -> (Vec<WalkEntry>, Vec<WalkEntry>, Vec<Warning>) {
    let mut kept = Vec::with_capacity(entries.len());
    let mut capped = Vec::new();
    let mut warnings = Vec::new();
    for e in entries {
        if e.size > config.file.max_size {
            warnings.push(Warning::new(
                &e.rel,
                format!(
                    "skipped: {} bytes is over context.file.max-size ({} bytes)",
                    e.size, config.file.max_size
                ),
            ));
            capped.push(e);
        } else {
            kept.push(e);
        }
    }
    (kept, capped, warnings)
}

/// Decides whether `entry` changed and, if so, analyzes it.
fn look_at(
    entry: &WalkEntry,
    old: Option<&FileRecord>,
    modified: i64,
    limits: &ParseLimits,
    counter: &dyn TokenCounter,
    repo: &Path,
    index_dir: &Path,
) -> Outcome {
    if let Some(old) = old
        && old.size == entry.size
        && old.mtime == entry.mtime
    {
        return Outcome::Unchanged {
            path: entry.rel.clone(),
            mtime: entry.mtime,
        };
    }
    let skipped = |message: String| Outcome::Skipped(Warning::new(&entry.rel, message));
    // Checked again where the file is read: a link swapped in after the walk must not lead
    // out of the repository either.
    let real = match entry.abs.canonicalize() {
        Ok(p) => p,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return skipped("skipped: deleted while indexing".into());
        }
        Err(e) => return cannot_read(entry, old, &e),
    };
    if let Some(why) = crate::walk::escape(repo, index_dir, &real) {
        return skipped(format!("skipped symlink: {why}"));
    }
    let bytes = match std::fs::read(&real) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return skipped("skipped: deleted while indexing".into());
        }
        Err(e) => return cannot_read(entry, old, &e),
    };
    let hash = ContentHash::of(&bytes).0;
    if old.is_some_and(|o| o.hash == hash) {
        return Outcome::Unchanged {
            path: entry.rel.clone(),
            mtime: entry.mtime,
        };
    }
    if let Some(kind) = unindexable_bytes(&bytes) {
        let why = Warning::new(&entry.rel, format!("skipped: {kind}"));
        return Outcome::Unindexable(Some(why));
    }
    let mut warnings = Vec::new();
    let content = match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => {
            warnings.push(Warning::new(
                &entry.rel,
                "not valid UTF-8: indexed with invalid bytes replaced",
            ));
            String::from_utf8_lossy(e.as_bytes()).into_owned()
        }
    };
    let Some(language) = detect_language(&entry.rel, &content) else {
        // A kind of file acms does not index (lock files, data): not a problem to report.
        return Outcome::Unindexable(None);
    };
    // Secret values never enter the index: they are replaced (line breaks kept, so every line
    // keeps its number) before anything is parsed, counted or stored.
    let content = match acms_core::secrets::redact(&content) {
        Some((redacted, kinds)) => {
            warnings.push(Warning::new(
                &entry.rel,
                format!(
                    "{} (acms never indexes a secret value)",
                    acms_core::secrets::summary(&kinds)
                ),
            ));
            redacted
        }
        None => content,
    };
    let parsed = analyzer_for(language).analyze(&entry.rel, &content, limits);
    warnings.extend(
        parsed
            .warnings
            .iter()
            .map(|w| Warning::new(&entry.rel, w.clone())),
    );
    let rows = to_rows(&entry.rel, &content, &parsed, counter);
    Outcome::Changed(Box::new(ChangedFile {
        record: FileRecord {
            path: entry.rel.clone(),
            hash,
            language,
            size: entry.size,
            mtime: entry.mtime,
            modified,
            generated: crate::generated_file(&content),
        },
        content,
        rows,
        warnings,
    }))
}

/// Why bytes are never indexed, whatever the file's name: empty, or binary (a NUL byte in the
/// first 8 KiB).
fn unindexable_bytes(bytes: &[u8]) -> Option<&'static str> {
    if bytes.is_empty() {
        Some("empty file")
    } else if bytes.iter().take(8192).any(|&b| b == 0) {
        Some("binary file")
    } else {
        None
    }
}

/// Whether an index run would index a file at `rel` holding `bytes` (size caps and the deny
/// list aside, which the walk and the caps apply): the change check before an assembly asks
/// this before it calls a file it has not seen news.
pub fn indexable(rel: &str, bytes: &[u8]) -> bool {
    unindexable_bytes(bytes).is_none()
        && detect_language(rel, &String::from_utf8_lossy(bytes)).is_some()
}

/// The row of a file walked and not indexed.
fn skipped_file(entry: &WalkEntry, verdict: Option<&str>) -> SkippedFile {
    SkippedFile {
        size: entry.size,
        mtime: entry.mtime,
        verdict: verdict.map(str::to_string),
    }
}

/// The last run's verdict on a file it did not index by its content, while the file's stat
/// is as that run saw it and the analyzers are the same: a monorepo's thousands of data files
/// are not read again by every run (a refresh before each assembly among them).
fn repeated_verdict(entry: &WalkEntry, before: &Before) -> Option<Outcome> {
    let last = before.skipped.get(&entry.rel)?;
    let verdict = last.verdict.as_deref()?;
    let same = !before.recount
        && !before.files.contains_key(&entry.rel)
        && (last.size, last.mtime) == (entry.size, entry.mtime);
    same.then(|| {
        let verdict = (!verdict.is_empty()).then(|| controls_escaped(verdict));
        Outcome::Unindexable(verdict.map(|v| Warning::new(&entry.rel, v)))
    })
}

/// A file that exists but cannot be read: its previous index entry (if any) is kept.
fn cannot_read(entry: &WalkEntry, old: Option<&FileRecord>, e: &std::io::Error) -> Outcome {
    let message = if old.is_some() {
        format!("cannot read ({e}); its previous index entry is kept")
    } else {
        format!("skipped: cannot read: {e}")
    };
    Outcome::Kept(Warning::new(&entry.rel, message))
}

/// Assigns stable ids and exact token counts to an analyzer's output.
fn to_rows(path: &str, content: &str, parsed: &ParsedFile, counter: &dyn TokenCounter) -> FileRows {
    let mut ordinals: HashMap<(NodeKind, &str), u32> = HashMap::default();
    let ids: Vec<NodeId> = parsed
        .nodes
        .iter()
        .map(|n| {
            let ord = ordinals
                .entry((n.kind, n.qualified_name.as_str()))
                .or_default();
            let id = NodeId::new(path, n.kind.name(), &n.qualified_name, *ord);
            *ord += 1;
            id
        })
        .collect();
    // A node's full text is a slice of the file: nested ones are counted from one split.
    let ranges: Vec<_> = parsed
        .nodes
        .iter()
        .map(|n| n.start_byte..n.end_byte)
        .collect();
    let full = counter.count_slices(content, &ranges);
    let nodes = parsed
        .nodes
        .iter()
        .zip(&ids)
        .zip(full)
        .map(|((n, &id), full)| NodeRow {
            record: NodeRecord {
                id,
                path: path.to_string(),
                kind: n.kind,
                name: n.name.clone(),
                qualified_name: n.qualified_name.clone(),
                parent: n.parent.and_then(|p| ids.get(p).copied()),
                start_line: n.start_line,
                end_line: n.end_line,
                start_byte: n.start_byte,
                end_byte: n.end_byte,
                signature: n.signature.clone(),
                doc: n.doc.clone(),
                tokens: [
                    counter.count(&n.signature) as u32,
                    counter.count(&n.with_doc) as u32,
                    counter.count(&n.skeleton) as u32,
                    full as u32,
                ],
            },
            with_doc: n.with_doc.clone(),
            skeleton: n.skeleton.clone(),
        })
        .collect();
    let mut seen = HashSet::default();
    let refs = parsed
        .refs
        .iter()
        .filter_map(|r| Some((*ids.get(r.from)?, r.name.clone(), r.kind)))
        .filter(|r| seen.insert(r.clone()))
        .collect();
    FileRows {
        nodes,
        refs,
        imports: parsed.imports.clone(),
    }
}
