//! Conversation compaction for long tool-using agent sessions: keeps a conversation under a
//! provider's hard context limit at every call.
//!
//! - [`model`]: messages, tool calls and results, atomic call/result groups, the canonical
//!   rendering every size is measured on.
//! - [`format`](mod@format): OpenAI chat-completions and Anthropic messages JSON.
//! - [`budget`]: the five-state [`BudgetTracker`] with subscribable state changes.
//! - [`Compactor`]: tiers 1-4, each proposal checked by the verifier before it is accepted;
//!   ends in a success ([`Outcome::WithinLimit`] / [`Outcome::Reduced`]) or
//!   [`Error::Irreducible`], never an over-limit result.
//! - [`artifact`]: content-addressed offload of large tool results (`artifact://sha256/<hex>`).
//! - [`code`]: AST-aware compaction of code in messages behind [`CodeOutliner`].
//! - [`summarize`]: the tier 3 [`Summarizer`] seam (LLM and deterministic).
//! - [`diagnostics`]: sizes, counts, states, categories; never message text.
//!
//! **Architecture Invariant:** sizes are exact ([`Meter`]) on [`Message::render`], summed per
//! message; no step is accepted unless strictly smaller and structurally valid.

pub mod artifact;
pub mod budget;
pub mod code;
mod compactor;
pub mod diagnostics;
mod error;
pub mod format;
pub mod measure;
pub mod model;
pub mod session;
pub mod summarize;
pub mod verify;

pub use artifact::{ArtifactRef, ArtifactStore};
pub use budget::{BudgetState, BudgetTracker, StateChange, Threshold, Thresholds};
pub use code::{CodeOutliner, IndexOutliner, NoOutliner};
pub use compactor::{CompactConfig, Compacted, Compactor, History, OFFLOAD_MARKER, Skill};
pub use diagnostics::{
    Category, CategoryReport, Diagnostics, Outcome, Rejection, Stage, StageReport,
};
pub use error::{Error, Result};
pub use format::{Document, Format};
pub use measure::{Measured, Meter, Unit};
pub use model::{CLEARED_SENTINEL, Conversation, Message, Role, ToolCall};
pub use summarize::{DeterministicSummarizer, LlmSummarizer, Summarizer, SummarizerError};
