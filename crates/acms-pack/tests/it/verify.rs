//! `verify_and_trim` with a toy, non-additive counter: a rendering is a preamble of `p` words,
//! then per item a one-word header and `tokens` words, items separated by a `--` line; the
//! counter counts words, so separators and headers make the total more than the parts.

use std::convert::Infallible;

use crate::{cand, typical};
use acms_pack::{Candidate, HullPacker, PackItem, Packer, VerifyOutcome, verify_and_trim};

pub fn render(preamble: usize, items: &[PackItem]) -> String {
    let mut s = "p ".repeat(preamble);
    let bodies: Vec<String> = items
        .iter()
        .map(|it| format!("#{}\n{}", it.id, "x ".repeat(it.tokens as usize)))
        .collect();
    s.push_str(&bodies.join("\n--\n"));
    s
}

pub fn count(text: &str) -> usize {
    text.split_whitespace().count()
}

/// Packs `candidates` into `budget` with the hull packer, verifies against `budget` with a
/// `preamble`-word preamble, and compares the surviving `(id, depth)` list and the outcome.
fn check(
    candidates: &[Candidate],
    budget: u32,
    preamble: usize,
    expected: &[(u64, u8)],
    outcome: VerifyOutcome,
) {
    let packed = HullPacker.pack(candidates, budget);
    let Ok(v) = verify_and_trim(
        candidates,
        &packed.items,
        budget,
        |items| Ok::<_, Infallible>(render(preamble, items)),
        count,
    );
    let got: Vec<(u64, u8)> = v.items.iter().map(|it| (it.id, it.depth.value())).collect();
    assert_eq!(got, expected);
    assert_eq!(v.outcome, outcome);
    assert_eq!(v.tokens, count(&render(preamble, &v.items)));
}

#[test]
fn trims_only_when_needed() {
    let cs = [typical(1, 100, 10.0), typical(2, 100, 1.0)];
    // The packer's estimate is 200; headers and the separator make it 203.
    check(&cs, 300, 0, &[(1, 9), (2, 9)], VerifyOutcome::Fits);
    // Over by 3: the lowest value per token (candidate 2) drops one depth, to its skeleton.
    check(&cs, 200, 0, &[(1, 9), (2, 4)], VerifyOutcome::Trimmed);
    // A candidate without a shallower option is dropped instead.
    let single = [cand(1, &[(9, 100, 1.0)]), cand(2, &[(9, 100, 5.0)])];
    check(&single, 200, 0, &[(2, 9)], VerifyOutcome::Trimmed);
}

#[test]
fn preamble_larger_than_budget() {
    let cs = [typical(1, 100, 10.0)];
    check(&cs, 40, 50, &[], VerifyOutcome::EmptyOverBudget);
    // Budget 0 with an empty rendering of 0 words fits trivially.
    check(&cs, 0, 0, &[], VerifyOutcome::Fits);
}

#[test]
fn counts_steps_and_renders() {
    let cs = [typical(1, 100, 10.0), typical(2, 100, 1.0)];
    let packed = HullPacker.pack(&cs, 200);
    let Ok(v) = verify_and_trim(
        &cs,
        &packed.items,
        200,
        |items| Ok::<_, Infallible>(render(0, items)),
        count,
    );
    assert_eq!((v.downgraded, v.dropped, v.renders), (1, 0, 3));
    assert_eq!(v.tokens, 101 + 36 + 1);
}

#[test]
fn items_that_do_not_match_their_candidate_are_dropped() {
    let cs = [typical(1, 100, 10.0)];
    let bogus = PackItem {
        candidate: 7,
        ..HullPacker.pack(&cs, 1000).items[0]
    };
    let Ok(v) = verify_and_trim(
        &cs,
        &[bogus],
        50,
        |items| Ok::<_, Infallible>(render(0, items)),
        count,
    );
    assert!(v.items.is_empty());
    assert_eq!((v.dropped, v.outcome), (1, VerifyOutcome::Trimmed));
}

#[test]
fn the_last_rendering_is_of_the_returned_items() {
    let cs = [
        typical(1, 100, 10.0),
        typical(2, 100, 1.0),
        typical(3, 50, 0.5),
    ];
    for budget in [0, 60, 150, 200, 400] {
        let packed = HullPacker.pack(&cs, budget + 100);
        let mut last = Vec::new();
        let Ok(v) = verify_and_trim(
            &cs,
            &packed.items,
            budget,
            |items| {
                last = items.to_vec();
                Ok::<_, Infallible>(render(0, items))
            },
            count,
        );
        assert_eq!(last, v.items, "{budget}");
    }
}

#[test]
fn a_rendering_error_ends_verification() {
    let cs = [typical(1, 100, 10.0), typical(2, 100, 1.0)];
    let packed = HullPacker.pack(&cs, 200);
    let mut renders = 0;
    // The first rendering is over budget; the second (the empty one) fails.
    let result = verify_and_trim(
        &cs,
        &packed.items,
        200,
        |items| {
            renders += 1;
            if renders == 2 {
                Err("store unreadable")
            } else {
                Ok(render(0, items))
            }
        },
        count,
    );
    assert_eq!(result, Err("store unreadable"));
    assert_eq!(renders, 2);
}
