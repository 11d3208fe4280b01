//! Budgets as agents give them: tokens, a model window, both; 0 and over-window budgets are
//! errors; `context.hot.max-tokens` caps the rest. Expansion of ids and line ranges.

use acms::{BudgetSpec, Error, Query};

use crate::Shop;

#[test]
fn zero_and_over_window_budgets_are_clear_errors() {
    let mut s = Shop::new();
    let e =
        s.ws.context(Query::new("cart"), BudgetSpec::tokens(0))
            .unwrap_err();
    assert!(matches!(e, Error::Budget(_)));
    assert!(
        e.to_string()
            .starts_with("a budget of 0 tokens holds nothing"),
        "{e}"
    );
    let over = BudgetSpec {
        tokens: Some(9_000),
        window: Some(8_192),
        tool_definitions: 0,
    };
    let e = s.ws.context(Query::new("cart"), over).unwrap_err();
    assert_eq!(
        e.to_string(),
        "budget 9000 is larger than the model window 8192: ask for at most 8192 tokens"
    );
    let e =
        s.ws.context(Query::new("cart"), BudgetSpec::window(4_000))
            .unwrap_err();
    assert!(
        e.to_string()
            .contains("leaves no room after the response reserve (4096)"),
        "{e}"
    );
    assert!(matches!(
        s.ws.context(Query::new("cart"), BudgetSpec::window(0)),
        Err(Error::Budget(_))
    ));
}

#[test]
fn budgets_derive_from_the_window_and_are_capped_by_the_hot_tier() {
    let mut config = acms::ContextConfig::default();
    config.hot.max_tokens = 3_000;
    let s = Shop::with_config(config);
    let w = &s.ws;
    assert_eq!(
        w.resolve_budget(BudgetSpec::tokens(1_200)).unwrap(),
        (1_200, vec![])
    );
    // window 6 000 - reserve 4 096 - tools 400
    let spec = BudgetSpec {
        tokens: None,
        window: Some(6_000),
        tool_definitions: 400,
    };
    assert_eq!(w.resolve_budget(spec).unwrap().0, 1_504);
    let (tokens, notes) = w.resolve_budget(BudgetSpec::tokens(10_000)).unwrap();
    assert_eq!(tokens, 3_000);
    assert!(
        notes[0].contains("capped at context.hot.max-tokens (3000)"),
        "{notes:?}"
    );
    let (tokens, _) = w.resolve_budget(BudgetSpec::default()).unwrap();
    assert_eq!(tokens, 3_000, "no budget: the hot tier's");
    let both = BudgetSpec {
        tokens: Some(5_000),
        window: Some(6_000),
        tool_definitions: 0,
    };
    let (tokens, notes) = w.resolve_budget(both).unwrap();
    assert_eq!(tokens, 1_904);
    assert!(notes[0].contains("lowered to 1904"), "{notes:?}");
}

#[test]
fn the_hot_cap_holds_on_the_assembled_text() {
    let mut config = acms::ContextConfig::default();
    config.hot.max_tokens = 600;
    let mut s = Shop::with_config(config);
    let ctx =
        s.ws.context(
            Query::new("cart total with discount and sales tax"),
            BudgetSpec::tokens(50_000),
        )
        .unwrap();
    assert_eq!(ctx.context.budget, 600);
    assert!(ctx.context.tokens <= 600);
    let counted = acms::Tokenizer::Cl100kBase.counter();
    assert!(acms::TokenCounter::count(&counted, &ctx.context.text) <= 600);
}

#[test]
fn expand_gives_full_text_by_id_name_or_lines_within_the_budget() {
    let mut s = Shop::new();
    let ctx =
        s.ws.context(
            Query::new("compute the cart total"),
            BudgetSpec::tokens(2_000),
        )
        .unwrap();
    let entry = ctx
        .context
        .manifest
        .iter()
        .find(|m| m.name == "shop.pricing.compute_total")
        .expect("compute_total in the manifest")
        .clone();
    let by_id = s.ws.expand(&entry.node.to_string(), 500).unwrap();
    assert_eq!(by_id.depth, Some(acms::Depth::Full));
    assert!(
        by_id
            .text
            .contains("discounted = apply_discount(subtotal, discount)")
    );
    assert!(by_id.tokens <= 500);
    let by_name = s.ws.expand("pricing.compute_total", 500).unwrap();
    assert_eq!(by_name.node, Some(entry.node));
    // A tight budget falls back to shallower depths, never over.
    let tight = s.ws.expand(&entry.node.to_string(), 30).unwrap();
    assert!(
        tight.depth < Some(acms::Depth::Full) && tight.tokens <= 30,
        "{tight:?}"
    );
    let e = s.ws.expand(&entry.node.to_string(), 3).unwrap_err();
    assert!(
        e.to_string().contains("too small for even the signature"),
        "{e}"
    );

    let lines = s.ws.expand("shop/pricing.py:1-6", 500).unwrap();
    assert!(
        lines
            .text
            .starts_with("# shop/pricing.py:1-6\n\"\"\"Price computation")
    );
    assert!(!lines.truncated);
    let cut = s.ws.expand("shop/pricing.py:1-400", 40).unwrap();
    assert!(
        cut.truncated && cut.tokens <= 40 && cut.end_line < 24,
        "{cut:?}"
    );

    for bad in [
        "0123456789abcdef",
        "nope_nothing",
        "shop/nowhere.py:1-3",
        "shop/pricing.py:900-901",
        "",
    ] {
        let e = s.ws.expand(bad, 500).unwrap_err();
        assert!(matches!(e, Error::UnknownSymbol(_)), "{bad}: {e}");
    }
    assert!(matches!(
        s.ws.expand("shop/pricing.py:1-3", 0),
        Err(Error::Budget(_))
    ));
}
