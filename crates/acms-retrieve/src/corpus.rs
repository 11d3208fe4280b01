//! [`Corpus`]: the read-only view of an index that strategies share during a retrieval —
//! node metadata, name and path lookup, and the petgraph graph of the index's edges.
//!
//! Loaded once per process (or per index generation); it holds no node texts beyond
//! signatures and docs, which are fetched from the store only for what is packed.

use std::collections::HashMap;

use acms_core::NodeId;
use acms_index::{EdgeKind, EdgeRecord, FileRecord, NodeRecord, Store};
use petgraph::graph::{DiGraph, NodeIndex};

use crate::Result;

/// Node metadata, lookups and the edge graph of one index generation.
pub struct Corpus {
    nodes: Vec<NodeRecord>,
    by_id: HashMap<NodeId, usize>,
    by_name: HashMap<String, Vec<usize>>,
    module_of: HashMap<String, usize>,
    files: HashMap<String, FileRecord>,
    graph: DiGraph<NodeId, (EdgeKind, f32)>,
    graph_index: HashMap<NodeId, NodeIndex>,
    generation: u64,
}

impl Corpus {
    /// Loads the metadata and edges of `store`.
    pub fn load(store: &Store) -> Result<Corpus> {
        let nodes = store.nodes()?;
        let edges = store.edges()?;
        let files = store.files()?;
        Ok(Corpus::from_parts(
            nodes,
            &edges,
            files,
            store.meta()?.generation,
        ))
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
        let mut graph = DiGraph::with_capacity(nodes.len(), edges.len());
        let mut graph_index = HashMap::with_capacity(nodes.len());
        for (i, n) in nodes.iter().enumerate() {
            by_id.insert(n.id, i);
            by_name.entry(n.name.to_lowercase()).or_default().push(i);
            if n.parent.is_none() {
                module_of.entry(n.path.clone()).or_insert(i);
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
            files: files.into_iter().map(|f| (f.path.clone(), f)).collect(),
            graph,
            graph_index,
            generation,
        }
    }

    /// The store generation this corpus was loaded from.
    pub fn generation(&self) -> u64 {
        self.generation
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
    /// with it when `name` is qualified (`App.route`, `app::App`).
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
        cands
            .iter()
            .map(|&i| &self.nodes[i])
            .filter(|n| {
                !qualified || {
                    let want = name.replace("::", ".").replace('#', ".").to_lowercase();
                    n.qualified_name
                        .replace("::", ".")
                        .to_lowercase()
                        .ends_with(&want)
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

    /// Neighbours of `id` in both directions: (neighbour, edge kind, confidence, outgoing).
    pub fn neighbours(&self, id: NodeId) -> Vec<(NodeId, EdgeKind, f32, bool)> {
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
        out.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
        out
    }

    /// Number of edges in the graph.
    pub fn edge_count(&self) -> usize {
        self.graph.edge_count()
    }
}
