//! Property tests of the packing invariants: never over budget, greedy ≤ exact, hull ≤ exact ≤
//! hull's LP bound, exact monotone in the budget, hull and exact independent of input order,
//! and `verify_and_trim` never over budget with a non-additive counter.

use crate::cand;
use crate::verify::{count, render};
use acms_pack::{
    Candidate, ExactPacker, GreedyPacker, HullPacker, Packer, Packing, VerifyOutcome,
    verify_and_trim,
};
use proptest::prelude::*;

const EPS: f64 = 1e-9;

fn option() -> impl Strategy<Value = (u8, u32, f64)> {
    (
        prop::sample::select(vec![0u8, 2, 4, 9]),
        0u32..300,
        prop_oneof![Just(0.0), 0.0f64..10.0],
    )
}

/// Random candidates, ids unique when `unique`, else drawn from a small range (duplicates).
fn candidates(unique: bool) -> impl Strategy<Value = Vec<Candidate>> {
    prop::collection::vec((0u64..6, prop::collection::vec(option(), 0..5)), 0..12).prop_map(
        move |v| {
            v.into_iter()
                .enumerate()
                .map(|(i, (id, opts))| cand(if unique { i as u64 } else { id }, &opts))
                .collect()
        },
    )
}

/// Structural validity: within budget, one item per candidate in candidate order, every item
/// one of its candidate's options, totals consistent.
fn assert_valid(p: &Packing, cs: &[Candidate], budget: u32) {
    assert!(p.tokens <= budget, "{} > {budget}", p.tokens);
    assert_eq!(p.tokens, p.items.iter().map(|it| it.tokens).sum::<u32>());
    assert!((p.value - p.items.iter().map(|it| it.value).sum::<f64>()).abs() < EPS);
    for w in p.items.windows(2) {
        assert!(w[0].candidate < w[1].candidate);
    }
    for it in &p.items {
        let c = &cs[it.candidate];
        assert_eq!(c.id, it.id);
        assert!(c.options.iter().any(|o| o.depth == it.depth
            && o.tokens == it.tokens
            && o.value == it.value
            && o.tokens > 0));
    }
    if let Some(gap) = p.certified_gap {
        assert!((0.0..=1.0).contains(&gap));
    }
}

fn selection(p: &Packing) -> Vec<(u64, u8, u32)> {
    let mut s: Vec<_> = p
        .items
        .iter()
        .map(|it| (it.id, it.depth.value(), it.tokens))
        .collect();
    s.sort_unstable();
    s
}

proptest! {
    #[test]
    fn never_over_budget_and_bounded_by_exact(cs in candidates(false), budget in 0u32..800) {
        let g = GreedyPacker.pack(&cs, budget);
        let h = HullPacker.pack(&cs, budget);
        let e = ExactPacker::default().pack(&cs, budget);
        assert_valid(&g, &cs, budget);
        assert_valid(&h, &cs, budget);
        assert_valid(&e, &cs, budget);
        prop_assert!(g.value <= e.value + EPS, "greedy {} > exact {}", g.value, e.value);
        prop_assert!(h.value <= e.value + EPS, "hull {} > exact {}", h.value, e.value);
        let ub = h.upper_bound.expect("hull reports a bound");
        prop_assert!(e.value <= ub + EPS, "exact {} > LP bound {ub}", e.value);
        prop_assert_eq!(e.certified_gap, Some(0.0));
    }

    #[test]
    fn exact_is_monotone_in_budget(cs in candidates(false), budget in 0u32..800, more in 0u32..200) {
        let e = ExactPacker::default();
        let small = e.pack(&cs, budget).value;
        let large = e.pack(&cs, budget + more).value;
        prop_assert!(small <= large + EPS, "{small} at {budget} > {large} at {}", budget + more);
    }

    #[test]
    fn order_independent(
        (cs, shuffled) in candidates(true).prop_flat_map(|cs| (Just(cs.clone()), Just(cs).prop_shuffle())),
        budget in 0u32..800,
    ) {
        for packer in [&HullPacker as &dyn Packer, &ExactPacker::default()] {
            let a = packer.pack(&cs, budget);
            let b = packer.pack(&shuffled, budget);
            prop_assert_eq!(selection(&a), selection(&b), "{}", packer.name());
            prop_assert!((a.value - b.value).abs() < EPS);
        }
    }

    #[test]
    fn verified_rendering_never_over_budget(
        cs in candidates(false),
        budget in 0u32..800,
        slack in 0u32..200,
        preamble in 0usize..60,
    ) {
        // Pack against a looser budget than the one verified, so trimming has work to do.
        let packed = HullPacker.pack(&cs, budget + slack);
        let render = |items: &[acms_pack::PackItem]| render(preamble, items);
        let Ok(v) = verify_and_trim(
            &cs,
            &packed.items,
            budget,
            |items| Ok::<_, std::convert::Infallible>(render(items)),
            count,
        );
        prop_assert_eq!(&v.text, &render(&v.items));
        prop_assert_eq!(v.tokens, count(&v.text));
        match v.outcome {
            VerifyOutcome::EmptyOverBudget => {
                prop_assert!(v.items.is_empty());
                prop_assert!(preamble > budget as usize);
            }
            _ => prop_assert!(v.tokens <= budget as usize, "{} > {budget}", v.tokens),
        }
        // Trimming only ever removes items or makes them shallower.
        for it in &v.items {
            let before = packed.items.iter().find(|p| p.candidate == it.candidate).unwrap();
            prop_assert!(it.depth <= before.depth && it.tokens <= before.tokens);
        }
    }
}
