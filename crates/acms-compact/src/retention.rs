//! The fact-retention measure: does a compacted conversation still hold the facts an agent
//! needs later — the files it opened, the errors it saw, the failing tests, the edits it
//! made? Fitting the limit is not enough.
//!
//! Probes are extracted only from the messages a reducer removed or shortened (those not in
//! the output verbatim), with rules of their own (not the ledger's):
//! - **paths** named in tool-call arguments (what the agent opened, ran, edited) and in
//!   traceback `File "…"` lines of results;
//! - **error lines**: lines of tool results that read as an error (`ValueError: …`,
//!   pytest `E   …`, `error: …`, `FAILED …`, `panicked at …`), trimmed, first 160 chars;
//! - **test names** on failing-test lines of results and in commands that run tests;
//! - **identifiers**: functions named in traceback frames, and functions and classes
//!   defined by commands that write files.
//!
//! A probe is present when the compacted conversation's text contains it verbatim,
//! anywhere (a summary or ledger counts). Two facts are checked whole on every result, not
//! only when removed: the task (the first user request, [`task_kept`]) and the last error
//! the agent saw ([`last_error`], by rules of its own). The module also has the two
//! baselines the measure is reported beside — truncate-oldest and observation masking —
//! and readers for public agent-trajectory files (mini-swe-agent `.traj.json`, SWE-agent
//! `.traj`, OpenAI-format message lists): [`read_trajectory`] turns a text-only agent's
//! commands into tool calls, [`read_as_sent`] keeps the messages as the agent sent them.
//! It is measurement code: nothing on the compaction path calls it.

use std::collections::{BTreeSet, HashMap};
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::measure::Meter;
use crate::model::{Conversation, Message, Role, ToolCall, call_of, groups, groups_with};
use crate::{Error, Result};

/// What a probe stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeKind {
    Path,
    ErrorLine,
    TestName,
    Identifier,
}

/// One fact to look for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Probe {
    pub kind: ProbeKind,
    pub text: String,
}

static PATH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:[A-Za-z0-9_.\-]+/)+[A-Za-z0-9_\-]+\.[A-Za-z][A-Za-z0-9]{0,4}\b|\b[A-Za-z0-9_\-]+\.(?:py|rs|js|ts|tsx|jsx|java|go|c|h|cc|cpp|rb|toml|cfg|ini|json|yaml|yml|txt|md|rst)\b")
        .expect("valid regex")
});
static TRACE_FILE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"File "([^"]+)", line \d+, in ([A-Za-z_][A-Za-z0-9_]*)"#).expect("valid regex")
});
static ERROR_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:E\s{2,}\S.*|(?:[A-Za-z_][A-Za-z0-9_.]*)?(?:Error|Exception|Warning)\b:.*|[A-Za-z_][A-Za-z0-9_.]*(?:Error|Exception)$|error(?:\[\w+\])?:.*|FAILED .*|FAIL: .*|ERROR: .*|.*panicked at .*)$")
        .expect("valid regex")
});
static TEST_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(test_[A-Za-z0-9_]+|Test[A-Z][A-Za-z0-9_]*)\b").expect("valid regex")
});
static DEFINITION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?:def|class|fn|function)\s+([A-Za-z_][A-Za-z0-9_]*)").expect("valid regex")
});

/// Words in a tool call that mean it writes files.
const WRITES: &[&str] = &[
    "sed -i",
    "cat >",
    "cat <<",
    "> ",
    "tee ",
    "str_replace",
    "create",
    "edit",
    "write",
    "patch",
    "apply",
    "insert",
];

fn cap_chars(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// The text of a tool call's arguments: a JSON string value's own text where it has one
/// (`{"command": "…"}`), so escapes do not hide paths.
fn call_text(c: &ToolCall) -> String {
    match serde_json::from_str::<Value>(&c.arguments) {
        Ok(Value::Object(o)) => o
            .values()
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => c.arguments.clone(),
    }
}

/// Probes of one message.
fn message_probes(m: &Message, out: &mut BTreeSet<Probe>) {
    let mut add = |kind: ProbeKind, text: &str| {
        let text = text.trim();
        if text.len() >= 3 {
            out.insert(Probe {
                kind,
                text: text.to_string(),
            });
        }
    };
    for c in &m.tool_calls {
        let text = call_text(c);
        for p in PATH.find_iter(&text) {
            add(ProbeKind::Path, p.as_str());
        }
        for t in TEST_NAME.captures_iter(&text) {
            add(ProbeKind::TestName, &t[1]);
        }
        let lower = text.to_ascii_lowercase();
        if WRITES.iter().any(|w| lower.contains(w)) {
            for d in DEFINITION.captures_iter(&text) {
                add(ProbeKind::Identifier, &d[1]);
            }
        }
    }
    if m.role != Role::Tool {
        return;
    }
    let mut errors = 0;
    for line in m.content.lines() {
        let line = line.trim();
        if let Some(t) = TRACE_FILE.captures(line) {
            add(ProbeKind::Path, &t[1]);
            if &t[2] != "module" {
                add(ProbeKind::Identifier, &t[2]);
            }
        }
        if ERROR_LINE.is_match(line) {
            // The first 160 characters: a long line is still found when it is kept whole.
            if errors < 12 {
                add(ProbeKind::ErrorLine, &cap_chars(line, 160));
            }
            errors += 1;
            let failing = ["FAILED", "FAIL:", "ERROR:", "failed", "Error"]
                .iter()
                .any(|w| line.contains(w));
            if failing {
                for t in TEST_NAME.captures_iter(line) {
                    add(ProbeKind::TestName, &t[1]);
                }
            }
        }
    }
}

/// Probes of the messages of `original` that are not in `compacted` verbatim.
pub fn probes(original: &[Message], compacted: &[Message]) -> BTreeSet<Probe> {
    let mut kept: HashMap<String, usize> = HashMap::new();
    for m in compacted {
        *kept.entry(m.render()).or_default() += 1;
    }
    let mut out = BTreeSet::new();
    for m in original {
        let r = m.render();
        match kept.get_mut(&r) {
            Some(n) if *n > 0 => *n -= 1,
            _ => message_probes(m, &mut out),
        }
    }
    out
}

/// Retention of one compaction, overall and per kind.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Retention {
    pub probes: usize,
    pub present: usize,
    /// (kind, probes, present)
    pub by_kind: Vec<(ProbeKind, usize, usize)>,
}

impl Retention {
    /// present / probes (1.0 when there is nothing to look for).
    pub fn ratio(&self) -> f64 {
        if self.probes == 0 {
            1.0
        } else {
            self.present as f64 / self.probes as f64
        }
    }
}

/// Measures how many facts of what the reducer removed or shortened `compacted` keeps.
pub fn retention(original: &[Message], compacted: &[Message]) -> Retention {
    let probes = probes(original, compacted);
    let text: String = compacted
        .iter()
        .map(Message::render)
        .collect::<Vec<_>>()
        .join("\n");
    let mut by_kind: HashMap<ProbeKind, (usize, usize)> = HashMap::new();
    let mut present = 0;
    for p in &probes {
        let hit = text.contains(&p.text);
        let e = by_kind.entry(p.kind).or_default();
        e.0 += 1;
        if hit {
            e.1 += 1;
            present += 1;
        }
    }
    let mut by_kind: Vec<(ProbeKind, usize, usize)> =
        by_kind.into_iter().map(|(k, (n, p))| (k, n, p)).collect();
    by_kind.sort();
    Retention {
        probes: probes.len(),
        present,
        by_kind,
    }
}

/// Whether `compacted` still holds the task — the first user request of `original`, the
/// issue an agent was given — whole and verbatim (as a message or inside one). `None` when
/// `original` has no user request.
pub fn task_kept(original: &[Message], compacted: &[Message]) -> Option<bool> {
    let task = original.iter().find(|m| m.is_user_request())?;
    Some(compacted.iter().any(|m| m.content.contains(&task.content)))
}

/// Whether `compacted` holds the task of `original` as its marked shortening
/// ([`crate::task::shorten`]) rather than whole.
pub fn task_shortened(original: &[Message], compacted: &[Message]) -> bool {
    original
        .iter()
        .find(|m| m.is_user_request())
        .is_some_and(|t| {
            compacted
                .iter()
                .any(|m| crate::task::is_shortened_from(&m.content, &t.content))
        })
}

static LAST_ERROR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:(?:[A-Za-z_][A-Za-z0-9_.]*)?(?:Error|Exception)(?::.*)?|E\s{2,}[A-Za-z_][A-Za-z0-9_.]*(?:Error|Exception)\b.*|error(?:\[\w+\])?: .*|.*panicked at .*)$")
        .expect("valid regex")
});

/// Commands that print files (or find things in them) rather than run anything: what they
/// print is file content, not a failure the agent saw.
const PRINTERS: &[&str] = &[
    "cat",
    "head",
    "tail",
    "nl",
    "less",
    "more",
    "grep",
    "rg",
    "ls",
    "find",
    "wc",
    "cd",
    "open",
    "goto",
    "scroll_up",
    "scroll_down",
    "search_file",
    "search_dir",
    "find_file",
    "view",
];

/// True when a call only prints files: a read-like tool `name`, or a `command` each of
/// whose simple commands is a file printer (`sed` only without `-i`) redirecting nothing
/// into a file.
fn prints_files(name: &str, command: &str) -> bool {
    let name = name.to_ascii_lowercase();
    if [
        "read", "view", "cat", "open", "goto", "scroll", "search", "find",
    ]
    .iter()
    .any(|k| name.contains(k))
    {
        return true;
    }
    let segments = crate::session::command_segments(command);
    !segments.is_empty()
        && segments.iter().all(|seg| {
            let word = seg.split_whitespace().next().unwrap_or("");
            let printer = (word == "sed" && !seg.contains(" -i")) || PRINTERS.contains(&word);
            // `cat <<EOF > f` writes a file; `2>&1` redirects nothing into one.
            printer
                && !seg
                    .replace("2>&1", "")
                    .replace(">/dev/null", "")
                    .contains('>')
        })
}

/// The last error the agent saw: the last line that states an error from its first column
/// (`FooError: …` or a bare `FooException`, pytest's `E   FooError…`, `error: …`, a panic)
/// in the most recent tool result that has one — or, for a text-only agent, the most recent
/// environment reply (a user message right after an assistant turn). Outputs of calls that
/// only print files (`cat`, `sed -n`, a read tool) do not count: a line there is file
/// content, and an indented line is a quote or code, not what a command reported. First 160
/// characters, as the error-line probes.
pub fn last_error(messages: &[Message]) -> Option<String> {
    let calls = crate::model::calls_by_id(messages);
    let task = crate::task::task_index(messages);
    (0..messages.len()).rev().find_map(|i| {
        let m = &messages[i];
        let printed = match m.role {
            Role::Tool => call_of(m, &calls).is_some_and(|c| prints_files(&c.name, &call_text(c))),
            Role::User if Some(i) != task && i > 0 && m.is_user_request() => {
                let prev = &messages[i - 1];
                if prev.role != Role::Assistant {
                    return None;
                }
                crate::session::text_command(&prev.content).is_some_and(|c| prints_files("", c))
            }
            _ => return None,
        };
        if printed {
            return None;
        }
        m.content
            .lines()
            .rev()
            .map(|l| l.trim_end())
            .find(|l| LAST_ERROR.is_match(l))
            .map(|l| cap_chars(l, 160))
    })
}

/// Whether `compacted` still holds [`last_error`] of `original` verbatim; `None` when
/// `original` has none.
pub fn last_error_kept(original: &[Message], compacted: &[Message]) -> Option<bool> {
    let line = last_error(original)?;
    Some(compacted.iter().any(|m| m.content.contains(&line)))
}

/// Baseline: drop the oldest whole rounds (never system, pinned or the latest request)
/// until the conversation fits `limit`.
pub fn truncate_oldest(messages: &[Message], limit: usize, meter: &Meter) -> Vec<Message> {
    let gs = groups(messages);
    // A baseline knows no task: only system, pinned and the latest request are required.
    let required = groups_with(&gs, &crate::task::required(messages, false));
    let sizes: Vec<usize> = gs
        .iter()
        .map(|g| messages[g.clone()].iter().map(|m| meter.message(m)).sum())
        .collect();
    let mut total: usize = sizes.iter().sum();
    let mut keep = vec![true; gs.len()];
    for g in 0..gs.len() {
        if total <= limit {
            break;
        }
        if !required[g] {
            keep[g] = false;
            total -= sizes[g];
        }
    }
    gs.iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .flat_map(|(g, _)| messages[g.clone()].iter().cloned())
        .collect()
}

/// The placeholder observation masking leaves.
const MASKED: &str = "[observation omitted]";

/// Baseline: observation masking — replace tool results, oldest first, with a fixed
/// placeholder until the conversation fits; then drop the oldest rounds if still over.
pub fn observation_masking(messages: &[Message], limit: usize, meter: &Meter) -> Vec<Message> {
    let mut out = messages.to_vec();
    let mut total: usize = out.iter().map(|m| meter.message(m)).sum();
    for i in 0..out.len() {
        if total <= limit {
            return out;
        }
        if out[i].role == Role::Tool && out[i].content != MASKED {
            let before = meter.message(&out[i]);
            out[i].content = MASKED.to_string();
            total = total - before + meter.message(&out[i]);
        }
    }
    if total <= limit {
        out
    } else {
        truncate_oldest(&out, limit, meter)
    }
}

/// The message list of a trajectory file: a bare array, or the `messages` (or SWE-agent
/// `history`) array of an object.
fn trajectory_messages(json: &str) -> Result<Vec<Value>> {
    let v: Value =
        serde_json::from_str(json.trim_start_matches('\u{feff}')).map_err(|e| Error::Json {
            line: e.line(),
            column: e.column(),
        })?;
    match v {
        Value::Array(a) => Ok(a),
        Value::Object(mut o) => match o.remove("messages").or_else(|| o.remove("history")) {
            Some(Value::Array(a)) => Ok(a),
            _ => Err(Error::Format {
                index: 0,
                reason: "no `messages` array".into(),
            }),
        },
        _ => Err(Error::Format {
            index: 0,
            reason: "expected a trajectory object or a message array".into(),
        }),
    }
}

/// Reads a public agent trajectory: an OpenAI-format message list (a bare array, or an
/// object with `messages` whose messages carry `tool_calls`), or a mini-swe-agent
/// `.traj.json` (plain-text messages where each assistant turn ends in one ```bash block and
/// the environment's reply follows as a user message), which becomes `bash` tool calls and
/// their results.
pub fn read_trajectory(json: &str) -> Result<Conversation> {
    let messages = trajectory_messages(json)?;
    // SWE-agent `.traj` histories: an assistant turn names its command in `action` (and,
    // in function-calling runs, `tool_calls` answered by `tool_call_ids`).
    if messages
        .iter()
        .any(|m| m.get("action").is_some() || m.get("tool_call_ids").is_some())
    {
        return Ok(read_swe_agent(&messages));
    }
    let has_tools = messages.iter().any(|m| {
        m.get("tool_calls").is_some_and(|c| !c.is_null())
            || m.get("role") == Some(&Value::from("tool"))
    });
    if has_tools {
        return read_openai(messages);
    }
    let mut out = Vec::new();
    let mut pending: Option<String> = None;
    for (i, m) in messages.iter().enumerate() {
        let content = text(m, "content");
        match m.get("role").and_then(Value::as_str) {
            Some("system") => out.push(Message::text(Role::System, content)),
            Some("assistant") => {
                pending = None;
                match last_bash_block(&content) {
                    Some((thought, command)) => {
                        let id = format!("call_{i}");
                        out.push(bash_call(&id, thought, command));
                        pending = Some(id);
                    }
                    None => out.push(Message::text(Role::Assistant, content)),
                }
            }
            _ => match pending.take() {
                Some(id) => out.push(Message::tool_result(id, content)),
                None => out.push(Message::text(Role::User, content)),
            },
        }
    }
    Ok(Conversation::new(out))
}

/// Reads a public agent trajectory as its agent sent it to the model: the messages of a
/// mini-swe-agent `.traj.json`, a SWE-agent `.traj` `history` or an OpenAI-format list,
/// with only the fields a chat request carries (`role`, `content`, `tool_calls`,
/// `tool_call_id`). A text-only agent's observations stay user messages, as a proxy in front
/// of the model sees them; [`read_trajectory`] instead turns them into tool results.
pub fn read_as_sent(json: &str) -> Result<Conversation> {
    let messages = trajectory_messages(json)?;
    let sent: Vec<Value> = messages
        .iter()
        .map(|m| {
            let mut o = serde_json::Map::new();
            for key in ["role", "content", "tool_calls", "tool_call_id"] {
                if let Some(x) = m.get(key).filter(|x| !x.is_null()) {
                    o.insert(key.into(), x.clone());
                }
            }
            if let Some(id) = m
                .get("tool_call_ids")
                .and_then(Value::as_array)
                .and_then(|ids| ids.first())
            {
                o.insert("tool_call_id".into(), id.clone());
            }
            o.entry("content").or_insert(Value::String(String::new()));
            Value::Object(o)
        })
        .collect();
    read_openai(sent)
}

/// Reads OpenAI-format `messages`.
fn read_openai(messages: Vec<Value>) -> Result<Conversation> {
    crate::format::read(
        &Value::Array(messages).to_string(),
        Some(crate::format::Format::OpenAi),
    )
    .map(|d| d.conversation)
}

/// An assistant message that says `thought` and runs `command` as call `id` of `bash`.
fn bash_call(id: &str, thought: &str, command: &str) -> Message {
    Message::calls(
        thought.trim_end().to_string(),
        vec![ToolCall {
            id: id.to_string(),
            name: "bash".into(),
            arguments: serde_json::json!({ "command": command }).to_string(),
        }],
    )
}

/// A message field's text: a string, or the text parts of a content array joined.
fn text(m: &Value, key: &str) -> String {
    match m.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A SWE-agent history: an assistant turn with `tool_calls` keeps them (its results name
/// them in `tool_call_ids`); one with only an `action` becomes a `bash` call running it,
/// with its `thought` as the text; the observation that follows is the call's result.
fn read_swe_agent(messages: &[Value]) -> Conversation {
    let mut out = Vec::new();
    let mut pending: Option<String> = None;
    for (i, m) in messages.iter().enumerate() {
        let content = text(m, "content");
        match m.get("role").and_then(Value::as_str) {
            Some("system") => out.push(Message::text(Role::System, content)),
            Some("assistant") => {
                pending = None;
                let calls: Vec<ToolCall> = m
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .enumerate()
                    .map(|(k, c)| ToolCall {
                        id: c
                            .get("id")
                            .and_then(Value::as_str)
                            .map_or_else(|| format!("call_{i}_{k}"), str::to_string),
                        name: c
                            .pointer("/function/name")
                            .and_then(Value::as_str)
                            .unwrap_or("tool")
                            .to_string(),
                        arguments: match c.pointer("/function/arguments") {
                            Some(Value::String(s)) => s.clone(),
                            Some(v) => v.to_string(),
                            None => "{}".into(),
                        },
                    })
                    .collect();
                let action = text(m, "action");
                let thought = m
                    .get("thought")
                    .map_or_else(|| content.clone(), |_| text(m, "thought"));
                if !calls.is_empty() {
                    pending = Some(calls[0].id.clone());
                    out.push(Message::calls(thought.trim_end().to_string(), calls));
                } else if !action.trim().is_empty() {
                    let id = format!("call_{i}");
                    out.push(bash_call(&id, &thought, action.trim_end()));
                    pending = Some(id);
                } else {
                    out.push(Message::text(Role::Assistant, content));
                }
            }
            _ => {
                let id = m
                    .get("tool_call_ids")
                    .and_then(Value::as_array)
                    .and_then(|ids| ids.first())
                    .and_then(Value::as_str)
                    .map(str::to_string);
                match (pending.take(), id) {
                    (Some(p), Some(id)) if p != id => {
                        out.push(Message::text(Role::User, content));
                    }
                    (Some(p), _) => out.push(Message::tool_result(p, content)),
                    (None, _) => out.push(Message::text(Role::User, content)),
                }
            }
        }
    }
    Conversation::new(out)
}

/// The text before the last ```bash (or ```sh) block and the block's command.
fn last_bash_block(text: &str) -> Option<(&str, &str)> {
    let start = text.rfind("```bash").or_else(|| text.rfind("```sh"))?;
    let body_start = start + text[start..].find('\n')? + 1;
    let body_end = body_start + text[body_start..].find("```")?;
    Some((&text[..start], text[body_start..body_end].trim_end()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str, cmd: &str) -> Message {
        Message::calls(
            "",
            vec![ToolCall {
                id: id.into(),
                name: "bash".into(),
                arguments: serde_json::json!({ "command": cmd }).to_string(),
            }],
        )
    }

    #[test]
    fn probes_come_from_removed_messages_only() {
        let original = vec![
            Message::text(Role::User, "fix it"),
            call("1", "python -m pytest tests/test_query.py::test_union"),
            Message::tool_result(
                "1",
                "Traceback (most recent call last):\n  File \"django/db/models/query.py\", line 12, in union\nValueError: bad union\nFAILED tests/test_query.py::test_union - ValueError",
            ),
            call(
                "2",
                "sed -i 's/x/y/' django/db/models/sql.py && cat <<EOF > a.py\ndef helper():\n    pass\nEOF",
            ),
            Message::tool_result("2", "ok"),
        ];
        // Nothing removed: no probes.
        assert!(probes(&original, &original).is_empty());
        let mut compacted = original.clone();
        compacted[2].content = "[cleared]".into();
        let p = probes(&original, &compacted);
        let texts: BTreeSet<(ProbeKind, &str)> =
            p.iter().map(|p| (p.kind, p.text.as_str())).collect();
        assert!(
            texts.contains(&(ProbeKind::Path, "django/db/models/query.py")),
            "{texts:?}"
        );
        assert!(texts.contains(&(ProbeKind::Identifier, "union")));
        assert!(texts.contains(&(ProbeKind::ErrorLine, "ValueError: bad union")));
        assert!(texts.contains(&(ProbeKind::TestName, "test_union")));
        let r = retention(&original, &compacted);
        // The path and the test name are still in the kept command; the error line is gone.
        assert!(r.present < r.probes && r.present > 0, "{r:?}");
        compacted.remove(3);
        compacted.remove(3);
        let p = probes(&original, &compacted);
        assert!(p.contains(&Probe {
            kind: ProbeKind::Identifier,
            text: "helper".into()
        }));
        assert!(p.contains(&Probe {
            kind: ProbeKind::Path,
            text: "django/db/models/sql.py".into()
        }));
    }

    #[test]
    fn baselines_fit() {
        let meter = Meter::bytes();
        let mut m = vec![
            Message::text(Role::System, "s"),
            Message::text(Role::User, "task"),
        ];
        for i in 0..20 {
            m.push(call(&format!("c{i}"), "ls"));
            m.push(Message::tool_result(format!("c{i}"), "x".repeat(200)));
        }
        let total: usize = m.iter().map(|x| meter.message(x)).sum();
        for limit in [total / 2, total / 4] {
            for out in [
                truncate_oldest(&m, limit, &meter),
                observation_masking(&m, limit, &meter),
            ] {
                assert!(out.iter().map(|x| meter.message(x)).sum::<usize>() <= limit);
                assert_eq!(out[1].content, "task");
            }
        }
    }

    #[test]
    fn reads_mini_swe_agent_trajectories() {
        let traj = r#"{"messages":[
            {"role":"system","content":"You are a helpful assistant."},
            {"role":"user","content":"<pr_description>fix</pr_description>"},
            {"role":"assistant","content":"THOUGHT: look\n\n```bash\ncat a.py\n```"},
            {"role":"user","content":"<returncode>0</returncode>\n<output>x</output>"},
            {"role":"assistant","content":"no block here"},
            {"role":"user","content":"Please always provide EXACTLY ONE action"}]}"#;
        let c = read_trajectory(traj).unwrap();
        assert_eq!(c.messages.len(), 6);
        assert_eq!(c.messages[2].tool_calls[0].name, "bash");
        assert!(c.messages[2].tool_calls[0].arguments.contains("cat a.py"));
        assert_eq!(c.messages[3].role, Role::Tool);
        assert_eq!(c.messages[5].role, Role::User);
    }
}
