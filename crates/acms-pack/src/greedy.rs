//! The spec's greedy packer (ADR-014, BudgetPacker): order candidates by the value density of
//! their deepest option, then take each at the deepest depth that still fits (fallback
//! 9 → 4 → 2 → 0), skipping it only when not even its shallowest option fits.
//!
//! It is kept as the baseline the spec describes and to measure what the depth-blind order
//! loses; it computes no upper bound. It does not look at LP dominance or incremental value.

use crate::front::{by_efficiency_desc, usable};
use crate::{Candidate, Packer, Packing};

/// The spec's greedy knapsack with depth fallback.
#[derive(Debug, Clone, Copy, Default)]
pub struct GreedyPacker;

impl Packer for GreedyPacker {
    fn name(&self) -> &str {
        crate::PackerName::Greedy.name()
    }

    fn pack(&self, candidates: &[Candidate], budget: u32) -> Packing {
        // Per candidate: usable option indices, deepest first, equal depths by value; flat,
        // `fallback[start[i]..start[i + 1]]`, to avoid an allocation per candidate.
        let mut fallback: Vec<usize> = Vec::with_capacity(candidates.len() * 4);
        let mut start: Vec<usize> = Vec::with_capacity(candidates.len() + 1);
        start.push(0);
        for c in candidates {
            let base = fallback.len();
            fallback.extend((0..c.options.len()).filter(|&j| usable(&c.options[j])));
            fallback[base..].sort_unstable_by(|&a, &b| {
                let (oa, ob) = (&c.options[a], &c.options[b]);
                ob.depth
                    .cmp(&oa.depth)
                    .then(ob.value.total_cmp(&oa.value))
                    .then(oa.tokens.cmp(&ob.tokens))
                    .then(a.cmp(&b))
            });
            start.push(fallback.len());
        }
        let options_of = |i: usize| &fallback[start[i]..start[i + 1]];
        let mut order: Vec<(f64, usize)> = (0..candidates.len())
            .filter_map(|i| {
                let o = &candidates[i].options[*options_of(i).first()?];
                Some((o.value / f64::from(o.tokens), i))
            })
            .collect();
        order.sort_unstable_by(|&(da, a), &(db, b)| {
            by_efficiency_desc(da, db)
                .then(candidates[a].id.cmp(&candidates[b].id))
                .then(a.cmp(&b))
        });

        let mut remaining = budget;
        let mut choices: Vec<Option<usize>> = vec![None; candidates.len()];
        for (_, i) in order {
            if remaining == 0 {
                break;
            }
            let fit = options_of(i)
                .iter()
                .copied()
                .find(|&j| candidates[i].options[j].tokens <= remaining);
            if let Some(j) = fit {
                remaining -= candidates[i].options[j].tokens;
                choices[i] = Some(j);
            }
        }
        Packing::from_choices(candidates, &choices, None)
    }
}
