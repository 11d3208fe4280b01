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
//! anywhere (a summary or ledger counts). The module also has the two baselines the
//! measure is reported beside — truncate-oldest and observation masking — and a reader for
//! public agent-trajectory files (mini-swe-agent `.traj.json`; OpenAI-format message lists).
//! It is measurement code: nothing on the compaction path calls it.

use std::collections::{BTreeSet, HashMap};
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::measure::Meter;
use crate::model::{Conversation, Message, Role, ToolCall, groups, latest_user};
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
pub fn message_probes(m: &Message, out: &mut BTreeSet<Probe>) {
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

/// Whether a group holds content no baseline may drop (system, pinned, latest request).
fn required_groups(messages: &[Message]) -> Vec<bool> {
    let latest = latest_user(messages);
    groups(messages)
        .iter()
        .map(|g| {
            g.clone()
                .any(|i| messages[i].role.is_system() || messages[i].pinned || Some(i) == latest)
        })
        .collect()
}

/// Baseline: drop the oldest whole rounds (never system, pinned or the latest request)
/// until the conversation fits `limit`.
pub fn truncate_oldest(messages: &[Message], limit: usize, meter: &Meter) -> Vec<Message> {
    let gs = groups(messages);
    let required = required_groups(messages);
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
pub const MASKED: &str = "[observation omitted]";

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

/// Reads a public agent trajectory: an OpenAI-format message list (a bare array, or an
/// object with `messages` whose messages carry `tool_calls`), or a mini-swe-agent
/// `.traj.json` (plain-text messages where each assistant turn ends in one ```bash block and
/// the environment's reply follows as a user message), which becomes `bash` tool calls and
/// their results.
pub fn read_trajectory(json: &str) -> Result<Conversation> {
    let v: Value =
        serde_json::from_str(json.trim_start_matches('\u{feff}')).map_err(|e| Error::Json {
            line: e.line(),
            column: e.column(),
        })?;
    let messages = match &v {
        Value::Array(a) => a.clone(),
        Value::Object(o) => match o.get("messages").or_else(|| o.get("history")) {
            Some(Value::Array(a)) => a.clone(),
            _ => {
                return Err(Error::Format {
                    index: 0,
                    reason: "no `messages` array".into(),
                });
            }
        },
        _ => {
            return Err(Error::Format {
                index: 0,
                reason: "expected a trajectory object or a message array".into(),
            });
        }
    };
    let has_tools = messages.iter().any(|m| {
        m.get("tool_calls").is_some_and(|c| !c.is_null())
            || m.get("role") == Some(&Value::from("tool"))
    });
    if has_tools {
        return crate::format::read(
            &Value::Array(messages).to_string(),
            Some(crate::format::Format::OpenAi),
        )
        .map(|d| d.conversation);
    }
    let text = |m: &Value| -> String {
        match m.get("content") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        }
    };
    let mut out = Vec::new();
    let mut pending: Option<String> = None;
    for (i, m) in messages.iter().enumerate() {
        let content = text(m);
        match m.get("role").and_then(Value::as_str) {
            Some("system") => out.push(Message::text(Role::System, content)),
            Some("assistant") => {
                pending = None;
                match last_bash_block(&content) {
                    Some((thought, command)) => {
                        let id = format!("call_{i}");
                        out.push(Message::calls(
                            thought.trim_end().to_string(),
                            vec![ToolCall {
                                id: id.clone(),
                                name: "bash".into(),
                                arguments: serde_json::json!({ "command": command }).to_string(),
                            }],
                        ));
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
