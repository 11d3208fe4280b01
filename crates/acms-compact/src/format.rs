//! Readers and writers for the two conversation wire formats: OpenAI chat-completions
//! messages (`tool_calls`, `role: "tool"` results) and Anthropic messages (`tool_use` /
//! `tool_result` content blocks, top-level `system`). A document may be a bare array of
//! messages or an object with a `messages` key; other top-level keys are written back
//! unchanged.
//!
//! Reading normalizes tool structure (see [`crate::model::normalize`]) and reports what it
//! fixed. Extension keys `pinned`/`required` (bool) and `timestamp` (unix seconds) are read
//! on every message and written back only where set. This module does no compaction.

use serde_json::{Map, Value, json};

use crate::model::{Conversation, Message, Role, StructureWarning, ToolCall, normalize};
use crate::{Error, Result};

/// A conversation wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    OpenAi,
    Anthropic,
}

impl std::str::FromStr for Format {
    type Err = Error;
    fn from_str(s: &str) -> Result<Format> {
        match s {
            "openai" => Ok(Format::OpenAi),
            "anthropic" => Ok(Format::Anthropic),
            other => Err(Error::Config(format!(
                "unknown format `{other}`: use openai or anthropic"
            ))),
        }
    }
}

/// A parsed document: the conversation plus what is needed to write it back in place.
#[derive(Debug, Clone)]
pub struct Document {
    pub format: Format,
    pub conversation: Conversation,
    /// Structure problems found and fixed while reading.
    pub warnings: Vec<StructureWarning>,
    /// The top-level object without its messages (and `system`), or `None` for a bare array.
    envelope: Option<Map<String, Value>>,
}

/// Parses `json`; `format` `None` detects it (a top-level `system` key or any `tool_use` /
/// `tool_result` block means Anthropic).
pub fn read(json: &str, format: Option<Format>) -> Result<Document> {
    let value: Value = serde_json::from_str(json).map_err(|e| Error::Json {
        line: e.line(),
        column: e.column(),
    })?;
    let (mut envelope, messages) = match value {
        Value::Array(a) => (None, a),
        Value::Object(mut o) => {
            let msgs = match o.remove("messages") {
                Some(Value::Array(a)) => a,
                _ => {
                    return Err(Error::Format {
                        index: 0,
                        reason: "the document has no `messages` array".into(),
                    });
                }
            };
            (Some(o), msgs)
        }
        _ => {
            return Err(Error::Format {
                index: 0,
                reason: "expected an array of messages or an object with `messages`".into(),
            });
        }
    };
    let format = format.unwrap_or_else(|| detect(envelope.as_ref(), &messages));
    let mut out = Vec::with_capacity(messages.len() + 1);
    match format {
        Format::OpenAi => {
            for (i, m) in messages.iter().enumerate() {
                out.push(read_openai(i, m)?);
            }
        }
        Format::Anthropic => {
            if let Some(sys) = envelope.as_mut().and_then(|e| e.remove("system")) {
                read_anthropic_system(&sys, &mut out)?;
            }
            for (i, m) in messages.iter().enumerate() {
                read_anthropic(i, m, &mut out)?;
            }
        }
    }
    let warnings = normalize(&mut out);
    Ok(Document {
        format,
        conversation: Conversation::new(out),
        warnings,
        envelope,
    })
}

fn detect(envelope: Option<&Map<String, Value>>, messages: &[Value]) -> Format {
    if envelope.is_some_and(|e| e.contains_key("system")) {
        return Format::Anthropic;
    }
    let anthropic_block = messages.iter().any(|m| {
        m.get("content")
            .and_then(Value::as_array)
            .is_some_and(|blocks| {
                blocks.iter().any(|b| {
                    matches!(
                        b.get("type").and_then(Value::as_str),
                        Some("tool_use" | "tool_result")
                    )
                })
            })
    });
    if anthropic_block {
        Format::Anthropic
    } else {
        Format::OpenAi
    }
}

/// A type name from the input, cut short: error messages must not carry content.
fn short(s: &str) -> String {
    s.chars().take(32).collect()
}

fn bad(index: usize, reason: impl Into<String>) -> Error {
    Error::Format {
        index,
        reason: reason.into(),
    }
}

fn str_field<'v>(index: usize, v: &'v Value, key: &str) -> Result<&'v str> {
    v.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| bad(index, format!("`{key}` must be a string")))
}

/// Reads the extension keys shared by both formats.
fn read_extensions(index: usize, v: &Value, m: &mut Message) -> Result<()> {
    for key in ["pinned", "required"] {
        match v.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::Bool(b)) => m.pinned |= *b,
            Some(_) => return Err(bad(index, format!("`{key}` must be true or false"))),
        }
    }
    match v.get("timestamp") {
        None | Some(Value::Null) => {}
        Some(Value::Number(n)) => m.timestamp = n.as_f64(),
        Some(_) => return Err(bad(index, "`timestamp` must be unix seconds (a number)")),
    }
    Ok(())
}

fn write_extensions(m: &Message, o: &mut Map<String, Value>) {
    if m.pinned {
        o.insert("pinned".into(), Value::Bool(true));
    }
    if let Some(t) = m.timestamp {
        o.insert("timestamp".into(), json!(t));
    }
}

/// Text of an OpenAI content value: a string, null, or text parts.
fn openai_text(index: usize, content: Option<&Value>) -> Result<String> {
    match content {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => {
            let mut out = String::new();
            for p in parts {
                match p.get("type").and_then(Value::as_str) {
                    Some("text") => out.push_str(str_field(index, p, "text")?),
                    other => {
                        return Err(bad(
                            index,
                            format!(
                                "content part type `{}` is not supported (text only)",
                                short(other.unwrap_or("?"))
                            ),
                        ));
                    }
                }
            }
            Ok(out)
        }
        Some(_) => Err(bad(index, "`content` must be a string, null or text parts")),
    }
}

fn read_openai(index: usize, v: &Value) -> Result<Message> {
    if !v.is_object() {
        return Err(bad(index, "a message must be an object"));
    }
    let role = match str_field(index, v, "role")? {
        "system" => Role::System,
        "developer" => Role::Developer,
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "tool" => Role::Tool,
        other => {
            return Err(Error::UnknownRole {
                index,
                role: other.chars().take(32).collect(),
            });
        }
    };
    let mut m = Message::text(role, openai_text(index, v.get("content"))?);
    if role == Role::Tool {
        m.tool_call_id = Some(str_field(index, v, "tool_call_id")?.to_string());
    }
    if let Some(calls) = v.get("tool_calls").filter(|c| !c.is_null()) {
        let calls = calls
            .as_array()
            .ok_or_else(|| bad(index, "`tool_calls` must be an array"))?;
        for c in calls {
            let f = c
                .get("function")
                .ok_or_else(|| bad(index, "a tool call needs `function`"))?;
            let arguments = match f.get("arguments") {
                Some(Value::String(s)) => s.clone(),
                None | Some(Value::Null) => String::new(),
                Some(other) => other.to_string(),
            };
            m.tool_calls.push(ToolCall {
                id: str_field(index, c, "id")?.to_string(),
                name: str_field(index, f, "name")?.to_string(),
                arguments,
            });
        }
        if role != Role::Assistant && !m.tool_calls.is_empty() {
            return Err(bad(index, "only assistant messages may have `tool_calls`"));
        }
    }
    read_extensions(index, v, &mut m)?;
    Ok(m)
}

fn anthropic_text_blocks(index: usize, content: &Value) -> Result<String> {
    match content {
        Value::String(s) => Ok(s.clone()),
        Value::Null => Ok(String::new()),
        Value::Array(blocks) => {
            let mut out = String::new();
            for b in blocks {
                match b.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        if !out.is_empty() {
                            out.push('\n');
                        }
                        out.push_str(str_field(index, b, "text")?);
                    }
                    other => {
                        return Err(bad(
                            index,
                            format!(
                                "block type `{}` is not supported here (text only)",
                                short(other.unwrap_or("?"))
                            ),
                        ));
                    }
                }
            }
            Ok(out)
        }
        _ => Err(bad(index, "`content` must be a string or blocks")),
    }
}

fn read_anthropic_system(sys: &Value, out: &mut Vec<Message>) -> Result<()> {
    match sys {
        Value::String(s) => out.push(Message::text(Role::System, s.clone())),
        Value::Array(blocks) => {
            for b in blocks {
                out.push(Message::text(
                    Role::System,
                    anthropic_text_blocks(0, &Value::Array(vec![b.clone()]))?,
                ));
            }
        }
        Value::Null => {}
        _ => return Err(bad(0, "`system` must be a string or text blocks")),
    }
    Ok(())
}

fn read_anthropic(index: usize, v: &Value, out: &mut Vec<Message>) -> Result<()> {
    if !v.is_object() {
        return Err(bad(index, "a message must be an object"));
    }
    let role = match str_field(index, v, "role")? {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        other => {
            return Err(Error::UnknownRole {
                index,
                role: other.chars().take(32).collect(),
            });
        }
    };
    let start = out.len();
    let content = v.get("content").unwrap_or(&Value::Null);
    let blocks = match content {
        Value::Array(b) => b.as_slice(),
        other => {
            out.push(Message::text(role, anthropic_text_blocks(index, other)?));
            let last = out.len() - 1;
            return read_extensions(index, v, &mut out[last]);
        }
    };
    // Text accumulated for the current user/assistant message, flushed around tool results.
    let mut text: Option<Message> = None;
    for b in blocks {
        match (role, b.get("type").and_then(Value::as_str)) {
            (_, Some("text")) => {
                let t = str_field(index, b, "text")?;
                let m = text.get_or_insert_with(|| Message::text(role, ""));
                if !m.content.is_empty() {
                    m.content.push('\n');
                }
                m.content.push_str(t);
            }
            (Role::Assistant, Some("tool_use")) => {
                let m = text.get_or_insert_with(|| Message::text(role, ""));
                m.tool_calls.push(ToolCall {
                    id: str_field(index, b, "id")?.to_string(),
                    name: str_field(index, b, "name")?.to_string(),
                    arguments: b.get("input").unwrap_or(&json!({})).to_string(),
                });
            }
            (Role::User, Some("tool_result")) => {
                if let Some(m) = text.take() {
                    out.push(m);
                }
                let mut r = Message::tool_result(
                    str_field(index, b, "tool_use_id")?,
                    anthropic_text_blocks(index, b.get("content").unwrap_or(&Value::Null))?,
                );
                r.is_error = b.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                out.push(r);
            }
            (_, other) => {
                return Err(bad(
                    index,
                    format!(
                        "block type `{}` is not supported in a {} message",
                        short(other.unwrap_or("?")),
                        role.name()
                    ),
                ));
            }
        }
    }
    if let Some(m) = text.take() {
        out.push(m);
    }
    if out.len() == start {
        out.push(Message::text(role, ""));
    }
    for m in &mut out[start..] {
        read_extensions(index, v, m)?;
    }
    Ok(())
}

/// Writes `conversation` in `doc`'s format and envelope, as pretty JSON.
pub fn write(doc: &Document, conversation: &Conversation) -> String {
    let messages = match doc.format {
        Format::OpenAi => conversation.messages.iter().map(write_openai).collect(),
        Format::Anthropic => write_anthropic_messages(&conversation.messages),
    };
    let system = (doc.format == Format::Anthropic)
        .then(|| write_anthropic_system(&conversation.messages))
        .flatten();
    let value = match &doc.envelope {
        None if system.is_none() => Value::Array(messages),
        envelope => {
            let mut o = envelope.clone().unwrap_or_default();
            if let Some(s) = system {
                o.insert("system".into(), s);
            }
            o.insert("messages".into(), Value::Array(messages));
            Value::Object(o)
        }
    };
    // Serializing a Value cannot fail.
    serde_json::to_string_pretty(&value).unwrap_or_default()
}

fn write_openai(m: &Message) -> Value {
    let mut o = Map::new();
    o.insert("role".into(), Value::String(m.role.name().into()));
    if m.role == Role::Assistant && !m.tool_calls.is_empty() && m.content.is_empty() {
        o.insert("content".into(), Value::Null);
    } else {
        o.insert("content".into(), Value::String(m.content.clone()));
    }
    if !m.tool_calls.is_empty() {
        let calls = m
            .tool_calls
            .iter()
            .map(|c| {
                json!({"id": c.id, "type": "function",
                       "function": {"name": c.name, "arguments": c.arguments}})
            })
            .collect();
        o.insert("tool_calls".into(), Value::Array(calls));
    }
    if let Some(id) = &m.tool_call_id {
        o.insert("tool_call_id".into(), Value::String(id.clone()));
    }
    write_extensions(m, &mut o);
    Value::Object(o)
}

fn write_anthropic_system(messages: &[Message]) -> Option<Value> {
    let sys: Vec<&Message> = messages.iter().filter(|m| m.role.is_system()).collect();
    match sys.as_slice() {
        [] => None,
        [one] => Some(Value::String(one.content.clone())),
        many => Some(Value::Array(
            many.iter()
                .map(|m| json!({"type": "text", "text": m.content}))
                .collect(),
        )),
    }
}

/// Anthropic has no system or tool role: system messages go to the top-level `system`, tool
/// results become `tool_result` blocks of a user message, and consecutive messages of the
/// same role are merged so roles alternate as the API requires.
fn write_anthropic_messages(messages: &[Message]) -> Vec<Value> {
    let mut out: Vec<(&'static str, Vec<Value>, Map<String, Value>)> = Vec::new();
    for m in messages.iter().filter(|m| !m.role.is_system()) {
        let (role, blocks) = match m.role {
            Role::Tool => {
                let mut b = json!({"type": "tool_result",
                    "tool_use_id": m.tool_call_id.clone().unwrap_or_default(),
                    "content": m.content});
                if m.is_error {
                    b["is_error"] = Value::Bool(true);
                }
                ("user", vec![b])
            }
            Role::Assistant => {
                let mut blocks = Vec::new();
                if !m.content.is_empty() {
                    blocks.push(json!({"type": "text", "text": m.content}));
                }
                for c in &m.tool_calls {
                    let input: Value = serde_json::from_str(&c.arguments)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| json!({"arguments": c.arguments}));
                    blocks.push(
                        json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}),
                    );
                }
                ("assistant", blocks)
            }
            _ => ("user", vec![json!({"type": "text", "text": m.content})]),
        };
        let mut ext = Map::new();
        write_extensions(m, &mut ext);
        match out.last_mut() {
            Some((r, b, e)) if *r == role => {
                b.extend(blocks);
                for (k, v) in ext {
                    e.entry(k).or_insert(v);
                }
            }
            _ => out.push((role, blocks, ext)),
        }
    }
    out.into_iter()
        .map(|(role, blocks, ext)| {
            let mut o = Map::new();
            o.insert("role".into(), Value::String(role.into()));
            // A single text block is written as a plain string, the common form.
            let content = match blocks.as_slice() {
                [b] if b["type"] == "text" => b["text"].clone(),
                _ => Value::Array(blocks),
            };
            o.insert("content".into(), content);
            o.extend(ext);
            Value::Object(o)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_roundtrip(json: &str, format: Format, expected_messages: usize) {
        let doc = read(json, None).unwrap();
        assert_eq!(doc.format, format);
        assert_eq!(doc.conversation.messages.len(), expected_messages);
        let written = write(&doc, &doc.conversation);
        let again = read(&written, Some(format)).unwrap();
        assert_eq!(again.conversation, doc.conversation, "{written}");
    }

    #[test]
    fn openai_roundtrip() {
        check_roundtrip(
            r#"{"model":"m","messages":[
              {"role":"system","content":"s"},
              {"role":"user","content":[{"type":"text","text":"hi"}],"pinned":true,"timestamp":1700000000},
              {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.rs\"}"}}]},
              {"role":"tool","tool_call_id":"c1","content":"fn main() {}"},
              {"role":"assistant","content":"done"}]}"#,
            Format::OpenAi,
            5,
        );
    }

    #[test]
    fn anthropic_roundtrip() {
        check_roundtrip(
            r#"{"system":"s","messages":[
              {"role":"user","content":"hi"},
              {"role":"assistant","content":[{"type":"text","text":"reading"},{"type":"tool_use","id":"t1","name":"read_file","input":{"path":"a.py"}}]},
              {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"boom","is_error":true},{"type":"text","text":"fix it"}]}]}"#,
            Format::Anthropic,
            5,
        );
        let doc = read(
            r#"[{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"x","input":{}}]},
               {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"r"}]}]}]"#,
            None,
        )
        .unwrap();
        assert_eq!(doc.format, Format::Anthropic);
        assert_eq!(doc.conversation.messages[1].role, Role::Tool);
        assert_eq!(doc.conversation.messages[1].content, "r");
    }

    fn check_error(json: &str, expected: fn(&Error) -> bool) {
        let err = read(json, None).unwrap_err();
        assert!(expected(&err), "{json}: {err:?}");
    }

    #[test]
    fn bad_input_is_typed() {
        check_error("{not json", |e| matches!(e, Error::Json { line: 1, .. }));
        check_error("42", |e| matches!(e, Error::Format { .. }));
        check_error(r#"{"model":"x"}"#, |e| matches!(e, Error::Format { .. }));
        check_error(
            r#"[{"role":"wizard","content":"x"}]"#,
            |e| matches!(e, Error::UnknownRole { index: 0, role } if role == "wizard"),
        );
        check_error(r#"[{"role":"user"},{"role":"tool","content":"x"}]"#, |e| {
            matches!(e, Error::Format { index: 1, .. })
        });
        check_error(r#"[{"role":"user","content":5}]"#, |e| {
            matches!(e, Error::Format { .. })
        });
        check_error(
            r#"{"system":"s","messages":[{"role":"system","content":"x"}]}"#,
            |e| matches!(e, Error::UnknownRole { .. }),
        );
        check_error(
            r#"[{"role":"user","content":"x","timestamp":"yesterday"}]"#,
            |e| matches!(e, Error::Format { .. }),
        );
    }

    #[test]
    fn orphan_result_becomes_text() {
        let doc = read(
            r#"[{"role":"user","content":"q"},{"role":"tool","tool_call_id":"nope","content":"r"}]"#,
            None,
        )
        .unwrap();
        assert_eq!(
            doc.warnings,
            vec![StructureWarning::OrphanToolResult { index: 1 }]
        );
        assert_eq!(doc.conversation.messages[1].role, Role::User);
        let out = write(&doc, &doc.conversation);
        assert!(!out.contains("tool_call_id"), "{out}");
    }

    #[test]
    fn empty_conversation() {
        let doc = read("[]", None).unwrap();
        assert!(doc.conversation.messages.is_empty());
        assert_eq!(write(&doc, &doc.conversation), "[]");
    }
}
