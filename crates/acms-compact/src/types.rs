//! Small value types named both by the error type and diagnostics and by the modules that
//! produce them: the [`Unit`] sizes are in, the [`BudgetState`] of a window and an
//! [`ArtifactRef`]. They sit at the bottom of the module order so `error` and `diagnostics`
//! can name them without depending on `measure`, `budget` or `artifact`, which return
//! errors. Each is re-exported from the module it belongs to, where its behaviour lives.

/// The unit a size or limit is expressed in, as the governing estimator declared it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Tokens counted exactly with a named tokenizer.
    ExactTokens,
    /// An estimate of tokens (e.g. bytes / 3), not a count.
    EstimatedTokens,
    /// UTF-8 bytes.
    Utf8Bytes,
    /// Whatever a custom estimator counts; not tokens, not bytes.
    Units,
}

impl Unit {
    /// The plural label used when printing a size ("1200 estimated tokens").
    pub fn label(self) -> &'static str {
        match self {
            Unit::ExactTokens => "tokens",
            Unit::EstimatedTokens => "estimated tokens",
            Unit::Utf8Bytes => "bytes",
            Unit::Units => "units",
        }
    }
}

impl std::fmt::Display for Unit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// The operational state of a context window, by remaining room.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetState {
    /// More room than the warning threshold: no action.
    Normal,
    /// Remaining ≤ warning: tier 1 (microcompact).
    Warning,
    /// Remaining ≤ pressure: tier 2 (session summary).
    Pressure,
    /// Remaining ≤ auto-compact: tier 3 (LLM summary).
    AutoCompact,
    /// Remaining ≤ blocking: tier 4 (reactive peel) before any further call.
    Blocking,
}

/// A reference to a stored body. Its URI syntax ([`ArtifactRef::uri`], [`ArtifactRef::parse`])
/// is in `artifact`, with the store.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct ArtifactRef {
    /// Lower-case hex sha256 of the body.
    pub digest: String,
    /// Size of the body in bytes.
    pub bytes: usize,
}
