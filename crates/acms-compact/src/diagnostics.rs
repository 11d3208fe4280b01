//! Privacy-safe diagnostics of one compaction: sizes, counts, states, stage outcomes,
//! categories and ids. **Invariant:** nothing here holds message text, artifact bodies, paths,
//! tool arguments or error text — only numbers, enums and artifact digests — so diagnostics
//! can go to logs and dashboards as they are.
//!
//! The context-density report splits the final size over categories (system, user requests,
//! assistant, code signatures, code bodies, tool output, errors, summaries); the category
//! sizes sum exactly to the final size.

use std::collections::HashMap;

use crate::artifact::ArtifactRef;
use crate::budget::BudgetState;
use crate::code::{fences, is_code_path, is_signature_line};
use crate::measure::Unit;
use crate::model::{Message, Role, StructureWarning, ToolCall};
use crate::session::{Access, call_access, call_path, looks_like_error};
use crate::summarize::SummarizerError;

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

/// Splits each message's exact size over its categories. A message with several parts
/// (prose and code) is split in proportion to the parts' own sizes, with the rounding
/// remainder on its largest part, so the sum over categories equals the total exactly.
pub fn categories(
    messages: &[Message],
    sizes: &[usize],
    calls: &HashMap<&str, &ToolCall>,
) -> Vec<CategoryReport> {
    let mut size: HashMap<Category, usize> = HashMap::new();
    let mut entries: HashMap<Category, usize> = HashMap::new();
    for (m, &total) in messages.iter().zip(sizes) {
        let parts = parts(m, calls);
        let shares: Vec<(Category, usize)> = if parts.len() == 1 {
            vec![(parts[0].0, total)]
        } else {
            // Weights only need to be proportional: UTF-8 bytes, so the split costs no
            // second tokenization of every message.
            let weights: Vec<usize> = parts.iter().map(|(_, t)| t.len().max(1)).collect();
            let w: usize = weights.iter().sum();
            let mut s: Vec<(Category, usize)> = parts
                .iter()
                .zip(&weights)
                .map(|((c, _), wi)| (*c, total * wi / w))
                .collect();
            let given: usize = s.iter().map(|(_, n)| n).sum();
            let largest = (0..weights.len()).max_by_key(|&i| weights[i]).unwrap_or(0);
            s[largest].1 += total - given;
            s
        };
        let mut seen = Vec::new();
        for (c, n) in shares {
            *size.entry(c).or_default() += n;
            if !seen.contains(&c) {
                seen.push(c);
                *entries.entry(c).or_default() += 1;
            }
        }
    }
    let mut out: Vec<CategoryReport> = size
        .into_iter()
        .map(|(category, size)| CategoryReport {
            category,
            size,
            entries: entries[&category],
        })
        .collect();
    out.sort_by_key(|r| r.category);
    out
}

/// The parts of one message with their category. Always at least one part.
fn parts<'m>(m: &'m Message, calls: &HashMap<&str, &ToolCall>) -> Vec<(Category, &'m str)> {
    let base = match m.role {
        Role::System | Role::Developer => return vec![(Category::System, &m.content)],
        Role::User if m.is_compaction_artifact() => return vec![(Category::Summaries, &m.content)],
        Role::User if m.is_user_request() => Category::UserRequests,
        Role::User => Category::ToolOutput,
        Role::Assistant => Category::Assistant,
        Role::Tool => {
            let call = m.tool_call_id.as_deref().and_then(|id| calls.get(id));
            if looks_like_error(m, call.copied()) {
                return vec![(Category::Errors, &m.content)];
            }
            let shows_file = call.is_some_and(|c| {
                call_access(c) == Access::Read && call_path(c).is_some_and(|p| is_code_path(&p))
            });
            if shows_file {
                return code_parts(&m.content);
            }
            Category::ToolOutput
        }
    };
    let mut out = Vec::new();
    let mut last = 0;
    for f in fences(&m.content) {
        out.push((base, &m.content[last..f.body.start]));
        out.extend(code_parts(&m.content[f.body.clone()]));
        last = f.body.end;
    }
    out.push((base, &m.content[last..]));
    out.retain(|(_, t)| !t.is_empty());
    if out.is_empty() {
        out.push((base, ""));
    }
    out
}

/// Code split into declaration lines and body lines (one part each at most).
fn code_parts(code: &str) -> Vec<(Category, &str)> {
    // Lines are classified, then represented by their first and last occurrence, which keeps
    // the parts borrowed; the weights only need to be proportional.
    let (sig, body): (Vec<&str>, Vec<&str>) = code.lines().partition(|l| is_signature_line(l));
    let sig_len: usize = sig.iter().map(|l| l.len() + 1).sum();
    let body_len: usize = body.iter().map(|l| l.len() + 1).sum();
    let mut out = Vec::new();
    // Weight by byte share of the whole code text: the first `sig_len` bytes stand in for the
    // signatures and the rest for bodies. Exact per-line token counts are not worth a second
    // tokenization of every file.
    let split = crate::measure::floor_boundary(code, sig_len.min(code.len()));
    if sig_len > 0 {
        out.push((Category::CodeSignatures, &code[..split]));
    }
    if body_len > 0 {
        out.push((Category::CodeBodies, &code[split..]));
    }
    if out.is_empty() {
        out.push((Category::CodeBodies, code));
    }
    out
}
