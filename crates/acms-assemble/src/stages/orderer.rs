//! Stage 8, FragmentOrderer: orders packed fragments for coherence — grouped by file, files
//! whose definitions others import first (the import graph, stable topological order,
//! ties by best score then path), and source order within a file.
//!
//! **Invariant:** a pure function of its input: equal inputs give equal orders.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use acms_index::EdgeKind;

use super::StageContext;
use crate::Placed;

/// Stage 8.
pub trait FragmentOrderer: Send + Sync {
    fn order(&self, ctx: &StageContext<'_>, placed: &mut Vec<Placed>);
}

/// File groups in dependency order, source order inside a file.
pub struct CoherentOrderer;

impl FragmentOrderer for CoherentOrderer {
    fn order(&self, ctx: &StageContext<'_>, placed: &mut Vec<Placed>) {
        let path_of = |p: &Placed| {
            ctx.corpus
                .node(p.fragment.node)
                .map(|n| n.path.clone())
                .unwrap_or_default()
        };
        let mut files: BTreeMap<String, f64> = BTreeMap::new();
        for p in placed.iter() {
            let e = files.entry(path_of(p)).or_insert(0.0);
            *e = e.max(p.fragment.score);
        }
        // deps[a] = files among ours that a imports (they go first).
        let mut deps: HashMap<&str, BTreeSet<&str>> = HashMap::new();
        for path in files.keys() {
            if let Some(m) = ctx.corpus.module(path) {
                for (other, kind, _, outgoing) in ctx.corpus.neighbours(m.id) {
                    if kind != EdgeKind::Imports || !outgoing {
                        continue;
                    }
                    if let Some(o) = ctx.corpus.node(other)
                        && let Some((target, _)) = files.get_key_value(&o.path)
                        && target != path
                    {
                        deps.entry(path.as_str())
                            .or_default()
                            .insert(target.as_str());
                    }
                }
            }
        }
        // Kahn's algorithm, always taking the best-scored ready file; a cycle is broken by
        // taking the best-scored remaining file.
        let mut remaining: Vec<&str> = files.keys().map(String::as_str).collect();
        let mut order: Vec<&str> = Vec::with_capacity(remaining.len());
        let rank = |p: &str| (-(files[p] * 1e9) as i64, p.to_string());
        while !remaining.is_empty() {
            let done: BTreeSet<&str> = order.iter().copied().collect();
            let ready = remaining
                .iter()
                .filter(|p| {
                    deps.get(**p)
                        .is_none_or(|d| d.iter().all(|x| done.contains(x)))
                })
                .min_by_key(|p| rank(p))
                .or_else(|| remaining.iter().min_by_key(|p| rank(p)))
                .copied()
                .expect("remaining is not empty");
            order.push(ready);
            remaining.retain(|p| *p != ready);
        }
        let position: HashMap<&str, usize> =
            order.iter().enumerate().map(|(i, p)| (*p, i)).collect();
        let key = |p: &Placed| {
            let n = ctx.corpus.node(p.fragment.node);
            (
                n.map(|n| position.get(n.path.as_str()).copied().unwrap_or(usize::MAX))
                    .unwrap_or(usize::MAX),
                n.map(|n| n.start_byte).unwrap_or(0),
                n.map(|n| std::cmp::Reverse(n.end_byte))
                    .unwrap_or(std::cmp::Reverse(0)),
                p.fragment.node,
            )
        };
        placed.sort_by_key(key);
    }
}
