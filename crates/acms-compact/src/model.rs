//! The conversation model: messages with roles, text, tool calls and tool results, flags and
//! timestamps; the canonical rendering every size is measured on; and the grouping of a tool
//! call with its results into one atomic unit.
//!
//! It also names the prefixes of the messages compaction writes (summaries, ledgers, stubs,
//! rehydrated and evicted bodies), so any module can tell them from user requests.
//!
//! This module owns structure only. It does not parse wire formats (see `format`) or measure
//! sizes (see `measure`).

use std::collections::HashMap;
use std::ops::Range;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    /// OpenAI's `developer` role: instructions with system standing.
    Developer,
    #[default]
    User,
    Assistant,
    Tool,
}

impl Role {
    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    /// System and developer messages: instructions that are never compacted.
    pub fn is_system(self) -> bool {
        matches!(self, Role::System | Role::Developer)
    }
}

/// A tool invocation requested by the assistant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as JSON text (OpenAI keeps them as a string; Anthropic's `input` object is
    /// serialized compactly).
    pub arguments: String,
}

/// Where a message came from in a parsed document, so a writer can emit an unchanged message
/// exactly as it was read (provider caches and unknown fields depend on it). Opaque: only
/// `format` creates and reads it, and it takes no part in equality.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Origin(pub(crate) u32);

/// One message of a conversation.
#[derive(Debug, Clone, Default)]
pub struct Message {
    pub role: Role,
    /// The text content (text parts joined).
    pub content: String,
    /// Tool calls of an assistant message.
    pub tool_calls: Vec<ToolCall>,
    /// For a `Tool` message: the call it answers.
    pub tool_call_id: Option<String>,
    /// For a `Tool` message: the tool reported a failure (Anthropic `is_error`).
    pub is_error: bool,
    /// Pinned or required content: never compacted or dropped.
    pub pinned: bool,
    /// Unix time in seconds, when the transcript records it.
    pub timestamp: Option<f64>,
    /// The message of the parsed document this one was read from (`None` when built in code).
    /// A rewritten copy keeps it, so the writer can still keep the fields the rewrite did
    /// not touch.
    pub origin: Option<Origin>,
}

/// Equality of what a message says; [`Message::origin`] is bookkeeping and is ignored.
impl PartialEq for Message {
    fn eq(&self, other: &Message) -> bool {
        self.role == other.role
            && self.content == other.content
            && self.tool_calls == other.tool_calls
            && self.tool_call_id == other.tool_call_id
            && self.is_error == other.is_error
            && self.pinned == other.pinned
            && self.timestamp == other.timestamp
    }
}

/// Prefix of the message tier 2/3 inserts in place of the compacted history.
pub const SUMMARY_MARKER: &str = "[Session summary";
/// Prefix of the message that restores recently read files and active skills.
pub const RESTORED_MARKER: &str = "[Restored context";
/// Prefix of a tool result whose call was missing, kept as plain user text.
const ORPHAN_MARKER: &str = "[Orphaned tool result]";
/// The tier 1 sentinel that replaces an old tool result (the whole text of a bare stub).
pub const CLEARED_SENTINEL: &str = "[Old tool result content cleared]";
/// Prefix of every tier 1 stub, bare or naming what was cleared
/// (`[Old tool result content cleared: bash `pytest -x` (212 lines, 3 errors)]`).
pub const CLEARED_PREFIX: &str = "[Old tool result content cleared";
/// Prefix of the session ledger tier 1 keeps of what it cleared.
pub const LEDGER_MARKER: &str = "[Session ledger";
/// Prefix of a tool result replaced by an artifact reference.
pub const OFFLOAD_MARKER: &str = "[Tool result offloaded to ";
/// Prefix of a message that carries a rehydrated body:
/// `[Rehydrated artifact://sha256/<hex> (<n> bytes)]` on the first line, the body after it.
pub const REHYDRATED_MARKER: &str = "[Rehydrated ";
/// Prefix of the bounded reference that replaces an evicted rehydrated body.
pub const EVICTED_MARKER: &str = "[Artifact ";

/// True for a tool result tier 1 has already cleared.
pub fn is_cleared(content: &str) -> bool {
    content.starts_with(CLEARED_PREFIX)
}

/// True for a tool result already reduced to a stub: cleared by tier 1, or offloaded.
pub(crate) fn is_stub(content: &str) -> bool {
    is_cleared(content) || content.starts_with(OFFLOAD_MARKER)
}

impl Message {
    /// A plain text message.
    pub fn text(role: Role, content: impl Into<String>) -> Message {
        Message {
            role,
            content: content.into(),
            ..Message::default()
        }
    }

    /// An assistant message that calls tools.
    pub fn calls(content: impl Into<String>, calls: Vec<ToolCall>) -> Message {
        Message {
            role: Role::Assistant,
            content: content.into(),
            tool_calls: calls,
            ..Message::default()
        }
    }

    /// A tool result answering `call_id`.
    pub fn tool_result(call_id: impl Into<String>, content: impl Into<String>) -> Message {
        Message {
            role: Role::Tool,
            content: content.into(),
            tool_call_id: Some(call_id.into()),
            ..Message::default()
        }
    }

    /// The canonical rendering: what a provider receives for this message, as one string.
    /// Every size in acms-compact is measured on this text, so the budget check, the tiers
    /// and the diagnostics all count the same thing.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(self.content.len() + 16);
        out.push_str(self.role.name());
        if let Some(id) = &self.tool_call_id {
            out.push(' ');
            out.push_str(id);
        }
        out.push('\n');
        out.push_str(&self.content);
        for call in &self.tool_calls {
            out.push_str("\n<tool_call ");
            out.push_str(&call.id);
            out.push(' ');
            out.push_str(&call.name);
            out.push_str(">\n");
            out.push_str(&call.arguments);
        }
        out
    }

    /// A user message that states a request (not a summary, restoration or orphan).
    pub fn is_user_request(&self) -> bool {
        self.role == Role::User
            && !self.content.starts_with(SUMMARY_MARKER)
            && !self.content.starts_with(LEDGER_MARKER)
            && !self.content.starts_with(REHYDRATED_MARKER)
            && !self.content.starts_with(EVICTED_MARKER)
            && !self.content.starts_with(RESTORED_MARKER)
            && !self.content.starts_with(ORPHAN_MARKER)
    }

    /// A summary or restoration inserted by compaction.
    pub fn is_compaction_artifact(&self) -> bool {
        self.role == Role::User
            && (self.content.starts_with(SUMMARY_MARKER)
                || self.content.starts_with(LEDGER_MARKER)
                || self.content.starts_with(RESTORED_MARKER))
    }
}

/// A conversation: messages in order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Conversation {
    pub messages: Vec<Message>,
}

impl Conversation {
    /// A conversation of `messages`.
    pub fn new(messages: Vec<Message>) -> Conversation {
        Conversation { messages }
    }

    /// Index of the latest user request: the turn that must survive every compaction.
    pub fn latest_user(&self) -> Option<usize> {
        latest_user(&self.messages)
    }
}

/// A conversation history that may change while it is compacted (a host appending tool
/// results from another thread). The version changes on every mutation.
pub trait History {
    /// The current version.
    fn version(&self) -> u64;
    /// A consistent copy and its version.
    fn snapshot(&self) -> (u64, Conversation);
}

/// Index of the latest user request in `messages`.
pub fn latest_user(messages: &[Message]) -> Option<usize> {
    messages.iter().rposition(Message::is_user_request)
}

/// Splits `messages` into atomic groups: an assistant message with tool calls together with
/// the tool results that directly follow it and answer its calls; every other message alone.
/// No compaction step may keep part of a group.
pub fn groups(messages: &[Message]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        let start = i;
        i += 1;
        if messages[start].role == Role::Assistant && !messages[start].tool_calls.is_empty() {
            let calls = &messages[start].tool_calls;
            while i < messages.len()
                && messages[i].role == Role::Tool
                && messages[i]
                    .tool_call_id
                    .as_deref()
                    .is_some_and(|id| calls.iter().any(|c| c.id == id))
            {
                i += 1;
            }
        }
        out.push(start..i);
    }
    out
}

/// For each of `groups`, whether any of its messages is `flagged` (a group is kept or
/// dropped whole, so one flagged message decides for all of it).
pub(crate) fn groups_with(groups: &[Range<usize>], flagged: &[bool]) -> Vec<bool> {
    groups
        .iter()
        .map(|g| flagged[g.clone()].contains(&true))
        .collect()
}

/// Maps each tool call id to its call, for looking up what produced a tool result.
pub fn calls_by_id(messages: &[Message]) -> HashMap<&str, &ToolCall> {
    messages
        .iter()
        .flat_map(|m| m.tool_calls.iter())
        .map(|c| (c.id.as_str(), c))
        .collect()
}

/// The call a tool result answers, found in `calls` ([`calls_by_id`]).
pub(crate) fn call_of<'c>(
    result: &Message,
    calls: &HashMap<&str, &'c ToolCall>,
) -> Option<&'c ToolCall> {
    result
        .tool_call_id
        .as_deref()
        .and_then(|id| calls.get(id))
        .copied()
}

/// A problem found in the structure of an input conversation. Carries positions and kinds,
/// never text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum StructureWarning {
    /// A tool result with no matching call right before it; kept as plain user text.
    OrphanToolResult { index: usize },
    /// A tool call with no result; kept as is.
    MissingToolResult { index: usize },
}

/// True when [`normalize`] would change `messages` (a tool result whose call does not
/// directly precede it).
pub fn needs_normalize(messages: &[Message]) -> bool {
    let mut open: Option<&Message> = None;
    for m in messages {
        match m.role {
            Role::Tool => {
                let id = m.tool_call_id.as_deref();
                if !open.is_some_and(|a| a.tool_calls.iter().any(|c| Some(c.id.as_str()) == id)) {
                    return true;
                }
            }
            Role::Assistant if !m.tool_calls.is_empty() => open = Some(m),
            _ => open = None,
        }
    }
    false
}

/// Makes the tool structure valid: a tool result whose call does not directly precede it
/// becomes a plain user message marked `[Orphaned tool result]`. Returns what it found.
pub fn normalize(messages: &mut [Message]) -> Vec<StructureWarning> {
    let mut warnings = Vec::new();
    // The calls of the assistant message that opened the current run of tool results.
    let mut open: Option<usize> = None;
    for i in 0..messages.len() {
        match messages[i].role {
            Role::Tool => {
                let answered = open.is_some_and(|a| {
                    let id = messages[i].tool_call_id.as_deref();
                    messages[a]
                        .tool_calls
                        .iter()
                        .any(|c| Some(c.id.as_str()) == id)
                });
                if !answered {
                    warnings.push(StructureWarning::OrphanToolResult { index: i });
                    let m = &mut messages[i];
                    m.role = Role::User;
                    m.tool_call_id = None;
                    m.content = format!("{ORPHAN_MARKER}\n{}", m.content);
                    open = None;
                }
            }
            Role::Assistant if !messages[i].tool_calls.is_empty() => open = Some(i),
            _ => open = None,
        }
    }
    for (a, m) in messages.iter().enumerate() {
        for call in &m.tool_calls {
            let answered = messages[a + 1..]
                .iter()
                .take_while(|r| r.role == Role::Tool)
                .any(|r| r.tool_call_id.as_deref() == Some(call.id.as_str()));
            if !answered {
                warnings.push(StructureWarning::MissingToolResult { index: a });
                break;
            }
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: "{}".into(),
        }
    }

    fn check_groups(messages: &[Message], expected: &[Range<usize>]) {
        assert_eq!(groups(messages), expected);
    }

    #[test]
    fn groups_keep_calls_with_results() {
        let sys = Message::text(Role::System, "s");
        let user = Message::text(Role::User, "u");
        let a = Message::calls("", vec![call("1"), call("2")]);
        check_groups(&[], &[]);
        check_groups(&[sys.clone(), user.clone()], &[0..1, 1..2]);
        check_groups(
            &[
                sys,
                user.clone(),
                a.clone(),
                Message::tool_result("1", "r1"),
                Message::tool_result("2", "r2"),
                user,
            ],
            &[0..1, 1..2, 2..5, 5..6],
        );
        // A result for another call does not join the group.
        check_groups(&[a, Message::tool_result("9", "x")], &[0..1, 1..2]);
    }

    #[test]
    fn normalize_marks_orphans_and_missing_results() {
        let mut msgs = vec![
            Message::tool_result("x", "lost"),
            Message::calls("", vec![call("1"), call("2")]),
            Message::tool_result("1", "ok"),
        ];
        let w = normalize(&mut msgs);
        assert_eq!(
            w,
            vec![
                StructureWarning::OrphanToolResult { index: 0 },
                StructureWarning::MissingToolResult { index: 1 }
            ]
        );
        assert_eq!(msgs[0].role, Role::User);
        assert_eq!(msgs[0].content, format!("{ORPHAN_MARKER}\nlost"));
        assert!(!msgs[0].is_user_request());
    }

    #[test]
    fn render_includes_calls_and_ids() {
        let m = Message::calls("thinking", vec![call("c1")]);
        assert_eq!(
            m.render(),
            "assistant\nthinking\n<tool_call c1 read_file>\n{}"
        );
        assert_eq!(Message::tool_result("c1", "out").render(), "tool c1\nout");
    }
}
