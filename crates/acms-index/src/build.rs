//! One index run: walk, detect changes by content hash, analyze changed files in parallel,
//! render and count tokens, resolve edges, and commit everything in one store transaction.
//!
//! **Architecture Invariant:** a bad file is a [`Warning`] in the [`IndexReport`], never an
//! error; only a missing repository or an unwritable index directory fails a run.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use acms_core::{ContentHash, ContextConfig, NodeId, TokenCounter};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::analyze::{ParseLimits, analyzer_for, detect_language};
use crate::model::{Language, NodeKind, ParsedFile, RefKind};
use crate::store::{EdgeKind, EdgeRecord, FileRecord, FileRows, NodeRecord, NodeRow, Store};
use crate::walk::{WalkEntry, git_commit_times, walk};
use crate::{Error, Result};

/// A problem with one file; the run went on without it (or with what could be recovered).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    /// Repository-relative path.
    pub path: String,
    pub message: String,
}

impl Warning {
    pub(crate) fn new(path: impl Into<String>, message: impl Into<String>) -> Warning {
        Warning {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

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
    #[serde(skip)]
    pub changes: NodeChanges,
}

/// Settings of an index run.
pub struct IndexOptions<'a> {
    pub index_dir: PathBuf,
    pub config: ContextConfig,
    /// Discard the existing index and build from scratch.
    pub rebuild: bool,
    /// Called with (files done, files to do) while files are analyzed.
    pub progress: Option<&'a (dyn Fn(usize, usize) + Sync)>,
}

impl<'a> IndexOptions<'a> {
    /// Defaults for `repo`: index dir `<repo>/.acms`, spec configuration.
    pub fn new(repo: &Path) -> IndexOptions<'a> {
        IndexOptions {
            index_dir: repo.join(".acms"),
            config: ContextConfig::default(),
            rebuild: false,
            progress: None,
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
    Ignored,
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
    let repo = repo
        .canonicalize()
        .ok()
        .filter(|p| p.is_dir())
        .ok_or_else(|| Error::RepoNotFound(repo.to_path_buf()))?;
    // An unreadable root would walk as an empty tree and wipe the index.
    std::fs::read_dir(&repo).map_err(|source| Error::RepoUnreadable {
        path: repo.clone(),
        source,
    })?;
    let counter = opts.config.tokenizer.counter();

    // A damaged store is found before anything read from it is trusted: an incremental run
    // would otherwise carry garbled rows forward and report success.
    let checked = Store::open_for_write(&opts.index_dir).and_then(|store| {
        store.check_integrity()?;
        Ok(store)
    });
    let mut store = match checked {
        // Only a rebuild may discard an index this build cannot read (and only one acms wrote:
        // `remove_db` refuses any other file).
        Err(Error::FormatVersion { .. } | Error::Store { .. } | Error::Damaged { .. })
            if opts.rebuild =>
        {
            crate::store::remove_db(&opts.index_dir)?;
            Store::open_for_write(&opts.index_dir)?
        }
        other => other?,
    };
    let meta = store.meta()?;
    // Counts made with another tokenizer are worthless: re-parse everything. A rebuild is the
    // same thing asked for explicitly, and stays one transaction.
    let recount = opts.rebuild || (meta.generation > 0 && meta.tokenizer != counter.name());
    let old_files: HashMap<String, FileRecord> = store
        .files()?
        .into_iter()
        .map(|f| (f.path.clone(), f))
        .collect();
    let old_nodes = store.nodes()?;
    let old_refs = store.refs()?;
    let old_imports = store.imports()?;

    let walked = walk(&repo, &opts.index_dir);
    let (entries, mut warnings) = (walked.entries, walked.warnings);
    let index_dir = opts
        .index_dir
        .canonicalize()
        .unwrap_or_else(|_| opts.index_dir.clone());
    let (entries, size_warnings) = apply_size_caps(entries, &opts.config);
    warnings.extend(size_warnings);
    let commit_times = git_commit_times(&repo);
    let limits = ParseLimits {
        timeout: Duration::from_millis(opts.config.index.parse_timeout_ms),
        chunk_lines: opts.config.index.chunk_lines.max(1),
    };

    let total = entries.len();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let outcomes: Vec<Outcome> = entries
        .par_iter()
        .map(|entry| {
            let old = old_files.get(&entry.rel).filter(|_| !recount);
            let modified = commit_times.get(&entry.rel).copied().unwrap_or(entry.mtime);
            let out = look_at(entry, old, modified, &limits, &counter, &repo, &index_dir);
            let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            if let Some(progress) = opts.progress {
                progress(n, total);
            }
            out
        })
        .collect();

    // Merge the old state with this run's outcomes.
    let mut report = IndexReport {
        files: total,
        ..IndexReport::default()
    };
    let mut keep: HashSet<String> = HashSet::new();
    let mut changed: Vec<ChangedFile> = Vec::new();
    let mut touched: Vec<(String, i64, i64)> = Vec::new();
    for out in outcomes {
        match out {
            Outcome::Unchanged { path, mtime } => {
                report.unchanged += 1;
                let old = &old_files[&path];
                let modified = commit_times.get(&path).copied().unwrap_or(mtime);
                if old.mtime != mtime || old.modified != modified {
                    touched.push((path.clone(), mtime, modified));
                }
                keep.insert(path);
            }
            Outcome::Changed(file) => {
                report.parsed += 1;
                report.bytes_parsed += file.record.size;
                warnings.extend(file.warnings.iter().cloned());
                changed.push(*file);
            }
            Outcome::Skipped(warning) => warnings.push(warning),
            Outcome::Kept(warning) => {
                if old_files.contains_key(&warning.path) {
                    keep.insert(warning.path.clone());
                }
                warnings.push(warning);
            }
            Outcome::Ignored => {}
        }
    }
    // A directory that could not be listed hides its files, it does not delete them.
    for dir in &walked.unreadable {
        let prefix = format!("{dir}/");
        keep.extend(
            old_files
                .keys()
                .filter(|p| p.starts_with(&prefix) || dir == ".")
                .cloned(),
        );
    }
    let changed_paths: HashSet<&str> = changed.iter().map(|f| f.record.path.as_str()).collect();
    let gone: Vec<&String> = old_files
        .keys()
        .filter(|p| !keep.contains(*p) && !changed_paths.contains(p.as_str()))
        .collect();
    report.removed = gone.len();

    // Nodes of the index after this run, for edge resolution.
    let stale = |path: &str| !keep.contains(path);
    let mut changes = NodeChanges::default();
    let mut all_nodes: Vec<NodeRecord> = Vec::with_capacity(old_nodes.len());
    let mut stale_ids = HashSet::new();
    for n in old_nodes {
        if stale(&n.path) {
            changes.removed.push(n.id);
            stale_ids.insert(n.id);
        } else {
            all_nodes.push(n);
        }
    }
    let mut all_refs: Vec<(NodeId, String, RefKind)> = old_refs
        .into_iter()
        .filter(|(src, _, _)| !stale_ids.contains(src))
        .collect();
    let mut all_imports: Vec<(String, String)> =
        old_imports.into_iter().filter(|(p, _)| !stale(p)).collect();
    for f in &changed {
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
    let mut languages: HashMap<String, Language> = old_files
        .iter()
        .filter(|(p, _)| keep.contains(*p))
        .map(|(p, f)| (p.clone(), f.language))
        .collect();
    for f in &changed {
        languages.insert(f.record.path.clone(), f.record.language);
    }
    let edges = resolve_edges(&all_nodes, &all_refs, &all_imports, &languages);

    let generation = meta.generation + 1;
    let tx = store.begin()?;
    for path in &gone {
        tx.remove_file(path)?;
    }
    for (path, mtime, modified) in &touched {
        tx.touch_file(path, *mtime, *modified)?;
    }
    for f in &changed {
        tx.put_file(&f.record, &f.content, &f.rows)?;
    }
    tx.replace_edges(&edges)?;
    tx.set_meta("repo_root", &repo.to_string_lossy())?;
    tx.set_meta("tokenizer", counter.name())?;
    tx.set_meta("generation", &generation.to_string())?;
    tx.commit()?;

    for lang in languages.values() {
        *report.languages.entry(lang.name().to_string()).or_default() += 1;
    }
    changes.removed.sort();
    changes.upserted.sort();
    report.nodes = all_nodes.len();
    report.edges = edges.len();
    warnings.sort_by(|a, b| a.path.cmp(&b.path).then(a.message.cmp(&b.message)));
    report.warnings = warnings;
    report.generation = generation;
    report.changes = changes;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Drops files over `context.file.max-size` and those past `context.file.max-total-size`.
fn apply_size_caps(
    entries: Vec<WalkEntry>,
    config: &ContextConfig,
) -> (Vec<WalkEntry>, Vec<Warning>) {
    let mut kept = Vec::with_capacity(entries.len());
    let mut warnings = Vec::new();
    let mut total = 0u64;
    let mut over_total = Vec::new();
    for e in entries {
        if e.size > config.file.max_size {
            warnings.push(Warning::new(
                &e.rel,
                format!(
                    "skipped: {} bytes is over context.file.max-size ({} bytes)",
                    e.size, config.file.max_size
                ),
            ));
        } else if total + e.size > config.file.max_total_size {
            over_total.push(e.rel);
        } else {
            total += e.size;
            kept.push(e);
        }
    }
    if let Some(first) = over_total.first() {
        warnings.push(Warning::new(
            first,
            format!(
                "skipped this and {} more files: context.file.max-total-size ({} bytes) reached",
                over_total.len() - 1,
                config.file.max_total_size
            ),
        ));
    }
    (kept, warnings)
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
    if bytes.is_empty() {
        return skipped("skipped: empty file".into());
    }
    if bytes.iter().take(8192).any(|&b| b == 0) {
        return skipped("skipped: binary file".into());
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
        return Outcome::Ignored;
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
        },
        content,
        rows,
        warnings,
    }))
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
pub(crate) fn to_rows(
    path: &str,
    content: &str,
    parsed: &ParsedFile,
    counter: &dyn TokenCounter,
) -> FileRows {
    let mut ordinals: HashMap<(NodeKind, &str), u32> = HashMap::new();
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
    let nodes = parsed
        .nodes
        .iter()
        .zip(&ids)
        .map(|(n, &id)| {
            let full = content.get(n.start_byte..n.end_byte).unwrap_or_default();
            NodeRow {
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
                        counter.count(full) as u32,
                    ],
                },
                with_doc: n.with_doc.clone(),
                skeleton: n.skeleton.clone(),
            }
        })
        .collect();
    let mut seen = HashSet::new();
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

/// Builds the graph's edges from the nodes, raw references and imports of the whole index.
///
/// Names resolve best effort: a reference prefers a same-named node in its own file, then in
/// a file its file imports, then a unique one anywhere; ambiguous names link to every
/// candidate with split confidence, and names with more than [`MAX_CANDIDATES`] candidates
/// are dropped as noise.
pub(crate) fn resolve_edges(
    nodes: &[NodeRecord],
    refs: &[(NodeId, String, RefKind)],
    imports: &[(String, String)],
    languages: &HashMap<String, Language>,
) -> Vec<EdgeRecord> {
    const MAX_CANDIDATES: usize = 3;
    let mut edges: BTreeMap<(NodeId, NodeId, EdgeKind), f32> = BTreeMap::new();
    let mut add = |src: NodeId, dst: NodeId, kind: EdgeKind, conf: f32| {
        if src != dst {
            let e = edges.entry((src, dst, kind)).or_insert(conf);
            *e = e.max(conf);
        }
    };
    let by_id: HashMap<NodeId, &NodeRecord> = nodes.iter().map(|n| (n.id, n)).collect();
    let mut module_of: HashMap<&str, NodeId> = HashMap::new();
    for n in nodes {
        if let Some(p) = n.parent {
            add(p, n.id, EdgeKind::Contains, 1.0);
        } else {
            module_of.entry(n.path.as_str()).or_insert(n.id);
        }
    }
    let exists = |p: &str| module_of.contains_key(p);
    let mut imported: HashMap<&str, HashSet<String>> = HashMap::new();
    for (path, module) in imports {
        let Some(lang) = languages.get(path) else {
            continue;
        };
        let Some(target) = analyzer_for(*lang).resolve_import(path, module, &exists) else {
            continue;
        };
        if let (Some(&src), Some(&dst)) =
            (module_of.get(path.as_str()), module_of.get(target.as_str()))
        {
            add(src, dst, EdgeKind::Imports, 1.0);
        }
        imported.entry(path.as_str()).or_default().insert(target);
    }
    let mut by_name: HashMap<&str, Vec<&NodeRecord>> = HashMap::new();
    for n in nodes {
        if !matches!(
            n.kind,
            NodeKind::Module | NodeKind::Chunk | NodeKind::Section
        ) {
            by_name.entry(n.name.as_str()).or_default().push(n);
        }
    }
    for (src, name, kind) in refs {
        let Some(src_node) = by_id.get(src) else {
            continue;
        };
        let Some(cands) = by_name.get(name.as_str()) else {
            continue;
        };
        let cands: Vec<&&NodeRecord> = cands
            .iter()
            .filter(|c| c.id != *src)
            .filter(|c| {
                *kind != RefKind::Inherits
                    || matches!(
                        c.kind,
                        NodeKind::Class | NodeKind::Interface | NodeKind::Trait | NodeKind::Struct
                    )
            })
            .collect();
        let edge_kind = match kind {
            RefKind::Call => EdgeKind::Calls,
            RefKind::Inherits => EdgeKind::Inherits,
        };
        let same_file: Vec<_> = cands.iter().filter(|c| c.path == src_node.path).collect();
        let via_import: Vec<_> = cands
            .iter()
            .filter(|c| {
                imported
                    .get(src_node.path.as_str())
                    .is_some_and(|t| t.contains(&c.path))
            })
            .collect();
        if same_file.len() == 1 {
            add(*src, same_file[0].id, edge_kind, 0.9);
        } else if via_import.len() == 1 {
            add(*src, via_import[0].id, edge_kind, 0.8);
        } else if cands.len() == 1 {
            add(*src, cands[0].id, edge_kind, 0.6);
        } else if !cands.is_empty() && cands.len() <= MAX_CANDIDATES {
            let conf = 0.5 / cands.len() as f32;
            for c in &cands {
                add(*src, c.id, edge_kind, conf);
            }
        }
    }
    edges
        .into_iter()
        .map(|((src, dst, kind), confidence)| EdgeRecord {
            src,
            dst,
            kind,
            confidence,
        })
        .collect()
}
