//! [`Corpus`]: the read-only view of an index that strategies share during a retrieval —
//! node metadata, name and path lookup, and the petgraph graph of the index's edges.
//!
//! Loaded once per process (or per index generation); it holds no node texts beyond
//! signatures and docs, which are fetched from the store only for what is packed.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use acms_core::NodeId;
use acms_index::{EdgeKind, EdgeRecord, FileRecord, NodeChanges, NodeRecord, Store};
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;

use crate::place::{HEADER_LINES, generated_header};
use crate::task::TaskReading;
use crate::{Place, Result};

/// Characters of a file's head read for a generator's banner: [`HEADER_LINES`] lines of a
/// wide license header.
const HEAD_CHARS: usize = HEADER_LINES * 160;

/// Node metadata, lookups and the edge graph of one index generation.
pub struct Corpus {
    nodes: Vec<NodeRecord>,
    by_id: HashMap<NodeId, usize>,
    by_name: HashMap<String, Vec<usize>>,
    module_of: HashMap<String, usize>,
    /// The first component of every module's qualified name: the top-level packages and
    /// modules the project itself defines (`sympy`, `_pytest`, `pytest`).
    packages: HashSet<String>,
    files: HashMap<String, FileRecord>,
    /// Files whose head carries a generator's banner (`DO NOT EDIT`), whatever their path.
    generated: HashSet<String>,
    graph: DiGraph<NodeId, (EdgeKind, f32)>,
    graph_index: HashMap<NodeId, NodeIndex>,
    generation: u64,
    /// The id of the store it was loaded from ("" for a corpus built from parts).
    store_id: String,
}

impl Corpus {
    /// Loads the metadata and edges of `store`.
    pub fn load(store: &Store) -> Result<Corpus> {
        let nodes = store.nodes()?;
        let edges = store.edges()?;
        let files = store.files()?;
        let generated = store
            .file_heads(HEAD_CHARS)?
            .into_iter()
            .filter(|(_, head)| generated_header(head))
            .map(|(path, _)| path)
            .collect();
        let meta = store.meta()?;
        let mut corpus =
            Corpus::from_parts(nodes, &edges, files, meta.generation).with_generated(generated);
        corpus.store_id = meta.store_id;
        Ok(corpus)
    }

    /// The corpus of `store` after the index run that made `changes`, built from this one
    /// (the corpus of the generation before that run) instead of reading every node and edge:
    /// the changed files' nodes and the edges out of `changes.edge_sources` are read, the rest
    /// is kept. `None` when the run did not say which edges it changed or the store is not
    /// exactly one generation on (another run came between): load it whole then.
    pub fn patched(&self, store: &Store, changes: &NodeChanges) -> Result<Option<Corpus>> {
        let Some(sources) = &changes.edge_sources else {
            return Ok(None);
        };
        let meta = store.meta()?;
        let generation = meta.generation;
        if generation != self.generation + 1 || meta.store_id != self.store_id {
            return Ok(None);
        }
        let mut paths: BTreeSet<&str> = changes
            .removed
            .iter()
            .filter_map(|id| self.node(*id))
            .map(|n| n.path.as_str())
            .collect();
        let mut fresh = Vec::new();
        for path in store
            .nodes_by_id(&changes.upserted)?
            .iter()
            .map(|n| n.path.clone())
        {
            if !paths.contains(path.as_str()) && !fresh.contains(&path) {
                fresh.push(path);
            }
        }
        paths.extend(fresh.iter().map(String::as_str));
        let mut nodes: Vec<NodeRecord> = Vec::with_capacity(self.nodes.len() + 64);
        nodes.extend(
            self.nodes
                .iter()
                .filter(|n| !paths.contains(n.path.as_str()))
                .cloned(),
        );
        for path in &paths {
            nodes.extend(store.nodes_in(path)?);
        }
        // Stable: each file's nodes stay in source order, as `Store::nodes` gives them (and two
        // sorted runs merge in one pass).
        nodes.sort_by(|a, b| a.path.cmp(&b.path));
        let sources_set: HashSet<NodeId> = sources.iter().copied().collect();
        let mut edges: Vec<EdgeRecord> = Vec::with_capacity(self.graph.edge_count() + 1024);
        // In insertion order, which was `Store::edges`'s order.
        edges.extend(
            self.graph
                .edge_references()
                .map(|e| EdgeRecord {
                    src: self.graph[e.source()],
                    dst: self.graph[e.target()],
                    kind: e.weight().0,
                    confidence: e.weight().1,
                })
                .filter(|e| !sources_set.contains(&e.src)),
        );
        for &src in sources {
            edges.extend(store.edges_out(src)?);
        }
        // Stable and run-aware: the kept edges are one sorted run, the new ones a few more.
        edges.sort_by(acms_index::store::edge_order);
        let mut generated = self.generated.clone();
        for path in &paths {
            generated.remove(*path);
            if store
                .file_content(path)?
                .is_some_and(|text| generated_header(&text))
            {
                generated.insert(path.to_string());
            }
        }
        let mut corpus =
            Corpus::from_parts(nodes, &edges, store.files()?, generation).with_generated(generated);
        corpus.store_id = meta.store_id;
        Ok(Some(corpus))
    }

    /// This corpus with `paths` known as generated code (by their heads; see
    /// [`generated_header`]).
    fn with_generated(mut self, paths: HashSet<String>) -> Corpus {
        self.generated = paths;
        self
    }

    /// Where `path` sits: [`place`](crate::place) by its path, or generated code when its head
    /// carries a generator's banner.
    pub fn place(&self, path: &str) -> Place {
        if self.generated.contains(path) {
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
        let mut module_of = HashMap::new();
        let mut packages = HashSet::new();
        let mut graph = DiGraph::with_capacity(nodes.len(), edges.len());
        let mut graph_index = HashMap::with_capacity(nodes.len());
        for (i, n) in nodes.iter().enumerate() {
            by_id.insert(n.id, i);
            by_name.entry(n.name.to_lowercase()).or_default().push(i);
            if n.parent.is_none() {
                module_of.entry(n.path.clone()).or_insert(i);
            }
            if n.kind == acms_index::NodeKind::Module
                && let Some(top) = n.qualified_name.split(['.', ':']).next()
            {
                packages.insert(top.to_string());
            }
            graph_index.insert(n.id, graph.add_node(n.id));
        }
        for e in edges {
            if let (Some(&a), Some(&b)) = (graph_index.get(&e.src), graph_index.get(&e.dst)) {
                graph.add_edge(a, b, (e.kind, e.confidence));
            }
        }
        Corpus {
            nodes,
            by_id,
            by_name,
            module_of,
            packages,
            files: files.into_iter().map(|f| (f.path.clone(), f)).collect(),
            generated: HashSet::new(),
            graph,
            graph_index,
            generation,
            store_id: String::new(),
        }
    }

    /// The store generation this corpus was loaded from.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The id of the store this corpus was loaded from.
    pub fn store_id(&self) -> &str {
        &self.store_id
    }

    /// All nodes, in path then source order.
    pub fn nodes(&self) -> &[NodeRecord] {
        &self.nodes
    }

    /// The node with `id`.
    pub fn node(&self, id: NodeId) -> Option<&NodeRecord> {
        self.by_id.get(&id).map(|&i| &self.nodes[i])
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
        let Some(cands) = self.by_name.get(&simple) else {
            return Vec::new();
        };
        let qualified = name.contains(['.', ':', '#']);
        let want = name.replace("::", ".").replace('#', ".").to_lowercase();
        cands
            .iter()
            .map(|&i| &self.nodes[i])
            .filter(|n| {
                !qualified || {
                    let have = n.qualified_name.replace("::", ".").to_lowercase();
                    have.strip_suffix(&want)
                        .is_some_and(|rest| rest.is_empty() || rest.ends_with('.'))
                }
            })
            .collect()
    }

    /// The module node of the file at `path`.
    pub fn module(&self, path: &str) -> Option<&NodeRecord> {
        self.module_of.get(path).map(|&i| &self.nodes[i])
    }

    /// The stored file record of `path`.
    pub fn file(&self, path: &str) -> Option<&FileRecord> {
        self.files.get(path)
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
    pub fn neighbours(&self, id: NodeId) -> Vec<(NodeId, EdgeKind, f32, bool)> {
        let mut out = self.edges_of(id);
        out.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
        out
    }

    /// The `n` strongest of [`Corpus::neighbours`]: by confidence, then neighbour, kind and
    /// outgoing first. A hub has thousands of edges, so only the kept ones are sorted.
    pub fn strongest_neighbours(&self, id: NodeId, n: usize) -> Vec<(NodeId, EdgeKind, f32, bool)> {
        let mut out = self.edges_of(id);
        let key = |a: &(NodeId, EdgeKind, f32, bool), b: &(NodeId, EdgeKind, f32, bool)| {
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

    /// Every edge of `id`, outgoing first, in the graph's order.
    fn edges_of(&self, id: NodeId) -> Vec<(NodeId, EdgeKind, f32, bool)> {
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

    /// Number of edges in the graph.
    pub fn edge_count(&self) -> usize {
        self.graph.edge_count()
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
            .module_of
            .keys()
            .map(String::as_str)
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
    /// [`MAX_NAME_DEFINITIONS`] places is too common to mean anything.
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
                    .nodes
                    .iter()
                    .filter(|n| n.path == f && n.name == *func)
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
                .is_some_and(|packages| !packages.iter().any(|p| self.packages.contains(p)))
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
pub const MAX_NAME_DEFINITIONS: usize = 24;

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
