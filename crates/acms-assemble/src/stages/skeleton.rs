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
        // Choose by an additive estimate (each entry's line counted alone, plus its file's
        // line once), then count the rendering exactly and drop the lowest-scored entries
        // until it fits: a few exact counts instead of one per entry.
        let mut chosen: Vec<usize> = Vec::new();
        let mut files_seen = std::collections::HashSet::new();
        let mut estimate = ctx
            .counter
            .count("[acms] parent plan context (skeleton):\n");
        for i in by_score {
            let Some(n) = ctx.corpus.node(placed[i].fragment.node) else {
                continue;
            };
            let sig = n.signature.lines().next().unwrap_or_default().trim_end();
            let mut cost = ctx.counter.count(&format!("  {}: {sig}\n", n.start_line));
            if !files_seen.contains(n.path.as_str()) {
                cost += ctx.counter.count(&format!("{}\n", n.path));
            }
            if estimate + cost <= target {
                estimate += cost;
                files_seen.insert(n.path.clone());
                chosen.push(i);
            }
        }
        let mut text = render(ctx, placed, &chosen);
        while !chosen.is_empty() && ctx.counter.count(&text) > target {
            chosen.pop();
            text = render(ctx, placed, &chosen);
        }
        let tokens = ctx.counter.count(&text);
        Skeleton {
            nodes: chosen.iter().map(|&i| placed[i].fragment.node).collect(),
            text,
            tokens,
        }
    }
}
