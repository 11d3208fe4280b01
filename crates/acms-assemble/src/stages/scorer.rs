//! Stage 6, FragmentScorer: the composite score
//! `relevance·w_r + hierarchy·w_h + strategy_quality·w_q + recency·w_t` (spec weights 0.4,
//! 0.3, 0.2, 0.1, configurable under `context.scoring`).
//!
//! Fusion (`context.scoring.fusion`) turns several strategies' relevances for one node into
//! one, rewarding agreement:
//! - `noisy-or` (default): `1 - Π(1 - rᵢ)` over each strategy's best relevance for the node:
//!   calibrated (stays in [0, 1]), two strategies at 0.6 give 0.84 — more than either — and
//!   one strong hit is never diluted by weak ones, as an average would.
//! - `rrf`: reciprocal-rank fusion `Σ 1/(60 + rankᵢ)`, normalised to the best fragment;
//!   ignores score scales entirely.
//! - `max`: the best single relevance (no agreement bonus), for ablation.

use std::collections::HashMap;

use acms_core::{Depth, NodeId};
use acms_index::NodeKind;

use super::StageContext;
use crate::Fragment;

/// Stage 6.
pub trait FragmentScorer: Send + Sync {
    fn score(&self, ctx: &StageContext<'_>, fragments: &mut [Fragment]);
}

/// The spec's weighted composite with configurable fusion.
pub struct CompositeScorer;

/// How much of a symbol's usefulness a depth delivers, relative to its full source.
pub fn depth_value(depth: Depth) -> f64 {
    match depth {
        Depth::Full => 1.0,
        Depth::Skeleton => 0.55,
        Depth::Doc => 0.4,
        Depth::Signature => 0.3,
    }
}

/// Structural usefulness of a node: definitions beat whole files and line chunks, and deep
/// nesting (a closure inside a method) weighs less.
fn hierarchy(kind: NodeKind, nesting: usize) -> f64 {
    let base = match kind {
        NodeKind::Function
        | NodeKind::Method
        | NodeKind::Class
        | NodeKind::Struct
        | NodeKind::Interface
        | NodeKind::Trait
        | NodeKind::Enum
        | NodeKind::TypeAlias => 1.0,
        NodeKind::Impl | NodeKind::Section | NodeKind::Schema => 0.8,
        NodeKind::Module => 0.6,
        NodeKind::Chunk => 0.5,
    };
    base * 0.9f64.powi(nesting.saturating_sub(2) as i32)
}

/// Rank-based fusion: each strategy's ranking contributes `1 / (60 + rank)`.
fn rrf(fragments: &[Fragment]) -> HashMap<NodeId, f64> {
    let mut per_strategy: HashMap<&str, Vec<(f32, NodeId)>> = HashMap::new();
    for f in fragments {
        for h in &f.hits {
            per_strategy
                .entry(&h.strategy)
                .or_default()
                .push((h.relevance, f.node));
        }
    }
    let mut fused: HashMap<NodeId, f64> = HashMap::new();
    for list in per_strategy.values_mut() {
        list.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        for (rank, (_, node)) in list.iter().enumerate() {
            *fused.entry(*node).or_default() += 1.0 / (60.0 + rank as f64 + 1.0);
        }
    }
    let best = fused.values().copied().fold(0.0, f64::max);
    if best > 0.0 {
        fused.values_mut().for_each(|v| *v /= best);
    }
    fused
}

impl FragmentScorer for CompositeScorer {
    fn score(&self, ctx: &StageContext<'_>, fragments: &mut [Fragment]) {
        let w = &ctx.config.scoring;
        let newest = fragments
            .iter()
            .filter_map(|f| ctx.corpus.node(f.node))
            .filter_map(|n| ctx.corpus.file(&n.path))
            .map(|f| f.modified)
            .max()
            .unwrap_or(0);
        let ranks = (w.fusion == "rrf").then(|| rrf(fragments));
        for f in fragments.iter_mut() {
            let Some(node) = ctx.corpus.node(f.node) else {
                continue;
            };
            let quality = f
                .hits
                .iter()
                .map(|h| {
                    ctx.strategy_quality
                        .get(&h.strategy)
                        .copied()
                        .unwrap_or(0.5) as f64
                })
                .fold(0.0, f64::max);
            f.relevance = match (w.fusion.as_str(), &ranks) {
                ("rrf", Some(r)) => r.get(&f.node).copied().unwrap_or(0.0),
                ("max", _) => f
                    .hits
                    .iter()
                    .map(|h| h.relevance as f64)
                    .fold(0.0, f64::max),
                _ => {
                    // One hit per strategy counts: the best of each.
                    let mut best: HashMap<&str, f64> = HashMap::new();
                    for h in &f.hits {
                        let e = best.entry(&h.strategy).or_default();
                        *e = e.max(h.relevance as f64);
                    }
                    1.0 - best
                        .values()
                        .map(|r| 1.0 - r.clamp(0.0, 1.0))
                        .product::<f64>()
                }
            };
            let age_days = ctx
                .corpus
                .file(&node.path)
                .map(|file| (newest - file.modified).max(0) as f64 / 86_400.0)
                .unwrap_or(365.0);
            let recency = (-age_days / 90.0).exp();
            let h = hierarchy(node.kind, ctx.corpus.nesting(node.id));
            f.score = (w.relevance * f.relevance
                + w.hierarchy * h
                + w.strategy_quality * quality
                + w.recency * recency)
                .clamp(0.0, 1.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_values_fall_with_depth_and_hierarchy_prefers_definitions() {
        assert!(depth_value(Depth::Full) > depth_value(Depth::Skeleton));
        assert!(depth_value(Depth::Doc) > depth_value(Depth::Signature));
        assert!(hierarchy(NodeKind::Function, 1) > hierarchy(NodeKind::Module, 0));
        assert!(hierarchy(NodeKind::Function, 1) > hierarchy(NodeKind::Function, 4));
    }
}
