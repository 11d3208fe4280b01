//! Decision memory in assembly: a corrected decision's fragments score half in later
//! assemblies; with `warm-memory` enabled, a warm decision's fragments come back for a
//! related task.

use acms::{BudgetSpec, PhaseRequest, Query};

use crate::Shop;

#[test]
fn a_corrected_decisions_fragments_are_demoted_in_later_scoring() {
    let mut s = Shop::new();
    let q = || Query::new("apply the discount percent to the amount");
    let before =
        s.ws.context(q(), BudgetSpec::tokens(2_000))
            .unwrap()
            .context;
    let score = |ctx: &acms::AssembledContext, name: &str| {
        ctx.manifest
            .iter()
            .find(|m| m.name == name)
            .map(|m| m.score)
    };
    let target = "shop.pricing.apply_discount";
    let s0 = score(&before, target).expect("in the first context");

    let (plan, _) = s.ws.start_plan("apply the discount").unwrap();
    let phase =
        s.ws.phase(
            plan.id,
            "design",
            PhaseRequest {
                budget: BudgetSpec::tokens(2_000),
                ..PhaseRequest::default()
            },
        )
        .unwrap();
    let id = phase
        .context
        .manifest
        .iter()
        .find(|m| m.name == target)
        .unwrap()
        .node
        .to_string();
    let (d, _) =
        s.ws.decide(plan.id, "design", Some("discount before tax"), &[id])
            .unwrap();
    let unchanged =
        s.ws.context(q(), BudgetSpec::tokens(2_000))
            .unwrap()
            .context;
    assert_eq!(
        score(&unchanged, target),
        Some(s0),
        "a decision alone changes nothing"
    );

    let (c, _) =
        s.ws.correct(d.id, Some("tax applies before the discount"))
            .unwrap();
    assert_eq!(c.tier, acms::Tier::Cold);
    let after =
        s.ws.context(q(), BudgetSpec::tokens(2_000))
            .unwrap()
            .context;
    // Still packed (the fixture is small), at half its score.
    let s1 = score(&after, target).expect("still in the context");
    assert!(
        (s1 - s0 * acms::plan::DEMOTION).abs() < 1e-9,
        "{s0} -> {s1}"
    );
}

#[test]
fn warm_memory_brings_back_a_recent_decisions_fragments_when_enabled() {
    let mut config = acms::ContextConfig::default();
    config.strategies.enabled.push("warm-memory".into());
    let mut s = Shop::with_config(config);
    let (plan, _) =
        s.ws.start_plan("gateway signing of charge requests")
            .unwrap();
    s.ws.phase(
        plan.id,
        "explore",
        PhaseRequest {
            budget: BudgetSpec::tokens(1_500),
            mentioned_symbols: vec!["Gateway.post".into()],
            ..PhaseRequest::default()
        },
    )
    .unwrap();
    s.ws.decide(
        plan.id,
        "explore",
        Some("requests are signed in Gateway.post"),
        &[],
    )
    .unwrap();
    s.ws.close_plan(plan.id).unwrap();
    s.clock.advance(3_600);

    let (next, _) =
        s.ws.start_plan("sign refund requests like charge requests")
            .unwrap();
    let p =
        s.ws.phase(
            next.id,
            "explore",
            PhaseRequest {
                budget: BudgetSpec::tokens(1_500),
                ..PhaseRequest::default()
            },
        )
        .unwrap();
    let run = p
        .context
        .diagnostics
        .strategies
        .iter()
        .find(|r| r.strategy == "warm-memory")
        .expect("warm-memory ran");
    assert!(
        matches!(run.status, acms::retrieve::RunStatus::Ok { kept, .. } if kept > 0),
        "{run:?}"
    );
    assert!(
        p.context
            .manifest
            .iter()
            .any(|m| m.strategies.iter().any(|st| st == "warm-memory")),
        "{:?}",
        p.context.manifest
    );
}

#[test]
fn warm_memory_is_off_by_default() {
    let mut s = Shop::new();
    let ctx =
        s.ws.context(Query::new("cart"), BudgetSpec::tokens(1_000))
            .unwrap();
    assert!(
        ctx.context
            .diagnostics
            .strategies
            .iter()
            .all(|r| r.strategy != "warm-memory")
    );
}
