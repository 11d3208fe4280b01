//! Stage 6, FragmentScorer: one score per fragment that separates the answer from the noise.
//!
//! The spec's four factors — relevance (0.4), hierarchy (0.3), strategy quality (0.2),
//! recency (0.1), `context.scoring.*` — are combined so that **relevance dominates**: a
//! weighted sum of them squeezes every fragment into [0.56, 0.96] (hierarchy, quality and
//! recency are near 1 for almost every candidate), so the knapsack could not tell the best
//! match from the fiftieth. Here the other factors *modulate* relevance, each raised to its
//! weight relative to relevance's:
//!
//! `score = relevance × file^… × hierarchy^(w_h/w_r) × recency^(w_t/w_r) × place`,
//! normalised so the best fragment scores 1.
//!
//! - **relevance** fuses each strategy's best hit for the node (`context.scoring.fusion`):
//!   `noisy-or` (default) over `quality × relevance` per strategy — so strategy quality
//!   counts where it belongs, in how far a strategy's hit is trusted —, `rrf` or `max`.
//!   A hit because the task *names* the node (a mention) is trusted fully; a node only
//!   the graph walk reached, at 0.3 of the navigator's quality. Keyword
//!   relevances (BM25 over the best hit) are sharpened, because BM25 scores of a query's
//!   top fifty differ by less than 2×.
//! - **file**: the evidence for the node's file (all its fragments' relevances, saturating),
//!   relative to the best file: a method of the file the task is about beats an equally
//!   matching method elsewhere.
//! - **hierarchy**: definitions over whole files and line chunks; nesting weighs less.
//! - **place**: tests, docs, examples, benchmarks, vendored and generated code are demoted;
//!   a test, doc or example the task names is not (vendored and generated code is, named
//!   or not: a name that lands there is a coincidence of words).
//!
//! The composite of the spec taken literally is kept as `weighted-sum` for comparison.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

use acms_core::{Depth, Fusion, NodeId, StrategyId};
use acms_index::NodeKind;
use acms_retrieve::{Hit, Place, Reason};

use super::StageContext;
use crate::Fragment;

/// Stage 6.
pub trait FragmentScorer: Send + Sync {
    fn score(&self, ctx: &StageContext<'_>, fragments: &mut [Fragment]);
}

/// The default: relevance modulated by the other factors (see the module doc).
pub struct EvidenceScorer;

/// The spec's literal weighted sum `relevance·w_r + hierarchy·w_h + quality·w_q + recency·w_t`.
pub struct WeightedSumScorer;

/// How much of a symbol's usefulness a depth delivers, relative to its full source.
pub(crate) fn depth_value(depth: Depth) -> f64 {
    match depth {
        Depth::Full => 1.0,
        Depth::Skeleton => 0.55,
        Depth::Doc => 0.4,
        Depth::Signature => 0.3,
    }
}

/// Structural usefulness of a node: definitions beat whole files and line chunks, and deep
/// nesting (a closure inside a method) weighs less. A module-level constant is data, whose
/// words (a table's keys, a message's text) match a task more by chance than code's do.
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
        NodeKind::Impl | NodeKind::Section | NodeKind::Schema | NodeKind::Constant => 0.8,
        NodeKind::Module => 0.6,
        NodeKind::Chunk => 0.5,
    };
    base * 0.9f64.powi(nesting.saturating_sub(2) as i32)
}

/// Factor for a place the task does not name.
fn place_factor(p: Place) -> f64 {
    match p {
        Place::Source => 1.0,
        Place::Docs => 0.45,
        Place::Test | Place::Example => 0.35,
        Place::Vendored | Place::Generated => 0.25,
    }
}

/// Whether a hit comes from the task naming the node.
fn is_mention(h: &Hit) -> bool {
    matches!(h.reason, Reason::Mentioned { .. })
}

/// Rank-based fusion: each strategy's ranking contributes `1 / (60 + rank)`.
fn rrf(fragments: &[Fragment]) -> HashMap<NodeId, f64> {
    let mut per_strategy: BTreeMap<&StrategyId, Vec<(f32, NodeId)>> = BTreeMap::new();
    for f in fragments {
        for h in &f.hits {
            per_strategy
                .entry(&h.strategy)
                .or_default()
                .push((h.relevance, f.node));
        }
    }
    let mut fused: BTreeMap<NodeId, f64> = BTreeMap::new();
    for list in per_strategy.values_mut() {
        list.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        for (rank, (_, node)) in list.iter().enumerate() {
            *fused.entry(*node).or_default() += 1.0 / (60.0 + rank as f64 + 1.0);
        }
    }
    let best = fused.values().copied().fold(0.0, f64::max);
    fused
        .into_iter()
        .map(|(k, v)| (k, if best > 0.0 { v / best } else { 0.0 }))
        .collect()
}

/// Where a piece of a fragment's evidence comes from: the task naming the node, or a strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source<'a> {
    Mention,
    Strategy(&'a StrategyId),
}

impl Source<'_> {
    fn name(&self) -> &str {
        match self {
            Source::Mention => "mention",
            Source::Strategy(s) => s.as_str(),
        }
    }
}

/// By name, `mention` among the strategies' names: the order the fusion multiplies in, kept
/// from when sources were keyed by name (floating-point products depend on it).
impl Ord for Source<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        let is_strategy = |s: &Source<'_>| matches!(s, Source::Strategy(_));
        self.name()
            .cmp(other.name())
            .then_with(|| is_strategy(self).cmp(&is_strategy(other)))
    }
}

impl PartialOrd for Source<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Each evidence source's best relevance for `f`, trusted by its quality: mentions fully,
/// every strategy by its `max_quality`; keyword relevance sharpened.
fn evidence<'f>(ctx: &StageContext<'_>, f: &'f Fragment) -> BTreeMap<Source<'f>, f64> {
    let mut best: BTreeMap<Source<'f>, f64> = BTreeMap::new();
    for h in &f.hits {
        let (source, trust, r) = if is_mention(h) {
            (Source::Mention, 1.0, h.relevance as f64)
        } else {
            let q = ctx
                .strategy_quality
                .get(h.strategy.as_str())
                .copied()
                .unwrap_or(0.5) as f64;
            let r = h.relevance as f64;
            let r = if h.strategy == StrategyId::Keyword {
                r.powi(KEYWORD_SHARPNESS)
            } else {
                r
            };
            let q = if walked(h) { q * WALK_TRUST } else { q };
            (Source::Strategy(&h.strategy), q, r)
        };
        let e = best.entry(source).or_default();
        *e = e.max((trust * r).clamp(0.0, 1.0));
    }
    best
}

/// The fused relevance of one fragment by `fusion`.
fn fuse(
    ctx: &StageContext<'_>,
    f: &Fragment,
    fusion: Fusion,
    ranks: Option<&HashMap<NodeId, f64>>,
) -> f64 {
    match (fusion, ranks) {
        (Fusion::Rrf, Some(r)) => r.get(&f.node).copied().unwrap_or(0.0),
        (Fusion::Max, _) => evidence(ctx, f).values().copied().fold(0.0, f64::max),
        _ => 1.0 - evidence(ctx, f).values().map(|r| 1.0 - r).product::<f64>(),
    }
}

/// Whether a hit is a node the graph walk reached (not one that matched or was named).
fn walked(h: &Hit) -> bool {
    matches!(h.reason, Reason::Path { .. })
}

/// Trust in a node the graph walk reached, relative to the navigator's quality: a callee or
/// sibling of the named function is a guess, and at full trust the twenty callees of a
/// mention outbid the direct matches and bodies the task needs. Measured on the SWE-bench dev
/// tasks at 16k (docs/EVAL.md): changed-line coverage 0.55 at 1.0, 0.63 at 0.5, 0.65 at 0.3,
/// 0.64 at 0.2.
const WALK_TRUST: f64 = 0.3;

/// Direct evidence for a fragment: its relevance from what matched or named it, leaving out
/// what the graph walk reached (a file's fifty neighbours are not fifty pieces of evidence).
fn direct(ctx: &StageContext<'_>, f: &Fragment) -> f64 {
    if f.hits.iter().all(walked) {
        return 0.0;
    }
    let mut g = f.clone();
    g.hits.retain(|h| !walked(h));
    1.0 - evidence(ctx, &g).values().map(|r| 1.0 - r).product::<f64>()
}

/// Per-file evidence relative to the best file, in [0, 1]: the noisy-or of the file's best
/// [`FILE_EVIDENCE_TOP`] direct relevances.
fn file_evidence(ctx: &StageContext<'_>, fragments: &[Fragment]) -> BTreeMap<String, f64> {
    let mut per_file: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for f in fragments {
        if let Some(n) = ctx.corpus.node(f.node) {
            let d = direct(ctx, f);
            if d > 0.0 {
                per_file.entry(n.path.clone()).or_default().push(d);
            }
        }
    }
    let mut files: BTreeMap<String, f64> = per_file
        .into_iter()
        .map(|(p, mut rs)| {
            rs.sort_by(|a, b| b.total_cmp(a));
            let miss: f64 = rs
                .iter()
                .take(FILE_EVIDENCE_TOP)
                .map(|r| 1.0 - FILE_EVIDENCE_ALPHA * r)
                .product();
            (p, 1.0 - miss)
        })
        .collect();
    let best = files.values().copied().fold(0.0, f64::max);
    if best > 0.0 {
        files.values_mut().for_each(|v| *v /= best);
    }
    files
}

/// How many of a file's fragments count towards its evidence.
const FILE_EVIDENCE_TOP: usize = 3;

/// Weight of each direct hit in its file's noisy-or: at 1.0 one strong hit saturates the
/// file and the file factor stops separating; at 0.5 a file with three good hits clearly
/// outranks a file with one (tuned on the SWE-bench dev tasks, docs/EVAL.md).
const FILE_EVIDENCE_ALPHA: f64 = 0.5;

/// The file factor's floor: a fragment in a file with no direct evidence of its own (reached
/// by the walk only) keeps half its relevance rather than vanishing.
const FILE_FLOOR: f64 = 0.5;

/// Exponent on BM25 relevance: keyword scores are normalised to the best hit, so a long tail
/// of one-shared-word hits sits at 0.3–0.6; squaring pushes it below the semantic and graph
/// evidence of comparable rank.
const KEYWORD_SHARPNESS: i32 = 2;

/// Recency in [0, 1] of the node's file against the newest candidate file (90-day decay).
fn recency(ctx: &StageContext<'_>, path: &str, newest: i64) -> f64 {
    let age_days = ctx
        .corpus
        .file(path)
        .map(|file| (newest - file.modified).max(0) as f64 / 86_400.0)
        .unwrap_or(365.0);
    (-age_days / 90.0).exp()
}

fn newest(ctx: &StageContext<'_>, fragments: &[Fragment]) -> i64 {
    fragments
        .iter()
        .filter_map(|f| ctx.corpus.node(f.node))
        .filter_map(|n| ctx.corpus.file(&n.path))
        .map(|f| f.modified)
        .max()
        .unwrap_or(0)
}

impl FragmentScorer for EvidenceScorer {
    fn score(&self, ctx: &StageContext<'_>, fragments: &mut [Fragment]) {
        let w = &ctx.config.scoring;
        let newest = newest(ctx, fragments);
        let ranks = (w.fusion == Fusion::Rrf).then(|| rrf(fragments));
        for f in fragments.iter_mut() {
            f.relevance = fuse(ctx, f, w.fusion, ranks.as_ref());
        }
        let files = file_evidence(ctx, fragments);
        let rel_w = w.relevance.max(1e-6);
        for f in fragments.iter_mut() {
            let Some(node) = ctx.corpus.node(f.node) else {
                f.score = 0.0;
                continue;
            };
            // A task that names a test, a doc or an example means it; a name that lands in
            // a copied library or generated code is a coincidence of words (`dir` in jQuery).
            let named = f.hits.iter().any(is_mention);
            let place = match ctx.corpus.node_place(node) {
                p @ (Place::Vendored | Place::Generated) => place_factor(p),
                _ if named => 1.0,
                p => place_factor(p),
            };
            let file = files.get(&node.path).copied().unwrap_or(0.0);
            let h = hierarchy(node.kind, ctx.corpus.nesting(node.id));
            let t = recency(ctx, &node.path, newest);
            f.score = f.relevance
                * (FILE_FLOOR + (1.0 - FILE_FLOOR) * file)
                * h.powf(w.hierarchy / rel_w)
                * t.powf(w.recency / rel_w)
                * place;
        }
        let best = fragments.iter().map(|f| f.score).fold(0.0, f64::max);
        if best > 0.0 {
            for f in fragments.iter_mut() {
                f.score = (f.score / best).clamp(0.0, 1.0);
            }
        }
    }
}

impl FragmentScorer for WeightedSumScorer {
    fn score(&self, ctx: &StageContext<'_>, fragments: &mut [Fragment]) {
        let w = &ctx.config.scoring;
        let newest = newest(ctx, fragments);
        let ranks = (w.fusion == Fusion::Rrf).then(|| rrf(fragments));
        for f in fragments.iter_mut() {
            let Some(node) = ctx.corpus.node(f.node) else {
                continue;
            };
            let quality = f
                .hits
                .iter()
                .map(|h| {
                    ctx.strategy_quality
                        .get(h.strategy.as_str())
                        .copied()
                        .unwrap_or(0.5) as f64
                })
                .fold(0.0, f64::max);
            f.relevance = match (w.fusion, &ranks) {
                (Fusion::Rrf, Some(r)) => r.get(&f.node).copied().unwrap_or(0.0),
                (Fusion::Max, _) => f
                    .hits
                    .iter()
                    .map(|h| h.relevance as f64)
                    .fold(0.0, f64::max),
                _ => {
                    let mut best: BTreeMap<&StrategyId, f64> = BTreeMap::new();
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
            let h = hierarchy(node.kind, ctx.corpus.nesting(node.id));
            f.score = (w.relevance * f.relevance
                + w.hierarchy * h
                + w.strategy_quality * quality
                + w.recency * recency(ctx, &node.path, newest))
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
