//! Edges from the nodes, raw references and imports of an index: all of them at once
//! ([`resolve_edges`]), or the difference a run makes, from indexed lookups
//! ([`incremental_edges`]). Both resolve a reference by [`resolve_ref`] and an import by the
//! language's resolver over the same answers, so they find the same edges.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

use acms_core::NodeId;
use rayon::prelude::*;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::analyze::{Analyzer, analyzer_for, file_stem, strip_ext};
use crate::model::{Language, NodeKind, RefKind};
use crate::store::{EdgeKind, EdgeRecord, FileRows, NodeBrief, NodeRecord, Store, StoredEdge};
use crate::{Error, Result};

/// The edge difference of an incremental run.
pub(crate) struct EdgeDiff {
    /// Keys of edges that are no longer produced.
    pub(crate) gone: Vec<crate::store::EdgeKey>,
    /// Edges produced now that the store does not hold.
    pub(crate) added: Vec<EdgeRecord>,
    /// Nodes of the analyzed and the gone files before the run.
    pub(crate) removed_nodes: Vec<NodeId>,
}

/// A node a reference of `name` may resolve to: (id, path, kind).
type Candidate = (NodeId, String, NodeKind);

/// Edges keyed by (source, target, kind), each with its highest confidence.
#[derive(Default)]
struct EdgeSet(BTreeMap<(NodeId, NodeId, EdgeKind), f32>);

impl EdgeSet {
    /// Adds an edge, unless it points from a node to itself; an edge added again keeps the
    /// highest confidence.
    fn add(&mut self, src: NodeId, dst: NodeId, kind: EdgeKind, conf: f32) {
        if src != dst {
            let e = self.0.entry((src, dst, kind)).or_insert(conf);
            *e = e.max(conf);
        }
    }

    /// Takes `e` out of the set when the set holds it with the very same confidence.
    fn take_same(&mut self, e: &EdgeRecord) -> bool {
        let key = (e.src, e.dst, e.kind);
        if self
            .0
            .get(&key)
            .is_some_and(|c| c.to_bits() == e.confidence.to_bits())
        {
            self.0.remove(&key);
            true
        } else {
            false
        }
    }

    fn into_records(self) -> Vec<EdgeRecord> {
        self.0.into_iter().map(edge_record).collect()
    }
}

/// A file the run analyzed (new, or edited), as resolution sees it.
pub(crate) struct Reparsed<'a> {
    pub(crate) path: &'a str,
    pub(crate) language: Language,
    pub(crate) rows: &'a FileRows,
    /// The file was not indexed before the run.
    pub(crate) new: bool,
}

/// What a run changed in the index: what [`incremental_edges`] resolves from.
pub(crate) struct RunChanges<'a> {
    /// The files analyzed.
    pub(crate) reparsed: Vec<Reparsed<'a>>,
    /// The files indexed before the run and not after, with the language they had.
    pub(crate) gone: Vec<(&'a str, Language)>,
    /// The language of every file indexed after the run.
    pub(crate) languages: &'a HashMap<String, Language>,
}

impl RunChanges<'_> {
    /// The paths of the analyzed and the gone files: the files whose stored rows are replaced.
    fn replaced(&self) -> HashSet<&str> {
        let reparsed = self.reparsed.iter().map(|f| f.path);
        reparsed.chain(self.gone.iter().map(|g| g.0)).collect()
    }
}

/// Files whose imports ask about an appearing or vanishing file, past which every edge is
/// resolved again (it is then the cheaper way: each is read back from the store).
const MAX_IMPORTERS: usize = 256;

/// Resolves the edges a run changes, reading only what it touches:
/// - the edges out of the analyzed and the gone files' nodes (structure, imports,
///   references);
/// - the edges of every other reference named like one of their symbols before or after the
///   run (its candidates changed);
/// - when a file appears or goes, every edge of the files whose imports ask about it or about
///   a directory that comes or goes with it (the importers). They are found by resolving
///   every import of the index again in memory with the questions recorded: an import
///   resolves from the answers alone.
///
/// Every other edge depends on nothing that changed. Returns `None` (resolve everything)
/// when a file's module node is not the one it had, when a JVM code source root appears or
/// goes (every package would see another directory), or when the importers are too many.
pub(crate) fn incremental_edges(store: &Store, run: &RunChanges) -> Result<Option<EdgeDiff>> {
    let Some(replaced) = Replaced::read(store, run)? else {
        return Ok(None);
    };
    let (importers, flipped) = if replaced.appeared.is_empty() {
        (Vec::new(), Vec::new())
    } else {
        if !same_source_roots(run) {
            return Ok(None);
        }
        let after = Paths::after(store, run, &replaced.appeared)?;
        match after.importers(store, run, &replaced.appeared)? {
            Some(importers) => (importers, after.flipped),
            None => return Ok(None),
        }
    };
    let mut inc = Incremental::new(store, run, &importers, &flipped);
    inc.edges_of_reparsed()?;
    let mut old_edges = replaced.edges;
    old_edges.extend(inc.edges_of_importers(&importers)?);
    let sources = inc.edges_of_namesakes(&replaced.names)?;
    if let Some(e) = inc.lookup.failed.into_inner() {
        return Err(e);
    }
    old_edges.extend(namesake_edges(store, &sources, &replaced.names)?);

    let mut wanted = inc.wanted;
    let mut gone = Vec::new();
    for (key, edge, _) in old_edges {
        if !edge.is_some_and(|e| wanted.take_same(&e)) {
            gone.push(key);
        }
    }
    let mut removed_nodes = replaced.nodes;
    removed_nodes.sort();
    Ok(Some(EdgeDiff {
        gone,
        added: wanted.into_records(),
        removed_nodes,
    }))
}

/// What the analyzed and the gone files held before the run.
struct Replaced {
    /// Their nodes.
    nodes: Vec<NodeId>,
    /// The stored edges out of their nodes.
    edges: Vec<StoredEdge>,
    /// Names whose candidate set may have changed: their symbols' names, before and after.
    names: HashSet<String>,
    /// The files that have a module node after the run and not before, or before and not
    /// after: the files an import may find or miss now.
    appeared: Vec<String>,
}

impl Replaced {
    /// `None` when an analyzed file's module node is not the one it had.
    fn read(store: &Store, run: &RunChanges) -> Result<Option<Replaced>> {
        let mut replaced = Replaced {
            nodes: Vec::new(),
            edges: Vec::new(),
            names: HashSet::default(),
            appeared: Vec::new(),
        };
        for f in &run.reparsed {
            let old = store.file_nodes(f.path)?;
            let old_root = old.iter().find(|n| n.3.is_none()).map(|n| n.0);
            match (old_root, root_row(f.rows)) {
                (Some(a), Some(b)) if a != b => return Ok(None),
                (a, b) if a.is_some() != b.is_some() => replaced.appeared.push(f.path.into()),
                _ => {}
            }
            replaced.take(store, old)?;
            for n in &f.rows.nodes {
                if is_candidate(n.record.kind) {
                    replaced.names.insert(n.record.name.clone());
                }
            }
        }
        for (path, _) in &run.gone {
            let old = store.file_nodes(path)?;
            if old.iter().any(|n| n.3.is_none()) {
                replaced.appeared.push(path.to_string());
            }
            replaced.take(store, old)?;
        }
        Ok(Some(replaced))
    }

    /// Takes in the stored nodes of one file, and the edges out of them.
    fn take(&mut self, store: &Store, old: Vec<NodeBrief>) -> Result<()> {
        for (id, name, kind, _) in old {
            if is_candidate(kind) {
                self.names.insert(name);
            }
            self.edges.extend(store.edges_from(id)?);
            self.nodes.push(id);
        }
        Ok(())
    }
}

/// The module node of a file's rows: its first top-level node.
fn root_row(rows: &FileRows) -> Option<NodeId> {
    let root = rows.nodes.iter().find(|n| n.record.parent.is_none());
    root.map(|n| n.record.id)
}

/// The files (with a module node) and directories of the index after a run, in memory: what
/// import resolution asks about, for every import of the index at once.
struct Paths {
    files: HashSet<String>,
    dirs: HashSet<String>,
    by_stem: HashMap<String, Vec<String>>,
    /// The directories that appear or go with the appearing or vanishing files.
    flipped: Vec<String>,
}

impl Paths {
    /// The index after the run, from the store's paths and the run's changes.
    fn after(store: &Store, run: &RunChanges, appeared: &[String]) -> Result<Paths> {
        let before = store.root_paths()?;
        let mut asked: Vec<&str> = appeared.iter().flat_map(|p| ancestors(p)).collect();
        asked.sort_unstable();
        asked.dedup();
        let dirs_before: HashSet<&str> = asked
            .iter()
            .copied()
            .filter(|d| before.iter().any(|p| p.starts_with(d)))
            .collect();
        let mut files: HashSet<String> = before.into_iter().collect();
        for (path, _) in &run.gone {
            files.remove(*path);
        }
        for f in &run.reparsed {
            if root_row(f.rows).is_some() {
                files.insert(f.path.to_string());
            } else {
                files.remove(f.path);
            }
        }
        let mut dirs: HashSet<String> = HashSet::default();
        let mut by_stem: HashMap<String, Vec<String>> = HashMap::default();
        for p in &files {
            dirs.extend(ancestors(p).map(str::to_string));
            by_stem
                .entry(file_stem(p).to_string())
                .or_default()
                .push(p.clone());
        }
        let flipped = asked
            .into_iter()
            .filter(|d| dirs_before.contains(d) != dirs.contains(*d))
            .map(str::to_string)
            .collect();
        Ok(Paths {
            files,
            dirs,
            by_stem,
            flipped,
        })
    }

    /// The files whose imports ask about one of `appeared` or of the directories that
    /// appear or go with them, sorted; `None` past [`MAX_IMPORTERS`]. What else a file sees
    /// changes only for candidates in `appeared` (the implementation of a header it includes,
    /// a package directory in another source set that came with its files): references to
    /// those are namesakes.
    fn importers(
        &self,
        store: &Store,
        run: &RunChanges,
        appeared: &[String],
    ) -> Result<Option<Vec<String>>> {
        let questions: HashSet<&str> = appeared
            .iter()
            .chain(&self.flipped)
            .map(String::as_str)
            .collect();
        let stems: HashSet<&str> = appeared.iter().map(|p| file_stem(p)).collect();
        // Whether the imports `modules` of the file at `path` ask about a file or directory
        // that appeared or went.
        let asks = |path: &str, modules: &[(String, String)]| -> bool {
            let Some(lang) = run.languages.get(path) else {
                return false;
            };
            let asked = Cell::new(false);
            let exists = |p: &str| {
                asked.set(asked.get() || questions.contains(p));
                self.files.contains(p) || self.dirs.contains(p)
            };
            let files_with_stem = |stem: &str| {
                asked.set(asked.get() || stems.contains(stem));
                self.by_stem.get(stem).cloned().unwrap_or_default()
            };
            let analyzer = analyzer_for(*lang);
            for (_, module) in modules {
                import_targets(analyzer, path, module, &exists, &files_with_stem);
            }
            asked.get()
        };
        let replaced = run.replaced();
        let mut imports = store.imports()?;
        imports.retain(|(path, _)| !replaced.contains(path.as_str()));
        imports.par_sort_unstable();
        let files: Vec<&[(String, String)]> = imports.chunk_by(|a, b| a.0 == b.0).collect();
        let mut importers: Vec<String> = files
            .par_iter()
            .filter(|modules| asks(&modules[0].0, modules))
            .map(|modules| modules[0].0.clone())
            .collect();
        if importers.len() > MAX_IMPORTERS {
            return Ok(None);
        }
        importers.sort_unstable();
        Ok(Some(importers))
    }
}

/// The directories above the file at `path`, as directory keys (`a/`, `a/b/`).
fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    path.match_indices('/').map(|(i, _)| &path[..=i])
}

/// The root of the code (not test) source set the file at `path` lies in, if any (see
/// [`SourceSets`]).
fn code_root(path: &str, language: Language) -> Option<&str> {
    let root = analyzer_for(language).source_set(path)?.0;
    (!is_test_set(root)).then_some(root)
}

/// Whether the run leaves the code source roots as they were: a new file may be the first of
/// its root, a gone one the last.
fn same_source_roots(run: &RunChanges) -> bool {
    let new = run.reparsed.iter().filter(|f| f.new);
    let moved: Vec<(&str, Language)> = new.map(|f| (f.path, f.language)).collect();
    let count = |files: &[(&str, Language)], root: &str| {
        let files = files.iter();
        files
            .filter(|(p, l)| code_root(p, *l) == Some(root))
            .count()
    };
    let roots = moved
        .iter()
        .chain(&run.gone)
        .filter_map(|(p, l)| code_root(p, *l));
    roots.collect::<HashSet<_>>().into_iter().all(|root| {
        let after = run.languages.iter();
        let after = after
            .filter(|(p, l)| code_root(p, **l) == Some(root))
            .count();
        let before = after - count(&moved, root) + count(&run.gone, root);
        (after > 0) == (before > 0)
    })
}

/// The stored edges of the references of `sources` (other files' nodes) that name one of
/// `names`: the edges their resolution replaces.
fn namesake_edges(
    store: &Store,
    sources: &HashSet<NodeId>,
    names: &HashSet<String>,
) -> Result<Vec<StoredEdge>> {
    let mut others: Vec<NodeId> = sources.iter().copied().collect();
    others.sort();
    let mut edges = Vec::new();
    for &src in &others {
        edges.extend(
            store
                .edges_from(src)?
                .into_iter()
                .filter(|(_, e, dst_name)| {
                    match (e, dst_name) {
                        (Some(e), Some(n)) => {
                            matches!(e.kind, EdgeKind::Calls | EdgeKind::Inherits)
                                && names.contains(n)
                        }
                        // Rows no resolution produces: replaced.
                        _ => true,
                    }
                }),
        );
    }
    Ok(edges)
}

/// One incremental resolution: the store lookups it makes (cached), and the edges it
/// produces.
struct Incremental<'s> {
    store: &'s Store,
    run: &'s RunChanges<'s>,
    /// The files whose every edge is resolved again: the analyzed, the gone and the
    /// importers.
    redone: HashSet<&'s str>,
    /// The candidates of each name looked up.
    candidates: HashMap<String, Vec<Candidate>>,
    lookup: Lookup<'s>,
    source_sets: SourceSets<'s>,
    /// What each file whose references are resolved imports, and sees without importing.
    imported: HashMap<String, Visible>,
    /// The edges produced for the sources the run affects.
    wanted: EdgeSet,
}

impl<'s> Incremental<'s> {
    fn new(
        store: &'s Store,
        run: &'s RunChanges<'s>,
        importers: &'s [String],
        flipped: &'s [String],
    ) -> Self {
        let replaced = run.replaced();
        let mut redone = replaced.clone();
        redone.extend(importers.iter().map(String::as_str));
        // Module nodes after the run: the analyzed files' own, none for the gone.
        let mut roots: HashMap<String, Option<NodeId>> = HashMap::default();
        for f in &run.reparsed {
            roots.insert(f.path.to_string(), root_row(f.rows));
        }
        for (path, _) in &run.gone {
            roots.insert(path.to_string(), None);
        }
        Incremental {
            store,
            run,
            redone,
            candidates: HashMap::default(),
            lookup: Lookup {
                store,
                reparsed: &run.reparsed,
                replaced,
                flipped: flipped.iter().map(String::as_str).collect(),
                roots: RefCell::new(roots),
                stems: RefCell::default(),
                failed: RefCell::default(),
            },
            source_sets: SourceSets::new(run.languages),
            imported: HashMap::default(),
            wanted: EdgeSet::default(),
        }
    }

    /// The nodes a reference of `name` may resolve to after the run: the store's, outside
    /// the replaced files, and the analyzed files' own.
    fn candidates_of(&mut self, name: &str) -> Result<Vec<Candidate>> {
        if let Some(c) = self.candidates.get(name) {
            return Ok(c.clone());
        }
        let mut c: Vec<Candidate> = self
            .store
            .nodes_named(name)?
            .into_iter()
            .filter(|(_, path, kind)| {
                is_candidate(*kind) && !self.lookup.replaced.contains(path.as_str())
            })
            .collect();
        for f in &self.run.reparsed {
            c.extend(
                f.rows
                    .nodes
                    .iter()
                    .map(|n| &n.record)
                    .filter(|n| n.name == name && is_candidate(n.kind))
                    .map(|n| (n.id, n.path.clone(), n.kind)),
            );
        }
        self.candidates.insert(name.to_string(), c.clone());
        Ok(c)
    }

    /// The edges out of the analyzed files' nodes.
    fn edges_of_reparsed(&mut self) -> Result<()> {
        let run = self.run;
        for f in &run.reparsed {
            let nodes = f.rows.nodes.iter().map(|n| (n.record.id, n.record.parent));
            let modules: Vec<&str> = f.rows.imports.iter().map(|i| i.module.as_str()).collect();
            self.edges_of_file(f.path, f.language, nodes, &modules, &f.rows.refs)?;
        }
        Ok(())
    }

    /// The edges out of the importers' nodes, from their stored rows. Returns the stored
    /// edges they replace.
    fn edges_of_importers(&mut self, importers: &[String]) -> Result<Vec<StoredEdge>> {
        let mut old = Vec::new();
        for path in importers {
            let Some(&language) = self.run.languages.get(path) else {
                continue;
            };
            let nodes = self.store.file_nodes(path)?;
            for n in &nodes {
                old.extend(self.store.edges_from(n.0)?);
            }
            let modules = self.store.imports_of(path)?;
            let modules: Vec<&str> = modules.iter().map(String::as_str).collect();
            let refs = self.store.refs_of_file(path)?;
            let nodes = nodes.iter().map(|n| (n.0, n.3));
            self.edges_of_file(path, language, nodes, &modules, &refs)?;
        }
        Ok(old)
    }

    /// The edges out of the nodes of one file: containment, imports, references.
    fn edges_of_file(
        &mut self,
        path: &str,
        language: Language,
        nodes: impl Iterator<Item = (NodeId, Option<NodeId>)>,
        modules: &[&str],
        refs: &[(NodeId, String, RefKind)],
    ) -> Result<()> {
        for (id, parent) in nodes {
            if let Some(p) = parent {
                self.wanted.add(p, id, EdgeKind::Contains, 1.0);
            }
        }
        let (targets, seen) = self.view(path, language, modules);
        if let Some(src) = self.lookup.root_of(path) {
            for target in &targets {
                if let Some(dst) = self.lookup.root_of(target) {
                    self.wanted.add(src, dst, EdgeKind::Imports, 1.0);
                }
            }
        }
        self.imported.insert(path.to_string(), seen);
        for (src, name, kind) in refs {
            let cands = self.candidates_of(name)?;
            let imported = self.imported.get(path);
            resolve_ref(*src, path, *kind, &cands, imported, &mut self.wanted);
        }
        Ok(())
    }

    /// What the file at `path`, importing `modules`, imports (the import targets) and sees
    /// after the run.
    fn view(&self, path: &str, language: Language, modules: &[&str]) -> (Vec<String>, Visible) {
        let analyzer = analyzer_for(language);
        let exists = |p: &str| self.lookup.exists(p);
        let files_with_stem = |stem: &str| self.lookup.files_with_stem(stem);
        let targets: HashSet<String> = modules
            .iter()
            .flat_map(|m| import_targets(analyzer, path, m, &exists, &files_with_stem))
            .collect();
        let listed = targets.iter().cloned().collect();
        let seen = visible(analyzer, path, targets, &exists, &self.source_sets);
        (listed, seen)
    }

    /// The edges of the other files' references named like a changed symbol (`names`).
    /// Returns the nodes those references are made from.
    fn edges_of_namesakes(&mut self, names: &HashSet<String>) -> Result<HashSet<NodeId>> {
        let mut sources: HashSet<NodeId> = HashSet::default();
        let mut names_sorted: Vec<&String> = names.iter().collect();
        names_sorted.sort();
        for name in names_sorted {
            let cands = self.candidates_of(name)?;
            for (path, src, kind) in self.store.refs_named(name)? {
                if self.redone.contains(path.as_str()) {
                    continue;
                }
                if !self.imported.contains_key(&path) {
                    let seen = match self.run.languages.get(&path) {
                        Some(&language) => {
                            let modules = self.store.imports_of(&path)?;
                            let modules: Vec<&str> = modules.iter().map(String::as_str).collect();
                            self.view(&path, language, &modules).1
                        }
                        None => Visible::default(),
                    };
                    self.imported.insert(path.clone(), seen);
                }
                let imported = self.imported.get(&path);
                resolve_ref(src, &path, kind, &cands, imported, &mut self.wanted);
                sources.insert(src);
            }
        }
        Ok(sources)
    }
}

/// The store lookups an import resolver makes (it cannot be handed an error), answered for
/// the index after the run: cached, the first error kept for the caller.
struct Lookup<'s> {
    store: &'s Store,
    /// The files the run analyzed.
    reparsed: &'s [Reparsed<'s>],
    /// The files whose stored rows the run replaces (analyzed or gone).
    replaced: HashSet<&'s str>,
    /// The directories that appear or go with the run's files.
    flipped: HashSet<&'s str>,
    /// The module node of each path looked up, the replaced files' set first.
    roots: RefCell<HashMap<String, Option<NodeId>>>,
    /// The files of each stem looked up: an unchanged file's external imports (`java.util`)
    /// are asked again for every file a namesake sends the run to.
    stems: RefCell<HashMap<String, Vec<String>>>,
    /// The first store error met.
    failed: RefCell<Option<Error>>,
}

impl Lookup<'_> {
    fn root_of(&self, path: &str) -> Option<NodeId> {
        if let Some(r) = self.roots.borrow().get(path) {
            return *r;
        }
        let r = self.store.root_of(path).unwrap_or_else(|e| {
            self.failed.borrow_mut().get_or_insert(e);
            None
        });
        self.roots.borrow_mut().insert(path.to_string(), r);
        r
    }

    /// The indexed files named `stem` plus an extension, found by their module nodes' names
    /// (a module node is named after its file's stem, and names are indexed).
    fn files_with_stem(&self, stem: &str) -> Vec<String> {
        if let Some(paths) = self.stems.borrow().get(stem) {
            return paths.clone();
        }
        let nodes = self.store.nodes_named(stem).unwrap_or_else(|e| {
            self.failed.borrow_mut().get_or_insert(e);
            Vec::new()
        });
        let stored = nodes
            .into_iter()
            .filter(|(_, path, _)| !self.replaced.contains(path.as_str()));
        let analyzed = self.reparsed.iter().flat_map(|f| &f.rows.nodes);
        let analyzed = analyzed
            .map(|n| &n.record)
            .filter(|n| n.name == stem)
            .map(|n| (n.id, n.path.clone(), n.kind));
        let mut paths: Vec<String> = stored
            .chain(analyzed)
            .filter(|(_, path, kind)| *kind == NodeKind::Module && file_stem(path) == stem)
            .map(|(_, path, _)| path)
            .collect();
        paths.sort();
        paths.dedup();
        self.stems
            .borrow_mut()
            .insert(stem.to_string(), paths.clone());
        paths
    }

    /// Whether the index holds the file (or, ending in `/`, the directory) `path` after the
    /// run.
    fn exists(&self, path: &str) -> bool {
        if path.ends_with('/') {
            let before = self.store.has_dir(path).unwrap_or_else(|e| {
                self.failed.borrow_mut().get_or_insert(e);
                false
            });
            before != self.flipped.contains(path)
        } else {
            self.root_of(path).is_some()
        }
    }
}

/// The files and directories an import written in the file at `path` brings in: where the
/// language's resolver finds it, else the files it names in another module's source root.
fn import_targets(
    analyzer: &dyn Analyzer,
    path: &str,
    module: &str,
    exists: &dyn Fn(&str) -> bool,
    files_with_stem: &dyn Fn(&str) -> Vec<String>,
) -> Vec<String> {
    match analyzer.resolve_import(path, module, exists) {
        Some(target) => vec![target],
        None => analyzer.resolve_import_elsewhere(module, files_with_stem),
    }
}

/// What the file at `path` sees without qualifying a name, given what it imports (`targets`).
#[derive(Default)]
struct Visible {
    /// What it imports, the implementations of the headers it includes, and its own package
    /// directory.
    near: HashSet<String>,
    /// Its package's directories in the repository's other code source roots
    /// ([`SourceSets`]): looked at when nothing near has the name (Kotlin's `jvmMain` sees its
    /// own `actual` first, then `commonMain`'s declarations).
    package: HashSet<String>,
}

/// What the file at `path`, which imports `targets`, sees (see [`Visible`]).
fn visible(
    analyzer: &dyn Analyzer,
    path: &str,
    mut targets: HashSet<String>,
    exists: &dyn Fn(&str) -> bool,
    source_sets: &SourceSets,
) -> Visible {
    let implementations: Vec<String> = targets
        .iter()
        .flat_map(|t| analyzer.implementations(t, exists))
        .collect();
    targets.extend(implementations);
    targets.extend(analyzer.package_dir(path));
    let package = source_sets
        .package_dirs(analyzer, path, exists)
        .into_iter()
        .filter(|d| !targets.contains(d))
        .collect();
    Visible {
        near: targets,
        package,
    }
}

/// The source roots of the repository's Gradle and Maven source sets, read off its files'
/// paths once a file needs them, and the directories of each package looked up: a Java,
/// Kotlin or Scala package is one namespace across the sets of code (Kotlin's `jvmMain` sees
/// `commonMain`'s declarations of its package, a module's `main` another module's). Test sets
/// are left out on both sides: code never sees a test's declarations, and a test's calls
/// resolve as before (linked tighter to the code they test, tests took the graph walk's
/// expansions and cost gson a task, docs/notes/2026-12-07-jvm-source-sets.md). Only paths
/// decide, so an incremental run, whose files and directories are those of the run before,
/// finds what a full run finds.
struct SourceSets<'a> {
    languages: &'a HashMap<String, Language>,
    /// The roots of code (not test) source sets.
    roots: std::cell::OnceCell<Vec<&'a str>>,
    /// The directories of each package directory looked up.
    packages: RefCell<HashMap<String, Vec<String>>>,
}

impl<'a> SourceSets<'a> {
    fn new(languages: &'a HashMap<String, Language>) -> Self {
        SourceSets {
            languages,
            roots: std::cell::OnceCell::new(),
            packages: RefCell::default(),
        }
    }

    /// The directories of the package of the file at `path` under every code source root,
    /// its own among them; empty outside a source set and for tests.
    fn package_dirs(
        &self,
        analyzer: &dyn Analyzer,
        path: &str,
        exists: &dyn Fn(&str) -> bool,
    ) -> Vec<String> {
        let Some((root, package)) = analyzer.source_set(path) else {
            return Vec::new();
        };
        if is_test_set(root) {
            return Vec::new();
        }
        if let Some(dirs) = self.packages.borrow().get(package) {
            return dirs.clone();
        }
        let roots = self.roots.get_or_init(|| {
            let mut roots: Vec<&str> = self
                .languages
                .iter()
                .filter_map(|(p, l)| code_root(p, *l))
                .collect();
            roots.sort_unstable();
            roots.dedup();
            roots
        });
        let dirs: Vec<String> = roots
            .iter()
            .map(|r| format!("{r}{package}"))
            .filter(|d| exists(d))
            .collect();
        self.packages
            .borrow_mut()
            .insert(package.to_string(), dirs.clone());
        dirs
    }
}

/// Whether the source root `root` (`…/src/<set>/<lang>/`) holds tests (`test`, `jvmTest`,
/// `androidTest`, `testFixtures`), by the rule retrieval's places use.
fn is_test_set(root: &str) -> bool {
    root.trim_end_matches('/')
        .rsplit('/')
        .nth(1)
        .is_some_and(crate::test_directory)
}

/// The directory key (`a/b/`) of a file path, as [`Analyzer::package_dir`] and directory
/// import targets spell it.
fn dir_key(path: &str) -> String {
    match path.rfind('/') {
        Some(i) => path[..=i].to_string(),
        None => String::from("/"),
    }
}

/// Whether a node of `kind` can be what a name reference points at.
fn is_candidate(kind: NodeKind) -> bool {
    !matches!(kind, NodeKind::Module | NodeKind::Chunk | NodeKind::Section)
}

/// Adds the edges of one reference from `src` (in the file `src_path`) to `name`, given the
/// candidates named `name` in the whole index and what `src_path` sees.
///
/// A reference prefers a same-named node in its own file, then in a file its file imports
/// (or its package directory), then in its package's other code source roots, then a unique
/// one anywhere; ambiguous names link to every candidate with split confidence, and names
/// with more than [`MAX_CANDIDATES`] candidates are dropped as noise.
fn resolve_ref(
    src: NodeId,
    src_path: &str,
    kind: RefKind,
    candidates: &[Candidate],
    imported: Option<&Visible>,
    edges: &mut EdgeSet,
) {
    let cands: Vec<&Candidate> = candidates
        .iter()
        .filter(|c| c.0 != src)
        .filter(|c| {
            kind != RefKind::Inherits
                || matches!(
                    c.2,
                    NodeKind::Class | NodeKind::Interface | NodeKind::Trait | NodeKind::Struct
                )
        })
        .collect();
    let edge_kind = match kind {
        RefKind::Call => EdgeKind::Calls,
        RefKind::Inherits => EdgeKind::Inherits,
    };
    let same_file: Vec<_> = cands.iter().filter(|c| c.1 == src_path).collect();
    if same_file.len() == 1 {
        edges.add(src, same_file[0].0, edge_kind, 0.9);
        return;
    }
    let seen_in = |set: &HashSet<String>| -> Vec<&&Candidate> {
        cands
            .iter()
            .filter(|c| set.contains(&c.1) || set.contains(&dir_key(&c.1)))
            .collect()
    };
    let mut via_import = imported.map(|v| seen_in(&v.near)).unwrap_or_default();
    if via_import.is_empty() {
        via_import = imported.map(|v| seen_in(&v.package)).unwrap_or_default();
    }
    // A declaration in a header and its definition next to it are one symbol to a reader.
    let one_pair = via_import.len() > 1
        && via_import.len() <= MAX_CANDIDATES
        && via_import
            .iter()
            .all(|c| strip_ext(&c.1) == strip_ext(&via_import[0].1));
    if via_import.len() == 1 {
        edges.add(src, via_import[0].0, edge_kind, 0.8);
    } else if one_pair {
        for c in &via_import {
            edges.add(src, c.0, edge_kind, 0.8 / via_import.len() as f32);
        }
    } else if cands.len() == 1 {
        edges.add(src, cands[0].0, edge_kind, 0.6);
    } else if !cands.is_empty() && cands.len() <= MAX_CANDIDATES {
        let conf = 0.5 / cands.len() as f32;
        for c in &cands {
            edges.add(src, c.0, edge_kind, conf);
        }
    }
}

/// Names with more candidates than this are too common to link.
const MAX_CANDIDATES: usize = 3;

/// Builds the graph's edges from the nodes, raw references and imports of the whole index
/// (references resolve as [`resolve_ref`] says).
pub(crate) fn resolve_edges(
    nodes: &[NodeRecord],
    refs: &[(NodeId, String, RefKind)],
    imports: &[(String, String)],
    languages: &HashMap<String, Language>,
) -> Vec<EdgeRecord> {
    let mut edges = EdgeSet::default();
    let by_id: HashMap<NodeId, &NodeRecord> = nodes.iter().map(|n| (n.id, n)).collect();
    let mut module_of: HashMap<&str, NodeId> = HashMap::default();
    for n in nodes {
        if let Some(p) = n.parent {
            edges.add(p, n.id, EdgeKind::Contains, 1.0);
        } else {
            module_of.entry(n.path.as_str()).or_insert(n.id);
        }
    }
    let mut dirs: HashSet<&str> = HashSet::default();
    for p in module_of.keys() {
        dirs.extend(p.match_indices('/').map(|(i, _)| &p[..=i]));
    }
    let exists = |p: &str| module_of.contains_key(p) || dirs.contains(p);
    let mut by_stem: HashMap<&str, Vec<&str>> = HashMap::default();
    for p in module_of.keys() {
        by_stem.entry(file_stem(p)).or_default().push(p);
    }
    let files_with_stem = |stem: &str| -> Vec<String> {
        by_stem
            .get(stem)
            .map(|v| v.iter().map(|p| p.to_string()).collect())
            .unwrap_or_default()
    };
    let source_sets = SourceSets::new(languages);
    let mut targets: HashMap<&str, HashSet<String>> = HashMap::default();
    for (path, module) in imports {
        let Some(lang) = languages.get(path) else {
            continue;
        };
        let analyzer = analyzer_for(*lang);
        for target in import_targets(analyzer, path, module, &exists, &files_with_stem) {
            if let (Some(&src), Some(&dst)) =
                (module_of.get(path.as_str()), module_of.get(target.as_str()))
            {
                edges.add(src, dst, EdgeKind::Imports, 1.0);
            }
            targets.entry(path.as_str()).or_default().insert(target);
        }
    }
    let mut imported: HashMap<&str, Visible> = HashMap::default();
    for (path, lang) in languages {
        let analyzer = analyzer_for(*lang);
        let own = targets.remove(path.as_str());
        if own.is_some() || analyzer.package_dir(path).is_some() {
            let own = own.unwrap_or_default();
            let seen = visible(analyzer, path, own, &exists, &source_sets);
            imported.insert(path.as_str(), seen);
        }
    }
    let mut by_name: HashMap<&str, Vec<Candidate>> = HashMap::default();
    for n in nodes {
        if is_candidate(n.kind) {
            by_name
                .entry(n.name.as_str())
                .or_default()
                .push((n.id, n.path.clone(), n.kind));
        }
    }
    for (src, name, kind) in refs {
        let Some(src_node) = by_id.get(src) else {
            continue;
        };
        let Some(cands) = by_name.get(name.as_str()) else {
            continue;
        };
        let path = src_node.path.as_str();
        resolve_ref(*src, path, *kind, cands, imported.get(path), &mut edges);
    }
    edges.into_records()
}

/// An edge from its (source, target, kind) key and confidence.
fn edge_record(((src, dst, kind), confidence): ((NodeId, NodeId, EdgeKind), f32)) -> EdgeRecord {
    EdgeRecord {
        src,
        dst,
        kind,
        confidence,
    }
}
