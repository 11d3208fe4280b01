//! A three-phase plan with one child plan, on this repository:
//!
//! ```sh
//! cargo run --release -p acms --example plan            # this repository
//! cargo run --release -p acms --example plan -- PATH    # another one
//! ```
//!
//! The repository is indexed into `<repo>/.acms` on first use; every phase first re-indexes
//! files changed since (edit a file between runs and the next phase shows it).

use std::path::PathBuf;

use acms::{BudgetSpec, PhaseRequest, Workspace};

fn main() -> Result<(), acms::Error> {
    let repo = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."));
    let mut ws = Workspace::open(&repo)?;

    let (plan, _) = ws.start_plan("make the budget packer report how far from optimal it is")?;
    println!("plan {}: {}", plan.id, plan.task);

    // Phase 1: look around with a fixed budget.
    let explore = ws.phase(
        plan.id,
        "explore",
        PhaseRequest {
            budget: BudgetSpec::tokens(6_000),
            ..PhaseRequest::default()
        },
    )?;
    report(&explore);
    ws.decide(
        plan.id,
        "explore",
        Some("the hull packer already has an LP bound: report 1 - value / bound"),
        &[],
    )?;

    // Phase 2: the budget derived from a model's window, focused on named symbols.
    let design = ws.phase(
        plan.id,
        "design",
        PhaseRequest {
            focus: "where PackReport is filled".into(),
            budget: BudgetSpec {
                tokens: None,
                window: Some(32_768),
                tool_definitions: 2_000,
            },
            mentioned_symbols: vec!["PackReport".into(), "HullPacker".into()],
            ..PhaseRequest::default()
        },
    )?;
    report(&design);

    // A child plan for a sub-task inherits the parent's latest context as a skeleton.
    let (child, _) = ws.child_plan(plan.id, "test the certified gap on random instances")?;
    let child_phase = ws.phase(
        child.id,
        "explore",
        PhaseRequest {
            budget: BudgetSpec::tokens(4_000),
            ..PhaseRequest::default()
        },
    )?;
    println!(
        "child plan {}: inherited a {}-token skeleton of {}",
        child.id, child_phase.inherited_tokens, plan.id
    );
    report(&child_phase);
    ws.close_plan(child.id)?;

    // Phase 3: implement, with the previous phases' fragments as navigation seeds.
    let implement = ws.phase(
        plan.id,
        "implement",
        PhaseRequest {
            budget: BudgetSpec::tokens(8_000),
            ..PhaseRequest::default()
        },
    )?;
    report(&implement);

    let (history, memory) = ws.history(plan.id)?;
    println!(
        "history: {} phases, {} decisions (tiers hot/warm/cold now {:?}), children {:?}",
        history.phases.len(),
        history.decisions.len(),
        memory.counts,
        history
            .children
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
    );
    ws.close_plan(plan.id)?;
    Ok(())
}

fn report(p: &acms::PhaseContext) {
    println!(
        "  phase {} #{}: {} of {} tokens, {} fragments, {} files refreshed first",
        p.phase.name,
        p.phase.seq,
        p.context.tokens,
        p.context.budget,
        p.context.manifest.len(),
        p.refresh.refreshed
    );
    for m in p.context.manifest.iter().take(5) {
        println!(
            "    {}:{}-{} {} (depth {})",
            m.path, m.start_line, m.end_line, m.name, m.depth
        );
    }
}
