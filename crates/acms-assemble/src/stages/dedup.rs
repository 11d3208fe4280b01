//! Stage 4, FragmentDeduplicator: one fragment per UKO node (merging every strategy's hit),
//! then handles copies: identical content under another node and near-identical content
//! above `context.scoring.dedup-similarity`. The best-relevance copy is kept whole. A copy
//! in vendored, generated, test, doc or example code is dropped; a copy in the project's own
//! source is a parallel implementation (an adapter per runtime, a crate and its `-extra`
//! twin) that a fix usually has to change too, so it stays as its signature: its place is
//! named for a few tokens and its body is not paid twice.

use std::collections::{BTreeMap, HashMap, HashSet};

use acms_core::{ContentHash, Depth, NodeId};
use acms_retrieve::{Hit, Place};

use super::StageContext;
use crate::render;
use crate::{DropReason, Dropped, Fragment};

/// Stage 4.
pub trait FragmentDeduplicator: Send + Sync {
    fn dedup(&self, ctx: &StageContext<'_>, hits: Vec<Hit>) -> (Vec<Fragment>, Vec<Dropped>);
}

/// Identity, content-hash and similarity deduplication.
pub struct DefaultDeduplicator;

/// Exact token cost of each depth of `node` rendered as a fragment (header, separator and the
/// line of its container included), for the packer.
pub(crate) fn fragment_cost(ctx: &StageContext<'_>, node: &acms_index::NodeRecord) -> [u32; 4] {
    // The header differs between depths only in one digit, which is one token. A member of a
    // class is shown under the class's line and an elision line (at most ~3 tokens more than
    // the line itself; the final text is counted exactly anyway).
    let container = render::container(node, |id| ctx.corpus.node(id))
        .map(|c| ctx.counter.count(&render::container_line(c, "")) as u32 + 3)
        .unwrap_or(0);
    let module = ctx.corpus.module(&node.path);
    let head = ctx
        .counter
        .count(&render::header(node, module, Depth::Full)) as u32
        + 1
        + container;
    let mut cost = [0; 4];
    for d in Depth::FALLBACK {
        cost[d.index()] = node.tokens_at(d) + head;
    }
    cost
}

/// The shallowest depth at which `node` is worth a fragment (`context.packer.
/// min-fragment-tokens`): where a copy of the project's own code is capped.
fn shallowest_shown(node: &acms_index::NodeRecord, min_tokens: u32) -> Depth {
    [Depth::Signature, Depth::Doc, Depth::Skeleton]
        .into_iter()
        .find(|&d| node.tokens_at(d) >= min_tokens)
        .unwrap_or(Depth::Full)
}

/// Whether `f` is in the project's own source (not vendored, generated, a test, a doc or an
/// example).
fn in_source(ctx: &StageContext<'_>, f: &Fragment) -> bool {
    ctx.corpus
        .node(f.node)
        .is_some_and(|n| ctx.corpus.node_place(n) == Place::Source)
}

/// Jaccard similarity of the sets of whitespace-separated words of two texts.
fn similarity(a: &str, b: &str) -> f64 {
    let sa: HashSet<&str> = a.split_whitespace().collect();
    let sb: HashSet<&str> = b.split_whitespace().collect();
    let union = sa.union(&sb).count();
    if union == 0 {
        return 1.0;
    }
    sa.intersection(&sb).count() as f64 / union as f64
}

impl FragmentDeduplicator for DefaultDeduplicator {
    fn dedup(&self, ctx: &StageContext<'_>, hits: Vec<Hit>) -> (Vec<Fragment>, Vec<Dropped>) {
        let mut by_node: BTreeMap<NodeId, Vec<Hit>> = BTreeMap::new();
        for h in hits {
            by_node.entry(h.node).or_default().push(h);
        }
        let mut fragments: Vec<Fragment> = by_node
            .into_iter()
            .filter_map(|(node, hits)| {
                let n = ctx.corpus.node(node)?;
                let max_depth = hits.iter().map(|h| h.depth).max().unwrap_or(Depth::Full);
                let relevance = hits.iter().map(|h| h.relevance as f64).fold(0.0, f64::max);
                Some(Fragment {
                    node,
                    hits,
                    max_depth,
                    cost: fragment_cost(ctx, n),
                    relevance,
                    score: 0.0,
                })
            })
            .collect();
        // Best copy first, so the first of a group of copies is the one kept.
        fragments.sort_by(|a, b| {
            b.relevance
                .total_cmp(&a.relevance)
                .then(a.node.cmp(&b.node))
        });

        // Copies (vendored, generated, pasted) keep their name and kind and have about the
        // same size: compare texts only within such groups, so the common case — every
        // candidate a different symbol — reads no text at all.
        let mut groups: HashMap<(String, String, u32), Vec<usize>> = HashMap::new();
        for (i, f) in fragments.iter().enumerate() {
            if let Some(n) = ctx.corpus.node(f.node) {
                let bucket = n.tokens_at(Depth::Full) / 16;
                groups
                    .entry((n.kind.name().into(), n.name.clone(), bucket))
                    .or_default()
                    .push(i);
            }
        }
        let threshold = ctx.config.scoring.dedup_similarity;
        let mut duplicate = vec![false; fragments.len()];
        let mut text_of: HashMap<usize, String> = HashMap::new();
        let mut text = |i: usize, fragments: &[Fragment]| -> String {
            text_of
                .entry(i)
                .or_insert_with(|| {
                    ctx.store
                        .text(fragments[i].node, Depth::Full)
                        .unwrap_or_default()
                })
                .clone()
        };
        let mut members: Vec<Vec<usize>> = groups.into_values().filter(|g| g.len() > 1).collect();
        members.sort();
        // The project's own copy is the one kept whole, ahead of a better-matching vendored one.
        for group in &mut members {
            group.sort_by_key(|&i| !in_source(ctx, &fragments[i]));
        }
        for group in members {
            let mut hashes: HashMap<ContentHash, usize> = HashMap::new();
            for (k, &i) in group.iter().enumerate() {
                if duplicate[i] {
                    continue;
                }
                let ti = text(i, &fragments);
                if hashes.insert(ContentHash::of(ti.as_bytes()), i).is_some() {
                    duplicate[i] = true;
                    continue;
                }
                for &j in &group[..k] {
                    if !duplicate[j] && similarity(&ti, &text(j, &fragments)) >= threshold {
                        duplicate[i] = true;
                        break;
                    }
                }
            }
        }
        let min_tokens = ctx.config.packer.min_fragment_tokens as u32;
        let mut kept = Vec::new();
        let mut dropped = Vec::new();
        for (mut f, dup) in fragments.into_iter().zip(duplicate) {
            match ctx.corpus.node(f.node) {
                Some(n) if dup && in_source(ctx, &f) => {
                    f.max_depth = f.max_depth.min(shallowest_shown(n, min_tokens));
                    kept.push(f);
                }
                _ if dup => dropped.push(Dropped {
                    node: f.node,
                    reason: DropReason::Duplicate,
                    score: f.score,
                }),
                _ => kept.push(f),
            }
        }
        kept.sort_by_key(|f| f.node);
        (kept, dropped)
    }
}

#[cfg(test)]
mod tests {
    use super::similarity;

    #[test]
    fn similarity_is_jaccard_over_words() {
        assert_eq!(similarity("a b c", "a b c"), 1.0);
        assert_eq!(similarity("a b", "c d"), 0.0);
        assert_eq!(similarity("a b c d", "a b c e"), 3.0 / 5.0);
        assert_eq!(similarity("", ""), 1.0);
    }
}
