//! [`PipelineRegistry`]: the implementations of each of the ten components — the built-ins
//! (`default`, and the others `acms_core`'s name table of that component lists) and any
//! registered in Rust under a name of their own — and [`Pipeline`]: the ten chosen by
//! `context.pipeline.*`.

use std::collections::BTreeMap;
use std::sync::Arc;

use acms_core::{BuiltIn, Choice, OnlyDefault, PackerName, PipelineConfig, ScorerName};

use crate::stages::allocator::{BudgetAllocator, ProportionalAllocator};
use crate::stages::dedup::{DefaultDeduplicator, FragmentDeduplicator};
use crate::stages::executor::{ExecutorStage, ParallelExecutor};
use crate::stages::orderer::{CoherentOrderer, FragmentOrderer};
use crate::stages::packer::{BudgetPacker, KnapsackPacker};
use crate::stages::preamble::{PreambleGenerator, ProvenancePreamble};
use crate::stages::resolver::{DefaultResolver, DetailDepthResolver};
use crate::stages::scorer::{EvidenceScorer, FragmentScorer, WeightedSumScorer};
use crate::stages::selector::{DefaultSelector, StrategySelector};
use crate::stages::skeleton::{SignatureSkeleton, SkeletonCompressor};
use crate::{Error, Result};

/// One chosen component and the name it was chosen by.
pub struct Component<T: ?Sized> {
    pub name: String,
    pub component: Arc<T>,
}

impl<T: ?Sized> Clone for Component<T> {
    fn clone(&self) -> Self {
        Component {
            name: self.name.clone(),
            component: Arc::clone(&self.component),
        }
    }
}

/// The ten components of one pipeline.
#[derive(Clone)]
pub struct Pipeline {
    pub strategy_selector: Component<dyn StrategySelector>,
    pub budget_allocator: Component<dyn BudgetAllocator>,
    pub strategy_executor: Component<dyn ExecutorStage>,
    pub fragment_deduplicator: Component<dyn FragmentDeduplicator>,
    pub detail_depth_resolver: Component<dyn DetailDepthResolver>,
    pub fragment_scorer: Component<dyn FragmentScorer>,
    pub budget_packer: Component<dyn BudgetPacker>,
    pub fragment_orderer: Component<dyn FragmentOrderer>,
    pub preamble_generator: Component<dyn PreambleGenerator>,
    pub skeleton_compressor: Component<dyn SkeletonCompressor>,
}

/// The implementations of one component (trait `T`, other built-ins `B`), by the name a
/// configuration chooses them with.
pub struct Implementations<B, T: ?Sized> {
    by_name: BTreeMap<Choice<B>, Arc<T>>,
}

impl<B: Clone, T: ?Sized> Clone for Implementations<B, T> {
    fn clone(&self) -> Self {
        Implementations {
            by_name: self.by_name.clone(),
        }
    }
}

impl<B: BuiltIn, T: ?Sized> Implementations<B, T> {
    /// The built-ins: `default`, and `other(b)` for each of `B`.
    fn built_in(default: Arc<T>, other: impl Fn(B) -> Arc<T>) -> Self {
        let mut by_name = BTreeMap::from([(Choice::Default, default)]);
        for &b in B::ALL {
            by_name.insert(Choice::BuiltIn(b), other(b));
        }
        Implementations { by_name }
    }

    /// Registers `component` under `name`, replacing any implementation of that name (a
    /// built-in's too).
    pub fn register(&mut self, name: impl Into<Choice<B>>, component: Arc<T>) {
        self.by_name.insert(name.into(), component);
    }

    /// Every implementation, e.g. to wrap them all.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut Arc<T>> {
        self.by_name.values_mut()
    }

    /// The implementation `choice` names for `context.pipeline.<component>`.
    fn pick(&self, component: &'static str, choice: &Choice<B>) -> Result<Component<T>> {
        match self.by_name.get(choice) {
            Some(c) => Ok(Component {
                name: choice.to_string(),
                component: Arc::clone(c),
            }),
            None => Err(Error::UnknownComponent {
                component,
                name: choice.to_string(),
                // In name order: the keys order by name.
                known: self
                    .by_name
                    .keys()
                    .map(Choice::as_str)
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }
}

impl<T: ?Sized> Implementations<OnlyDefault, T> {
    /// A component whose only built-in is `default`.
    fn only(default: Arc<T>) -> Self {
        Implementations::built_in(default, |b: OnlyDefault| match b {})
    }
}

/// The implementations of every component.
#[derive(Clone)]
pub struct PipelineRegistry {
    pub strategy_selector: Implementations<OnlyDefault, dyn StrategySelector>,
    pub budget_allocator: Implementations<OnlyDefault, dyn BudgetAllocator>,
    pub strategy_executor: Implementations<OnlyDefault, dyn ExecutorStage>,
    pub fragment_deduplicator: Implementations<OnlyDefault, dyn FragmentDeduplicator>,
    pub detail_depth_resolver: Implementations<OnlyDefault, dyn DetailDepthResolver>,
    pub fragment_scorer: Implementations<ScorerName, dyn FragmentScorer>,
    pub budget_packer: Implementations<PackerName, dyn BudgetPacker>,
    pub fragment_orderer: Implementations<OnlyDefault, dyn FragmentOrderer>,
    pub preamble_generator: Implementations<OnlyDefault, dyn PreambleGenerator>,
    pub skeleton_compressor: Implementations<OnlyDefault, dyn SkeletonCompressor>,
}

/// The budget packer that packs with the `acms-pack` packer `name`.
fn knapsack(name: PackerName) -> Arc<dyn BudgetPacker> {
    Arc::new(KnapsackPacker::new(acms_pack::packer(name)))
}

impl Default for PipelineRegistry {
    /// The built-in implementations, and nothing registered.
    fn default() -> Self {
        let scorer = |s: ScorerName| -> Arc<dyn FragmentScorer> {
            match s {
                ScorerName::WeightedSum => Arc::new(WeightedSumScorer),
            }
        };
        PipelineRegistry {
            strategy_selector: Implementations::only(Arc::new(DefaultSelector)),
            budget_allocator: Implementations::only(Arc::new(ProportionalAllocator)),
            strategy_executor: Implementations::only(Arc::new(ParallelExecutor)),
            fragment_deduplicator: Implementations::only(Arc::new(DefaultDeduplicator)),
            detail_depth_resolver: Implementations::only(Arc::new(DefaultResolver)),
            fragment_scorer: Implementations::built_in(Arc::new(EvidenceScorer), scorer),
            budget_packer: Implementations::built_in(knapsack(PackerName::DEFAULT), knapsack),
            fragment_orderer: Implementations::only(Arc::new(CoherentOrderer)),
            preamble_generator: Implementations::only(Arc::new(ProvenancePreamble)),
            skeleton_compressor: Implementations::only(Arc::new(SignatureSkeleton)),
        }
    }
}

impl PipelineRegistry {
    /// The pipeline `config` names.
    pub fn pipeline(&self, config: &PipelineConfig) -> Result<Pipeline> {
        Ok(Pipeline {
            strategy_selector: self
                .strategy_selector
                .pick("strategy-selector", &config.strategy_selector)?,
            budget_allocator: self
                .budget_allocator
                .pick("budget-allocator", &config.budget_allocator)?,
            strategy_executor: self
                .strategy_executor
                .pick("strategy-executor", &config.strategy_executor)?,
            fragment_deduplicator: self
                .fragment_deduplicator
                .pick("fragment-deduplicator", &config.fragment_deduplicator)?,
            detail_depth_resolver: self
                .detail_depth_resolver
                .pick("detail-depth-resolver", &config.detail_depth_resolver)?,
            fragment_scorer: self
                .fragment_scorer
                .pick("fragment-scorer", &config.fragment_scorer)?,
            budget_packer: self
                .budget_packer
                .pick("budget-packer", &config.budget_packer)?,
            fragment_orderer: self
                .fragment_orderer
                .pick("fragment-orderer", &config.fragment_orderer)?,
            preamble_generator: self
                .preamble_generator
                .pick("preamble-generator", &config.preamble_generator)?,
            skeleton_compressor: self
                .skeleton_compressor
                .pick("skeleton-compressor", &config.skeleton_compressor)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Placed;
    use crate::stages::StageContext;

    struct Alphabetical;

    impl FragmentOrderer for Alphabetical {
        fn order(&self, _: &StageContext<'_>, _: &mut Vec<Placed>) {}
    }

    #[test]
    fn components_are_chosen_by_name_and_registered_names_are_kept() {
        let mut registry = PipelineRegistry::default();
        let mut config = PipelineConfig {
            budget_packer: "default".into(),
            ..PipelineConfig::default()
        };
        let p = registry.pipeline(&config).unwrap();
        assert_eq!(p.budget_packer.name, "default");
        assert_eq!(p.budget_packer.component.name(), PackerName::DEFAULT.name());

        config.fragment_orderer = "alphabetical".into();
        let err = registry.pipeline(&config).err().unwrap();
        assert_eq!(
            err.to_string(),
            "context.pipeline.fragment-orderer: no implementation registered as `alphabetical` (registered: default)"
        );
        config.budget_packer = "knapsack".into();
        config.fragment_orderer = Choice::Default;
        let err = registry.pipeline(&config).err().unwrap();
        assert!(
            err.to_string()
                .ends_with("(registered: auto, default, exact, greedy, hull)"),
            "{err}"
        );

        config.budget_packer = "greedy".into();
        config.fragment_orderer = "alphabetical".into();
        registry
            .fragment_orderer
            .register("alphabetical", Arc::new(Alphabetical));
        let p = registry.pipeline(&config).unwrap();
        assert_eq!(p.fragment_orderer.name, "alphabetical");
        assert_eq!(p.budget_packer.component.name(), "greedy");
    }
}
