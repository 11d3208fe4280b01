//! Budget packing for acms: choose, for every retrieved candidate, one detail depth (9 full
//! source, 4 skeleton, 2 signature + doc, 0 signature) or nothing, so that the total token cost
//! fits a hard budget and the total value is as large as possible. This is the multiple-choice
//! knapsack problem (MCKP).
//!
//! Four [`Packer`]s, named by [`PackerName`] ([`packer`], [`packer_by_name`]):
//! - `auto` ([`AutoPacker`], the default): `exact` where that costs about a millisecond,
//!   `hull` beyond.
//! - `greedy` ([`GreedyPacker`]): the spec's greedy with depth fallback 9 → 4 → 2 → 0, by
//!   full-depth value density. Cheap, but it ignores the depth trade-off.
//! - `hull` ([`HullPacker`]): the convex-hull greedy of Sinha & Zoltners (1979) with a repair
//!   pass. Near-optimal, and its LP relaxation certifies how far from optimal it can be.
//! - `exact` ([`ExactPacker`]): dynamic programming over the budget, the test oracle.
//!
//! [`verify_and_trim`] turns an additive token estimate into the hard guarantee: BPE counts are
//! not additive, so it renders, counts exactly and downgrades or drops until the text fits.
//!
//! **Architecture Invariant:** the packers are pure, deterministic functions of
//! `(candidates, budget)`: no I/O, no tokenizer, no randomness, no clock. Ties are broken by
//! candidate id, then by position, so equal inputs give equal outputs.
//!
//! **API Boundary:** this crate does not score, render or tokenize. The caller (the assembly
//! pipeline) computes each option's exact token cost and value, drops options below
//! `min-fragment-tokens`, and supplies the renderer and the counter to [`verify_and_trim`].

mod error;
mod exact;
mod front;
mod greedy;
mod hull;
mod verify;

pub use acms_core::{Depth, PackerName};
pub use error::{Error, Result};
pub use exact::{DEFAULT_MAX_CELLS, ExactPacker};
pub use greedy::GreedyPacker;
pub use hull::HullPacker;
pub use verify::{Verified, VerifyOutcome, verify_and_trim};

use acms_core::BuiltIn;
use serde::{Deserialize, Serialize};

/// One way to include a candidate: at `depth`, costing `tokens`, worth `value`.
///
/// Options with `tokens == 0`, or a value that is not a finite positive number, are ignored by
/// every packer: they cannot be priced or are not worth taking.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DepthOption {
    pub depth: Depth,
    pub tokens: u32,
    pub value: f64,
}

/// Something the packer may include at one of its options, or leave out.
///
/// `id` is the caller's identifier; it breaks ties, so it should be unique and stable, but
/// duplicate ids only make tie-breaking fall back to the position in the slice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub id: u64,
    /// In any order; at most one of them is taken.
    pub options: Vec<DepthOption>,
}

/// One candidate in a packing, at the chosen option.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PackItem {
    /// Position of the candidate in the slice given to the packer.
    pub candidate: usize,
    pub id: u64,
    pub depth: Depth,
    pub tokens: u32,
    pub value: f64,
}

/// The result of a packer: what to include, at which depth, and how good that is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Packing {
    /// The chosen items, in candidate order.
    pub items: Vec<PackItem>,
    /// Sum of the items' tokens; never more than the budget.
    pub tokens: u32,
    /// Sum of the items' values.
    pub value: f64,
    /// A proven upper bound on the optimal value (the LP relaxation for `hull`, the optimum
    /// itself for `exact`); `None` when the packer computes none.
    pub upper_bound: Option<f64>,
    /// `1 - value / upper_bound`: how far from optimal this packing can be at worst (0 when it
    /// is provably optimal); `None` without an upper bound.
    pub certified_gap: Option<f64>,
}

impl Packing {
    /// Builds a packing from one chosen option index (into `candidates[i].options`) per
    /// candidate. The packers guarantee the indices are valid.
    fn from_choices(
        candidates: &[Candidate],
        choices: &[Option<usize>],
        upper_bound: Option<f64>,
    ) -> Packing {
        let items: Vec<PackItem> = candidates
            .iter()
            .zip(choices)
            .enumerate()
            .filter_map(|(i, (c, choice))| {
                let o = c.options.get((*choice)?)?;
                Some(PackItem {
                    candidate: i,
                    id: c.id,
                    depth: o.depth,
                    tokens: o.tokens,
                    value: o.value,
                })
            })
            .collect();
        let tokens: u64 = items.iter().map(|it| u64::from(it.tokens)).sum();
        let value: f64 = items.iter().map(|it| it.value).sum();
        // An upper bound below the achieved value can only be rounding noise: clamp it so
        // the reported gap is never negative.
        let upper_bound = upper_bound.map(|ub| ub.max(value));
        let certified_gap = upper_bound.map(|ub| {
            if ub > 0.0 {
                (1.0 - value / ub).max(0.0)
            } else {
                0.0
            }
        });
        Packing {
            items,
            tokens: u32::try_from(tokens).unwrap_or(u32::MAX),
            value,
            upper_bound,
            certified_gap,
        }
    }
}

/// A packing algorithm. Implementations are pure functions of `(candidates, budget)`.
pub trait Packer: Send + Sync {
    /// The registered name (`greedy`, `hull`, `exact`).
    fn name(&self) -> &str;
    /// Chooses at most one option per candidate with total tokens ≤ `budget`.
    fn pack(&self, candidates: &[Candidate], budget: u32) -> Packing;
}

/// The names [`packer_by_name`] knows, default first.
pub const PACKER_NAMES: [&str; 4] = [
    PackerName::Auto.name(),
    PackerName::Hull.name(),
    PackerName::Greedy.name(),
    PackerName::Exact.name(),
];

/// The name of the recommended default packer (see `docs/BENCHMARKS.md`, "Packers on real
/// fragment sets"): exact where that costs about a millisecond, the hull packer beyond.
pub const DEFAULT_PACKER: &str = PackerName::DEFAULT.name();

/// Largest DP table (cells = candidates × budget) the `auto` packer solves exactly: about a
/// millisecond on this project's benchmark machine, e.g. 250 candidates into 4k tokens.
pub const AUTO_MAX_CELLS: u64 = 1 << 20;

/// `auto`: the exact optimum when the instance is small enough to solve in about a
/// millisecond, else the convex-hull greedy (≥ 0.999 of the optimum on real instances at
/// those sizes, with its certified gap).
#[derive(Debug, Clone, Copy, Default)]
pub struct AutoPacker;

impl Packer for AutoPacker {
    fn name(&self) -> &str {
        PackerName::Auto.name()
    }

    fn pack(&self, candidates: &[Candidate], budget: u32) -> Packing {
        ExactPacker::with_max_cells(AUTO_MAX_CELLS).pack(candidates, budget)
    }
}

/// The packer `name` names.
pub fn packer(name: PackerName) -> Box<dyn Packer> {
    match name {
        PackerName::Auto => Box::new(AutoPacker),
        PackerName::Greedy => Box::new(GreedyPacker),
        PackerName::Hull => Box::new(HullPacker),
        PackerName::Exact => Box::new(ExactPacker::default()),
    }
}

/// Looks a packer up by its name (`context.pipeline.budget-packer`).
pub fn packer_by_name(name: &str) -> Result<Box<dyn Packer>> {
    PackerName::from_name(name)
        .map(packer)
        .ok_or_else(|| Error::UnknownPacker(name.to_string()))
}
