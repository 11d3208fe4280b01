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

use crate::front::Fronts;
use crate::{Candidate, Packer, Packing};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Rounds of the final "jump to a better option" repair, each applying the single best move.
/// The first round scans every candidate, later ones only those that could still jump (the
/// remaining tokens only shrink); a handful of rounds catches nearly everything while keeping
/// the worst case linear.
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
    fronts: Fronts,
    /// Hull steps taken per candidate (0 = not taken); valid until the jump repair.
    pos: Vec<usize>,
}

impl State<'_> {
    /// The step that moves candidate `i` one hull point up, if there is one.
    fn next_step(&self, i: usize) -> Option<Step> {
        let (front, h, pos) = (self.fronts.front(i), self.fronts.hull(i), self.pos[i]);
        let to = front[*h.get(pos)? as usize];
        let (w0, v0) = match pos.checked_sub(1) {
            Some(p) => {
                let from = front[h[p] as usize];
                (from.tokens, from.value)
            }
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

    /// Takes step `s`, returning the candidate's next step if it could still fit.
    fn take(&mut self, s: &Step, remaining: u32) -> Option<Step> {
        self.pos[s.cand] += 1;
        self.next_step(s.cand).filter(|n| n.dw <= remaining)
    }
}

/// The best single jump to a costlier, more valuable Pareto option within `remaining`
/// tokens: `(gain, candidate, front position)`, ties to the lower id, then position.
fn best_jump(
    st: &State<'_>,
    at: &[Option<usize>],
    remaining: u32,
    among: &mut Vec<usize>,
) -> Option<(f64, usize, usize)> {
    let mut best: Option<(f64, usize, usize)> = None;
    among.retain(|&i| {
        let front = st.fronts.front(i);
        let (w, v) = at[i].map_or((0, 0.0), |k| (front[k].tokens, front[k].value));
        let limit = u64::from(w) + u64::from(remaining);
        let fits = front.partition_point(|o| u64::from(o.tokens) <= limit);
        let Some(k) = fits.checked_sub(1) else {
            return false;
        };
        let gain = front[k].value - v;
        if gain <= 0.0 {
            // `remaining` only shrinks, so this candidate can never jump again.
            return false;
        }
        let better = best.is_none_or(|(g, j, _)| {
            gain > g || (gain == g && (st.candidates[i].id, i) < (st.candidates[j].id, j))
        });
        if better {
            best = Some((gain, i, k));
        }
        true
    });
    best
}

impl Packer for HullPacker {
    fn name(&self) -> &str {
        crate::PackerName::Hull.name()
    }

    fn pack(&self, candidates: &[Candidate], budget: u32) -> Packing {
        let mut st = State {
            candidates,
            fronts: Fronts::new(candidates, budget, true),
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
            heap.extend(st.take(&s, u32::MAX));
        }
        // No increment was left out: every candidate sits at its most valuable option, which
        // is optimal, so the bound is the value itself.
        let upper_bound = upper_bound.unwrap_or(lp_value);

        // Phase 2: keep taking increments that still fit, in efficiency order. Only the few
        // that fit what is left are re-heaped; a candidate whose increment does not fit
        // stays where it is, since `remaining` only shrinks.
        let mut rest = heap.into_vec();
        rest.retain(|s| s.dw <= remaining);
        let mut heap = BinaryHeap::from(rest);
        while let Some(s) = heap.pop() {
            if s.dw <= remaining {
                remaining -= s.dw;
                heap.extend(st.take(&s, remaining));
            }
        }

        // Phase 3: jump to any Pareto option that fits, including LP-dominated ones the hull
        // skipped, largest value gain first. The first round scans every candidate; later
        // rounds only those that could still jump.
        let mut at: Vec<Option<usize>> = (0..candidates.len())
            .map(|i| {
                st.pos[i]
                    .checked_sub(1)
                    .map(|p| st.fronts.hull(i)[p] as usize)
            })
            .collect();
        let mut live: Vec<usize> = (0..candidates.len()).collect();
        for _ in 0..REPAIR_ROUNDS {
            if remaining == 0 {
                break;
            }
            let Some((_, i, k)) = best_jump(&st, &at, remaining, &mut live) else {
                break;
            };
            let front = st.fronts.front(i);
            let w = at[i].map_or(0, |j| front[j].tokens);
            remaining -= front[k].tokens - w;
            at[i] = Some(k);
        }

        let choices: Vec<Option<usize>> = at
            .iter()
            .enumerate()
            .map(|(i, k)| k.map(|k| st.fronts.front(i)[k].orig as usize))
            .collect();
        Packing::from_choices(candidates, &choices, Some(upper_bound))
    }
}
