//! Bad input and faults: unknown ids, closed plans, a newer schema, a busy database, a clock
//! that moves backwards, two writers on one plan.

use std::time::Duration;

use acms_core::NodeId;
use acms_plan::{DecisionId, Error, PlanId};

use crate::{Fixture, T0};

#[test]
fn unknown_plan_phase_decision_and_fragment_are_clear_errors() {
    let mut f = Fixture::new();
    let e = f.store.history(PlanId(42)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "unknown plan p42: use an id printed by `acms plan start` (see `acms plan history`)"
    );
    assert!(matches!(
        f.store.start("child", Some(PlanId(9))),
        Err(Error::UnknownPlan(_))
    ));
    let (plan, _) = f.store.start("task", None).unwrap();
    let e = f.store.decide(plan.id, "design", None, &[]).unwrap_err();
    assert!(
        e.to_string().contains("has no phase `design`") && e.to_string().contains("none yet"),
        "{e}"
    );
    f.phase(plan.id, "explore", &[1, 2]);
    let e = f.store.decide(plan.id, "design", None, &[]).unwrap_err();
    assert!(e.to_string().contains("(known: explore)"), "{e}");
    let e = f
        .store
        .decide(plan.id, "explore", None, &[NodeId(3)])
        .unwrap_err();
    assert!(matches!(e, Error::NotInManifest { .. }), "{e}");
    assert!(e.to_string().contains("0000000000000003"), "{e}");
    let e = f.store.decision(DecisionId(7)).unwrap_err();
    assert!(e.to_string().starts_with("unknown decision d7"), "{e}");
    assert!(matches!(
        f.store.correct(DecisionId(7), None),
        Err(Error::UnknownDecision(_))
    ));
    // Malformed ids and names.
    assert!("x7".parse::<PlanId>().is_err());
    assert!("p0".parse::<PlanId>().is_err());
    assert_eq!("p7".parse::<PlanId>().unwrap(), PlanId(7));
    assert_eq!(" 7 ".parse::<PlanId>().unwrap(), PlanId(7));
    assert_eq!("d3".parse::<DecisionId>().unwrap(), DecisionId(3));
    assert!(matches!(f.store.start("   ", None), Err(Error::Invalid(_))));
    assert!(matches!(
        f.store.decide(plan.id, "", None, &[]),
        Err(Error::Invalid(_))
    ));
    assert!(acms_plan::check_phase_name("two\nlines").is_err());
    assert!(acms_plan::check_phase_name(&"x".repeat(65)).is_err());
}

#[test]
fn a_closed_plan_refuses_phases_decisions_and_children() {
    let mut f = Fixture::new();
    let (plan, _) = f.store.start("task", None).unwrap();
    f.phase(plan.id, "explore", &[1]);
    let (closed, _) = f.store.close(plan.id).unwrap();
    assert_eq!(closed.closed, Some(T0));
    // Closing twice is harmless.
    assert_eq!(f.store.close(plan.id).unwrap().0.closed, Some(T0));
    let e = f
        .store
        .record_phase(acms_plan::NewPhase {
            plan: plan.id,
            name: "design".into(),
            focus: String::new(),
            budget: 1000,
            tokens: 10,
            refreshed: 0,
            manifest: Vec::new(),
            inputs: acms_plan::PhaseInputs::default(),
        })
        .unwrap_err();
    assert!(matches!(e, Error::PlanClosed(_)), "{e}");
    assert!(matches!(
        f.store.decide(plan.id, "explore", None, &[]),
        Err(Error::PlanClosed(_))
    ));
    assert!(matches!(
        f.store.start("child", Some(plan.id)),
        Err(Error::PlanClosed(_))
    ));
    // History stays readable.
    assert_eq!(f.store.history(plan.id).unwrap().0.phases.len(), 1);
}

#[test]
fn a_database_of_a_newer_schema_is_refused_and_left_untouched() {
    let f = Fixture::new();
    let path = f.store.path().to_path_buf();
    drop(f.store);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "UPDATE meta SET value = '7' WHERE key = 'schema_version'",
        [],
    )
    .unwrap();
    drop(conn);
    let e = match acms_plan::PlanStore::open(
        f.dir.path(),
        acms_plan::TierPolicy::default(),
        std::sync::Arc::new(f.clock.clone()),
    ) {
        Err(e) => e,
        Ok(_) => panic!("a newer schema must be refused"),
    };
    assert!(
        matches!(
            e,
            Error::NewerSchema {
                found: 7,
                supported: 2,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("newer than this acms"), "{e}");
    let conn = rusqlite::Connection::open(&path).unwrap();
    let v: String = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(v, "7");
}

#[test]
fn a_database_of_schema_1_is_migrated_and_its_phases_read_without_inputs() {
    let mut f = Fixture::new();
    let (plan, _) = f.store.start("task", None).unwrap();
    f.phase(plan.id, "explore", &[1, 2]);
    let path = f.store.path().to_path_buf();
    drop(f.store);
    // What version 1 wrote: phases without their inputs.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "ALTER TABLE phases DROP COLUMN inputs;
         UPDATE meta SET value = '1' WHERE key = 'schema_version';",
    )
    .unwrap();
    drop(conn);
    let store = acms_plan::PlanStore::open(
        f.dir.path(),
        acms_plan::TierPolicy::default(),
        std::sync::Arc::new(f.clock.clone()),
    )
    .unwrap();
    let old = store.last_run(plan.id, "explore").unwrap().unwrap();
    assert_eq!(old.manifest.len(), 2);
    assert_eq!(old.inputs, acms_plan::PhaseInputs::default());
    let conn = rusqlite::Connection::open(&path).unwrap();
    let v: String = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(v, "2");
}

#[test]
fn a_clock_that_moves_backwards_never_moves_memory_backwards() {
    let mut f = Fixture::new();
    let (plan, _) = f.store.start("task", None).unwrap();
    f.phase(plan.id, "explore", &[1]);
    f.clock.set(T0 - 5_000);
    let (d, report) = f.store.decide(plan.id, "explore", None, &[]).unwrap();
    assert_eq!(report.clock_behind, Some(5_000));
    assert_eq!(report.now, T0);
    assert_eq!(d.created, T0, "never earlier than a time already seen");
    // A later process with the same backwards clock sees the same time.
    let other = f.reopen();
    assert_eq!(other.now().unwrap(), T0);
    // Nothing cools because the clock went back, nor warms because it came forward again.
    f.clock.set(T0 + 10);
    let r = f.store.maintain().unwrap();
    assert_eq!(
        (r.clock_behind, r.now, r.counts),
        (None, T0 + 10, [1, 0, 0])
    );
}

#[test]
fn a_writer_waits_for_another_process_then_gives_a_clear_busy_error() {
    let mut f = Fixture::new();
    let (plan, _) = f.store.start("task", None).unwrap();
    let path = f.store.path().to_path_buf();
    // Another process holds the write lock.
    let holder = rusqlite::Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    f.store
        .set_busy_timeout(Duration::from_millis(100))
        .unwrap();
    let e = f.store.close(plan.id).unwrap_err();
    assert!(matches!(e, Error::Busy { .. }), "{e}");
    assert!(
        e.to_string().contains("busy") && e.to_string().contains("retry"),
        "{e}"
    );
    holder.execute_batch("ROLLBACK").unwrap();
    // With time to wait, the writer gets through once the other commits.
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let release = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        holder.execute_batch("COMMIT").unwrap();
    });
    f.store.set_busy_timeout(Duration::from_secs(10)).unwrap();
    assert!(f.store.close(plan.id).is_ok());
    release.join().unwrap();
}

#[test]
fn two_writers_on_one_plan_serialize_without_losing_or_corrupting_anything() {
    let mut f = Fixture::new();
    let (plan, _) = f.store.start("task", None).unwrap();
    let threads: Vec<_> = (0..2)
        .map(|t| {
            let mut store = f.reopen();
            std::thread::spawn(move || {
                for i in 0..15u64 {
                    store
                        .record_phase(acms_plan::NewPhase {
                            plan: plan.id,
                            name: format!("w{t}"),
                            focus: String::new(),
                            budget: 1000,
                            tokens: 10,
                            refreshed: 0,
                            manifest: crate::manifest(&[i]),
                            inputs: acms_plan::PhaseInputs::default(),
                        })
                        .unwrap();
                    store.decide(plan.id, &format!("w{t}"), None, &[]).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let (h, _) = f.store.history(plan.id).unwrap();
    let seqs: Vec<i64> = h.phases.iter().map(|p| p.seq).collect();
    assert_eq!(seqs, (1..=30).collect::<Vec<_>>());
    assert_eq!(h.decisions.len(), 30);
    let conn = rusqlite::Connection::open(f.store.path()).unwrap();
    let ok: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
}
