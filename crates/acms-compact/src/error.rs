//! The error type of `acms-compact`. Messages name positions, sizes, units and kinds so a
//! user can act on them; they never quote conversation text, paths or provider bodies.

use crate::diagnostics::{Diagnostics, Outcome};
use crate::types::Unit;

/// Why a provider call was not made: the bounded assembly terminated. Carries only the
/// outcome, the final size and the hard limit (in the estimator's unit), never the
/// diagnostics or any content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Terminated {
    /// [`Outcome::Irreducible`] or [`Outcome::ConcurrentMutationLimit`].
    pub outcome: Outcome,
    pub final_size: usize,
    pub hard_limit: usize,
    pub unit: Unit,
}

impl std::fmt::Display for Terminated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.outcome {
            Outcome::ConcurrentMutationLimit => write!(
                f,
                "the request was not sent: the conversation kept changing while it was being bounded ({} {} against a hard limit of {} {}); retry when it is idle",
                self.final_size, self.unit, self.hard_limit, self.unit
            ),
            _ => write!(
                f,
                "the request was not sent: its required content alone is {} {} against a hard limit of {} {}; shorten the system prompt or the latest message, or raise the limit",
                self.final_size, self.unit, self.hard_limit, self.unit
            ),
        }
    }
}

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
        "the conversation cannot fit: {size} {unit} of required content remain against a limit of {limit} {unit}; raise the limit or shorten the system prompt / latest message"
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
    /// The bounded assembly at the provider seam terminated; the call was not made.
    #[error("{0}")]
    Terminated(Terminated),
    /// The provider call itself failed (after a successful assembly).
    #[error(transparent)]
    Provider(#[from] acms_llm::Error),
    /// The compaction capability was requested without a compaction profile for the same
    /// composition. Nothing was built.
    #[error(
        "compaction is enabled but no compaction profile was supplied for this client stack: supply one, or do not request the capability"
    )]
    CompactionProfileMissing,
    /// A compaction profile was supplied but the capability was not requested.
    #[error(
        "a compaction profile was supplied but the compaction capability is not enabled for this client stack: request the capability, or drop the profile"
    )]
    CompactionCapabilityMissing,
    /// A second compaction component for one client stack.
    #[error("this client stack already has a compaction component: exactly one may be installed")]
    CompactionAlreadyInstalled,
    /// Reading or writing the artifact store failed.
    #[error("artifact store: {0}")]
    Artifact(#[from] std::io::Error),
    /// A string that is not exactly `artifact://sha256/<64 lower-case hex>` (not quoted: it
    /// may be a path).
    #[error(
        "not an artifact reference: expected artifact://sha256/ followed by 64 lower-case hex digits"
    )]
    ArtifactReference,
    /// No body is stored under the digest.
    #[error("artifact {digest} is not in the store")]
    ArtifactMissing { digest: String },
    /// A stored artifact does not hash to its name.
    #[error("artifact {digest} is corrupt: its content no longer matches its sha256")]
    ArtifactCorrupt { digest: String },
    /// The store file is a link, FIFO, device or directory: not something the store wrote.
    /// Nothing was read from it.
    #[error(
        "artifact {digest} is not a regular file: delete it, then offload the body again from its source"
    )]
    ArtifactNotRegular { digest: String },
    /// A body over the store's size limit; a stored file that large is refused unread.
    #[error("artifact body is larger than the store's limit of {limit} bytes ({size} bytes)")]
    ArtifactTooLarge { size: u64, limit: u64 },
    /// A rehydration whose body does not fit the budget it was given.
    #[error("the artifact body is {size} {unit}, over the rehydration budget of {budget} {unit}")]
    RehydrationOverBudget {
        size: usize,
        budget: usize,
        unit: Unit,
    },
}

/// Result alias for `acms-compact`.
pub type Result<T, E = Error> = std::result::Result<T, E>;
