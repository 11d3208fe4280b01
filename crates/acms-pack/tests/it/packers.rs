//! Edge cases of every packer, data-driven: each case lists the expected `(id, depth)` choices.

use crate::{cand, typical};
use acms_pack::{
    Candidate, Error, ExactPacker, GreedyPacker, HullPacker, Packer, Packing, packer_by_name,
};

fn packers() -> Vec<Box<dyn Packer>> {
    ["greedy", "hull", "exact"]
        .iter()
        .map(|n| packer_by_name(n).expect("registered"))
        .collect()
}

fn choices(p: &Packing) -> Vec<(u64, u8)> {
    p.items.iter().map(|it| (it.id, it.depth.value())).collect()
}

/// Packs with `packer` and compares the chosen `(id, depth)` list (in candidate order).
fn check(packer: &dyn Packer, candidates: &[Candidate], budget: u32, expected: &[(u64, u8)]) {
    let p = packer.pack(candidates, budget);
    assert_eq!(
        choices(&p),
        expected,
        "{} at budget {budget}",
        packer.name()
    );
    assert!(p.tokens <= budget);
    let tokens: u32 = p.items.iter().map(|it| it.tokens).sum();
    assert_eq!(p.tokens, tokens);
}

fn check_all(candidates: &[Candidate], budget: u32, expected: &[(u64, u8)]) {
    for p in packers() {
        check(p.as_ref(), candidates, budget, expected);
    }
}

#[test]
fn empty_input_and_zero_budget() {
    check_all(&[], 1000, &[]);
    check_all(&[typical(1, 100, 1.0)], 0, &[]);
    // A candidate without options, or with only unusable ones, is never taken.
    check_all(
        &[
            cand(1, &[]),
            cand(2, &[(9, 0, 1.0), (4, 10, f64::NAN), (0, 5, -1.0)]),
        ],
        100,
        &[],
    );
    for p in packers() {
        let packing = p.pack(&[], 10);
        assert_eq!(packing.value, 0.0);
        assert!(packing.certified_gap.is_none_or(|g| g == 0.0));
    }
}

#[test]
fn everything_fits_at_full_depth() {
    let cs = [
        typical(1, 100, 1.0),
        typical(2, 300, 2.0),
        typical(3, 50, 0.1),
    ];
    check_all(&cs, 450, &[(1, 9), (2, 9), (3, 9)]);
    check_all(&cs, 100_000, &[(1, 9), (2, 9), (3, 9)]);
    let hull = HullPacker.pack(&cs, 100_000);
    assert_eq!(hull.certified_gap, Some(0.0));
    assert_eq!(hull.upper_bound, Some(hull.value));
}

#[test]
fn depth_fallback_takes_shallow_rather_than_dropping() {
    // After candidate 1 at full depth, 20 tokens remain: candidate 2 fits only at depth 0.
    let cs = [
        cand(1, &[(9, 100, 10.0)]),
        cand(
            2,
            &[(9, 500, 5.0), (4, 200, 3.0), (2, 80, 2.0), (0, 20, 1.0)],
        ),
    ];
    check_all(&cs, 120, &[(1, 9), (2, 0)]);
    // Options in any order give the same answer.
    let shuffled = [
        cand(1, &[(9, 100, 10.0)]),
        cand(
            2,
            &[(0, 20, 1.0), (4, 200, 3.0), (9, 500, 5.0), (2, 80, 2.0)],
        ),
    ];
    check_all(&shuffled, 120, &[(1, 9), (2, 0)]);
    // With room for a skeleton, the skeleton.
    check_all(&cs, 300, &[(1, 9), (2, 4)]);
}

#[test]
fn ties_are_broken_by_id() {
    // Two identical candidates, room for one: the lower id wins, whatever the input order.
    let a = cand(7, &[(9, 100, 1.0)]);
    let b = cand(3, &[(9, 100, 1.0)]);
    check_all(&[a.clone(), b.clone()], 150, &[(3, 9)]);
    check_all(&[b, a], 150, &[(3, 9)]);
}

#[test]
fn duplicate_ids_do_not_panic() {
    let cs = [
        typical(1, 100, 1.0),
        typical(1, 100, 1.0),
        typical(1, 40, 3.0),
    ];
    for p in packers() {
        let packing = p.pack(&cs, 150);
        assert!(packing.tokens <= 150, "{}", p.name());
        let mut seen: Vec<usize> = packing.items.iter().map(|it| it.candidate).collect();
        seen.dedup();
        assert_eq!(seen.len(), packing.items.len(), "one item per candidate");
    }
}

#[test]
fn same_input_same_output() {
    let cs: Vec<Candidate> = (0..50)
        .map(|i| typical(i, 20 + (i as u32 * 37) % 400, 1.0 + (i % 7) as f64))
        .collect();
    for p in packers() {
        assert_eq!(p.pack(&cs, 2000), p.pack(&cs, 2000), "{}", p.name());
    }
}

#[test]
fn hull_beats_the_depth_blind_greedy() {
    // The greedy takes candidate 1 at full depth by density and has 10 tokens left; two
    // skeletons are worth more. Hull and exact find them.
    let cs = [
        cand(1, &[(9, 100, 10.0), (4, 50, 8.0), (0, 10, 5.0)]),
        cand(2, &[(9, 100, 9.9), (4, 50, 8.0), (0, 10, 5.0)]),
    ];
    check(&GreedyPacker, &cs, 110, &[(1, 9), (2, 0)]);
    check(&HullPacker, &cs, 110, &[(1, 4), (2, 4)]);
    check(&ExactPacker::default(), &cs, 110, &[(1, 4), (2, 4)]);
    // The LP bound adds the fitting fraction of the next increment: 16 + 10 × 2/50.
    let hull = HullPacker.pack(&cs, 110);
    let ub = hull.upper_bound.expect("hull computes a bound");
    assert!((ub - 16.4).abs() < 1e-9, "{ub}");
    assert!((hull.certified_gap.unwrap() - (1.0 - 16.0 / 16.4)).abs() < 1e-9);
    assert!(GreedyPacker.pack(&cs, 110).upper_bound.is_none());
}

#[test]
fn hull_repair_uses_lp_dominated_options() {
    // Candidate 2 goes first by efficiency and leaves 60 tokens; candidate 1's hull is just its
    // full source (depths 2 and 0 are LP-dominated), which does not fit, but its depth 2 does.
    let cs = [
        cand(1, &[(9, 100, 1.0), (2, 60, 0.3), (0, 10, 0.1)]),
        cand(2, &[(9, 40, 10.0)]),
    ];
    check(&HullPacker, &cs, 100, &[(1, 2), (2, 9)]);
    check(&ExactPacker::default(), &cs, 100, &[(1, 2), (2, 9)]);
}

#[test]
fn exact_guard_refuses_and_falls_back_to_hull() {
    let cs: Vec<Candidate> = (0..20).map(|i| typical(i, 100 + i as u32, 1.0)).collect();
    let small = ExactPacker::with_max_cells(1000);
    let err = small.try_pack(&cs, 1000).unwrap_err();
    assert!(
        matches!(
            err,
            Error::TooLarge {
                candidates: 20,
                capacity: 1000,
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string().contains("hull"),
        "the message says what to do"
    );
    assert_eq!(small.pack(&cs, 1000), HullPacker.pack(&cs, 1000));
    // The capacity is clipped to what taking everything costs, so a huge budget is cheap.
    let tiny = [typical(1, 100, 1.0)];
    assert!(small.try_pack(&tiny, u32::MAX).is_ok());
    // The value-only DP is guarded on its row: no huge allocation from a huge budget.
    let huge = [cand(1, &[(9, u32::MAX, 1.0)])];
    assert!(matches!(
        small.optimum_value(&huge, u32::MAX),
        Err(Error::TooLarge { .. })
    ));
}

#[test]
fn exact_optimum_value_matches_the_table() {
    let cs: Vec<Candidate> = (0..30)
        .map(|i| typical(i, 10 + (i as u32 * 53) % 300, 1.0 + (i % 5) as f64))
        .collect();
    for budget in [0, 1, 50, 500, 1500, 10_000] {
        let packed = ExactPacker::default().try_pack(&cs, budget).unwrap();
        let value = ExactPacker::default().optimum_value(&cs, budget).unwrap();
        assert!((packed.value - value).abs() < 1e-9, "budget {budget}");
    }
}

#[test]
fn registry() {
    for name in acms_pack::PACKER_NAMES {
        assert_eq!(packer_by_name(name).unwrap().name(), name);
    }
    assert_eq!(
        packer_by_name(acms_pack::DEFAULT_PACKER).unwrap().name(),
        "auto"
    );
    let err = packer_by_name("knapsack").err().expect("unknown name");
    assert_eq!(err, Error::UnknownPacker("knapsack".into()));
    assert!(
        err.to_string()
            .contains("`auto`, `greedy`, `hull` or `exact`")
    );
}

#[test]
fn auto_is_exact_on_small_instances_and_hull_on_large_ones() {
    let small = vec![
        typical(1, 400, 1.0),
        typical(2, 900, 0.8),
        typical(3, 250, 0.5),
    ];
    let auto = acms_pack::AutoPacker;
    for budget in [0, 50, 500, 1500] {
        let exact = ExactPacker::default().try_pack(&small, budget).unwrap();
        assert_eq!(
            auto.pack(&small, budget).items,
            exact.items,
            "budget {budget}"
        );
    }
    // 3 candidates × (2^19 + 2) cells is over the auto limit: the hull packer answers.
    let big_budget = (acms_pack::AUTO_MAX_CELLS / 2) as u32 + 1;
    assert_eq!(
        auto.pack(&small, big_budget).items,
        HullPacker.pack(&small, big_budget).items
    );
}
