//! Stage 10, SkeletonCompressor: compresses an assembled context into signatures grouped by
//! file, within a token target (`context.budget.skeleton-ratio` of a child plan's budget).
//! A child assembly receives it as inherited context.

use std::collections::BTreeMap;

use acms_core::Depth;

use super::StageContext;
use crate::{Placed, Skeleton};

/// Stage 10.
pub trait SkeletonCompressor: Send + Sync {
    /// A skeleton of `placed` (in context order) of at most `target` tokens, exactly counted.
    fn compress(&self, ctx: &StageContext<'_>, placed: &[Placed], target: usize) -> Skeleton;
}

/// Best-scored signatures first, rendered by file in source order.
pub struct SignatureSkeleton;

/// Renders the chosen entries (indices into `placed`) grouped by file in context order.
fn render(ctx: &StageContext<'_>, placed: &[Placed], chosen: &[usize]) -> String {
    if chosen.is_empty() {
        return String::new();
    }
    let mut by_file: BTreeMap<usize, (String, Vec<String>)> = BTreeMap::new();
    let mut first_seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut sorted = chosen.to_vec();
    sorted.sort();
    for i in sorted {
        let Some(n) = ctx.corpus.node(placed[i].fragment.node) else {
            continue;
        };
        let slot = *first_seen.entry(n.path.clone()).or_insert(i);
        let sig = n
            .signature
            .lines()
            .next()
            .unwrap_or_default()
            .trim_end()
            .to_string();
        by_file
            .entry(slot)
            .or_insert_with(|| (n.path.clone(), Vec::new()))
            .1
            .push(format!("  {}: {sig}", n.start_line));
    }
    let mut out = String::from("[acms] parent plan context (skeleton):\n");
    for (path, sigs) in by_file.values() {
        out.push_str(path);
        out.push('\n');
        for s in sigs {
            out.push_str(s);
            out.push('\n');
        }
    }
    out
}

impl SkeletonCompressor for SignatureSkeleton {
    fn compress(&self, ctx: &StageContext<'_>, placed: &[Placed], target: usize) -> Skeleton {
        let mut by_score: Vec<usize> = (0..placed.len())
            .filter(|&i| {
                ctx.corpus
                    .node(placed[i].fragment.node)
                    .is_some_and(|n| n.tokens_at(Depth::Signature) > 0)
            })
            .collect();
        by_score.sort_by(|&a, &b| {
            placed[b]
                .fragment
                .score
                .total_cmp(&placed[a].fragment.score)
                .then(placed[a].fragment.node.cmp(&placed[b].fragment.node))
        });
        // Grow while it fits (one exact count per step; skeletons are small).
        let mut chosen: Vec<usize> = Vec::new();
        let mut text = String::new();
        for i in by_score {
            chosen.push(i);
            let candidate = render(ctx, placed, &chosen);
            if ctx.counter.count(&candidate) <= target {
                text = candidate;
            } else {
                chosen.pop();
            }
        }
        let tokens = ctx.counter.count(&text);
        Skeleton {
            nodes: chosen.iter().map(|&i| placed[i].fragment.node).collect(),
            text,
            tokens,
        }
    }
}
