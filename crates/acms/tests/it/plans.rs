//! Plans through the workspace: phases with budgets or windows, child plans inheriting the
//! parent's skeleton within the skeleton ratio, decisions, history; no code text in the
//! plan database.

use acms::{BudgetSpec, PhaseRequest, PlanId, Tier};

use crate::Shop;

fn tokens(n: usize) -> PhaseRequest {
    PhaseRequest {
        budget: BudgetSpec::tokens(n),
        ..PhaseRequest::default()
    }
}

#[test]
fn a_three_phase_plan_with_a_child_plan() {
    let mut s = Shop::new();
    let (plan, _) =
        s.ws.start_plan("charge the card for the cart total")
            .unwrap();
    let explore = s.ws.phase(plan.id, "explore", tokens(3_000)).unwrap();
    assert!(explore.context.tokens <= 3_000);
    assert_eq!(explore.phase.seq, 1);
    assert!(
        explore
            .context
            .manifest
            .iter()
            .any(|m| m.name == "shop.payment.charge_card")
    );
    let design =
        s.ws.phase(
            plan.id,
            "design",
            PhaseRequest {
                focus: "how PaymentError is raised".into(),
                budget: BudgetSpec::window(8_192),
                mentioned_symbols: vec!["PaymentError".into()],
                ..PhaseRequest::default()
            },
        )
        .unwrap();
    assert_eq!(design.phase.budget, 8_192 - 4_096);
    assert!(
        design
            .context
            .manifest
            .iter()
            .any(|m| m.name == "shop.payment.PaymentError")
    );
    let (d, _) =
        s.ws.decide(
            plan.id,
            "design",
            Some("raise PaymentError before posting"),
            &[],
        )
        .unwrap();
    assert_eq!(d.tier, Tier::Hot);
    assert_eq!(d.manifest.len(), design.context.manifest.len());

    // A child plan inherits the skeleton of the parent's latest phase, within 15 % of its
    // own budget, re-rendered from the current index.
    let (child, _) = s.ws.child_plan(plan.id, "refund a failed charge").unwrap();
    let c = s.ws.phase(child.id, "explore", tokens(2_000)).unwrap();
    assert!(
        c.inherited_tokens > 0 && c.inherited_tokens <= 300,
        "{}",
        c.inherited_tokens
    );
    assert!(
        c.context.text.contains("parent plan context"),
        "{}",
        c.context.text
    );
    assert!(c.context.tokens <= 2_000);

    let implement = s.ws.phase(plan.id, "implement", tokens(3_000)).unwrap();
    assert_eq!(implement.phase.seq, 3);
    let (h, _) = s.ws.history(plan.id).unwrap();
    assert_eq!(
        h.phases.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        ["explore", "design", "implement"]
    );
    assert_eq!(h.children, [child.id]);
    assert_eq!(h.decisions[0].tier, Tier::Warm, "cooled by the next phase");
    let (closed, _) = s.ws.close_plan(plan.id).unwrap();
    assert!(closed.closed.is_some());
    let e = s.ws.phase(plan.id, "verify", tokens(1_000)).unwrap_err();
    assert!(e.to_string().contains("is closed"), "{e}");
}

#[test]
fn unknown_plans_phases_and_fragments_are_clear_errors() {
    let mut s = Shop::new();
    let e =
        s.ws.phase(PlanId(99), "explore", tokens(1_000))
            .unwrap_err();
    assert!(e.to_string().starts_with("unknown plan p99"), "{e}");
    let (plan, _) = s.ws.start_plan("task").unwrap();
    let e = s.ws.decide(plan.id, "explore", None, &[]).unwrap_err();
    assert!(e.to_string().contains("has no phase `explore`"), "{e}");
    s.ws.phase(plan.id, "explore", tokens(1_000)).unwrap();
    let e =
        s.ws.decide(plan.id, "explore", None, &["zz".into()])
            .unwrap_err();
    assert!(e.to_string().contains("is not a node id"), "{e}");
    let e =
        s.ws.decide(plan.id, "explore", None, &["0000000000000001".into()])
            .unwrap_err();
    assert!(e.to_string().contains("is not in the manifest"), "{e}");
    let e = s.ws.phase(plan.id, "explore", tokens(0)).unwrap_err();
    assert!(e.to_string().contains("0 tokens"), "{e}");
    assert!(s.ws.phase(plan.id, " ", tokens(1_000)).is_err());
}

#[test]
fn the_plan_database_holds_no_code_text() {
    let mut s = Shop::new();
    let (plan, _) = s.ws.start_plan("compute the sales tax").unwrap();
    let p = s.ws.phase(plan.id, "explore", tokens(3_000)).unwrap();
    assert!(p.context.text.contains("return round(amount * rate, 2)"));
    s.ws.decide(plan.id, "explore", Some("tax rounds to cents"), &[])
        .unwrap();
    s.ws.close_plan(plan.id).unwrap();
    let db = s.path(".acms/plans.sqlite");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .unwrap();
    drop(conn);
    let bytes = std::fs::read(&db).unwrap();
    let hay = String::from_utf8_lossy(&bytes);
    assert!(
        hay.contains("shop.pricing.sales_tax"),
        "names are references"
    );
    assert!(
        !hay.contains("round(amount * rate, 2)"),
        "bodies are not copied"
    );
    assert!(
        !hay.contains("Compute the sales tax owed"),
        "docs are not copied"
    );
}

fn fragments(p: &acms::PhaseContext) -> Vec<(acms::NodeId, acms::Depth)> {
    p.context
        .manifest
        .iter()
        .map(|m| (m.node, m.depth))
        .collect()
}

#[test]
fn a_phase_run_again_gives_the_same_context_and_says_what_changed() {
    let mut s = Shop::new();
    let (plan, _) =
        s.ws.start_plan("charge the card for the cart total")
            .unwrap();
    let first = s.ws.phase(plan.id, "explore", tokens(2_000)).unwrap();
    assert!(first.changes.is_none());
    assert_eq!(first.phase.inputs.seeded_by, None);
    // Run again on an unchanged tree: it never feeds on its own previous selection.
    for seq in [2, 3] {
        let again = s.ws.phase(plan.id, "explore", tokens(2_000)).unwrap();
        assert_eq!(fragments(&again), fragments(&first), "run #{seq}");
        let c = again.changes.unwrap();
        assert_eq!(
            (c.since, c.inputs.len(), c.same_context),
            (seq - 1, 0, true)
        );
        assert_eq!(
            c.line(),
            format!("same inputs as phase #{}: the same context", seq - 1)
        );
    }

    // Another phase in between seeds the next run, and the run says so.
    s.ws.phase(
        plan.id,
        "design",
        PhaseRequest {
            mentioned_symbols: vec!["PaymentError".into()],
            ..tokens(2_000)
        },
    )
    .unwrap();
    let after = s.ws.phase(plan.id, "explore", tokens(2_000)).unwrap();
    assert_eq!(after.phase.inputs.seeded_by, Some(4));
    let c = after.changes.unwrap();
    assert_eq!(c.since, 3);
    assert!(
        c.inputs
            .contains(&"seeded by phase #4 (was no earlier phase)".to_string()),
        "{c:?}"
    );

    // An edit re-indexes a file: the index is named as what changed.
    s.edit("shop/payment.py", |t| {
        format!("{t}\n\ndef refund_card(amount):\n    return amount\n")
    });
    let edited = s.ws.phase(plan.id, "explore", tokens(4_000)).unwrap();
    let c = edited.changes.unwrap();
    assert_eq!(c.since, 5);
    assert_eq!(
        c.inputs,
        [
            "budget 2000 → 4000",
            "the index changed (files re-indexed before this run: 1)"
        ],
        "{c:?}"
    );
}
