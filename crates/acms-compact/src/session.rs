//! Session facts extracted from the conversation itself, with no model call: user requests,
//! files touched, errors and what followed them, tool usage counts, the current state, and
//! the files read most recently. Tier 2 renders them as its summary, the deterministic
//! summarizer as nine sections, and restoration re-injects the recent files.
//!
//! Tool semantics are inferred from names and argument keys (`path`, `file_path`, ...), since
//! transcripts carry no schema; an unrecognized tool is still counted.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use crate::model::{CLEARED_SENTINEL, Message, Role, ToolCall};

/// How a tool call touched a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    Other,
    Read,
    Write,
}

/// One error seen in a tool result, and the assistant's next words after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorFact {
    pub tool: String,
    pub first_line: String,
    pub followed_by: Option<String>,
}

/// What the summary tiers know about a span of conversation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionFacts {
    /// Every user request, verbatim, oldest first.
    pub user_requests: Vec<String>,
    /// Files touched, in order of last access, with the strongest access seen (write > read).
    pub files: Vec<(String, Access)>,
    pub errors: Vec<ErrorFact>,
    pub tool_counts: BTreeMap<String, usize>,
    /// The last assistant text.
    pub current_state: Option<String>,
}

/// A file's content as last returned by a read-like tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRead {
    pub path: String,
    pub content: String,
}

const PATH_KEYS: &[&str] = &[
    "path",
    "file_path",
    "filepath",
    "filename",
    "file",
    "target_file",
    "notebook_path",
];

/// The file a tool call names, if any.
pub fn call_path(call: &ToolCall) -> Option<String> {
    let v: Value = serde_json::from_str(&call.arguments).ok()?;
    PATH_KEYS
        .iter()
        .find_map(|k| v.get(*k).and_then(Value::as_str))
        .filter(|p| !p.is_empty())
        .map(str::to_string)
}

/// How a tool call's name says it touches files.
pub fn call_access(call: &ToolCall) -> Access {
    let n = call.name.to_ascii_lowercase();
    if [
        "write", "edit", "create", "patch", "replace", "apply", "insert",
    ]
    .iter()
    .any(|k| n.contains(k))
    {
        Access::Write
    } else if ["read", "view", "cat", "open", "show", "get_file"]
        .iter()
        .any(|k| n.contains(k))
    {
        Access::Read
    } else {
        Access::Other
    }
}

/// True when a tool result reports a failure: flagged by the transcript, or its opening text
/// reads like an error, a failed test run or a stack trace. The result of a file read (`call`
/// is read-like) only counts when flagged: source code mentions errors all the time.
pub fn looks_like_error(m: &Message, call: Option<&ToolCall>) -> bool {
    if m.is_error {
        return true;
    }
    if call.is_some_and(|c| call_access(c) == Access::Read) {
        return false;
    }
    let head: String = m
        .content
        .chars()
        .take(2000)
        .collect::<String>()
        .to_ascii_lowercase();
    [
        "error",
        "traceback",
        "failed",
        "panicked",
        "exception",
        "fatal:",
    ]
    .iter()
    .any(|k| head.contains(k))
}

fn first_line(text: &str, max_chars: usize) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let mut s: String = line.chars().take(max_chars).collect();
    if line.chars().count() > max_chars {
        s.push('…');
    }
    s
}

/// Extracts the facts of `messages`; `calls` maps call ids of the whole conversation.
pub fn extract(messages: &[Message], calls: &HashMap<&str, &ToolCall>) -> SessionFacts {
    let mut facts = SessionFacts::default();
    let mut files: Vec<(String, Access)> = Vec::new();
    let mut pending_error: Option<usize> = None;
    for m in messages {
        match m.role {
            Role::User if m.is_user_request() => facts.user_requests.push(m.content.clone()),
            Role::Assistant => {
                for c in &m.tool_calls {
                    *facts.tool_counts.entry(c.name.clone()).or_default() += 1;
                    if let Some(p) = call_path(c) {
                        let access = call_access(c);
                        let prev = files.iter().position(|(f, _)| *f == p);
                        let strongest = match prev {
                            Some(i) => {
                                let (_, a) = files.remove(i);
                                a.max(access)
                            }
                            None => access,
                        };
                        files.push((p, strongest));
                    }
                }
                if !m.content.trim().is_empty() {
                    if let Some(e) = pending_error.take() {
                        facts.errors[e].followed_by = Some(first_line(&m.content, 200));
                    }
                    facts.current_state = Some(m.content.chars().take(600).collect());
                }
            }
            Role::Tool
                if m.content != CLEARED_SENTINEL
                    && looks_like_error(
                        m,
                        m.tool_call_id
                            .as_deref()
                            .and_then(|id| calls.get(id))
                            .copied(),
                    ) =>
            {
                let tool = m
                    .tool_call_id
                    .as_deref()
                    .and_then(|id| calls.get(id))
                    .map(|c| c.name.clone())
                    .unwrap_or_else(|| "tool".into());
                facts.errors.push(ErrorFact {
                    tool,
                    first_line: first_line(&m.content, 200),
                    followed_by: None,
                });
                pending_error = Some(facts.errors.len() - 1);
            }
            _ => {}
        }
    }
    facts.files = files;
    facts
}

/// The latest content of files read in `messages`, most recent last, one entry per path,
/// skipping results already cleared or offloaded.
pub fn recent_reads(messages: &[Message], calls: &HashMap<&str, &ToolCall>) -> Vec<FileRead> {
    let mut reads: Vec<FileRead> = Vec::new();
    for m in messages
        .iter()
        .filter(|m| m.role == Role::Tool && !m.is_error)
    {
        let Some(call) = m.tool_call_id.as_deref().and_then(|id| calls.get(id)) else {
            continue;
        };
        if call_access(call) != Access::Read
            || m.content == CLEARED_SENTINEL
            || m.content.starts_with("[Tool result offloaded")
        {
            continue;
        }
        if let Some(path) = call_path(call) {
            reads.retain(|r| r.path != path);
            reads.push(FileRead {
                path,
                content: m.content.clone(),
            });
        }
    }
    reads
}

/// Caps each text item of a summary at `max_chars` (`None`: verbatim).
fn cap(text: &str, max_chars: Option<usize>) -> String {
    match max_chars {
        Some(n) if text.chars().count() > n => {
            let mut s: String = text.chars().take(n).collect();
            s.push_str(" […]");
            s
        }
        _ => text.to_string(),
    }
}

impl SessionFacts {
    /// Renders the tier 2 summary; `item_cap` bounds each quoted item when the verbatim form
    /// does not fit.
    pub fn render_summary(&self, compacted_messages: usize, item_cap: Option<usize>) -> String {
        let mut s = format!(
            "{} of {compacted_messages} earlier messages, built from the session without a model call]\n",
            crate::model::SUMMARY_MARKER
        );
        s.push_str("\n## User requests (verbatim)\n");
        if self.user_requests.is_empty() {
            s.push_str("- (none in the compacted span)\n");
        }
        for r in &self.user_requests {
            s.push_str(&format!("- {}\n", cap(r, item_cap)));
        }
        s.push_str("\n## Files touched\n");
        if self.files.is_empty() {
            s.push_str("- (none)\n");
        }
        for (f, a) in &self.files {
            let a = match a {
                Access::Read => "read",
                Access::Write => "modified",
                Access::Other => "used",
            };
            s.push_str(&format!("- {f} ({a})\n"));
        }
        s.push_str("\n## Errors and fixes\n");
        if self.errors.is_empty() {
            s.push_str("- (none)\n");
        }
        for e in &self.errors {
            s.push_str(&format!("- {}: {}\n", e.tool, cap(&e.first_line, item_cap)));
            if let Some(f) = &e.followed_by {
                s.push_str(&format!("  then: {}\n", cap(f, item_cap)));
            }
        }
        s.push_str("\n## Tool usage\n");
        if self.tool_counts.is_empty() {
            s.push_str("- (none)\n");
        }
        for (name, n) in &self.tool_counts {
            s.push_str(&format!("- {name}: {n}\n"));
        }
        s.push_str("\n## Current state\n");
        match &self.current_state {
            Some(c) => s.push_str(&cap(c, item_cap)),
            None => s.push_str("(no assistant text in the compacted span)"),
        }
        s.push('\n');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::calls_by_id;

    fn call(id: &str, name: &str, path: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: format!(r#"{{"path":"{path}"}}"#),
        }
    }

    #[test]
    fn extracts_facts() {
        let msgs = vec![
            Message::text(Role::User, "fix the parser"),
            Message::calls("", vec![call("1", "read_file", "src/a.rs")]),
            Message::tool_result("1", "fn a() {}"),
            Message::calls("", vec![call("2", "run_tests", "")]),
            Message::tool_result("2", "test result: FAILED. 1 failed"),
            Message::text(
                Role::Assistant,
                "The test fails because a() is empty.\nMore.",
            ),
            Message::calls("", vec![call("3", "edit_file", "src/a.rs")]),
            Message::tool_result("3", "ok"),
        ];
        let calls = calls_by_id(&msgs);
        let f = extract(&msgs, &calls);
        assert_eq!(f.user_requests, vec!["fix the parser"]);
        assert_eq!(f.files, vec![("src/a.rs".to_string(), Access::Write)]);
        assert_eq!(f.errors.len(), 1);
        assert_eq!(f.errors[0].tool, "run_tests");
        assert_eq!(
            f.errors[0].followed_by.as_deref(),
            Some("The test fails because a() is empty.")
        );
        assert_eq!(f.tool_counts["read_file"], 1);
        let reads = recent_reads(&msgs, &calls);
        assert_eq!(reads.len(), 1);
        assert_eq!(reads[0].path, "src/a.rs");
        let s = f.render_summary(8, None);
        assert!(s.starts_with(crate::model::SUMMARY_MARKER));
        assert!(s.contains("- fix the parser\n"));
        assert!(s.contains("- run_tests: 1\n"));
    }
}
