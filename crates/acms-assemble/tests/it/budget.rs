//! The hard budget: never over, counted exactly on the final text, for any budget,
//! tokenizer, fusion method, packer and task.

use acms_core::{ContextConfig, TokenCounter, Tokenizer};
use proptest::prelude::*;

use crate::{Fixture, assemble};

const WORDS: &[&str] = &[
    "cart",
    "tax",
    "discount",
    "refund",
    "charge",
    "card",
    "basket",
    "price",
    "render",
    "total",
    "payment",
    "gateway",
    "catalogue",
    "fetch",
    "the",
    "customer",
    "?",
    "💳",
    "",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    fn assembled_context_is_never_over_budget(
        budget in prop_oneof![0usize..700, 700usize..4000, Just(100_000usize)],
        words in proptest::collection::vec(0..WORDS.len(), 0..8),
        o200k in any::<bool>(),
        fusion in 0..3usize,
        packer in 0..4usize,
        min_useful in prop_oneof![Just(0usize), Just(500usize)],
    ) {
        let fixture = FIXTURE.with(|f| f.dir.path().to_path_buf());
        let mut config = ContextConfig {
            tokenizer: if o200k { Tokenizer::O200kBase } else { Tokenizer::Cl100kBase },
            ..ContextConfig::default()
        };
        config.scoring.fusion = acms_core::Fusion::ALL[fusion];
        config.pipeline.budget_packer = ["auto", "hull", "greedy", "exact"][packer].into();
        config.budget.min_useful_budget = min_useful;
        let engine = acms_assemble::Engine::open(&fixture.join(".acms"), &config).unwrap();
        let task: Vec<&str> = words.iter().map(|&i| WORDS[i]).collect();
        let ctx = assemble(&engine, &task.join(" "), budget);
        let exact = config.tokenizer.counter().count(&ctx.text);
        prop_assert_eq!(exact, ctx.tokens);
        prop_assert!(exact <= budget, "{} tokens over budget {}", exact, budget);
        prop_assert_eq!(ctx.diagnostics.stages.len(), 10);
    }
}

thread_local! {
    static FIXTURE: Fixture = Fixture::new();
}

#[test]
fn a_huge_budget_takes_everything_found_at_full_depth_without_padding() {
    let f = Fixture::new();
    let engine = f.engine(&ContextConfig::default());
    let ctx = assemble(&engine, "cart total discount tax", 1_000_000);
    assert!(!ctx.manifest.is_empty());
    assert!(
        ctx.dropped
            .iter()
            .all(|d| d.reason != acms_assemble::DropReason::Budget)
    );
    assert!(ctx.tokens < 10_000, "no padding: {}", ctx.tokens);
    // Everything not capped by a member below it is whole.
    let function = ctx
        .manifest
        .iter()
        .find(|m| m.name == "shop.pricing.compute_total")
        .unwrap();
    assert_eq!(function.depth, acms_core::Depth::Full);
}

#[test]
fn budgets_beyond_u32_are_honoured_not_wrapped() {
    // 2^32 + 500 used to wrap to 500 inside the engine (an almost empty context).
    let f = Fixture::new();
    let engine = f.engine(&ContextConfig::default());
    let huge = assemble(&engine, "cart total discount tax", (1usize << 32) + 500);
    let large = assemble(&engine, "cart total discount tax", 1_000_000);
    assert_eq!(huge.text, large.text);
    assert_eq!(huge.budget, (1usize << 32) + 500);
    assert!(!huge.manifest.is_empty());
}

#[test]
fn budget_zero_and_tiny_budgets_give_an_empty_or_small_context_with_a_reason() {
    let f = Fixture::new();
    let engine = f.engine(&ContextConfig::default());
    let ctx = assemble(&engine, "cart", 0);
    assert_eq!((ctx.text.as_str(), ctx.tokens), ("", 0));
    assert!(
        ctx.diagnostics
            .notes
            .iter()
            .any(|n| n.contains("min-useful-budget"))
    );
    assert_eq!(
        ctx.diagnostics.stages.len(),
        10,
        "skipped assemblies still run every stage"
    );

    let mut config = ContextConfig::default();
    config.budget.min_useful_budget = 0;
    let engine = f.engine(&config);
    for budget in [1, 5, 20] {
        let ctx = assemble(&engine, "cart total", budget);
        assert!(ctx.tokens <= budget);
        assert!(config.tokenizer.counter().count(&ctx.text) <= budget);
    }
}

#[test]
fn a_tight_budget_falls_back_in_depth_before_dropping() {
    let f = Fixture::new();
    let engine = f.engine(&ContextConfig::default());
    let wide = assemble(&engine, "cart total discount tax refund charge", 100_000);
    let tight = assemble(&engine, "cart total discount tax refund charge", 700);
    assert!(tight.tokens <= 700);
    assert!(
        tight
            .manifest
            .iter()
            .any(|m| m.depth < acms_core::Depth::Full),
        "{:#?}",
        tight.manifest
    );
    // Shallower renderings let the tight context name more symbols than full source would.
    let full_cost: u32 = wide.manifest.iter().map(|m| m.tokens).sum();
    assert!(
        full_cost > 700 && tight.manifest.len() >= 3,
        "{}",
        tight.manifest.len()
    );
    // What did not fit says how near it came: its score, the one the wide context shows.
    let left_out: Vec<_> = tight
        .dropped
        .iter()
        .filter(|d| d.reason == acms_assemble::DropReason::Budget)
        .collect();
    assert!(!left_out.is_empty());
    for d in left_out {
        let shown = wide.manifest.iter().find(|m| m.node == d.node);
        assert!(
            shown.is_some_and(|m| m.score == d.score) && d.score > 0.0,
            "{d:?} against {shown:?}"
        );
    }
}
