//! The convex-hull greedy for the multiple-choice knapsack (Sinha & Zoltners 1979), the
//! default packer.
//!
//! Each candidate's options are reduced to the upper convex hull of (tokens, value) starting
//! from "not taken"; moving one hull point up is an *increment* with an efficiency (value
//! gained per extra token), decreasing along the hull. Taking increments across all candidates
//! in efficiency order until the first one that does not fit solves the LP relaxation, whose
//! value with the fractional last increment is an upper bound on the optimum (so every pack
//! reports a certified gap). The integer solution drops that fractional step, then a repair
//! pass spends what is left: first the remaining increments that still fit, in efficiency
//! order, then jumps to any Pareto option (hull or not) that fits, largest gain first.
//!
//! Cost: O(n log n) for n candidates with a constant number of options each, independent of
//! the budget. It does not guarantee optimality; [`crate::ExactPacker`] does, slowly.

use crate::front::{Opt, canonical_order, hull, pareto};
use crate::{Candidate, Packer, Packing};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Rounds of the final "jump to a better option" repair. Each round is one O(n) scan and
/// applies the single best move; the remaining tokens shrink every round, so a handful of
/// rounds catches nearly everything while bounding the worst case at O(n) per round.
const REPAIR_ROUNDS: usize = 8;

/// The convex-hull greedy with LP upper bound and repair pass.
#[derive(Debug, Clone, Copy, Default)]
pub struct HullPacker;

/// Moving candidate `cand` from hull position `pos` (0 = not taken) to `pos + 1`.
#[derive(Debug, Clone, Copy)]
struct Step {
    eff: f64,
    id: u64,
    cand: usize,
    dw: u32,
    dv: f64,
}

impl PartialEq for Step {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Step {}
impl PartialOrd for Step {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Step {
    /// Max-heap order: higher efficiency first, then lower id, then lower position, so ties
    /// do not depend on the order candidates arrive in (when ids are unique).
    fn cmp(&self, other: &Self) -> Ordering {
        self.eff
            .total_cmp(&other.eff)
            .then(other.id.cmp(&self.id))
            .then(other.cand.cmp(&self.cand))
    }
}

struct State<'a> {
    candidates: &'a [Candidate],
    fronts: Vec<Vec<Opt>>,
    hulls: Vec<Vec<usize>>,
    /// Hull steps taken per candidate (0 = not taken); valid until the jump repair.
    pos: Vec<usize>,
}

impl State<'_> {
    /// The step that moves candidate `i` one hull point up, if there is one.
    fn next_step(&self, i: usize) -> Option<Step> {
        let (front, h, pos) = (&self.fronts[i], &self.hulls[i], self.pos[i]);
        let to = front[*h.get(pos)?];
        let (w0, v0) = match pos.checked_sub(1) {
            Some(p) => (front[h[p]].tokens, front[h[p]].value),
            None => (0, 0.0),
        };
        // Fronts have strictly increasing tokens and values, so dw > 0 and dv > 0.
        let dw = to.tokens - w0;
        let dv = to.value - v0;
        Some(Step {
            eff: dv / f64::from(dw),
            id: self.candidates[i].id,
            cand: i,
            dw,
            dv,
        })
    }
}

impl Packer for HullPacker {
    fn name(&self) -> &str {
        "hull"
    }

    fn pack(&self, candidates: &[Candidate], budget: u32) -> Packing {
        let fronts: Vec<Vec<Opt>> = candidates.iter().map(|c| pareto(c, budget)).collect();
        let hulls: Vec<Vec<usize>> = fronts.iter().map(|f| hull(f)).collect();
        let mut st = State {
            candidates,
            fronts,
            hulls,
            pos: vec![0; candidates.len()],
        };
        let mut heap: BinaryHeap<Step> = (0..candidates.len())
            .filter_map(|i| st.next_step(i))
            .collect();

        // Phase 1: the LP greedy, up to the first increment that does not fit.
        let mut remaining = budget;
        let mut lp_value = 0.0;
        let mut upper_bound = None;
        while let Some(s) = heap.pop() {
            if s.dw > remaining {
                // The LP takes the fitting fraction of this increment and stops.
                upper_bound = Some(lp_value + f64::from(remaining) * s.eff);
                break;
            }
            remaining -= s.dw;
            lp_value += s.dv;
            st.pos[s.cand] += 1;
            heap.extend(st.next_step(s.cand));
        }
        // No increment was left out: every candidate sits at its most valuable option, which
        // is optimal, so the bound is the value itself.
        let upper_bound = upper_bound.unwrap_or(lp_value);

        // Phase 2: keep taking increments that still fit, in efficiency order. A candidate
        // whose increment did not fit stays where it is (its later steps are never queued).
        while remaining > 0 {
            let Some(s) = heap.pop() else { break };
            if s.dw <= remaining {
                remaining -= s.dw;
                st.pos[s.cand] += 1;
                heap.extend(st.next_step(s.cand));
            }
        }

        // Phase 3: jump to any Pareto option that fits, including LP-dominated ones the hull
        // skipped, taking the largest value gain first.
        let mut at: Vec<Option<usize>> = (0..candidates.len())
            .map(|i| st.pos[i].checked_sub(1).map(|p| st.hulls[i][p]))
            .collect();
        let order = canonical_order(candidates);
        for _ in 0..REPAIR_ROUNDS {
            if remaining == 0 {
                break;
            }
            let mut best: Option<(f64, usize, usize)> = None;
            for &i in &order {
                let front = &st.fronts[i];
                let (w, v) = at[i].map_or((0, 0.0), |k| (front[k].tokens, front[k].value));
                let limit = u64::from(w) + u64::from(remaining);
                let fits = front.partition_point(|o| u64::from(o.tokens) <= limit);
                let Some(k) = fits.checked_sub(1) else {
                    continue;
                };
                let gain = front[k].value - v;
                if gain > 0.0 && best.is_none_or(|(g, _, _)| gain > g) {
                    best = Some((gain, i, k));
                }
            }
            let Some((_, i, k)) = best else { break };
            let w = at[i].map_or(0, |j| st.fronts[i][j].tokens);
            remaining -= st.fronts[i][k].tokens - w;
            at[i] = Some(k);
        }

        let choices: Vec<Option<usize>> = at
            .iter()
            .enumerate()
            .map(|(i, k)| k.map(|k| st.fronts[i][k].orig))
            .collect();
        Packing::from_choices(candidates, &choices, Some(upper_bound))
    }
}
