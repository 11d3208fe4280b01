//! `breadth-depth-navigator`: best-first traversal of the UKO graph (petgraph) in both
//! directions — callees and callers, imports and importers, bases and subclasses, parents
//! and children — from seeds: the symbols and files the task mentions, the previous phase's
//! selection, and the primary strategies' best hits. Relevance decays with every hop; the
//! hop path is the reason.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap, HashMap};

use acms_core::{NodeId, StrategyId};
use acms_index::EdgeKind;

use crate::keyword::{hit_limit, proposed_depth};
use crate::{Hit, PathEdge, Reason, Result, Stage, Strategy, StrategyInput};

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
        let q = input.query();
        let mut hits = Vec::new();
        // The best way found to each node.
        let mut best: HashMap<NodeId, Route> = HashMap::new();
        let mut heap = BinaryHeap::new();
        let mut seed = |id: NodeId, relevance: f32, best: &mut HashMap<NodeId, Route>| {
            if best.get(&id).is_none_or(|r| relevance > r.relevance) {
                best.insert(
                    id,
                    Route {
                        relevance,
                        seed: id,
                        hops: Vec::new(),
                    },
                );
                heap.push(Item {
                    relevance,
                    node: id,
                });
            }
        };
        // What the caller names explicitly counts fully; what the task text names counts
        // as much as the reading says (see `task`).
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
        for (id, (weight, what)) in named {
            if let Some(n) = corpus.node(id) {
                hits.push(mentioned(n.id, n.kind, &what, weight));
                seed(n.id, weight, &mut best);
            }
        }
        for &id in &q.previous {
            seed(id, 0.8, &mut best);
        }
        let mut seeds: Vec<&Hit> = input.seeds.iter().collect();
        seeds.sort_by(|a, b| {
            b.relevance
                .total_cmp(&a.relevance)
                .then(a.node.cmp(&b.node))
        });
        seeds.dedup_by_key(|h| h.node);
        for h in seeds.into_iter().take(MAX_SEEDS) {
            seed(h.node, h.relevance, &mut best);
        }

        // Best-first, so the most relevant nodes are reached first: a few times the hits
        // wanted is enough, and a hub (a module's thousand members) cannot make it slow.
        let limit = hit_limit(input.budget);
        let mut expansions = 0usize;
        let is_seed: std::collections::HashSet<NodeId> = best.keys().copied().collect();
        while let Some(Item { relevance, node }) = heap.pop() {
            if expansions >= MAX_EXPANSIONS_PER_HIT * limit {
                break;
            }
            let route = best[&node].clone();
            if relevance < route.relevance || route.hops.len() >= self.max_hops {
                continue;
            }
            expansions += 1;
            for (other, kind, confidence, outgoing) in corpus.strongest_neighbours(node, MAX_FANOUT)
            {
                let r = relevance * DECAY * (0.5 + 0.5 * confidence) * edge_weight(kind, outgoing);
                if best.get(&other).is_some_and(|old| old.relevance >= r) {
                    continue;
                }
                let mut hops = route.hops.clone();
                hops.push((PathEdge { kind, outgoing }, other));
                best.insert(
                    other,
                    Route {
                        relevance: r,
                        seed: route.seed,
                        hops,
                    },
                );
                heap.push(Item {
                    relevance: r,
                    node: other,
                });
            }
        }
        let mut found: Vec<Hit> = best
            .into_iter()
            .filter(|(id, _)| !is_seed.contains(id))
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
        hits.extend(found);
        Ok(hits)
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
