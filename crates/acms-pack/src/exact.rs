//! The exact packer: dynamic programming over the token budget for the multiple-choice
//! knapsack, O(n × budget × options) time. It is the oracle the other packers are tested and
//! benchmarked against, not a production default.
//!
//! Reconstructing the chosen options needs a choice table of one byte per (candidate, token)
//! cell. [`ExactPacker::try_pack`] refuses instances whose table would exceed `max_cells`
//! (default [`DEFAULT_MAX_CELLS`], 128 MiB); [`Packer::pack`] then falls back to the
//! [`HullPacker`], whose certified gap still says how good the answer is.
//! [`ExactPacker::optimum_value`] computes the optimal value alone in O(budget) memory, for
//! measuring other packers on instances too large for the table.

use crate::front::{Fronts, Opt, canonical_order};
use crate::{Candidate, Error, HullPacker, Packer, Packing, Result};

/// Default limit on the exact packer's choice table, in cells (bytes): 128 MiB.
pub const DEFAULT_MAX_CELLS: u64 = 1 << 27;

/// Exact dynamic programming, with a memory guard.
#[derive(Debug, Clone, Copy)]
pub struct ExactPacker {
    max_cells: u64,
}

impl Default for ExactPacker {
    fn default() -> Self {
        ExactPacker {
            max_cells: DEFAULT_MAX_CELLS,
        }
    }
}

/// The instance reduced to what the DP needs: Pareto fronts, the candidates that have one in
/// canonical order, and the capacity actually worth tabulating.
struct Prepared {
    fronts: Fronts,
    /// Candidate positions with a non-empty front, in canonical order.
    order: Vec<usize>,
    capacity: u32,
}

fn prepare(candidates: &[Candidate], budget: u32) -> Result<Prepared> {
    let fronts = Fronts::new(candidates, budget, false);
    let mut order = Vec::new();
    let mut total: u64 = 0;
    for i in canonical_order(candidates) {
        let front = fronts.front(i);
        let Some(top) = front.last() else { continue };
        if front.len() > usize::from(u8::MAX) {
            return Err(Error::TooManyOptions {
                id: candidates[i].id,
                options: front.len(),
            });
        }
        total += u64::from(top.tokens);
        order.push(i);
    }
    // Tokens beyond what taking everything at its top option costs are never needed.
    let capacity = u32::try_from(total.min(u64::from(budget))).unwrap_or(budget);
    Ok(Prepared {
        fronts,
        order,
        capacity,
    })
}

/// One DP layer: `best[c]` is the best value within capacity `c` so far; relaxes it with the
/// options of one more candidate in place (capacities descending, so every read of a smaller
/// capacity still sees the previous layer). Records the chosen option (1-based, 0 = none) in
/// `choice` when given. Strict comparisons keep the earlier choice on ties: deterministic.
fn relax(best: &mut [f64], front: &[Opt], mut choice: Option<&mut [u8]>) {
    for c in (0..best.len()).rev() {
        let mut b = best[c];
        let mut ch = 0u8;
        for (j, o) in front.iter().enumerate() {
            let w = o.tokens as usize;
            if w > c {
                break; // fronts are sorted by tokens
            }
            let v = best[c - w] + o.value;
            if v > b {
                b = v;
                // Fronts are at most 255 long (checked in `prepare`), so this fits.
                ch = u8::try_from(j + 1).unwrap_or(u8::MAX);
            }
        }
        best[c] = b;
        if let Some(choice) = choice.as_deref_mut() {
            choice[c] = ch;
        }
    }
}

impl ExactPacker {
    /// An exact packer whose choice table may hold at most `max_cells` cells (bytes).
    pub fn with_max_cells(max_cells: u64) -> ExactPacker {
        ExactPacker { max_cells }
    }

    /// The optimal packing, or [`Error::TooLarge`] / [`Error::TooManyOptions`] when the
    /// instance exceeds the guard.
    pub fn try_pack(&self, candidates: &[Candidate], budget: u32) -> Result<Packing> {
        let p = prepare(candidates, budget)?;
        let width = p.capacity as usize + 1;
        let cells = p.order.len() as u64 * width as u64;
        if cells > self.max_cells {
            return Err(Error::TooLarge {
                candidates: p.order.len(),
                capacity: p.capacity,
                cells,
                limit: self.max_cells,
            });
        }
        let mut best = vec![0.0f64; width];
        let mut choice = vec![0u8; p.order.len() * width];
        for (k, &i) in p.order.iter().enumerate() {
            let row = &mut choice[k * width..(k + 1) * width];
            relax(&mut best, p.fronts.front(i), Some(row));
        }
        // Walk back from the full capacity: `best` is "within c", so that is the optimum.
        let mut choices: Vec<Option<usize>> = vec![None; candidates.len()];
        let mut c = p.capacity as usize;
        for (k, &i) in p.order.iter().enumerate().rev() {
            let ch = choice[k * width + c];
            if let Some(o) = usize::from(ch).checked_sub(1).map(|j| p.fronts.front(i)[j]) {
                choices[i] = Some(o.orig as usize);
                c -= o.tokens as usize;
            }
        }
        let mut packing = Packing::from_choices(candidates, &choices, None);
        // The packing is the optimum: it is its own bound (summing it in candidate order
        // rather than DP order must not show up as a spurious 1e-16 gap).
        packing.upper_bound = Some(packing.value);
        packing.certified_gap = Some(0.0);
        Ok(packing)
    }

    /// The optimal value only, in O(budget) memory and O(n × budget × options) time: no choice
    /// table, so it measures other packers on instances too large for [`Self::try_pack`]. The
    /// guard here is on the DP row alone (capacity + 1 ≤ `max_cells`); the time is the
    /// caller's choice (seconds at 10 000 candidates × 128k tokens).
    pub fn optimum_value(&self, candidates: &[Candidate], budget: u32) -> Result<f64> {
        let p = prepare(candidates, budget)?;
        let width = p.capacity as usize + 1;
        if width as u64 > self.max_cells {
            return Err(Error::TooLarge {
                candidates: p.order.len(),
                capacity: p.capacity,
                cells: width as u64,
                limit: self.max_cells,
            });
        }
        let mut best = vec![0.0f64; width];
        for &i in &p.order {
            relax(&mut best, p.fronts.front(i), None);
        }
        Ok(best[p.capacity as usize])
    }
}

impl Packer for ExactPacker {
    fn name(&self) -> &str {
        crate::PackerName::Exact.name()
    }

    /// Exact when the instance fits the guard, else the hull packer's answer (with its
    /// certified gap).
    fn pack(&self, candidates: &[Candidate], budget: u32) -> Packing {
        self.try_pack(candidates, budget)
            .unwrap_or_else(|_| HullPacker.pack(candidates, budget))
    }
}
