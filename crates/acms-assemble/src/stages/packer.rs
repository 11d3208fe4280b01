//! Stage 7, BudgetPacker: chooses each fragment's depth (9, 4, 2, 0 — falling back before
//! dropping) or leaves it out, maximising total value within the budget. A multiple-choice
//! knapsack solved by `acms-pack` (default: the convex-hull greedy with its LP bound).
//!
//! The packer works on per-fragment exact counts; the assembler then verifies the final
//! rendered text, because BPE counts are not additive.

use std::collections::{HashMap, HashSet};

use acms_core::{Depth, NodeId};
use acms_pack::{Candidate, DepthOption, PackItem, Packer, Packing};

use super::StageContext;
use super::scorer::depth_value;
use crate::Fragment;

/// Stage 7.
pub trait BudgetPacker: Send + Sync {
    /// The implementation's name, for diagnostics.
    fn name(&self) -> &str;
    /// The knapsack candidates for `fragments` (same order).
    fn candidates(
        &self,
        ctx: &StageContext<'_>,
        fragments: &[Fragment],
        budget: u32,
    ) -> Vec<Candidate>;
    /// Packs `candidates` into `budget` tokens.
    fn pack(&self, candidates: &[Candidate], budget: u32) -> Packing;
}

/// Depth options and values from the scores, packed by an `acms-pack` packer.
pub struct KnapsackPacker {
    inner: Box<dyn Packer>,
}

impl KnapsackPacker {
    pub fn new(inner: Box<dyn Packer>) -> KnapsackPacker {
        KnapsackPacker { inner }
    }
}

/// Exponent applied to a fragment's score in its knapsack value. With the plain score, many
/// mid-ranked signatures outbid the full body of the best match; cubing it makes the packer
/// spend on the top matches' bodies first and fill the rest with signatures. Measured on all
/// six evaluation corpora (docs/EVAL.md, "Packing objective"): exponent 3 raised code-visible
/// recall at 4k by 0.02–0.14 and symbol recall by up to 0.06 over exponent 1.
const SCORE_SHARPNESS: i32 = 3;

/// How the value of a rendering grows with its size: as `tokens^e`, with `e` rising with
/// the budget to [`SIZE_EXPONENT`] at [`SIZE_FULL_BUDGET`] and above. With a value independent
/// of size, the 2 000-token body of the best match was worth as much as a 60-token helper, so
/// a dozen mid-ranked small fragments outbid it and the function a bug report is about came
/// as its signature. Sub-linear, because most of a long body is not the lines that matter;
/// scaled by the budget, because a small window is better spent on breadth (at 2k–4k the full
/// exponent cost the docstring sets up to 0.05 of recall). Measured in docs/EVAL.md, "A longer
/// body is worth more".
const SIZE_EXPONENT: f64 = 0.5;

/// The budget from which a rendering's size counts with the whole [`SIZE_EXPONENT`].
const SIZE_FULL_BUDGET: u32 = 16_000;

/// The knapsack value of showing a fragment of `score` at `depth` in `tokens` of a `budget`:
/// the sharpened score, times what the depth delivers, times the size factor (1 at 100
/// tokens). The size factor rewards a long *body*; a signature or a doc is what its symbol
/// is, whatever its length, so a partial rendering is never worth less for being short. With
/// the factor, the 12-token signature of a method the best body calls
/// (`def _print_nth_root(self, base, exp):`) was worth a third of a 100-token one, and the
/// short bodies of methods half as relevant took its place (docs/EVAL.md, "A short signature
/// is not worth less"). A skeleton past [`SKELETON_SHARE`] earns no size factor.
fn value(score: f64, depth: Depth, tokens: u32, budget: u32) -> f64 {
    let e = SIZE_EXPONENT * full_budget_share(budget);
    let size = (f64::from(tokens.max(1)) / 100.0).powf(e);
    let size = match depth {
        Depth::Full => size,
        Depth::Skeleton if tokens > budget.max(SIZE_FULL_BUDGET) / SKELETON_SHARE => 1.0,
        _ => size.max(1.0),
    };
    score.powi(SCORE_SHARPNESS) * depth_value(depth) * size
}

/// The largest share (1 / `SKELETON_SHARE`) of a [`SIZE_FULL_BUDGET`] window (or of a
/// larger one) a skeleton may take and still be worth more for its length. A class's
/// skeleton lists its members, and its length tells how many signatures it shows; past a
/// quarter of the window it is not a map of the class but most of the window. The
/// 6 211-token skeleton of Newtonsoft.Json's `JToken` (2 850 lines) was worth 7.9 times its
/// score and took 40 % of a 16k context, which then named 10 and 13 files and left out the
/// one a fix touched (`JValue.cs`, `JsonValidatingReader.cs`). The skeletons of 1 000-line
/// Java classes (≤ 2 400 tokens) keep their factor; so does a 1 500-token one in a 4k window,
/// where the factor is weak and a bar at that window's own quarter cost four sets a class
/// outline each (docs/notes/2026-12-07-large-skeletons-and-packing.md).
const SKELETON_SHARE: u32 = 4;

/// How far `budget` is towards [`SIZE_FULL_BUDGET`], in [0, 1]: what scales the size
/// exponent and the presence value, which a small window should spend on breadth and code.
fn full_budget_share(budget: u32) -> f64 {
    (f64::from(budget) / f64::from(SIZE_FULL_BUDGET)).min(1.0)
}

/// What it is worth that a file appears in the context at all, as a multiple of its best
/// fragment's sharpened score (`score³`), at [`SIZE_FULL_BUDGET`] and above; scaled down with
/// the budget like the size exponent, because a small window is better spent on the code of
/// the best files than on naming more of them. Without it, the thirtieth file by evidence lost
/// every time to one more body of the first: a 16k context named 20 files, and in 12 of the
/// 110 SWE-bench dev tasks a file the fix touches was missing although one of its definitions
/// was a candidate (its file ranked 10th–93rd). With it, the best fragment of such a file
/// comes as its signature for ~40 tokens. 2 against 1.5 and 3 in docs/EVAL.md, "A file the
/// evidence points to is named".
const FILE_PRESENCE: f64 = 2.0;

/// The value the best fragment of a file earns, at any depth, for naming its file.
fn presence(score: f64, budget: u32) -> f64 {
    FILE_PRESENCE * full_budget_share(budget) * score.powi(SCORE_SHARPNESS)
}

/// Adds [`presence`] to every option of each file's best-scored candidate that has options:
/// `files[i]` and `scores[i]` belong to `candidates[i]`.
fn name_each_file(candidates: &mut [Candidate], files: &[&str], scores: &[f64], budget: u32) {
    let mut best: HashMap<&str, usize> = HashMap::new();
    for (i, c) in candidates.iter().enumerate() {
        if c.options.is_empty() {
            continue;
        }
        let e = best.entry(files[i]).or_insert(i);
        if scores[i] > scores[*e] {
            *e = i;
        }
    }
    for i in best.into_values() {
        let bonus = presence(scores[i], budget);
        for o in &mut candidates[i].options {
            o.value += bonus;
        }
    }
}

/// What it is worth that the best match is shown in full, as a multiple of its sharpened
/// score, on top of its body's own value: the one symbol the evidence puts first is the one
/// an agent reads first, and a window that spreads its budget over three near-namesakes while
/// the function the report names in its title comes as a signature has failed the task.
const LEAD: f64 = 1.0;

/// The largest share of the budget (1 / `LEAD_SHARE`) the best match's body may take and
/// still earn [`LEAD`]: beyond it, a huge body would crowd out the rest of the window.
const LEAD_SHARE: u32 = 3;

/// Adds [`LEAD`] to the full option of the best-scored candidate that has options, if its
/// body fits in a [`LEAD_SHARE`]th of the budget.
fn lead_in_full(candidates: &mut [Candidate], scores: &[f64], budget: u32) {
    let best = (0..candidates.len())
        .filter(|&i| !candidates[i].options.is_empty())
        .max_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    let Some(best) = best else { return };
    let bonus = LEAD * scores[best].powi(SCORE_SHARPNESS);
    for o in &mut candidates[best].options {
        if o.depth == Depth::Full && o.tokens <= budget / LEAD_SHARE {
            o.value += bonus;
        }
    }
}

/// The smallest partial rendering offered in a window of `budget` tokens when
/// `min-fragment-tokens` is `configured`: all of it in a tiny window, none from
/// [`SIZE_FULL_BUDGET`] on.
fn partial_floor(configured: usize, budget: u32) -> u32 {
    (configured as f64 * (1.0 - full_budget_share(budget))).round() as u32
}

/// The depths offered for `f`: those of `context.packer.depth-fallback` not deeper than the
/// fragment allows. A partial rendering under `min-fragment-tokens` is not worth its header
/// in a small window, which is better spent on bodies; the floor falls with the budget like
/// the size exponent, to 0 at [`SIZE_FULL_BUDGET`], where a 9-token method signature (`def
/// _print_Pow(self, power):`) names the method a fix changes for the price of its line and
/// header. A complete symbol (depth 9) is offered however small.
pub(crate) fn options(ctx: &StageContext<'_>, f: &Fragment, budget: u32) -> Vec<DepthOption> {
    let min = partial_floor(ctx.config.packer.min_fragment_tokens, budget);
    let node = ctx.corpus.node(f.node);
    f.depths()
        .filter(|d| ctx.config.packer.depth_fallback.contains(d))
        .filter(|d| *d == Depth::Full || node.is_some_and(|n| n.tokens_at(*d) >= min))
        .map(|d| DepthOption {
            depth: d,
            tokens: f.cost[d.index()],
            value: value(f.score, d, f.cost[d.index()], budget),
        })
        .collect()
}

impl BudgetPacker for KnapsackPacker {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn candidates(
        &self,
        ctx: &StageContext<'_>,
        fragments: &[Fragment],
        budget: u32,
    ) -> Vec<Candidate> {
        let mut candidates: Vec<Candidate> = fragments
            .iter()
            .map(|f| Candidate {
                id: f.node.0,
                options: options(ctx, f, budget),
            })
            .collect();
        let files: Vec<&str> = fragments
            .iter()
            .map(|f| ctx.corpus.node(f.node).map_or("", |n| n.path.as_str()))
            .collect();
        let scores: Vec<f64> = fragments.iter().map(|f| f.score).collect();
        name_each_file(&mut candidates, &files, &scores, budget);
        lead_in_full(&mut candidates, &scores, budget);
        candidates
    }

    fn pack(&self, candidates: &[Candidate], budget: u32) -> Packing {
        self.inner.pack(candidates, budget)
    }
}

/// How many times [`pack_unenclosed`] packs again at most.
const REPACK_ROUNDS: usize = 3;

/// Whether an ancestor of `node` is in `full` (packed at depth 9, so its text shows `node`).
fn shown_by_ancestor(ctx: &StageContext<'_>, full: &HashSet<NodeId>, node: NodeId) -> bool {
    let mut cur = ctx.corpus.node(node).and_then(|n| n.parent);
    for _ in 0..64 {
        let Some(p) = cur else { return false };
        if full.contains(&p) {
            return true;
        }
        cur = ctx.corpus.node(p).and_then(|n| n.parent);
    }
    false
}

/// The nodes `items` place at depth 9.
pub(crate) fn full_nodes(items: &[PackItem]) -> HashSet<NodeId> {
    items
        .iter()
        .filter(|it| it.depth == Depth::Full)
        .map(|it| NodeId(it.id))
        .collect()
}

/// Those of `positions` (in `fragments`) that an ancestor in `full` shows.
pub(crate) fn still_shown(
    ctx: &StageContext<'_>,
    fragments: &[Fragment],
    positions: &[usize],
    full: &HashSet<NodeId>,
) -> Vec<usize> {
    positions
        .iter()
        .copied()
        .filter(|&i| shown_by_ancestor(ctx, full, fragments[i].node))
        .collect()
}

/// `candidates` without the options of those `items` packed and of the fragments a fragment
/// they place at depth 9 already shows: what may still fill the room a layout left.
pub(crate) fn leftovers(
    ctx: &StageContext<'_>,
    fragments: &[Fragment],
    candidates: &[Candidate],
    items: &[PackItem],
) -> Vec<Candidate> {
    let everything: Vec<usize> = (0..fragments.len()).collect();
    let mut out = candidates.to_vec();
    let shown = still_shown(ctx, fragments, &everything, &full_nodes(items));
    for i in items.iter().map(|it| it.candidate).chain(shown) {
        if let Some(c) = out.get_mut(i) {
            c.options.clear();
        }
    }
    out
}

/// Packs `candidates` (one per fragment), then packs again without the fragments a fragment
/// packed at depth 9 already shows — a closure inside its function, which the renderer shows
/// once, inside the parent's region, though the packing paid for it twice — until none is
/// left (at most [`REPACK_ROUNDS`]). A repacking is kept only if everything it left out is
/// still shown by an enclosing fragment. Returns the packing and the positions of the
/// fragments left out as enclosed.
pub(crate) fn pack_unenclosed(
    ctx: &StageContext<'_>,
    packer: &dyn BudgetPacker,
    fragments: &[Fragment],
    candidates: &[Candidate],
    budget: u32,
) -> (Packing, Vec<usize>) {
    let mut packing = packer.pack(candidates, budget);
    let mut enclosed: Vec<usize> = Vec::new();
    for _ in 0..REPACK_ROUNDS {
        let packed: Vec<usize> = packing.items.iter().map(|it| it.candidate).collect();
        let more = still_shown(ctx, fragments, &packed, &full_nodes(&packing.items));
        if more.is_empty() {
            break;
        }
        let mut without = enclosed.clone();
        without.extend(more);
        let mut reduced = candidates.to_vec();
        for &i in &without {
            reduced[i].options.clear();
        }
        let next = packer.pack(&reduced, budget);
        if still_shown(ctx, fragments, &without, &full_nodes(&next.items)).len() < without.len() {
            break;
        }
        packing = next;
        enclosed = without;
    }
    (packing, enclosed)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A candidate with its full body and its signature as options.
    fn candidate(id: u64, score: f64, full: u32, signature: u32, budget: u32) -> Candidate {
        let options = [(Depth::Full, full), (Depth::Signature, signature)]
            .map(|(depth, tokens)| DepthOption {
                depth,
                tokens,
                value: value(score, depth, tokens, budget),
            })
            .into();
        Candidate { id, options }
    }

    /// The best match is a 2 000-token function; twelve helpers at half its score take 150
    /// tokens each. The depth the packer gives the best match.
    fn best_match_depth(budget: u32) -> Option<Depth> {
        let mut candidates = vec![candidate(0, 1.0, 2000, 100, budget)];
        candidates.extend((1..=12).map(|i| candidate(i, 0.5, 150, 30, budget)));
        let packing = acms_pack::packer_by_name("exact")
            .expect("a registered packer")
            .pack(&candidates, 2100);
        assert!(packing.tokens <= 2100);
        packing.items.iter().find(|i| i.id == 0).map(|i| i.depth)
    }

    #[test]
    fn in_a_large_window_the_best_match_s_long_body_beats_a_dozen_half_as_relevant_helpers() {
        // Before the size factor, the packer showed the best match as its signature and the
        // twelve helpers in full at every budget.
        assert_eq!(best_match_depth(SIZE_FULL_BUDGET), Some(Depth::Full));
        assert_eq!(best_match_depth(2000), Some(Depth::Signature));
    }

    #[test]
    fn a_file_the_evidence_points_to_is_named_before_one_more_body_of_the_best_file() {
        // a.py: the best match and three bodies at 0.6; b.py: one definition at 0.55. The
        // window holds the four bodies of a.py, or three and b.py's signature.
        let budget = SIZE_FULL_BUDGET;
        let mut candidates = vec![candidate(0, 1.0, 600, 40, budget)];
        candidates.extend((1..=3).map(|i| candidate(i, 0.6, 300, 40, budget)));
        candidates.push(candidate(4, 0.55, 400, 40, budget));
        let files = ["a.py", "a.py", "a.py", "a.py", "b.py"];
        let scores = [1.0, 0.6, 0.6, 0.6, 0.55];
        let packer = acms_pack::packer_by_name("exact").expect("a registered packer");
        let names_b = |candidates: &[Candidate]| {
            let packing = packer.pack(candidates, 1500);
            assert!(packing.tokens <= 1500);
            packing.items.iter().find(|i| i.id == 4).map(|i| i.depth)
        };
        assert_eq!(
            names_b(&candidates),
            None,
            "without presence, a fourth body wins"
        );
        name_each_file(&mut candidates, &files, &scores, budget);
        assert_eq!(names_b(&candidates), Some(Depth::Signature));
        // Only the best candidate of each file earns it, and less in a small window.
        assert_eq!(
            candidates[1].options[0].value,
            value(0.6, Depth::Full, 300, budget)
        );
        assert!(presence(0.5, 4000) < presence(0.5, budget));
    }

    #[test]
    fn the_best_match_comes_in_full_before_its_near_namesakes() {
        // sympy-20154 at 4k: `partitions` (named in the title, 1 242 tokens in full) against
        // its module's other partition functions, which share its name and most of its words.
        let budget = 4000;
        let mut candidates = vec![candidate(0, 1.0, 1242, 13, budget)];
        for (i, (score, full)) in [(0.87, 900), (0.86, 850), (0.84, 826), (0.835, 430)]
            .into_iter()
            .enumerate()
        {
            candidates.push(candidate(i as u64 + 1, score, full, 35, budget));
        }
        candidates.extend((5..25).map(|i| candidate(i, 0.7, 150, 30, budget)));
        let scores: Vec<f64> = candidates
            .iter()
            .map(|c| if c.id == 0 { 1.0 } else { 0.8 })
            .collect();
        let packer = acms_pack::packer_by_name("exact").expect("a registered packer");
        let best = |candidates: &[Candidate]| {
            let packing = packer.pack(candidates, budget);
            assert!(packing.tokens <= budget);
            packing.items.iter().find(|i| i.id == 0).map(|i| i.depth)
        };
        assert_eq!(
            best(&candidates),
            Some(Depth::Signature),
            "without the lead"
        );
        lead_in_full(&mut candidates, &scores, budget);
        assert_eq!(best(&candidates), Some(Depth::Full));
        // A body over a third of the window earns nothing.
        let mut huge = vec![candidate(0, 1.0, 1500, 13, budget)];
        lead_in_full(&mut huge, &[1.0], budget);
        assert_eq!(
            huge[0].options[0].value,
            value(1.0, Depth::Full, 1500, budget)
        );
    }

    #[test]
    fn a_short_signature_is_worth_what_it_names() {
        let sig = |score, tokens| value(score, Depth::Signature, tokens, SIZE_FULL_BUDGET);
        assert_eq!(sig(0.3, 12), sig(0.3, 100));
        assert!(
            sig(0.3, 400) > sig(0.3, 100),
            "a long doc still counts its length"
        );
        assert!(
            value(0.3, Depth::Full, 12, SIZE_FULL_BUDGET)
                < value(0.3, Depth::Full, 100, SIZE_FULL_BUDGET),
            "a one-line body is worth less than a real one"
        );
        // Room for one line: the signature of the more relevant method (its body is 500
        // tokens) comes before the one-line body of a less relevant one. With the size factor
        // on signatures too, the one-liner won.
        let budget = SIZE_FULL_BUDGET;
        let candidates = [
            candidate(0, 0.3, 500, 12, budget),
            candidate(1, 0.25, 12, 12, budget),
        ];
        let packing = acms_pack::packer_by_name("exact")
            .expect("a registered packer")
            .pack(&candidates, 12);
        let shown: Vec<(u64, Depth)> = packing.items.iter().map(|i| (i.id, i.depth)).collect();
        assert_eq!(shown, [(0, Depth::Signature)]);
    }

    #[test]
    fn a_skeleton_past_a_quarter_of_the_window_is_worth_what_it_names() {
        let skeleton = |tokens, budget| value(0.8, Depth::Skeleton, tokens, budget);
        let budget = SIZE_FULL_BUDGET;
        assert!(
            skeleton(2000, budget) > skeleton(100, budget),
            "a class's outline"
        );
        assert_eq!(skeleton(6211, budget), skeleton(100, budget));
        assert_eq!(skeleton(4001, budget), skeleton(1, budget));
        assert!(
            skeleton(1500, 4000) > skeleton(100, 4000),
            "the bar is the 16k window's"
        );
        // Newtonsoft.Json's "Fix MissingMethodException from JToken.WriteTo" at 16k, in small:
        // `JToken.WriteTo` (1.0) is in; the room left holds its class's skeleton (0.78) or
        // the signatures of ten other files' methods (0.25, each naming its file).
        let files_named = |skeleton_value: f64| {
            let mut candidates = vec![
                candidate(0, 1.0, 170, 20, budget),
                Candidate {
                    id: 1,
                    options: vec![DepthOption {
                        depth: Depth::Skeleton,
                        tokens: 6211,
                        value: skeleton_value,
                    }],
                },
            ];
            candidates.extend((2..12).map(|i| candidate(i, 0.25, 300, 40, budget)));
            let files: Vec<String> = (0..12).map(|i| format!("f{}.cs", i.max(1))).collect();
            let files: Vec<&str> = files.iter().map(String::as_str).collect();
            let mut scores = vec![1.0, 0.78];
            scores.extend([0.25; 10]);
            name_each_file(&mut candidates, &files, &scores, budget);
            let packing = acms_pack::packer_by_name("exact")
                .expect("a registered packer")
                .pack(&candidates, 6211 + 170);
            packing.items.iter().filter(|i| i.id >= 2).count()
        };
        let rewarded = 0.78f64.powi(SCORE_SHARPNESS)
            * depth_value(Depth::Skeleton)
            * (6211.0f64 / 100.0).powf(SIZE_EXPONENT);
        assert_eq!(
            files_named(rewarded),
            0,
            "with the size factor, the skeleton won"
        );
        assert_eq!(files_named(value(0.78, Depth::Skeleton, 6211, budget)), 10);
    }

    #[test]
    fn a_small_signature_is_offered_in_a_large_window_only() {
        let floors = [0, 2_000, 4_000, 8_000, 16_000, 100_000].map(|b| partial_floor(10, b));
        assert_eq!(floors, [10, 9, 8, 5, 0, 0]);
    }

    #[test]
    fn a_larger_rendering_is_worth_more_but_less_than_in_proportion() {
        let at = |tokens, budget| value(1.0, Depth::Full, tokens, budget);
        assert!(at(2000, 16_000) > at(100, 16_000) && at(2000, 16_000) < 20.0 * at(100, 16_000));
        assert!(
            at(2000, 4000) < at(2000, 16_000),
            "a small window values breadth"
        );
        assert_eq!(at(2000, 32_000), at(2000, 16_000));
        assert!(value(0.5, Depth::Full, 100, 16_000) < at(100, 16_000));
    }
}
