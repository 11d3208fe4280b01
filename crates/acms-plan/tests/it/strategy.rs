//! The warm-memory strategy: proposes the fragments of warm decisions that share terms with
//! the query, with a reason naming the decision; nothing for unrelated queries; deleted nodes
//! skipped.

use std::sync::Arc;

use acms_core::{Depth, NodeId};
use acms_index::{NodeKind, NodeRecord};
use acms_plan::{
    DecisionId, MemorySnapshot, MemoryView, PlanId, WarmDecision, WarmMemoryStrategy, terms,
};
use acms_retrieve::{Corpus, Query, Reason, Strategy, StrategyInput};

fn node(id: u64) -> NodeRecord {
    NodeRecord {
        id: NodeId(id),
        path: format!("src/m{id}.py"),
        kind: NodeKind::Function,
        name: format!("f{id}"),
        qualified_name: format!("m{id}.f{id}"),
        parent: None,
        start_line: 1,
        end_line: 3,
        start_byte: 0,
        end_byte: 10,
        signature: format!("def f{id}()"),
        doc: None,
        tokens: [5, 5, 8, 12],
    }
}

fn input(query: &str) -> StrategyInput {
    StrategyInput::new(
        Arc::new(Corpus::from_parts(
            vec![node(1), node(2), node(3)],
            &[],
            vec![],
            1,
        )),
        Query::new(query),
        4000,
    )
}

fn view() -> MemoryView {
    let view = MemoryView::default();
    view.set(MemorySnapshot {
        now: 10_000,
        warm_seconds: 86_400,
        warm: vec![
            WarmDecision {
                id: DecisionId(4),
                plan: PlanId(1),
                phase: "design".into(),
                last_used: 10_000,
                terms: terms("retry the payment gateway with backoff"),
                // Node 99 was deleted since.
                fragments: vec![(NodeId(1), Depth::Full), (NodeId(99), Depth::Full)],
            },
            WarmDecision {
                id: DecisionId(5),
                plan: PlanId(1),
                phase: "explore".into(),
                last_used: 10_000 - 86_400,
                terms: terms("render the invoice as PDF"),
                fragments: vec![(NodeId(2), Depth::Signature)],
            },
        ],
        demoted: Default::default(),
    });
    view
}

#[test]
fn proposes_fragments_of_matching_warm_decisions_with_a_reason() {
    let s = WarmMemoryStrategy::new("warm-memory", view());
    assert_eq!(s.name(), "warm-memory");
    let hits = s
        .retrieve(&input("add backoff to the payment retry"))
        .unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    let h = &hits[0];
    assert_eq!((h.node, h.depth), (NodeId(1), Depth::Full));
    assert!(h.relevance > 0.3 && h.relevance <= 1.0, "{}", h.relevance);
    match &h.reason {
        Reason::Custom { detail } => {
            assert!(
                detail.contains("decision d4") && detail.contains("phase design"),
                "{detail}"
            )
        }
        other => panic!("unexpected reason {other:?}"),
    }
    // An older decision matches with less relevance than a fresh one would.
    let old = s.retrieve(&input("invoice pdf")).unwrap();
    assert_eq!(old.len(), 1);
    assert_eq!(old[0].node, NodeId(2));
    let fresh = WarmMemoryStrategy::new("warm-memory", {
        let v = view();
        let mut snap = v.with(Clone::clone);
        snap.warm[1].last_used = snap.now;
        v.set(snap);
        v
    })
    .retrieve(&input("invoice pdf"))
    .unwrap();
    assert!(fresh[0].relevance > old[0].relevance);
}

#[test]
fn unrelated_or_empty_queries_get_nothing() {
    let s = WarmMemoryStrategy::new("warm-memory", view());
    assert!(s.retrieve(&input("tokenizer cache")).unwrap().is_empty());
    assert!(s.retrieve(&input("")).unwrap().is_empty());
    assert!(
        s.retrieve(&input("the and for")).unwrap().is_empty(),
        "stop words only"
    );
    let empty = WarmMemoryStrategy::new("warm-memory", MemoryView::default());
    assert!(empty.retrieve(&input("payment retry")).unwrap().is_empty());
}

#[test]
fn enabling_warm_memory_adds_its_default_table_and_registers_it() {
    let mut config = acms_core::ContextConfig::default();
    acms_plan::complete_config(&mut config);
    assert!(config.strategies.custom.is_empty(), "off by default");
    config.strategies.enabled.push("warm-memory".into());
    acms_plan::complete_config(&mut config);
    let table = &config.strategies.custom["warm-memory"];
    assert_eq!(table.max_quality, acms_plan::DEFAULT_WARM_QUALITY);
    let mut registry = acms_retrieve::StrategyRegistry::new();
    acms_plan::register(&mut registry, &view());
    let built = registry.build("warm-memory", table).unwrap();
    assert_eq!(built.name(), "warm-memory");
}
