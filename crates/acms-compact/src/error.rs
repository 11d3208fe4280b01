//! The error type of `acms-compact`. Messages name positions, sizes and kinds so a user can
//! act on them; they never quote conversation text.

use crate::diagnostics::Diagnostics;
use crate::measure::Unit;

/// Errors of `acms-compact`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input is not JSON.
    #[error(
        "input is not valid JSON (line {line}, column {column}): fix the file or pass --format"
    )]
    Json { line: usize, column: usize },
    /// The JSON does not have the shape of the chosen conversation format.
    #[error("message {index}: {reason}")]
    Format { index: usize, reason: String },
    /// A role the format does not define.
    #[error(
        "message {index}: unknown role `{role}` (expected system, developer, user, assistant or tool)"
    )]
    UnknownRole { index: usize, role: String },
    /// Invalid compaction or budget settings.
    #[error("invalid compaction settings: {0}")]
    Config(String),
    /// Even after every tier, the required content (system prompt, latest user turn, pinned
    /// messages) does not fit. Nothing was forwarded.
    #[error(
        "the conversation cannot fit: {size} {unit:?} of required content remain against a limit of {limit}; raise the limit or shorten the system prompt / latest message"
    )]
    Irreducible {
        size: usize,
        limit: usize,
        unit: Unit,
        diagnostics: Box<Diagnostics>,
    },
    /// The history kept changing while it was being compacted; after `attempts` restarts the
    /// compactor gave up rather than forward a stale result.
    #[error(
        "the conversation changed during compaction {attempts} times in a row: retry when it is idle"
    )]
    ConcurrentMutationLimit { attempts: usize },
    /// Reading or writing the artifact store failed.
    #[error("artifact store: {0}")]
    Artifact(#[from] std::io::Error),
    /// A stored artifact does not hash to its name.
    #[error("artifact {digest} is corrupt: its content no longer matches its sha256")]
    ArtifactCorrupt { digest: String },
}

/// Result alias for `acms-compact`.
pub type Result<T, E = Error> = std::result::Result<T, E>;
