//! The tier rules as properties: caps and retention always hold, corrected decisions are
//! never hot or warm, and the result does not depend on row order.

use acms_plan::{Tier, TierInput, TierPolicy, assign};
use proptest::prelude::*;

fn rows() -> impl Strategy<Value = Vec<TierInput>> {
    prop::collection::vec((any::<bool>(), any::<bool>(), 0i64..400), 0..60).prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(|(i, (current, corrected, age))| TierInput {
                id: i as i64 + 1,
                current,
                corrected,
                last_used: 1_000 - age,
            })
            .collect()
    })
}

fn policy() -> impl Strategy<Value = TierPolicy> {
    (0i64..200, 0usize..20, 0i64..400, 0usize..30).prop_map(|(ws, wm, cs, cm)| TierPolicy {
        warm_seconds: ws,
        warm_max: wm,
        cold_seconds: cs,
        cold_max: cm,
    })
}

proptest! {
    #[test]
    fn caps_retention_and_corrections_always_hold(rows in rows(), policy in policy()) {
        let now = 1_000;
        let tiers = assign(&rows, &policy, now);
        prop_assert_eq!(tiers.len(), rows.len());
        let count = |t| tiers.iter().filter(|x| **x == Some(t)).count();
        prop_assert!(count(Tier::Warm) <= policy.warm_max);
        prop_assert!(count(Tier::Cold) <= policy.cold_max);
        for (r, t) in rows.iter().zip(&tiers) {
            let age = now - r.last_used;
            match t {
                Some(Tier::Hot) => prop_assert!(r.current && !r.corrected && age <= policy.warm_seconds),
                Some(Tier::Warm) => prop_assert!(!r.corrected && age <= policy.warm_seconds),
                Some(Tier::Cold) => prop_assert!(age <= policy.cold_seconds),
                None => {}
            }
            if r.current && !r.corrected && age <= policy.warm_seconds {
                prop_assert_eq!(*t, Some(Tier::Hot));
            }
        }
        // A decision expires only when older than cold retention or when the cold cap is
        // full of decisions used at least as recently.
        for (r, t) in rows.iter().zip(&tiers) {
            if t.is_none() && now - r.last_used <= policy.cold_seconds {
                prop_assert_eq!(count(Tier::Cold), policy.cold_max);
            }
        }
    }

    #[test]
    fn the_result_does_not_depend_on_row_order(rows in rows(), policy in policy(), seed in any::<u64>()) {
        let tiers = assign(&rows, &policy, 1_000);
        let mut shuffled: Vec<(TierInput, Option<Tier>)> =
            rows.iter().copied().zip(tiers.iter().copied()).collect();
        // A deterministic permutation from the seed.
        let n = shuffled.len();
        for i in 0..n {
            let j = ((seed.wrapping_mul(6364136223846793005).wrapping_add(i as u64)) % n as u64) as usize;
            shuffled.swap(i, j);
        }
        let (rows2, expected): (Vec<TierInput>, Vec<Option<Tier>>) = shuffled.into_iter().unzip();
        prop_assert_eq!(assign(&rows2, &policy, 1_000), expected);
    }
}
