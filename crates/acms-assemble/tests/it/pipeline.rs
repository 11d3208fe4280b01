//! Stage order, component replacement, ordering, preamble, skeletons and window budgets.

use std::collections::HashMap;
use std::sync::Arc;

use acms_assemble::{AssemblyRequest, Budget, Engine, Error, PipelineRegistry};
use acms_core::{ContextConfig, CustomStrategyConfig, Depth};
use acms_retrieve::{Hit, Query, Reason, Strategy, StrategyInput, StrategyRegistry};

use crate::{Fixture, STAGES, assemble};

#[test]
fn all_ten_stages_run_in_order_every_time() {
    let f = Fixture::new();
    let engine = f.engine(&ContextConfig::default());
    for (task, budget) in [
        ("cart total", 4000),
        ("", 4000),
        ("zzqx", 4000),
        ("cart", 0),
    ] {
        let ctx = assemble(&engine, task, budget);
        let names: Vec<&str> = ctx
            .diagnostics
            .stages
            .iter()
            .map(|s| s.stage.as_str())
            .collect();
        assert_eq!(names, STAGES, "{task:?} {budget}");
    }
}

#[test]
fn fragments_carry_headers_and_verbatim_code_in_coherent_order() {
    let f = Fixture::new();
    let engine = f.engine(&ContextConfig::default());
    let ctx = assemble(
        &engine,
        "compute the cart total with discount and sales tax",
        3000,
    );
    assert!(ctx.text.starts_with("[acms] "), "preamble first");
    let source = std::fs::read_to_string(f.dir.path().join("shop/pricing.py")).unwrap();
    let e = ctx
        .manifest
        .iter()
        .find(|m| m.name == "shop.pricing.compute_total")
        .expect("compute_total packed");
    // Its block's header names the file, a span holding it, the symbol and the depth
    // (a region may hold neighbouring symbols too).
    let header = ctx
        .text
        .lines()
        .find(|l| {
            l.starts_with("# shop/pricing.py:")
                && l.split(" · ")
                    .nth(1)
                    .is_some_and(|names| names.split(", ").any(|n| n == "compute_total"))
        })
        .expect("a header for compute_total");
    let span = header["# shop/pricing.py:".len()..]
        .split(' ')
        .next()
        .unwrap();
    let (a, b) = span.split_once('-').unwrap();
    assert!(a.parse::<u32>().unwrap() <= e.start_line && b.parse::<u32>().unwrap() >= e.end_line);
    let depths = header.rsplit("· depth ").next().unwrap();
    assert!(
        depths.split(',').any(|d| d == e.depth.to_string()),
        "{header}"
    );
    if e.depth == Depth::Full {
        let body: String = source
            .lines()
            .skip(e.start_line as usize - 1)
            .take((e.end_line - e.start_line + 1) as usize)
            .collect::<Vec<_>>()
            .join("\n");
        assert!(ctx.text.contains(body.trim()), "depth 9 is verbatim");
    }
    // Grouped by file, source order within a file; pricing (imported by cart) before cart.
    let mut last: HashMap<&str, u32> = HashMap::new();
    let mut files: Vec<&str> = Vec::new();
    for m in &ctx.manifest {
        if files.last() != Some(&m.path.as_str()) {
            assert!(
                !files.contains(&m.path.as_str()),
                "{} appears twice",
                m.path
            );
            files.push(&m.path);
        }
        let prev = last.insert(&m.path, m.start_line).unwrap_or(0);
        assert!(m.start_line >= prev);
    }
    let pos = |p: &str| files.iter().position(|f| *f == p);
    if let (Some(p), Some(c)) = (pos("shop/pricing.py"), pos("shop/cart.py")) {
        assert!(p < c, "{files:?}");
    }
    // Deterministic.
    assert_eq!(
        assemble(
            &engine,
            "compute the cart total with discount and sales tax",
            3000
        )
        .text,
        ctx.text
    );
}

#[test]
fn a_task_that_matches_nothing_says_so() {
    let f = Fixture::new();
    let engine = f.engine(&ContextConfig::default());
    let ctx = assemble(&engine, "zzqx wvvy", 4000);
    assert!(ctx.manifest.is_empty());
    assert!(ctx.text.contains("no indexed code matched"), "{}", ctx.text);
    assert!(ctx.tokens < 100);
}

#[test]
fn components_are_replaced_by_name_and_unknown_names_are_errors() {
    let f = Fixture::new();
    let mut config = ContextConfig::default();
    config.pipeline.budget_packer = "greedy".into();
    let ctx = assemble(&f.engine(&config), "cart", 2000);
    assert_eq!(ctx.diagnostics.pack.packer, "greedy");
    let packer_stage = &ctx.diagnostics.stages[6];
    assert_eq!(packer_stage.implementation, "greedy");

    config.pipeline.fragment_orderer = "alphabetical".into();
    let err = Engine::open(&f.dir.path().join(".acms"), &config)
        .err()
        .unwrap();
    assert!(matches!(
        err,
        Error::UnknownComponent {
            component: "fragment-orderer",
            ..
        }
    ));
    assert!(
        err.to_string()
            .contains("context.pipeline.fragment-orderer")
    );
}

struct Pinned;

impl Strategy for Pinned {
    fn name(&self) -> &str {
        "pinned"
    }
    fn retrieve(&self, input: &StrategyInput) -> acms_retrieve::Result<Vec<Hit>> {
        let node = input.corpus.find_symbol("Gateway")[0];
        Ok(vec![Hit {
            node: node.id,
            depth: Depth::Full,
            relevance: 1.0,
            strategy: "pinned".into(),
            reason: Reason::Custom {
                detail: "always".into(),
            },
        }])
    }
}

#[test]
fn custom_strategies_are_registered_configured_and_capped() {
    let f = Fixture::new();
    let mut config = ContextConfig::default();
    config.strategies.enabled = vec!["simple-keyword".into(), "always".into()];
    config.strategies.custom.insert(
        "always".into(),
        CustomStrategyConfig {
            class: Some("pinned".into()),
            max_quality: 0.5,
            config: Default::default(),
        },
    );
    let mut registry = StrategyRegistry::new();
    registry.register(
        "pinned",
        Box::new(|_, _| Ok(Arc::new(Pinned) as Arc<dyn Strategy>)),
    );
    let engine = Engine::open_with(
        &f.dir.path().join(".acms"),
        &config,
        &registry,
        &PipelineRegistry::default(),
        None,
    )
    .unwrap();
    let ctx = assemble(&engine, "cart", 4000);
    let gw = ctx
        .manifest
        .iter()
        .find(|m| m.name.ends_with("Gateway"))
        .expect("custom hit packed");
    assert!(gw.strategies.contains(&"always".to_string()));
    let run = ctx
        .diagnostics
        .strategies
        .iter()
        .find(|r| r.strategy == "always")
        .unwrap();
    assert!(matches!(
        run.status,
        acms_retrieve::RunStatus::Ok { kept: 1, .. }
    ));
}

#[test]
fn child_plans_inherit_a_skeleton_within_the_ratio() {
    let f = Fixture::new();
    let config = ContextConfig::default();
    let engine = f.engine(&config);
    let parent = assemble(&engine, "charge the card for the cart", 4000);
    assert!(parent.skeleton.tokens <= (4000.0 * config.budget.skeleton_ratio) as usize);
    assert!(!parent.skeleton.text.is_empty());
    let child = engine
        .assemble(&AssemblyRequest {
            query: Query::new("refund a charge"),
            budget: Budget::Tokens(2000),
            parent: Some(parent.skeleton.clone()),
        })
        .unwrap();
    assert!(child.tokens <= 2000);
    assert!(child.text.contains("parent plan context"));
    assert!(child.text.contains("inherited parent skeleton"));
}

#[test]
fn a_window_budget_leaves_the_response_reserve_and_the_tools() {
    let f = Fixture::new();
    let engine = f.engine(&ContextConfig::default());
    let window = engine
        .assemble(&AssemblyRequest {
            query: Query::new("cart total"),
            budget: Budget::Window {
                model_context_window: 8192,
                tool_definitions: 1000,
            },
            parent: None,
        })
        .unwrap();
    assert_eq!(window.budget, 8192 - 4096 - 1000);
    assert!(window.tokens <= window.budget);
}

#[test]
fn an_index_whose_repository_moved_still_answers_from_the_store() {
    let f = Fixture::new();
    let elsewhere = tempfile::tempdir().unwrap();
    let moved = elsewhere.path().join("index");
    std::fs::rename(f.dir.path().join(".acms"), &moved).unwrap();
    std::fs::remove_dir_all(f.dir.path().join("shop")).unwrap();
    let engine = Engine::open(&moved, &ContextConfig::default()).unwrap();
    let ctx = assemble(&engine, "sales tax", 2000);
    assert!(
        ctx.text.contains("def sales_tax"),
        "texts come from the index"
    );
    let _ = f.dir.path();
    drop(f);
    let engine = Engine::open(&moved, &ContextConfig::default()).unwrap();
    let ctx = assemble(&engine, "sales tax", 2000);
    assert!(
        ctx.diagnostics
            .notes
            .iter()
            .any(|n| n.contains("not on this machine")),
        "{:?}",
        ctx.diagnostics.notes
    );
    assert!(ctx.text.contains("def sales_tax"));
}

#[test]
fn a_missing_index_directory_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let err = Engine::open(&dir.path().join("none"), &ContextConfig::default())
        .err()
        .unwrap();
    assert!(err.to_string().contains("run `acms index"), "{err}");
}

/// The packer pays every fragment's header, but neighbours in one file share a block and its
/// header; the room that saves is filled with what was left out. Without the refill the
/// packed fragments' costs never sum past the budget.
#[test]
fn the_room_shared_headers_leave_is_filled() {
    let f = Fixture::new();
    let engine = f.engine(&ContextConfig::default());
    let task = "compute the cart total with discount and sales tax";
    let mut past = Vec::new();
    for budget in (500..=1100).step_by(100) {
        let ctx = assemble(&engine, task, budget);
        assert!(ctx.tokens <= budget);
        let costs: u32 = ctx.manifest.iter().map(|m| m.tokens).sum();
        if costs as usize > budget {
            assert!(ctx.diagnostics.pack.refilled > 0, "{budget}");
            past.push(budget);
        }
    }
    assert!(
        !past.is_empty(),
        "no context packed past the sum of its costs"
    );
}
