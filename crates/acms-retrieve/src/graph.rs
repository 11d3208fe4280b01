//! `breadth-depth-navigator`: best-first traversal of the UKO graph (petgraph) in both
//! directions — callees and callers, imports and importers, bases and subclasses, parents
//! and children — from seeds: the symbols and files the task mentions, the previous phase's
//! selection, and the primary strategies' best hits. Relevance decays with every hop; the
//! hop path is the reason.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};

use acms_core::{NodeId, StrategyId};
use acms_index::EdgeKind;

use crate::keyword::{hit_limit, proposed_depth};
use crate::{Corpus, Hit, PathEdge, Reason, Result, Stage, Strategy, StrategyInput};

/// Relevance kept per hop (before edge confidence).
const DECAY: f32 = 0.8;
/// Seeds taken from the primary strategies' hits.
const MAX_SEEDS: usize = 12;
/// Nodes expanded per hit wanted, at most.
const MAX_EXPANSIONS_PER_HIT: usize = 2;
/// Neighbours followed from one node, best first: a module's thousand children are noise.
const MAX_FANOUT: usize = 24;

/// The graph strategy.
pub struct NavigatorStrategy {
    max_hops: usize,
}

impl NavigatorStrategy {
    pub fn new(max_hops: usize) -> NavigatorStrategy {
        NavigatorStrategy { max_hops }
    }
}

/// The best way found to a node: its relevance, the seed it started from, the hops taken.
#[derive(Clone)]
struct Route {
    relevance: f32,
    seed: NodeId,
    hops: Vec<(PathEdge, NodeId)>,
}

#[derive(PartialEq)]
struct Item {
    relevance: f32,
    node: NodeId,
}

impl Eq for Item {}

impl Ord for Item {
    fn cmp(&self, other: &Self) -> Ordering {
        self.relevance
            .total_cmp(&other.relevance)
            .then_with(|| other.node.cmp(&self.node))
    }
}

impl PartialOrd for Item {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// How much of a node's relevance flows along an edge. Calls tie code together most
/// tightly (the caller of the function a task names is likely involved); a member says more
/// about its class than one of a class's many members says about the task; a module's
/// imports and importers are many and mostly unrelated.
fn edge_weight(kind: EdgeKind, outgoing: bool) -> f32 {
    match (kind, outgoing) {
        (EdgeKind::Calls, _) => 1.0,
        (EdgeKind::Inherits, _) => 0.9,
        (EdgeKind::Contains, false) => 0.9,
        (EdgeKind::Contains, true) => 0.6,
        (EdgeKind::Imports, _) => 0.5,
    }
}

impl Strategy for NavigatorStrategy {
    fn name(&self) -> &str {
        StrategyId::Navigator.as_str()
    }

    fn max_quality(&self) -> f32 {
        0.6
    }

    fn stage(&self) -> Stage {
        Stage::Expansion
    }

    fn retrieve(&self, input: &StrategyInput) -> Result<Vec<Hit>> {
        let corpus = &input.corpus;
        let mut hits = Vec::new();
        let mut walk = Walk::default();
        for (id, (weight, what)) in named(input) {
            if let Some(n) = corpus.node(id) {
                hits.push(mentioned(n.id, n.kind, &what, weight));
                walk.seed(n.id, weight);
            }
        }
        for &id in &input.query().previous {
            walk.seed(id, 0.8);
        }
        for h in best_seeds(&input.seeds) {
            walk.seed(h.node, h.relevance);
        }
        let limit = hit_limit(input.budget);
        walk.run(corpus, limit, self.max_hops);
        hits.extend(walk.reached(corpus, limit));
        Ok(hits)
    }
}

/// The nodes the query names, with how much each naming counts and the name it was named by.
/// What the caller names explicitly counts fully; what the task text names counts as much as
/// the reading says (see `task`).
fn named(input: &StrategyInput) -> BTreeMap<NodeId, (f32, String)> {
    let corpus = &input.corpus;
    let q = input.query();
    let mut named: BTreeMap<NodeId, (f32, String)> = BTreeMap::new();
    let mut name = |id: NodeId, weight: f32, what: &str| {
        let e = named.entry(id).or_insert((0.0, what.to_string()));
        if weight > e.0 {
            *e = (weight, what.to_string());
        }
    };
    for s in &q.mentioned_symbols {
        for n in corpus.find_symbol(s) {
            name(n.id, 1.0, s);
        }
    }
    for path in &q.mentioned_files {
        if let Some(m) = corpus.module(path) {
            name(m.id, 1.0, path);
        }
    }
    for m in corpus.resolve_mentions(input.reading()) {
        name(m.node, m.weight, &m.name);
    }
    named
}

/// The primary strategies' best hits, one per node, at most [`MAX_SEEDS`].
fn best_seeds(seeds: &[Hit]) -> impl Iterator<Item = &Hit> {
    let mut seeds: Vec<&Hit> = seeds.iter().collect();
    seeds.sort_by(|a, b| {
        b.relevance
            .total_cmp(&a.relevance)
            .then(a.node.cmp(&b.node))
    });
    seeds.dedup_by_key(|h| h.node);
    seeds.into_iter().take(MAX_SEEDS)
}

/// A best-first walk of the graph: the best route found to each node, and the nodes still to
/// expand, most relevant first.
#[derive(Default)]
struct Walk {
    best: HashMap<NodeId, Route>,
    heap: BinaryHeap<Item>,
    /// The nodes the walk started from, which it does not propose.
    seeds: HashSet<NodeId>,
}

impl Walk {
    /// Starts the walk at `id` too, unless it already starts there at least as relevant.
    fn seed(&mut self, id: NodeId, relevance: f32) {
        self.seeds.insert(id);
        if self.best.get(&id).is_none_or(|r| relevance > r.relevance) {
            self.best.insert(
                id,
                Route {
                    relevance,
                    seed: id,
                    hops: Vec::new(),
                },
            );
            self.heap.push(Item {
                relevance,
                node: id,
            });
        }
    }

    /// Walks at most `max_hops` from the seeds. Best-first, so the most relevant nodes are
    /// reached first: a few times the `limit` of hits wanted is enough, and a hub (a module's
    /// thousand members) cannot make it slow.
    fn run(&mut self, corpus: &Corpus, limit: usize, max_hops: usize) {
        let mut expansions = 0usize;
        while let Some(Item { relevance, node }) = self.heap.pop() {
            if expansions >= MAX_EXPANSIONS_PER_HIT * limit {
                break;
            }
            let route = self.best[&node].clone();
            if relevance < route.relevance || route.hops.len() >= max_hops {
                continue;
            }
            expansions += 1;
            self.expand(corpus, node, relevance, &route);
        }
    }

    /// Follows the strongest edges of `node`, reached at `relevance` by `route`, to better
    /// routes.
    fn expand(&mut self, corpus: &Corpus, node: NodeId, relevance: f32, route: &Route) {
        for (other, kind, confidence, outgoing) in corpus.strongest_neighbours(node, MAX_FANOUT) {
            let r = relevance * DECAY * (0.5 + 0.5 * confidence) * edge_weight(kind, outgoing);
            if self.best.get(&other).is_some_and(|old| old.relevance >= r) {
                continue;
            }
            let mut hops = route.hops.clone();
            hops.push((PathEdge { kind, outgoing }, other));
            self.best.insert(
                other,
                Route {
                    relevance: r,
                    seed: route.seed,
                    hops,
                },
            );
            self.heap.push(Item {
                relevance: r,
                node: other,
            });
        }
    }

    /// The `limit` most relevant nodes reached that were not seeds, with their routes.
    fn reached(self, corpus: &Corpus, limit: usize) -> Vec<Hit> {
        let seeds = self.seeds;
        let mut found: Vec<Hit> = self
            .best
            .into_iter()
            .filter(|(id, _)| !seeds.contains(id))
            .filter_map(|(id, route)| {
                let node = corpus.node(id)?;
                Some(Hit {
                    node: id,
                    depth: proposed_depth(node.kind),
                    relevance: route.relevance,
                    strategy: StrategyId::Navigator,
                    reason: Reason::Path {
                        seed: route.seed,
                        hops: route.hops,
                    },
                })
            })
            .collect();
        found.sort_by(|a, b| {
            b.relevance
                .total_cmp(&a.relevance)
                .then(a.node.cmp(&b.node))
        });
        found.truncate(limit);
        found
    }
}

fn mentioned(id: NodeId, kind: acms_index::NodeKind, name: &str, relevance: f32) -> Hit {
    Hit {
        node: id,
        depth: proposed_depth(kind),
        relevance,
        strategy: StrategyId::Navigator,
        reason: Reason::Mentioned {
            name: name.to_string(),
        },
    }
}
