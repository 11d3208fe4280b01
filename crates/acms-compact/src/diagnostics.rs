//! Privacy-safe diagnostics of one compaction: sizes, counts, states, stage outcomes,
//! categories and ids. **Invariant:** nothing here holds message text, artifact bodies, paths,
//! tool arguments or error text — only numbers, enums and artifact digests — so diagnostics
//! can go to logs and dashboards as they are.
//!
//! The context-density report ([`CategoryReport`]) splits the final size over categories
//! (system, user requests, assistant, code signatures, code bodies, tool output, errors,
//! summaries); the category sizes sum exactly to the final size. It is computed in `density`:
//! this module holds only the records, so the error type can carry them.

use crate::model::StructureWarning;
use crate::summarize::SummarizerError;
use crate::types::{ArtifactRef, BudgetState, Unit};

/// How a compaction or a bounded assembly ended: three successes, two terminations. The
/// terminations double as the termination category; a terminated assembly is never
/// forwarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Already within the trigger threshold: forwarded unchanged.
    WithinLimit,
    /// An accepted, verified reduction (eviction, offload or a reducer proposal) fits.
    Reduced,
    /// No reducer proposal fitted within the attempt budget: required content plus the
    /// recent optional context that fits, nothing reducer-made.
    PreservationFallback,
    /// Required content alone exceeds the hard limit.
    Irreducible,
    /// Concurrent mutation of the history invalidated attempts until the budget ran out.
    ConcurrentMutationLimit,
}

impl Outcome {
    /// True for the outcomes whose context may be forwarded.
    pub fn is_success(self) -> bool {
        matches!(
            self,
            Outcome::WithinLimit | Outcome::Reduced | Outcome::PreservationFallback
        )
    }

    /// The snake_case name, as serialized.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::WithinLimit => "within_limit",
            Outcome::Reduced => "reduced",
            Outcome::PreservationFallback => "preservation_fallback",
            Outcome::Irreducible => "irreducible",
            Outcome::ConcurrentMutationLimit => "concurrent_mutation_limit",
        }
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A compaction step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Tier 1: large tool results moved to the artifact store.
    Offload,
    /// Tier 1: code in messages reduced to outlines or head/tail.
    CodeCompaction,
    /// Tier 1: old tool results replaced by the sentinel.
    Microcompact,
    /// Tier 2: session summary built without a model.
    SessionSummary,
    /// Tier 3: nine-section summary by the summarizer.
    LlmSummary,
    /// Tier 4: oldest rounds peeled.
    Peel,
    /// The task shortened, with a marker, because the required content (system prompt,
    /// task, latest user turn, pinned messages) was over the limit with the task whole. Counted
    /// as tier 4: required content lost its verbatim form.
    ShortenTask,
}

impl Stage {
    /// The tier the stage belongs to.
    pub fn tier(self) -> u8 {
        match self {
            Stage::Offload | Stage::CodeCompaction | Stage::Microcompact => 1,
            Stage::SessionSummary => 2,
            Stage::LlmSummary => 3,
            Stage::Peel | Stage::ShortenTask => 4,
        }
    }
}

/// Why a stage's proposal was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "reason", content = "detail")]
pub enum Rejection {
    /// The proposal was not strictly smaller.
    NotSmaller,
    /// A tool call lost its result or a result its call.
    ToolPairBroken,
    /// A system message, the latest user turn, the task or pinned content changed or went
    /// missing.
    RequiredMessageChanged,
    /// The summarizer failed; tier 2 runs instead.
    SummarizerFailed(SummarizerError),
    /// The summary or the result is over budget.
    OverBudget,
    /// The artifact store could not be written.
    ArtifactWriteFailed,
    /// Retained messages are out of their original order, or a new user request appears
    /// after the latest one.
    SequenceInvalid,
    /// The reducer returned an error instead of a proposal.
    ReducerFailed,
}

/// One stage's record.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StageReport {
    pub stage: Stage,
    pub tier: u8,
    pub size_before: usize,
    pub size_after: usize,
    pub messages_before: usize,
    pub messages_after: usize,
    /// Messages rewritten, removed or added.
    pub messages_changed: usize,
    pub accepted: bool,
    pub rejection: Option<Rejection>,
}

/// What a part of the context holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    System,
    UserRequests,
    Assistant,
    CodeSignatures,
    CodeBodies,
    ToolOutput,
    Errors,
    Summaries,
}

/// Size and entry count of one category.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CategoryReport {
    pub category: Category,
    pub size: usize,
    /// Messages contributing to the category.
    pub entries: usize,
}

/// Everything reported about one compaction.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Diagnostics {
    pub unit: Unit,
    pub tokenizer: Option<&'static str>,
    pub limit: usize,
    pub window: usize,
    pub original_size: usize,
    pub final_size: usize,
    pub original_messages: usize,
    pub final_messages: usize,
    pub state_before: BudgetState,
    pub state_after: BudgetState,
    pub outcome: Outcome,
    /// The highest tier whose stage was accepted (0: none).
    pub tier: u8,
    pub stages: Vec<StageReport>,
    pub categories: Vec<CategoryReport>,
    pub warnings: Vec<StructureWarning>,
    pub artifacts: Vec<ArtifactRef>,
    pub restored_files: usize,
    pub restored_skills: usize,
}
