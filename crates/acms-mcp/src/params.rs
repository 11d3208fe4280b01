//! The tools' input schemas, as the host shows them to the model. Arguments are not read
//! through these types ([`crate::args`] reads them field by field, so every mistake is
//! reported); each field's description states its range and what happens outside it. Ranges
//! are the default configuration's (`context.budget.min-useful-budget` 500,
//! `context.hot.max-tokens` 16000); a configuration that changes them changes what the errors
//! and caps say.

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde_json::Value;

#[derive(Debug, JsonSchema)]
pub struct ContextParams {
    /// The task, in your words (paths, names and error text help).
    pub task: String,
    /// Tokens the context text may take: 500–16000 (below 500 is an error, above 16000 is capped and the result says so). Default 16000, or what `window` leaves.
    pub budget: Option<u32>,
    /// Your context window in tokens: the budget becomes window - 4096 (response reserve) - tool_definitions, capped at 16000.
    pub window: Option<u32>,
    /// Tokens the tool definitions take in your window (only with `window`).
    pub tool_definitions: Option<u32>,
    /// Repository-relative files the task is about (each must be in the index).
    #[serde(default)]
    pub files: Vec<String>,
    /// Symbol names, simple or qualified (`Client.send`), the task is about (each must be in the index).
    #[serde(default)]
    pub symbols: Vec<String>,
}

#[derive(Debug, JsonSchema)]
pub struct SearchParams {
    /// The query text.
    pub query: String,
    /// Only these strategies (the configured ones: simple-keyword, semantic-embedding, breadth-depth-navigator by default); all when empty. An unknown name is an error listing the known ones.
    #[serde(default)]
    pub strategies: Vec<String>,
    /// Hits to return: 1–100, default 20 (above 100 is capped).
    pub limit: Option<u32>,
    /// Tokens the result may take: 500–16000, default 4000; hits past it are left out and counted in `hits_omitted`.
    pub max_tokens: Option<u32>,
}

#[derive(Debug, JsonSchema)]
pub struct ExpandParams {
    /// What to expand, as a context shows it: `path:start-end` from a block header (the whole header line works too), a symbol name shown in a header (`Cart.add`), or a 16-hex-digit node id.
    pub target: String,
    /// Tokens the text may take: 1–16000, default 4000 (a symbol falls back to its skeleton or signature to fit; a line range is cut at a line end).
    pub budget: Option<u32>,
}

#[derive(Debug, JsonSchema)]
pub struct PlanStartParams {
    /// What the plan is for.
    pub task: String,
}

#[derive(Debug, JsonSchema)]
pub struct PlanChildParams {
    /// The parent plan id (`p3`, from plan_start).
    pub parent: String,
    /// What the child plan is for.
    pub task: String,
}

#[derive(Debug, JsonSchema)]
pub struct PlanPhaseParams {
    /// The plan id (`p3`, from plan_start or plan_child).
    pub plan: String,
    /// The phase name: explore, design, implement, verify, ... (at most 64 characters).
    pub phase: String,
    /// What this phase focuses on, beyond the plan's task.
    #[serde(default)]
    pub focus: String,
    /// Tokens the context text may take: 500–16000 (below 500 is an error, above 16000 is capped and the result says so). Default 16000, or what `window` leaves.
    pub budget: Option<u32>,
    /// Your context window in tokens: the budget becomes window - 4096 (response reserve) - tool_definitions, capped at 16000.
    pub window: Option<u32>,
    /// Tokens the tool definitions take in your window (only with `window`).
    pub tool_definitions: Option<u32>,
    /// Repository-relative files this phase is about (each must be in the index).
    #[serde(default)]
    pub files: Vec<String>,
    /// Symbol names this phase is about (each must be in the index).
    #[serde(default)]
    pub symbols: Vec<String>,
}

#[derive(Debug, JsonSchema)]
pub struct PlanDecideParams {
    /// The plan id.
    pub plan: String,
    /// The phase the decision was taken in (it must have run).
    pub phase: String,
    /// The decision and why, in a sentence or two.
    pub notes: Option<String>,
    /// The fragments of that phase's context the decision is about, as its text shows them: `path:start-end` from a block header, or a symbol name; all of them when empty.
    #[serde(default)]
    pub fragments: Vec<String>,
}

#[derive(Debug, JsonSchema)]
pub struct PlanCloseParams {
    /// The plan id.
    pub plan: String,
}

#[derive(Debug, JsonSchema)]
pub struct PlanHistoryParams {
    /// The plan id.
    pub plan: String,
    /// A phase name (its latest run) or run number (`seq`) whose fragments to list; without it the history is a summary (phases and decisions with fragment counts).
    pub phase: Option<String>,
    /// Tokens the result may take: 500–16000, default 4000; the oldest phases and decisions are left out past it and counted.
    pub max_tokens: Option<u32>,
}

#[derive(Debug, JsonSchema)]
pub struct CompactParams {
    /// The conversation to compact.
    #[schemars(schema_with = "conversation_schema")]
    pub conversation: Value,
    /// Hard limit in tokens (cl100k_base) for the compacted conversation: at least 1.
    pub limit: u32,
    /// `openai` or `anthropic` (default: detected from the messages).
    pub format: Option<String>,
}

/// An OpenAI or Anthropic messages document: the messages array, the request object holding
/// it, or that JSON as a string.
fn conversation_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "The conversation: an array of OpenAI or Anthropic chat messages ({\"role\": ..., \"content\": ...}), a request object holding them under `messages` (with `system` for Anthropic), or that JSON as a string.",
        "anyOf": [
            {"type": "array", "items": {"type": "object", "properties": {"role": {"type": "string"}}, "required": ["role"]}},
            {"type": "object", "properties": {"messages": {"type": "array", "items": {"type": "object"}}, "system": {}}, "required": ["messages"]},
            {"type": "string"}
        ]
    })
}
