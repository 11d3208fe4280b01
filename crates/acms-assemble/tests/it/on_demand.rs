//! The corpus read on demand (`Corpus::open`, what every engine uses) answers exactly as the
//! corpus held whole in memory (`Corpus::load`): same fragments, same text, same order.

use acms_assemble::{Engine, PipelineRegistry};
use acms_core::ContextConfig;
use acms_index::Store;
use acms_retrieve::{Corpus, StrategyRegistry};

use crate::{Fixture, assemble};

#[test]
fn on_demand_corpus_assembles_what_the_loaded_corpus_does() {
    let f = Fixture::new();
    let index_dir = f.dir.path().join(".acms");
    let mut config = ContextConfig::default();
    config.strategies.semantic_embedding.embedder = acms_core::EmbedderKind::Hash;
    let on_demand = f.engine(&config);
    let loaded = Engine::open_with_corpus(
        &index_dir,
        &config,
        &StrategyRegistry::new(),
        &PipelineRegistry::default(),
        None,
        Some(Corpus::load(&Store::open(&index_dir).unwrap()).unwrap()),
    )
    .unwrap();
    let tasks = [
        "compute_total returns the wrong total when a discount applies",
        "add a refund path to the payment gateway",
        "shop/pricing.py: sales_tax rounds half cents down",
        "Traceback (most recent call last):\n  File \"shop/cart.py\", line 12, in add_item\nKeyError: 'sku'",
        "rename Cart.items and update its callers",
    ];
    for task in tasks {
        for budget in [300, 1_500, 6_000] {
            let a = assemble(&on_demand, task, budget);
            let b = assemble(&loaded, task, budget);
            assert_eq!(a.text, b.text, "{task} @ {budget}");
            let ids = |c: &acms_assemble::AssembledContext| {
                c.manifest
                    .iter()
                    .map(|m| (m.node, m.depth, m.score.to_bits()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(ids(&a), ids(&b), "{task} @ {budget}");
            // 300 tokens may hold only the header; the larger budgets must pack code.
            assert!(
                budget < 1_500 || !a.manifest.is_empty(),
                "{task} @ {budget}: nothing packed"
            );
        }
    }
}
