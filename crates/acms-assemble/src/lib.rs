//! acms assembly: turns retrieved fragments into the context window an agent sends, through
//! the spec's ten components — StrategySelector, BudgetAllocator, StrategyExecutor,
//! FragmentDeduplicator, DetailDepthResolver, FragmentScorer, BudgetPacker, FragmentOrderer,
//! PreambleGenerator, SkeletonCompressor — each a trait in [`stages`] with a default
//! implementation, replaceable by name through [`PipelineRegistry`].
//!
//! **Architecture Invariant:** [`AssembledContext::text`] counted exactly with the configured
//! tokenizer is never over the budget; all ten stages run on every assembly.

mod assembly;
mod budget;
mod engine;
mod error;
mod layout;
mod outcome;
mod pipeline;
pub mod render;
mod stage_log;
pub mod stages;
mod types;

pub use engine::{Engine, PackInstance};
pub use error::{Error, Result};
pub use pipeline::{Component, Implementations, Pipeline, PipelineRegistry};
pub use types::{
    AssembledContext, AssemblyRequest, Budget, Diagnostics, DropReason, Dropped, Fragment,
    ManifestEntry, PackReport, Placed, Skeleton, StageReport,
};
