//! [`PipelineRegistry`]: the implementations of each of the ten components by name, and
//! [`Pipeline`]: the ten chosen by `context.pipeline.*`.

use std::collections::BTreeMap;
use std::sync::Arc;

use acms_core::PipelineConfig;

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

/// One chosen component and the name it was registered under.
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

/// Registered implementations of every component.
#[derive(Clone)]
pub struct PipelineRegistry {
    pub strategy_selector: BTreeMap<String, Arc<dyn StrategySelector>>,
    pub budget_allocator: BTreeMap<String, Arc<dyn BudgetAllocator>>,
    pub strategy_executor: BTreeMap<String, Arc<dyn ExecutorStage>>,
    pub fragment_deduplicator: BTreeMap<String, Arc<dyn FragmentDeduplicator>>,
    pub detail_depth_resolver: BTreeMap<String, Arc<dyn DetailDepthResolver>>,
    pub fragment_scorer: BTreeMap<String, Arc<dyn FragmentScorer>>,
    pub budget_packer: BTreeMap<String, Arc<dyn BudgetPacker>>,
    pub fragment_orderer: BTreeMap<String, Arc<dyn FragmentOrderer>>,
    pub preamble_generator: BTreeMap<String, Arc<dyn PreambleGenerator>>,
    pub skeleton_compressor: BTreeMap<String, Arc<dyn SkeletonCompressor>>,
}

fn one<T: ?Sized>(value: Arc<T>) -> BTreeMap<String, Arc<T>> {
    BTreeMap::from([("default".to_string(), value)])
}

impl Default for PipelineRegistry {
    /// The default implementations under `default`; the packers also under their own names
    /// (`hull` — the default —, `greedy`, `exact`).
    fn default() -> Self {
        let mut packers: BTreeMap<String, Arc<dyn BudgetPacker>> = BTreeMap::new();
        for name in acms_pack::PACKER_NAMES {
            let packer = acms_pack::packer_by_name(name).expect("built-in packer names resolve");
            packers.insert(name.to_string(), Arc::new(KnapsackPacker::new(packer)));
        }
        let default = packers[acms_pack::DEFAULT_PACKER].clone();
        packers.insert("default".into(), default);
        PipelineRegistry {
            strategy_selector: one(Arc::new(DefaultSelector)),
            budget_allocator: one(Arc::new(ProportionalAllocator)),
            strategy_executor: one(Arc::new(ParallelExecutor)),
            fragment_deduplicator: one(Arc::new(DefaultDeduplicator)),
            detail_depth_resolver: one(Arc::new(DefaultResolver)),
            fragment_scorer: BTreeMap::from([
                (
                    "default".to_string(),
                    Arc::new(EvidenceScorer) as Arc<dyn FragmentScorer>,
                ),
                ("weighted-sum".to_string(), Arc::new(WeightedSumScorer)),
            ]),
            budget_packer: packers,
            fragment_orderer: one(Arc::new(CoherentOrderer)),
            preamble_generator: one(Arc::new(ProvenancePreamble)),
            skeleton_compressor: one(Arc::new(SignatureSkeleton)),
        }
    }
}

fn pick<T: ?Sized>(
    map: &BTreeMap<String, Arc<T>>,
    component: &'static str,
    name: &str,
) -> Result<Component<T>> {
    map.get(name)
        .map(|v| Component {
            name: name.to_string(),
            component: Arc::clone(v),
        })
        .ok_or_else(|| Error::UnknownComponent {
            component,
            name: name.to_string(),
            known: map.keys().cloned().collect::<Vec<_>>().join(", "),
        })
}

impl PipelineRegistry {
    /// The pipeline `config` names.
    pub fn pipeline(&self, config: &PipelineConfig) -> Result<Pipeline> {
        Ok(Pipeline {
            strategy_selector: pick(
                &self.strategy_selector,
                "strategy-selector",
                &config.strategy_selector,
            )?,
            budget_allocator: pick(
                &self.budget_allocator,
                "budget-allocator",
                &config.budget_allocator,
            )?,
            strategy_executor: pick(
                &self.strategy_executor,
                "strategy-executor",
                &config.strategy_executor,
            )?,
            fragment_deduplicator: pick(
                &self.fragment_deduplicator,
                "fragment-deduplicator",
                &config.fragment_deduplicator,
            )?,
            detail_depth_resolver: pick(
                &self.detail_depth_resolver,
                "detail-depth-resolver",
                &config.detail_depth_resolver,
            )?,
            fragment_scorer: pick(
                &self.fragment_scorer,
                "fragment-scorer",
                &config.fragment_scorer,
            )?,
            budget_packer: pick(&self.budget_packer, "budget-packer", &config.budget_packer)?,
            fragment_orderer: pick(
                &self.fragment_orderer,
                "fragment-orderer",
                &config.fragment_orderer,
            )?,
            preamble_generator: pick(
                &self.preamble_generator,
                "preamble-generator",
                &config.preamble_generator,
            )?,
            skeleton_compressor: pick(
                &self.skeleton_compressor,
                "skeleton-compressor",
                &config.skeleton_compressor,
            )?,
        })
    }
}
