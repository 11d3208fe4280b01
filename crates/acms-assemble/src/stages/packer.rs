//! Stage 7, BudgetPacker: chooses each fragment's depth (9, 4, 2, 0 — falling back before
//! dropping) or leaves it out, maximising total value within the budget. A multiple-choice
//! knapsack solved by `acms-pack` (default: the convex-hull greedy with its LP bound).
//!
//! The packer works on per-fragment exact counts; the assembler then verifies the final
//! rendered text, because BPE counts are not additive.

use acms_core::Depth;
use acms_pack::{Candidate, DepthOption, Packer, Packing};

use super::StageContext;
use super::scorer::depth_value;
use crate::Fragment;

/// Stage 7.
pub trait BudgetPacker: Send + Sync {
    /// The implementation's name, for diagnostics.
    fn name(&self) -> &str;
    /// The knapsack candidates for `fragments` (same order).
    fn candidates(&self, ctx: &StageContext<'_>, fragments: &[Fragment]) -> Vec<Candidate>;
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

/// The depths offered for `f`: those of `context.packer.depth-fallback` not deeper than the
/// fragment allows. A partial rendering under `min-fragment-tokens` is not worth its header;
/// a complete symbol (depth 9) is offered however small.
pub(crate) fn options(ctx: &StageContext<'_>, f: &Fragment) -> Vec<DepthOption> {
    let min = ctx.config.packer.min_fragment_tokens as u32;
    let node = ctx.corpus.node(f.node);
    f.depths()
        .filter(|d| ctx.config.packer.depth_fallback.contains(&d.value()))
        .filter(|d| *d == Depth::Full || node.is_some_and(|n| n.tokens_at(*d) >= min))
        .map(|d| DepthOption {
            depth: d,
            tokens: f.cost[d.index()],
            value: f.score.powi(SCORE_SHARPNESS) * depth_value(d),
        })
        .collect()
}

impl BudgetPacker for KnapsackPacker {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn candidates(&self, ctx: &StageContext<'_>, fragments: &[Fragment]) -> Vec<Candidate> {
        fragments
            .iter()
            .map(|f| Candidate {
                id: f.node.0,
                options: options(ctx, f),
            })
            .collect()
    }

    fn pack(&self, candidates: &[Candidate], budget: u32) -> Packing {
        self.inner.pack(candidates, budget)
    }
}
