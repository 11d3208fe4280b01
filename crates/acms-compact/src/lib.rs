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
//! - [`assembly`]: bounded assembly for one provider call — eviction, offload, reducer
//!   proposals verified independently, preservation-only fallback, typed termination.
//! - [`seam`]: the middleware at the provider seam ([`ClientStack`], [`CompactingClient`],
//!   [`Seam`]) with fail-closed capability/profile resolution.
//! - [`events`]: per-assembly diagnostics and progress events with one [`AssemblyId`].
//! - [`lease`]: outer runs, per-digest leases (non-retransmission) and explicit rehydration.
//! - [`retention`]: the fact-retention measure and the baselines it is compared with.
//! - [`task`]: the task (first user request), pinned like the system prompt, and its marked
//!   shortening when the required content alone is over the limit.
//!
//! **Architecture Invariant:** every size is in the unit its [`Meter`] declares, measured on
//! [`Message::render`] and summed per message; no step is accepted unless strictly smaller
//! and structurally valid, and a terminated assembly is never forwarded.

// Module order, lowest first: each module imports only from the lines above its own.
//   code, types                  code outlines; units, budget states, artifact references
//   model                        messages, tool groups, the markers compaction writes
//   session                      facts of a session: errors, files, commands
//   summarize                    the tier 3 summarizer seam
//   diagnostics                  what a compaction reports
//   error                        the error type (it carries diagnostics)
//   measure, budget, format, artifact
//   task, lease, events, density
//   verify, retention
//   assembly                     bounded assembly for one provider call
//   compactor                    the tiers (`TieredReducer` is an assembly reducer)
//   seam                         the provider seam over both

pub mod artifact;
pub mod assembly;
pub mod budget;
pub mod code;
mod compactor;
mod density;
pub mod diagnostics;
mod error;
pub mod events;
pub mod format;
pub mod lease;
pub mod measure;
pub mod model;
pub mod retention;
pub mod seam;
pub mod session;
pub mod summarize;
pub mod task;
mod types;
pub mod verify;

pub use artifact::{
    ArtifactAttribution, ArtifactOperation, ArtifactOutcome, ArtifactRef, ArtifactStore,
};
pub use assembly::{
    Assembler, AssemblyPolicy, Bounded, FixedHistory, ReduceRequest, Reducer, ReducerError,
    TerminatedAssembly,
};
pub use budget::{BudgetState, BudgetTracker, StateChange, Threshold, Thresholds};
pub use code::{CodeOutliner, IndexOutliner, NoOutliner};
pub use compactor::{CompactConfig, Compacted, Compactor, Skill, TieredReducer};
pub use diagnostics::{
    Category, CategoryReport, Diagnostics, Outcome, Rejection, Stage, StageReport,
};
pub use error::{Error, Result, Terminated};
pub use events::{
    AssemblyDiagnostics, AssemblyId, AssemblyStage, CollectingSink, CompactionEvent, EventSummary,
    ProgressSink, Verdict,
};
pub use format::{Document, Format};
pub use lease::{CallLeases, Rehydrated, RehydrationFailed, Run};
pub use measure::{Estimator, Measured, Meter, SizeCache, Unit};
pub use model::{CLEARED_SENTINEL, Conversation, History, Message, OFFLOAD_MARKER, Role, ToolCall};
pub use seam::{
    Capability, CapabilityProfile, CapabilityState, CapabilityStatus, ChatProvider, ChatRequest,
    ChatResponse, Client, ClientStack, CompactingClient, CompactionProfile, DeliveryPhase,
    DiagnosticsStatus, HttpProvider, LlmProvider, Prepared, Seam, TrustBoundary,
};
pub use summarize::{DeterministicSummarizer, LlmSummarizer, Summarizer, SummarizerError};
