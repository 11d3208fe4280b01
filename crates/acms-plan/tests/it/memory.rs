//! Hot → warm → cold → expired, promotion back to warm, caps, corrections, under a fake
//! clock.

use acms_core::NodeId;
use acms_plan::{Tier, TierPolicy};

use crate::{DAY, Fixture, HOUR, T0};

#[test]
fn decisions_go_hot_warm_cold_then_expire_as_the_clock_moves() {
    let mut f = Fixture::new();
    let (plan, _) = f.store.start("speed up the packer", None).unwrap();
    f.phase(plan.id, "explore", &[1, 2, 3]);
    let (d, report) = f
        .store
        .decide(plan.id, "explore", Some("use the hull packer"), &[])
        .unwrap();
    assert_eq!(d.tier, Tier::Hot, "recorded in the current phase");
    assert_eq!(report.counts, [1, 0, 0]);
    assert_eq!(d.manifest.len(), 3, "the whole phase manifest by default");
    assert_eq!(d.task, "speed up the packer");

    f.clock.advance(60);
    let design = f.phase(plan.id, "design", &[7]);
    assert_eq!(design.seq, 2);
    assert_eq!(
        f.store.decision(d.id).unwrap().tier,
        Tier::Warm,
        "a later phase cools it"
    );

    // 24 h after its last use it is still warm; one second later it is cold.
    f.clock.set(T0 + 24 * HOUR);
    let (_, r) = f.store.close(plan.id).unwrap();
    assert_eq!(r.counts, [0, 1, 0]);
    f.clock.set(T0 + 24 * HOUR + 1);
    let r = f.store.maintain().unwrap();
    assert_eq!((r.demoted, r.counts), (1, [0, 0, 1]));
    assert_eq!(f.store.decision(d.id).unwrap().tier, Tier::Cold);

    // Cold memory keeps it for 90 days after its last use, then it expires...
    f.clock.set(T0 + 90 * DAY);
    assert_eq!(f.store.maintain().unwrap().expired, 0);
    f.clock.set(T0 + 90 * DAY + 1);
    let r = f.store.maintain().unwrap();
    assert_eq!((r.expired, r.plans_expired), (1, 0));
    assert!(matches!(
        f.store.decision(d.id),
        Err(acms_plan::Error::UnknownDecision(_))
    ));
    // ... and the plan goes 90 days after its last activity (it was closed at 24 h).
    f.clock.set(T0 + 24 * HOUR + 90 * DAY + 1);
    assert_eq!(f.store.maintain().unwrap().plans_expired, 1);
    assert!(matches!(
        f.store.plan(plan.id),
        Err(acms_plan::Error::UnknownPlan(_))
    ));
}

#[test]
fn a_window_showing_a_cold_decisions_fragments_again_promotes_it() {
    let mut f = Fixture::new();
    let (plan, _) = f.store.start("fix the tokenizer cache", None).unwrap();
    f.phase(plan.id, "explore", &[10, 11, 12, 13]);
    let (d, _) = f.store.decide(plan.id, "explore", None, &[]).unwrap();
    f.store.close(plan.id).unwrap();
    f.clock.advance(3 * DAY);
    f.store.maintain().unwrap();
    assert_eq!(f.store.decision(d.id).unwrap().tier, Tier::Cold);

    let (other, _) = f.store.start("tokenizer follow-up", None).unwrap();
    // One of four fragments back: not enough to count as used.
    f.phase(other.id, "explore", &[10, 99]);
    assert_eq!(f.store.decision(d.id).unwrap().tier, Tier::Cold);
    // Half of them back: promoted to warm, and its last use moves to now.
    let (_, r) = f
        .store
        .record_phase(acms_plan::NewPhase {
            plan: other.id,
            name: "design".into(),
            focus: String::new(),
            budget: 4000,
            tokens: 300,
            refreshed: 0,
            manifest: crate::manifest(&[12, 13, 50]),
            inputs: acms_plan::PhaseInputs::default(),
        })
        .unwrap();
    assert_eq!(r.promoted, 1);
    let again = f.store.decision(d.id).unwrap();
    assert_eq!(again.tier, Tier::Warm);
    assert_eq!(again.last_used, T0 + 3 * DAY);
}

#[test]
fn caps_keep_the_most_recently_used_decisions() {
    let policy = TierPolicy {
        warm_max: 2,
        cold_max: 3,
        ..TierPolicy::default()
    };
    let mut f = Fixture::with_policy(policy);
    let (plan, _) = f.store.start("many small decisions", None).unwrap();
    let mut ids = Vec::new();
    for i in 0..7 {
        f.clock.advance(10);
        f.phase(plan.id, &format!("step{i}"), &[i]);
        ids.push(
            f.store
                .decide(plan.id, &format!("step{i}"), None, &[])
                .unwrap()
                .0
                .id,
        );
    }
    f.clock.advance(10);
    let (_, r) = f.store.close(plan.id).unwrap();
    // 7 decisions: the newest 2 warm, the next 3 cold, the oldest 2 expired.
    assert_eq!(r.counts, [0, 2, 3]);
    let tiers: Vec<Option<Tier>> = ids
        .iter()
        .map(|id| f.store.decision(*id).ok().map(|d| d.tier))
        .collect();
    use Tier::{Cold, Warm};
    assert_eq!(
        tiers,
        [
            None,
            None,
            Some(Cold),
            Some(Cold),
            Some(Cold),
            Some(Warm),
            Some(Warm)
        ]
    );
}

#[test]
fn a_corrected_decision_goes_cold_and_its_fragments_are_demoted() {
    let mut f = Fixture::new();
    let (plan, _) = f.store.start("choose the retry policy", None).unwrap();
    f.phase(plan.id, "design", &[5, 6, 7]);
    let (d, _) = f
        .store
        .decide(plan.id, "design", Some("retry forever"), &[NodeId(6)])
        .unwrap();
    assert_eq!(d.manifest.len(), 1, "only the named fragment");
    assert!(f.store.snapshot().unwrap().demoted.is_empty());

    let (c, r) = f
        .store
        .correct(d.id, Some("retrying forever hangs the CLI"))
        .unwrap();
    assert_eq!((c.tier, r.demoted), (Tier::Cold, 1));
    assert_eq!(c.corrected, Some(T0));
    assert_eq!(
        c.correction.as_deref(),
        Some("retrying forever hangs the CLI")
    );
    let snap = f.store.snapshot().unwrap();
    assert_eq!(snap.demoted.get(&NodeId(6)), Some(&1));
    assert_eq!(snap.demoted.len(), 1);
    // A corrected decision is never promoted, whatever a window shows.
    f.phase(plan.id, "implement", &[6]);
    assert_eq!(f.store.decision(d.id).unwrap().tier, Tier::Cold);
}

#[test]
fn warm_memory_snapshot_holds_warm_decisions_with_their_terms() {
    let mut f = Fixture::new();
    let (plan, _) = f.store.start("cache tokenizer tables", None).unwrap();
    f.phase(plan.id, "explore", &[1, 2]);
    f.store
        .decide(
            plan.id,
            "explore",
            Some("BPE tables are built once per process"),
            &[],
        )
        .unwrap();
    assert!(f.store.snapshot().unwrap().warm.is_empty(), "still hot");
    f.phase(plan.id, "design", &[3]);
    let snap = f.store.snapshot().unwrap();
    assert_eq!(snap.warm.len(), 1);
    let w = &snap.warm[0];
    for t in ["tokenizer", "tables", "bpe", "process", "explore"] {
        assert!(w.terms.contains(t), "{t} in {:?}", w.terms);
    }
    assert_eq!(w.fragments.len(), 2);
    // Past warm retention it leaves the snapshot even before maintenance runs again.
    f.clock.advance(25 * HOUR);
    assert!(f.store.snapshot().unwrap().warm.is_empty());
}

#[test]
fn history_lists_phases_decisions_and_children() {
    let mut f = Fixture::new();
    let (plan, _) = f.store.start("parent task", None).unwrap();
    f.phase(plan.id, "explore", &[1]);
    f.phase(plan.id, "design", &[2]);
    f.store.decide(plan.id, "explore", Some("a"), &[]).unwrap();
    let (child, _) = f.store.start("child task", Some(plan.id)).unwrap();
    assert_eq!(child.parent, Some(plan.id));
    let (h, _) = f.store.history(plan.id).unwrap();
    assert_eq!(
        h.phases.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        ["explore", "design"]
    );
    assert_eq!(h.decisions.len(), 1);
    assert_eq!(h.children, [child.id]);
    assert_eq!(f.store.last_phase(plan.id).unwrap().unwrap().name, "design");
    assert!(f.store.last_phase(child.id).unwrap().is_none());
}
