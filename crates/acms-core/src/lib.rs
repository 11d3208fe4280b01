//! Core vocabulary shared by every acms crate: node ids, detail depths, exact token counting
//! and the `context.*` configuration.
//!
//! **Architecture Invariant:** `acms-core` does no I/O except reading configuration files (the
//! ones the caller names, and the user's own `~/.config/acms/config.toml`), and depends on no
//! other acms crate. It also holds the secret rules ([`secrets`]) every crate that takes text
//! in applies.

mod choice;
mod config;
mod depth;
mod error;
mod id;
mod layers;
mod named;
pub mod secrets;
mod strategy_id;
mod tokens;

pub use choice::{BuiltIn, Choice, OnlyDefault, PackerName, ScorerName};
pub use config::{
    ArceConfig, BudgetConfig, ColdConfig, ColdRetention, Config, ContextConfig,
    CustomStrategyConfig, DEFAULT_MODEL, EXACT_SCAN_BELOW, EmbedderKind, ExecutorConfig,
    FileConfig, Fusion, HotConfig, IndexConfig, LlmConfig, NavigatorConfig, PackerConfig,
    PipelineConfig, PreambleConfig, QueryConfig, ScoringConfig, SemanticConfig, StrategiesConfig,
    TiersConfig, WarmConfig, WarmRetention, valid_model_name,
};
pub use depth::Depth;
pub use error::{Error, Result};
pub use id::{ContentHash, NodeId};
pub use layers::{
    CAPPED_KEYS, LoadedConfig, USER_ONLY_KEYS, user_cache_dir, user_config_dir, user_config_path,
};
pub use strategy_id::StrategyId;
pub use tokens::{ExactCounter, TiktokenCounter, TokenCounter, Tokenizer};
