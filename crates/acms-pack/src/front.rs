//! Per-candidate preprocessing shared by the packers: which options are usable at all, the
//! Pareto front (no option costs more for less value), its upper convex hull (no option is
//! beaten by a mix of two others, i.e. LP-dominated), and the canonical candidate order that
//! makes ties independent of input order.
//!
//! It does not choose anything across candidates; that is each packer's job.

use crate::{Candidate, DepthOption};
use std::cmp::Ordering;

/// A usable option, remembering where it came from in `Candidate::options`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Opt {
    pub tokens: u32,
    pub value: f64,
    /// Index into the candidate's `options` (u32 keeps `Opt` at 16 bytes: at 10 000
    /// candidates the fronts are the largest allocation of a pack).
    pub orig: u32,
}

/// Whether a packer may consider this option at all: it must cost something and be worth
/// something (a NaN or infinite value from a broken scorer is ignored, not propagated).
pub(crate) fn usable(o: &DepthOption) -> bool {
    o.tokens > 0 && o.value.is_finite() && o.value > 0.0
}

/// Appends to `out` the Pareto front of a candidate's usable options that fit `budget`:
/// sorted by tokens ascending with strictly increasing value. Among options with equal tokens
/// and value the deeper one wins, then the earlier one, so the front does not depend on option
/// order. `scratch` is reused across candidates to avoid an allocation per candidate.
fn pareto_into(c: &Candidate, budget: u32, scratch: &mut Vec<(Opt, u8)>, out: &mut Vec<Opt>) {
    scratch.clear();
    scratch.extend(
        c.options
            .iter()
            .enumerate()
            .filter(|(_, o)| usable(o) && o.tokens <= budget)
            .filter_map(|(orig, o)| {
                let opt = Opt {
                    tokens: o.tokens,
                    value: o.value,
                    // Beyond 4 billion options per candidate the rest are ignored.
                    orig: u32::try_from(orig).ok()?,
                };
                Some((opt, o.depth.value()))
            }),
    );
    let order = |(a, da): &(Opt, u8), (b, db): &(Opt, u8)| {
        a.tokens
            .cmp(&b.tokens)
            .then(b.value.total_cmp(&a.value))
            .then(db.cmp(da))
            .then(a.orig.cmp(&b.orig))
    };
    // Callers usually list options deepest (costliest) first; reversing that is the whole
    // sort, and the sort was the largest single cost of packing 10 000 candidates.
    if scratch
        .windows(2)
        .all(|w| order(&w[0], &w[1]) == std::cmp::Ordering::Greater)
    {
        scratch.reverse();
    } else {
        scratch.sort_unstable_by(order);
    }
    let base = out.len();
    for &(o, _) in scratch.iter() {
        if out[base..].last().is_none_or(|last| o.value > last.value) {
            out.push(o);
        }
    }
}

/// Appends to `out` the indices into `front` of its upper convex hull seen from the empty
/// choice `(0, 0)`: the options an LP would ever use. Successive hull steps have strictly
/// decreasing incremental efficiency (value gained per token spent); collinear middle points
/// are dropped.
fn hull_into(front: &[Opt], out: &mut Vec<u32>) {
    let base = out.len();
    let point = |i: u32| -> (f64, f64) {
        let o = &front[i as usize];
        (f64::from(o.tokens), o.value)
    };
    for k in 0..front.len() as u32 {
        let c = point(k);
        while out.len() > base {
            let b = point(out[out.len() - 1]);
            let a = if out.len() - base >= 2 {
                point(out[out.len() - 2])
            } else {
                (0.0, 0.0)
            };
            // Keep b only if the slope a→b is strictly steeper than b→c.
            if (b.1 - a.1) * (c.0 - b.0) > (c.1 - b.1) * (b.0 - a.0) {
                break;
            }
            out.pop();
        }
        out.push(k);
    }
}

/// The Pareto fronts (and optionally hulls) of all candidates, in flat buffers: two
/// allocations for the whole instance instead of two per candidate.
pub(crate) struct Fronts {
    opts: Vec<Opt>,
    /// `opts[start[i]..start[i + 1]]` is candidate `i`'s front.
    start: Vec<usize>,
    /// Hull positions relative to each front; empty when not requested.
    hulls: Vec<u32>,
    hstart: Vec<usize>,
}

impl Fronts {
    pub(crate) fn new(candidates: &[Candidate], budget: u32, with_hulls: bool) -> Fronts {
        let mut f = Fronts {
            opts: Vec::with_capacity(candidates.len() * 4),
            start: Vec::with_capacity(candidates.len() + 1),
            hulls: Vec::with_capacity(if with_hulls { candidates.len() * 4 } else { 0 }),
            hstart: Vec::with_capacity(if with_hulls { candidates.len() + 1 } else { 0 }),
        };
        let mut scratch = Vec::new();
        f.start.push(0);
        f.hstart.push(0);
        for c in candidates {
            let base = f.opts.len();
            pareto_into(c, budget, &mut scratch, &mut f.opts);
            f.start.push(f.opts.len());
            if with_hulls {
                hull_into(&f.opts[base..], &mut f.hulls);
                f.hstart.push(f.hulls.len());
            }
        }
        f
    }

    /// Candidate `i`'s Pareto front.
    pub(crate) fn front(&self, i: usize) -> &[Opt] {
        &self.opts[self.start[i]..self.start[i + 1]]
    }

    /// Candidate `i`'s hull, as positions in its front (empty unless built `with_hulls`).
    pub(crate) fn hull(&self, i: usize) -> &[u32] {
        match (self.hstart.get(i), self.hstart.get(i + 1)) {
            (Some(&a), Some(&b)) => &self.hulls[a..b],
            _ => &[],
        }
    }
}

/// Candidate positions sorted by `(id, position)`: the order every tie is broken in.
pub(crate) fn canonical_order(candidates: &[Candidate]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by_key(|&i| (candidates[i].id, i));
    order
}

/// Compares two efficiencies (value per token), larger first, NaN-safe.
pub(crate) fn by_efficiency_desc(a: f64, b: f64) -> Ordering {
    b.total_cmp(&a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Depth;

    fn cand(opts: &[(u8, u32, f64)]) -> Candidate {
        Candidate {
            id: 1,
            options: opts
                .iter()
                .map(|&(d, tokens, value)| DepthOption {
                    depth: Depth::try_from(d).unwrap(),
                    tokens,
                    value,
                })
                .collect(),
        }
    }

    /// `expected_front` and `expected_hull` are lists of original option indices.
    fn check(
        opts: &[(u8, u32, f64)],
        budget: u32,
        expected_front: &[usize],
        expected_hull: &[usize],
    ) {
        let fronts = Fronts::new(&[cand(opts)], budget, true);
        let front = fronts.front(0);
        let got: Vec<usize> = front.iter().map(|o| o.orig as usize).collect();
        assert_eq!(got, expected_front, "front of {opts:?}");
        let h: Vec<usize> = fronts
            .hull(0)
            .iter()
            .map(|&i| front[i as usize].orig as usize)
            .collect();
        assert_eq!(h, expected_hull, "hull of {opts:?}");
    }

    #[test]
    fn fronts_and_hulls() {
        // A typical concave candidate: every depth is on the hull.
        check(
            &[(9, 1000, 1.0), (4, 350, 0.7), (2, 120, 0.4), (0, 50, 0.2)],
            10_000,
            &[3, 2, 1, 0],
            &[3, 2, 1, 0],
        );
        // Skeleton costs more than full source: dominated.
        check(&[(9, 100, 1.0), (4, 150, 0.5)], 1000, &[0], &[0]);
        // Doc is LP-dominated: a mix of signature and full beats it.
        check(
            &[(9, 100, 1.0), (2, 60, 0.3), (0, 10, 0.2)],
            1000,
            &[2, 1, 0],
            &[2, 0],
        );
        // Options over budget, free, or worth nothing are ignored.
        check(
            &[(9, 5000, 1.0), (4, 0, 0.5), (2, 40, 0.0), (0, 20, f64::NAN)],
            1000,
            &[],
            &[],
        );
        // Collinear middle point dropped from the hull, kept in the front.
        check(&[(9, 200, 2.0), (4, 100, 1.0)], 1000, &[1, 0], &[0]);
        // Duplicates: the deeper of two equal options wins.
        check(&[(0, 50, 0.5), (9, 50, 0.5)], 1000, &[1], &[1]);
    }
}
