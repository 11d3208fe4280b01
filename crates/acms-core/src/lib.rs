//! Core vocabulary shared by every acms crate: node ids, detail depths, exact token counting
//! and the `context.*` configuration.
//!
//! **Architecture Invariant:** `acms-core` does no I/O except reading a configuration file the
//! caller names, and depends on no other acms crate.

mod config;
mod depth;
mod error;
mod id;
mod tokens;

pub use config::{
    ArceConfig, BudgetConfig, ColdConfig, ColdRetention, Config, ContextConfig,
    CustomStrategyConfig, ExecutorConfig, FileConfig, HotConfig, IndexConfig, LlmConfig,
    NavigatorConfig, PackerConfig, PipelineConfig, PreambleConfig, QueryConfig, ScoringConfig,
    SemanticConfig, StrategiesConfig, TiersConfig, WarmConfig, WarmRetention,
};
pub use depth::Depth;
pub use error::{Error, Result};
pub use id::{ContentHash, NodeId};
pub use tokens::{ExactCounter, TiktokenCounter, TokenCounter, Tokenizer};
