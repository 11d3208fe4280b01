//! [`Corpus`]: the read-only view of an index that strategies share during a retrieval —
//! node metadata, name and path lookup, and the graph of the index's edges.
//!
//! An index opened by [`Corpus::open`] is read **on demand**: a node, a name's definitions, a
//! node's edges and a file's record are read from the store the first time a retrieval asks
//! for them (indexed lookups) and kept for the corpus's life, so opening an index costs what
//! the question touches, not what the repository holds (a one-shot query on a monorepo reads a
//! few thousand of its 275 000 nodes). [`Corpus::load`] and [`Corpus::from_parts`] hold
//! everything in memory instead (tests, and the check that both answer alike). Either way it
//! holds no node texts beyond signatures and docs, which are fetched from the store only for
//! what is packed.
//!
//! A store error while reading on demand is not a panic and not an empty answer passed off as
//! true: the lookup finds nothing and the error is kept ([`Corpus::take_failure`]) for the
//! caller to report after the retrieval.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use acms_core::NodeId;
use acms_index::{EdgeKind, EdgeRecord, FileRecord, NodeKind, NodeRecord, Store};
use elsa::sync::FrozenMap;
use petgraph::graph::{DiGraph, NodeIndex};

use crate::task::TaskReading;
use crate::{Place, Result};

/// A neighbour of a node: (neighbour, edge kind, confidence, outgoing).
pub type Neighbour = (NodeId, EdgeKind, f32, bool);

/// Node metadata, lookups and the edge graph of one index generation.
pub struct Corpus {
    generation: u64,
    /// The id of the store it was read from ("" for a corpus built from parts).
    store_id: String,
    data: Data,
}

enum Data {
    Memory(Box<Memory>),
    Store(Box<OnDemand>),
}

/// Everything in memory.
struct Memory {
    nodes: Vec<NodeRecord>,
    by_id: HashMap<NodeId, usize>,
    by_name: HashMap<String, Vec<usize>>,
    module_of: BTreeMap<String, usize>,
    /// The first component of every module's qualified name: the top-level packages and
    /// modules the project itself defines (`sympy`, `_pytest`, `pytest`).
    packages: HashSet<String>,
    files: HashMap<String, FileRecord>,
    /// Files whose head carries a generator's banner (`DO NOT EDIT`), whatever their path.
    generated: HashSet<String>,
    graph: DiGraph<NodeId, (EdgeKind, f32)>,
    graph_index: HashMap<NodeId, NodeIndex>,
}

/// What the whole index says about its files' root nodes, read once: the module of each
/// path and the project's top-level packages.
struct Roots {
    module_of: BTreeMap<String, NodeId>,
    packages: HashSet<String>,
}

/// Read from the store when first asked, then kept.
struct OnDemand {
    store: Mutex<Store>,
    nodes: FrozenMap<NodeId, Box<Option<NodeRecord>>>,
    /// Lower-cased simple name → ids, in path then source order.
    names: FrozenMap<String, Vec<NodeId>>,
    files: FrozenMap<String, Box<Option<FileRecord>>>,
    /// Path → its first root, asked one path at a time (the deduplicator asks for a few
    /// dozen files; reading every root of a monorepo for them cost a query 60 ms).
    modules: FrozenMap<String, Box<Option<NodeId>>>,
    edges: FrozenMap<NodeId, Vec<Neighbour>>,
    roots: OnceLock<Roots>,
    edge_count: OnceLock<usize>,
    all: OnceLock<Vec<NodeRecord>>,
    failure: Mutex<Option<acms_index::Error>>,
}

impl OnDemand {
    /// Runs a store read; an error is kept and the read yields `T::default()`.
    fn read<T: Default>(&self, f: impl FnOnce(&Store) -> acms_index::Result<T>) -> T {
        let store = self
            .store
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match f(&store) {
            Ok(v) => v,
            Err(e) => {
                self.failure
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .get_or_insert(e);
                T::default()
            }
        }
    }

    fn node(&self, id: NodeId) -> Option<&NodeRecord> {
        if let Some(n) = self.nodes.get(&id) {
            return n.as_ref();
        }
        let n = self.read(|s| s.node(id));
        self.nodes.insert(id, Box::new(n)).as_ref()
    }

    fn named(&self, lname: &str) -> &[NodeId] {
        if let Some(ids) = self.names.get(lname) {
            return ids;
        }
        let ids = self.read(|s| s.ids_named_lower(lname));
        self.names.insert(lname.to_string(), ids)
    }

    fn roots(&self) -> &Roots {
        self.roots.get_or_init(|| {
            let mut module_of = BTreeMap::new();
            let mut packages = HashSet::new();
            for (path, id, kind, qualified) in self.read(Store::roots) {
                module_of.entry(path).or_insert(id);
                if kind == NodeKind::Module {
                    packages.insert(top_package(&qualified));
                }
            }
            Roots {
                module_of,
                packages,
            }
        })
    }
}

/// The first component of a qualified name (`sympy` of `sympy.core.mul`, `crate` of
/// `crate::serve`).
fn top_package(qualified: &str) -> String {
    qualified
        .split(['.', ':'])
        .next()
        .unwrap_or_default()
        .to_string()
}

impl Corpus {
    /// The corpus of the index in `index_dir`, read on demand (see the module documentation).
    pub fn open(index_dir: &Path) -> Result<Corpus> {
        let store = Store::open(index_dir)?;
        let meta = store.meta()?;
        Ok(Corpus {
            generation: meta.generation,
            store_id: meta.store_id,
            data: Data::Store(Box::new(OnDemand {
                store: Mutex::new(store),
                nodes: FrozenMap::new(),
                names: FrozenMap::new(),
                files: FrozenMap::new(),
                modules: FrozenMap::new(),
                edges: FrozenMap::new(),
                roots: OnceLock::new(),
                edge_count: OnceLock::new(),
                all: OnceLock::new(),
                failure: Mutex::new(None),
            })),
        })
    }

    /// Loads every node, edge and file record of `store` into memory.
    pub fn load(store: &Store) -> Result<Corpus> {
        let nodes = store.nodes()?;
        let edges = store.edges()?;
        let files = store.files()?;
        let generated = files
            .iter()
            .filter(|f| f.generated)
            .map(|f| f.path.clone())
            .collect();
        let meta = store.meta()?;
        let mut corpus =
            Corpus::from_parts(nodes, &edges, files, meta.generation).with_generated(generated);
        corpus.store_id = meta.store_id;
        Ok(corpus)
    }

    /// This corpus with `paths` known as generated code (by their heads; see
    /// [`acms_index::generated_header`]). Only for an in-memory corpus.
    fn with_generated(mut self, paths: HashSet<String>) -> Corpus {
        if let Data::Memory(m) = &mut self.data {
            m.generated = paths;
        }
        self
    }

    /// The first error a read on demand met, if any (taken: reported once). Lookups after it
    /// found nothing, so an answer assembled meanwhile is not to be trusted.
    pub fn take_failure(&self) -> Option<acms_index::Error> {
        match &self.data {
            Data::Memory(_) => None,
            Data::Store(d) => d
                .failure
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take(),
        }
    }

    /// Where `path` sits: [`place`](crate::place) by its path, or generated code when its head
    /// carries a generator's banner.
    pub fn place(&self, path: &str) -> Place {
        let generated = match &self.data {
            Data::Memory(m) => m.generated.contains(path),
            Data::Store(_) => self.file(path).is_some_and(|f| f.generated),
        };
        if generated {
            Place::Generated
        } else {
            crate::place(path)
        }
    }

    /// Where `node` sits: its file's [`Corpus::place`], or a test when it is inside a test
    /// module of a source file (Rust's `#[cfg(test)] mod tests`, a third of axum's nodes).
    pub fn node_place(&self, node: &NodeRecord) -> Place {
        crate::place::node_place(self.place(&node.path), &node.qualified_name)
    }

    /// Builds a corpus from parts (for tests and for callers that already hold them).
    pub fn from_parts(
        nodes: Vec<NodeRecord>,
        edges: &[EdgeRecord],
        files: Vec<FileRecord>,
        generation: u64,
    ) -> Corpus {
        let mut by_id = HashMap::with_capacity(nodes.len());
        let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
        let mut module_of = BTreeMap::new();
        let mut packages = HashSet::new();
        let mut graph = DiGraph::with_capacity(nodes.len(), edges.len());
        let mut graph_index = HashMap::with_capacity(nodes.len());
        for (i, n) in nodes.iter().enumerate() {
            by_id.insert(n.id, i);
            by_name.entry(n.name.to_lowercase()).or_default().push(i);
            if n.parent.is_none() {
                module_of.entry(n.path.clone()).or_insert(i);
            }
            if n.kind == NodeKind::Module {
                packages.insert(top_package(&n.qualified_name));
            }
            graph_index.insert(n.id, graph.add_node(n.id));
        }
        for e in edges {
            if let (Some(&a), Some(&b)) = (graph_index.get(&e.src), graph_index.get(&e.dst)) {
                graph.add_edge(a, b, (e.kind, e.confidence));
            }
        }
        Corpus {
            generation,
            store_id: String::new(),
            data: Data::Memory(Box::new(Memory {
                nodes,
                by_id,
                by_name,
                module_of,
                packages,
                files: files.into_iter().map(|f| (f.path.clone(), f)).collect(),
                generated: HashSet::new(),
                graph,
                graph_index,
            })),
        }
    }

    /// The store generation this corpus was read from.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The id of the store this corpus was read from.
    pub fn store_id(&self) -> &str {
        &self.store_id
    }

    /// All nodes, in path then source order. On an index read on demand this reads every
    /// node (once): only for what needs the whole index, never on a query's path.
    pub fn nodes(&self) -> &[NodeRecord] {
        match &self.data {
            Data::Memory(m) => &m.nodes,
            Data::Store(d) => d.all.get_or_init(|| d.read(Store::nodes)),
        }
    }

    /// The node with `id`.
    pub fn node(&self, id: NodeId) -> Option<&NodeRecord> {
        match &self.data {
            Data::Memory(m) => m.by_id.get(&id).map(|&i| &m.nodes[i]),
            Data::Store(d) => d.node(id),
        }
    }

    /// Nodes whose simple name is `name` (case-insensitive), or whose qualified name ends
    /// with it at a component boundary when `name` is qualified (`App.route`, `app::App`:
    /// `printing.pretty` is not `test_printing.pretty`).
    pub fn find_symbol(&self, name: &str) -> Vec<&NodeRecord> {
        let simple = name
            .rsplit(['.', ':', '/', '#'])
            .next()
            .unwrap_or(name)
            .to_lowercase();
        let cands: Vec<&NodeRecord> = match &self.data {
            Data::Memory(m) => m
                .by_name
                .get(&simple)
                .map(|c| c.iter().map(|&i| &m.nodes[i]).collect())
                .unwrap_or_default(),
            Data::Store(d) => d
                .named(&simple)
                .iter()
                .filter_map(|&id| d.node(id))
                .collect(),
        };
        if !name.contains(['.', ':', '#']) {
            return cands;
        }
        let want = name.replace("::", ".").replace('#', ".").to_lowercase();
        cands
            .into_iter()
            .filter(|n| {
                let have = n.qualified_name.replace("::", ".").to_lowercase();
                have.strip_suffix(&want)
                    .is_some_and(|rest| rest.is_empty() || rest.ends_with('.'))
            })
            .collect()
    }

    /// The nodes of the file at `path` named exactly `name`, in source order.
    fn named_in(&self, path: &str, name: &str) -> Vec<&NodeRecord> {
        match &self.data {
            Data::Memory(m) => m
                .nodes
                .iter()
                .filter(|n| n.path == path && n.name == name)
                .collect(),
            Data::Store(d) => d
                .named(&name.to_lowercase())
                .iter()
                .filter_map(|&id| d.node(id))
                .filter(|n| n.path == path && n.name == name)
                .collect(),
        }
    }

    /// The module node of the file at `path`.
    pub fn module(&self, path: &str) -> Option<&NodeRecord> {
        match &self.data {
            Data::Memory(m) => m.module_of.get(path).map(|&i| &m.nodes[i]),
            Data::Store(d) => {
                let id = match d.roots.get() {
                    Some(roots) => roots.module_of.get(path).copied(),
                    None => match d.modules.get(path) {
                        Some(id) => *id,
                        None => {
                            let id = d.read(|s| s.first_root(path));
                            *d.modules.insert(path.to_string(), Box::new(id))
                        }
                    },
                };
                id.and_then(|id| d.node(id))
            }
        }
    }

    /// Whether the project defines the top-level package or module `name`.
    fn defines_package(&self, name: &str) -> bool {
        match &self.data {
            Data::Memory(m) => m.packages.contains(name),
            Data::Store(d) => d.roots().packages.contains(name),
        }
    }

    /// Every path with a module node, sorted.
    fn module_paths(&self) -> Box<dyn Iterator<Item = &str> + '_> {
        match &self.data {
            Data::Memory(m) => Box::new(m.module_of.keys().map(String::as_str)),
            Data::Store(d) => Box::new(d.roots().module_of.keys().map(String::as_str)),
        }
    }

    /// The stored file record of `path`.
    pub fn file(&self, path: &str) -> Option<&FileRecord> {
        match &self.data {
            Data::Memory(m) => m.files.get(path),
            Data::Store(d) => {
                if let Some(f) = d.files.get(path) {
                    return f.as_ref();
                }
                let f = d.read(|s| s.file(path));
                d.files.insert(path.to_string(), Box::new(f)).as_ref()
            }
        }
    }

    /// Number of ancestors of `id` (0 for a module).
    pub fn nesting(&self, id: NodeId) -> usize {
        let mut depth = 0;
        let mut cur = self.node(id).and_then(|n| n.parent);
        while let Some(p) = cur {
            depth += 1;
            cur = self.node(p).and_then(|n| n.parent);
            if depth > 64 {
                break;
            }
        }
        depth
    }

    /// Neighbours of `id` in both directions: (neighbour, edge kind, confidence, outgoing),
    /// by neighbour and kind.
    pub fn neighbours(&self, id: NodeId) -> Vec<Neighbour> {
        let mut out = self.edges_of(id);
        out.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
        out
    }

    /// The `n` strongest of [`Corpus::neighbours`]: by confidence, then neighbour, kind and
    /// outgoing first. A hub has thousands of edges, so only the kept ones are sorted.
    pub fn strongest_neighbours(&self, id: NodeId, n: usize) -> Vec<Neighbour> {
        let mut out = self.edges_of(id);
        let key = |a: &Neighbour, b: &Neighbour| {
            b.2.total_cmp(&a.2)
                .then(a.0.cmp(&b.0))
                .then(a.1.cmp(&b.1))
                .then(b.3.cmp(&a.3))
        };
        if out.len() > n && n > 0 {
            out.select_nth_unstable_by(n - 1, key);
        }
        out.truncate(n);
        out.sort_by(key);
        out
    }

    /// Every edge of `id`, outgoing first (callers order them).
    fn edges_of(&self, id: NodeId) -> Vec<Neighbour> {
        match &self.data {
            Data::Memory(m) => m.edges_of(id),
            Data::Store(d) => {
                if let Some(e) = d.edges.get(&id) {
                    return e.to_vec();
                }
                let e = d.read(|s| s.edges_touching(id));
                d.edges.insert(id, e).to_vec()
            }
        }
    }

    /// Number of edges in the graph.
    pub fn edge_count(&self) -> usize {
        match &self.data {
            Data::Memory(m) => m.graph.edge_count(),
            Data::Store(d) => *d.edge_count.get_or_init(|| d.read(Store::counts).1),
        }
    }

    /// The files whose repository-relative path a mention names: the mention ends with the
    /// path (an absolute traceback path), or the path ends with the mention at a `/`
    /// boundary (`core/mul.py`), or the mention is a module path without its extension
    /// (`sympy/printing/latex` → `latex.py` or `latex/__init__.py`), or the path as installed
    /// ends the mention (`…/site-packages/_pytest/main.py` is `src/_pytest/main.py`).
    pub fn files_named(&self, mention: &str) -> Vec<&str> {
        let m = mention.replace('\\', "/");
        let m = m.trim_start_matches("./");
        let at_boundary = |long: &str, short: &str| {
            long.ends_with(short)
                && (long.len() == short.len()
                    || long.as_bytes()[long.len() - short.len() - 1] == b'/')
        };
        let mut out: Vec<&str> = self
            .module_paths()
            .filter(|p| {
                at_boundary(m, p)
                    || at_boundary(p, m)
                    || installed(m, p).is_some_and(|p| at_boundary(m, p))
                    || p.strip_suffix("/__init__.py")
                        .or_else(|| p.rsplit_once('.').map(|(stem, _)| stem))
                        .is_some_and(|stem| at_boundary(stem, m) || at_boundary(m, stem))
            })
            .collect();
        out.sort_unstable();
        out
    }

    /// Resolves what a task mentions ([`crate::task::read`]) to nodes, each with the
    /// mention's weight times how specific it is: a name defined once is strong evidence, a
    /// name defined in k places shares it (`1/√k`), and a name defined in more than
    /// `MAX_NAME_DEFINITIONS` places is too common to mean anything.
    pub fn resolve_mentions(&self, reading: &TaskReading) -> Vec<Mention> {
        let mut best: BTreeMap<NodeId, Mention> = BTreeMap::new();
        let mut put = |node: NodeId, weight: f32, name: &str| {
            let e = best.entry(node).or_insert_with(|| Mention {
                node,
                weight: 0.0,
                name: name.to_string(),
            });
            if weight > e.weight {
                e.weight = weight;
                e.name = name.to_string();
            }
        };
        for (path, w) in &reading.paths {
            let files = self.files_named(path);
            if files.is_empty() || files.len() > MAX_NAME_DEFINITIONS {
                continue;
            }
            let spec = 1.0 / (files.len() as f32).sqrt();
            for f in files {
                if let Some(m) = self.module(f) {
                    put(m.id, w * spec, path);
                }
            }
        }
        for frame in &reading.frames {
            let Some(func) = &frame.function else {
                continue;
            };
            for f in self.files_named(&frame.path) {
                let here = self
                    .named_in(f, func)
                    .into_iter()
                    .min_by_key(|n| match frame.line {
                        // The reporter's version may differ from the index's by a few lines.
                        Some(l) => n.start_line.saturating_sub(l) + l.saturating_sub(n.end_line),
                        None => 0,
                    });
                if let Some(n) = here {
                    put(n.id, crate::task::IN_CODE, func);
                }
            }
        }
        // What the dotted mentions resolve to: `Client` in `Client.send()` means the `Client`
        // that has a `send`, not every class of that name (a vendored copy, a test double).
        let dotted: Vec<String> = reading
            .identifiers
            .keys()
            .filter(|n| n.contains(['.', ':']))
            .flat_map(|n| self.find_symbol(n))
            .map(|n| n.qualified_name.replace("::", "."))
            .collect();
        let contains_dotted = |n: &NodeRecord| {
            let prefix = format!("{}.", n.qualified_name.replace("::", "."));
            dotted.iter().any(|q| q.starts_with(&prefix))
        };
        for (name, w) in &reading.identifiers {
            // `mkdir` in `os.mkdir(p)` is the standard library's, unless the project is `os`.
            if reading
                .imported
                .get(name)
                .is_some_and(|packages| !packages.iter().any(|p| self.defines_package(p)))
            {
                continue;
            }
            let found = self.find_symbol(name);
            // Prefer definitions spelled exactly as mentioned (`Symbol`, not `symbol`).
            let simple = name.rsplit(['.', ':']).next().unwrap_or(name);
            // A file is named by a path, not by a word that happens to be its stem (`typing`
            // in `from typing import …` is the standard library, not `util/typing.py`); an
            // identifier names code, not a document's heading (`import sympy` is not the
            // README's "SymPy" section); a constant only by its own spelling
            // (`names_constant`).
            let found: Vec<&NodeRecord> = found
                .into_iter()
                .filter(|n| match n.kind {
                    acms_index::NodeKind::Module | acms_index::NodeKind::Section => false,
                    acms_index::NodeKind::Constant => names_constant(n, simple),
                    _ => true,
                })
                .collect();
            let exact: Vec<&NodeRecord> =
                found.iter().copied().filter(|n| n.name == simple).collect();
            let defs = if exact.is_empty() { found } else { exact };
            let owners: Vec<&NodeRecord> = defs
                .iter()
                .copied()
                .filter(|n| contains_dotted(n))
                .collect();
            let mut defs = if owners.is_empty() { defs } else { owners };
            // The project's own definition, not a test double, doc example or vendored copy
            // of the same name; a name only those define is theirs, unless the task's own
            // code defines it too (then it is the reporter's).
            let is_source = |n: &&NodeRecord| self.node_place(n) == Place::Source;
            if defined_by_task(reading, name) || defs.iter().any(is_source) {
                defs.retain(is_source);
            }
            if defs.is_empty() || defs.len() > MAX_NAME_DEFINITIONS {
                continue;
            }
            let spec = 1.0 / (defs.len() as f32).sqrt();
            for n in defs {
                put(n.id, w * spec, name);
            }
        }
        best.into_values().collect()
    }
}

impl Memory {
    /// Every edge of `id`, outgoing first, in the graph's order.
    fn edges_of(&self, id: NodeId) -> Vec<Neighbour> {
        let Some(&ix) = self.graph_index.get(&id) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for dir in [petgraph::Direction::Outgoing, petgraph::Direction::Incoming] {
            for e in self.graph.edges_directed(ix, dir) {
                let other = match dir {
                    petgraph::Direction::Outgoing => petgraph::visit::EdgeRef::target(&e),
                    petgraph::Direction::Incoming => petgraph::visit::EdgeRef::source(&e),
                };
                let (kind, conf) = *e.weight();
                out.push((
                    self.graph[other],
                    kind,
                    conf,
                    dir == petgraph::Direction::Outgoing,
                ));
            }
        }
        out
    }
}

/// Whether `written` names the constant `n`: spelled exactly, and not a lower-case word.
/// A module-level `numpy = import_module('numpy')` or `extensions = [...]` in a `conf.py`
/// shares its name with a module the task imports and a word it writes; `SYMPY` is not
/// `sympy`. `DEFAULT_LOG_FORMAT` and `known_functions` are names only code uses.
fn names_constant(n: &NodeRecord, written: &str) -> bool {
    n.name == written && (n.name.contains('_') || n.name.chars().any(char::is_uppercase))
}

/// Whether the task's own code defines `name` or the object it is reached through
/// (`foo` in `def foo`, `MyString.var` after `class MyString`).
fn defined_by_task(reading: &TaskReading, name: &str) -> bool {
    name.split(['.', ':'])
        .any(|segment| reading.defined.contains(segment))
}

/// A name defined in more places than this says nothing about which one a task means.
const MAX_NAME_DEFINITIONS: usize = 24;

/// A node a task names, and how strongly.
#[derive(Debug, Clone, PartialEq)]
pub struct Mention {
    pub node: NodeId,
    /// In (0, 1].
    pub weight: f32,
    /// The name or path as the task wrote it.
    pub name: String,
}

/// Where a file of a `src/` or `lib/` layout lands when its package is installed, if
/// `mention` is an installed path (`…/site-packages/_pytest/main.py`): the path without that
/// first directory (`src/_pytest/main.py` → `_pytest/main.py`).
fn installed<'p>(mention: &str, path: &'p str) -> Option<&'p str> {
    ["site-packages/", "dist-packages/", "node_modules/"]
        .iter()
        .any(|dir| mention.contains(dir))
        .then_some(path)?
        .strip_prefix("src/")
        .or_else(|| path.strip_prefix("lib/"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use acms_index::NodeKind;

    fn node(id: u64) -> NodeRecord {
        NodeRecord {
            id: NodeId(id),
            path: "m.py".into(),
            kind: NodeKind::Function,
            name: format!("f{id}"),
            qualified_name: format!("m.f{id}"),
            parent: None,
            start_line: 1,
            end_line: 1,
            start_byte: 0,
            end_byte: 0,
            signature: String::new(),
            doc: None,
            tokens: [1; 4],
        }
    }

    const KINDS: [EdgeKind; 4] = [
        EdgeKind::Contains,
        EdgeKind::Imports,
        EdgeKind::Calls,
        EdgeKind::Inherits,
    ];

    proptest::proptest! {
        /// The strongest `n` of a hub are the first `n` of all its neighbours ranked by
        /// confidence and then neighbour (ties of both kept in neighbour-and-kind order).
        #[test]
        fn the_strongest_neighbours_are_the_head_of_all_of_them_ranked(
            edges in proptest::collection::vec((1u64..12, 0usize..4, 0u8..4, proptest::bool::ANY), 0..60),
            n in 0usize..30,
        ) {
            let nodes: Vec<NodeRecord> = (0..12).map(node).collect();
            let edges: Vec<EdgeRecord> = edges
                .iter()
                .map(|&(other, kind, conf, out)| {
                    let (src, dst) = if out { (0, other) } else { (other, 0) };
                    EdgeRecord {
                        src: NodeId(src),
                        dst: NodeId(dst),
                        kind: KINDS[kind],
                        confidence: f32::from(conf) / 4.0,
                    }
                })
                .collect();
            let corpus = Corpus::from_parts(nodes, &edges, Vec::new(), 1);
            let mut all = corpus.neighbours(NodeId(0));
            all.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
            all.truncate(n);
            proptest::prop_assert_eq!(corpus.strongest_neighbours(NodeId(0), n), all);
        }
    }
}
