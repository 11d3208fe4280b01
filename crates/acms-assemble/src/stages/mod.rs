//! The ten pipeline components: one trait and its default implementation per module, in
//! pipeline order. Every component is replaceable by name (`context.pipeline.<component>`)
//! through the [`crate::PipelineRegistry`].

pub mod allocator;
pub mod dedup;
pub mod executor;
pub mod orderer;
pub mod packer;
pub mod preamble;
pub mod resolver;
pub mod scorer;
pub mod selector;
pub mod skeleton;

use std::collections::HashMap;

use acms_core::{ContextConfig, TokenCounter};
use acms_index::Store;
use acms_retrieve::Corpus;

/// Read-only facts every component may use.
pub struct StageContext<'a> {
    pub corpus: &'a Corpus,
    pub store: &'a Store,
    pub counter: &'a dyn TokenCounter,
    pub config: &'a ContextConfig,
    /// `max_quality` of each configured strategy, by name.
    pub strategy_quality: &'a HashMap<String, f32>,
}
