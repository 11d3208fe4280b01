//! Readers and writers for the two conversation wire formats: OpenAI chat-completions
//! messages (`tool_calls`, `role: "tool"` results) and Anthropic messages (`tool_use` /
//! `tool_result` content blocks, top-level `system`). A document may be a bare array of
//! messages or an object with a `messages` key; other top-level keys are written back
//! unchanged.
//!
//! **Round trip:** every parsed message remembers the JSON it came from ([`Origin`]). A
//! message that compaction left unchanged is written back as that JSON, key for key
//! (Anthropic `cache_control`, a `system` block array, OpenAI `name` and any unknown field
//! stay); a rewritten message keeps the fields the rewrite did not touch. Prompt caching
//! depends on this. A UTF-8 byte-order mark is dropped and a lone UTF-16 surrogate escape
//! (`\ud800`, common in text cut by JavaScript) becomes U+FFFD instead of rejecting the
//! whole conversation; both repairs are reported in [`Document::repairs`].
//!
//! Reading normalizes tool structure (see [`crate::model::normalize`]) and reports what it
//! fixed. Extension keys `pinned`/`required` (bool) and `timestamp` (unix seconds) are read
//! on every message and written back only where set. This module does no compaction.

use std::ops::Range;

use serde_json::{Map, Value, json};

use crate::model::{Conversation, Message, Origin, Role, StructureWarning, ToolCall, normalize};
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

/// What reading had to repair in the input text. Counts only, never text.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Repairs {
    /// A leading UTF-8 byte-order mark was dropped.
    pub bom: bool,
    /// Lone UTF-16 surrogate escapes replaced by U+FFFD.
    pub lone_surrogates: usize,
}

/// Where one parsed message came from.
#[derive(Debug, Clone)]
struct Source {
    /// Index in the `messages` array; `None` for Anthropic's top-level `system`.
    raw: Option<usize>,
    /// The content blocks it was read from; empty when it is the whole content.
    blocks: Range<usize>,
    /// The message as read, before normalization: an equal message is unchanged.
    read: Message,
}

/// A parsed document: the conversation plus what is needed to write it back in place.
#[derive(Debug, Clone)]
pub struct Document {
    pub format: Format,
    pub conversation: Conversation,
    /// Structure problems found and fixed while reading.
    pub warnings: Vec<StructureWarning>,
    /// Repairs made to the input text before it could be parsed.
    pub repairs: Repairs,
    /// The top-level object without its messages (and `system`), or `None` for a bare array.
    envelope: Option<Map<String, Value>>,
    /// The `messages` array as read.
    raw: Vec<Value>,
    /// Anthropic's top-level `system` as read.
    raw_system: Option<Value>,
    /// Indexed by [`Origin`].
    sources: Vec<Source>,
    /// Origins of the messages read from each raw message, in order.
    parts: Vec<Vec<Origin>>,
}

/// Parses `json`; `format` `None` detects it (a top-level `system` key or any `tool_use` /
/// `tool_result` block means Anthropic).
pub fn read(json: &str, format: Option<Format>) -> Result<Document> {
    let mut repairs = Repairs::default();
    let text = match json.strip_prefix('\u{feff}') {
        Some(rest) => {
            repairs.bom = true;
            rest
        }
        None => json,
    };
    let json_error = |e: serde_json::Error| Error::Json {
        line: e.line(),
        column: e.column(),
    };
    // The repair pass runs only when plain parsing fails, so valid input costs nothing extra.
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            let (fixed, n) = replace_lone_surrogates(text);
            if n == 0 {
                return Err(json_error(e));
            }
            repairs.lone_surrogates = n;
            serde_json::from_str(&fixed).map_err(json_error)?
        }
    };
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
    let mut reader = Reader::default();
    let mut raw_system = None;
    match format {
        Format::OpenAi => {
            for (i, m) in messages.iter().enumerate() {
                let msg = read_openai(i, m)?;
                reader.push(msg, Some(i), 0..0);
            }
        }
        Format::Anthropic => {
            if let Some(sys) = envelope.as_mut().and_then(|e| e.remove("system")) {
                read_anthropic_system(&sys, &mut reader)?;
                raw_system = Some(sys);
            }
            for (i, m) in messages.iter().enumerate() {
                read_anthropic(i, m, &mut reader)?;
            }
        }
    }
    let mut parts = vec![Vec::new(); messages.len()];
    for (k, s) in reader.sources.iter().enumerate() {
        if let Some(r) = s.raw {
            parts[r].push(Origin(k as u32));
        }
    }
    let mut out = reader.messages;
    let warnings = normalize(&mut out);
    Ok(Document {
        format,
        conversation: Conversation::new(out),
        warnings,
        repairs,
        envelope,
        raw: messages,
        raw_system,
        sources: reader.sources,
        parts,
    })
}

/// Parsed messages with their sources, in order.
#[derive(Default)]
struct Reader {
    messages: Vec<Message>,
    sources: Vec<Source>,
}

impl Reader {
    fn push(&mut self, mut m: Message, raw: Option<usize>, blocks: Range<usize>) {
        m.origin = Some(Origin(self.sources.len() as u32));
        self.sources.push(Source {
            raw,
            blocks,
            read: m.clone(),
        });
        self.messages.push(m);
    }
}

/// Replaces `\uXXXX` escapes of unpaired UTF-16 surrogates inside JSON strings with
/// `\ufffd`; returns the text and how many were replaced.
fn replace_lone_surrogates(text: &str) -> (String, usize) {
    let b = text.as_bytes();
    let hex4 = |at: usize| -> Option<u32> {
        let s = text.get(at..at + 4)?;
        u32::from_str_radix(s, 16).ok()
    };
    let is_high = |u: u32| (0xD800..0xDC00).contains(&u);
    let is_low = |u: u32| (0xDC00..0xE000).contains(&u);
    let mut out = String::with_capacity(text.len());
    let (mut i, mut last, mut n, mut in_string) = (0usize, 0usize, 0usize, false);
    while i < b.len() {
        match (in_string, b[i]) {
            (false, b'"') => {
                in_string = true;
                i += 1;
            }
            (false, _) => i += 1,
            (true, b'"') => {
                in_string = false;
                i += 1;
            }
            (true, b'\\') if b.get(i + 1) == Some(&b'u') => {
                let Some(u) = hex4(i + 2) else {
                    i += 2;
                    continue;
                };
                let paired = is_high(u)
                    && b.get(i + 6) == Some(&b'\\')
                    && b.get(i + 7) == Some(&b'u')
                    && hex4(i + 8).is_some_and(is_low);
                if paired {
                    i += 12;
                } else if is_high(u) || is_low(u) {
                    out.push_str(&text[last..i]);
                    out.push_str("\\ufffd");
                    n += 1;
                    i += 6;
                    last = i;
                } else {
                    i += 6;
                }
            }
            (true, b'\\') => i += 2,
            (true, _) => i += 1,
        }
    }
    out.push_str(text.get(last..).unwrap_or(""));
    (out, n)
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

/// The keys the extension reader owns.
const EXTENSION_KEYS: [&str; 3] = ["pinned", "required", "timestamp"];

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

/// Writes `m`'s extension keys, reusing the input's own keys when they still say the same.
fn write_extensions_like(
    m: &Message,
    read: &Message,
    raw: &Map<String, Value>,
    o: &mut Map<String, Value>,
) {
    if m.pinned == read.pinned && m.timestamp == read.timestamp {
        for k in EXTENSION_KEYS {
            if let Some(v) = raw.get(k) {
                o.insert(k.into(), v.clone());
            }
        }
    } else {
        write_extensions(m, o);
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

fn read_anthropic_system(sys: &Value, reader: &mut Reader) -> Result<()> {
    match sys {
        Value::String(s) => reader.push(Message::text(Role::System, s.clone()), None, 0..0),
        Value::Array(blocks) => {
            for (j, b) in blocks.iter().enumerate() {
                let text = anthropic_text_blocks(0, &Value::Array(vec![b.clone()]))?;
                reader.push(Message::text(Role::System, text), None, j..j + 1);
            }
        }
        Value::Null => {}
        _ => return Err(bad(0, "`system` must be a string or text blocks")),
    }
    Ok(())
}

fn read_anthropic(index: usize, v: &Value, reader: &mut Reader) -> Result<()> {
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
    let mut read = Vec::new();
    let content = v.get("content").unwrap_or(&Value::Null);
    let blocks = match content {
        Value::Array(b) => b.as_slice(),
        other => {
            read.push((
                Message::text(role, anthropic_text_blocks(index, other)?),
                0..0,
            ));
            &[]
        }
    };
    // Text accumulated for the current user/assistant message, flushed around tool results,
    // with the first block it came from.
    let mut text: Option<(Message, usize)> = None;
    for (j, b) in blocks.iter().enumerate() {
        match (role, b.get("type").and_then(Value::as_str)) {
            (_, Some("text")) => {
                let t = str_field(index, b, "text")?;
                let (m, _) = text.get_or_insert_with(|| (Message::text(role, ""), j));
                if !m.content.is_empty() {
                    m.content.push('\n');
                }
                m.content.push_str(t);
            }
            (Role::Assistant, Some("tool_use")) => {
                let (m, _) = text.get_or_insert_with(|| (Message::text(role, ""), j));
                m.tool_calls.push(ToolCall {
                    id: str_field(index, b, "id")?.to_string(),
                    name: str_field(index, b, "name")?.to_string(),
                    arguments: b.get("input").unwrap_or(&json!({})).to_string(),
                });
            }
            (Role::User, Some("tool_result")) => {
                if let Some((m, start)) = text.take() {
                    read.push((m, start..j));
                }
                let mut r = Message::tool_result(
                    str_field(index, b, "tool_use_id")?,
                    anthropic_text_blocks(index, b.get("content").unwrap_or(&Value::Null))?,
                );
                r.is_error = b.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                read.push((r, j..j + 1));
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
    if let Some((m, start)) = text.take() {
        read.push((m, start..blocks.len()));
    }
    if read.is_empty() {
        read.push((Message::text(role, ""), 0..0));
    }
    for (mut m, range) in read {
        read_extensions(index, v, &mut m)?;
        reader.push(m, Some(index), range);
    }
    Ok(())
}

/// Writes `conversation` in `doc`'s format and envelope, as pretty JSON.
pub fn write(doc: &Document, conversation: &Conversation) -> String {
    // Serializing a Value cannot fail.
    serde_json::to_string_pretty(&to_value(doc, conversation)).unwrap_or_default()
}

/// Writes `conversation` in `doc`'s format and envelope, as one JSON value.
pub fn to_value(doc: &Document, conversation: &Conversation) -> Value {
    let messages = match doc.format {
        Format::OpenAi => conversation
            .messages
            .iter()
            .map(|m| write_openai(doc, m))
            .collect(),
        Format::Anthropic => write_anthropic_messages(doc, &conversation.messages),
    };
    let system = (doc.format == Format::Anthropic)
        .then(|| write_anthropic_system(doc, &conversation.messages))
        .flatten();
    match &doc.envelope {
        None if system.is_none() => Value::Array(messages),
        envelope => {
            let mut o = envelope.clone().unwrap_or_default();
            if let Some(s) = system {
                o.insert("system".into(), s);
            }
            o.insert("messages".into(), Value::Array(messages));
            Value::Object(o)
        }
    }
}

/// Writes `conversation` in `doc`'s format as compact JSON: the same document as
/// [`to_value`]`.to_string()`, without first copying every unchanged message into a new
/// value (they are serialized straight from the document).
pub fn write_compact(doc: &Document, conversation: &Conversation) -> String {
    if doc.format != Format::OpenAi {
        return to_value(doc, conversation).to_string();
    }
    let mut out: Vec<u8> = Vec::new();
    let write_messages = |out: &mut Vec<u8>| {
        out.push(b'[');
        for (i, m) in conversation.messages.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            // Writing JSON values to a Vec cannot fail.
            let _ = match doc.source(m) {
                Some((s, raw)) if *m == s.read => serde_json::to_writer(&mut *out, raw),
                _ => serde_json::to_writer(&mut *out, &write_openai(doc, m)),
            };
        }
        out.push(b']');
    };
    match &doc.envelope {
        None => write_messages(&mut out),
        Some(envelope) => {
            // Keys in the order `to_value` writes them (a sorted map), `messages` among them.
            out.push(b'{');
            let mut first = true;
            let mut messages_done = false;
            let mut key = |out: &mut Vec<u8>, k: &str| {
                if !first {
                    out.push(b',');
                }
                first = false;
                let _ = serde_json::to_writer(&mut *out, k);
                out.push(b':');
            };
            for (k, v) in envelope {
                if !messages_done && k.as_str() > "messages" {
                    key(&mut out, "messages");
                    write_messages(&mut out);
                    messages_done = true;
                }
                key(&mut out, k);
                let _ = serde_json::to_writer(&mut out, v);
            }
            if !messages_done {
                key(&mut out, "messages");
                write_messages(&mut out);
            }
            out.push(b'}');
        }
    }
    // serde_json writes valid UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

impl Document {
    /// The source of `m` when it was read from this document's `messages` array.
    fn source(&self, m: &Message) -> Option<(&Source, &Value)> {
        let s = self.sources.get(m.origin?.0 as usize)?;
        Some((s, self.raw.get(s.raw?)?))
    }

    /// The source of `m` when it was read from Anthropic's top-level `system`.
    fn system_source(&self, m: &Message) -> Option<&Source> {
        self.sources
            .get(m.origin?.0 as usize)
            .filter(|s| s.raw.is_none())
    }
}

/// One message in OpenAI chat-completions form (for a request built in code).
pub fn openai_message(m: &Message) -> Value {
    write_openai(&Document::empty(Format::OpenAi), m)
}

/// Reads one OpenAI message object (a provider's reply).
pub fn read_openai_message(v: &Value) -> Result<Message> {
    read_openai(0, v)
}

impl Document {
    /// A document with no source: every message is written fresh.
    fn empty(format: Format) -> Document {
        Document {
            format,
            conversation: Conversation::default(),
            warnings: Vec::new(),
            repairs: Repairs::default(),
            envelope: None,
            raw: Vec::new(),
            raw_system: None,
            sources: Vec::new(),
            parts: Vec::new(),
        }
    }
}

/// Keys [`write_openai`] derives from the message; every other key of the input is kept.
const OPENAI_KEYS: [&str; 4] = ["role", "content", "tool_calls", "tool_call_id"];

fn openai_calls(m: &Message) -> Value {
    m.tool_calls
        .iter()
        .map(|c| {
            json!({"id": c.id, "type": "function",
                   "function": {"name": c.name, "arguments": c.arguments}})
        })
        .collect()
}

fn write_openai(doc: &Document, m: &Message) -> Value {
    let source = doc.source(m);
    if let Some((s, raw)) = source
        && *m == s.read
    {
        return raw.clone();
    }
    let empty = Map::new();
    let (read, raw) = match source {
        Some((s, Value::Object(raw))) => (Some(&s.read), raw),
        _ => (None, &empty),
    };
    // Unknown keys of the input (`name`, provider extensions) stay on a rewritten message.
    let mut o: Map<String, Value> = raw
        .iter()
        .filter(|(k, _)| {
            !OPENAI_KEYS.contains(&k.as_str()) && !EXTENSION_KEYS.contains(&k.as_str())
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    o.insert("role".into(), Value::String(m.role.name().into()));
    match (read, raw.get("content")) {
        (Some(r), Some(c)) if r.content == m.content && r.role == m.role => {
            o.insert("content".into(), c.clone());
        }
        _ if m.role == Role::Assistant && !m.tool_calls.is_empty() && m.content.is_empty() => {
            o.insert("content".into(), Value::Null);
        }
        _ => {
            o.insert("content".into(), Value::String(m.content.clone()));
        }
    }
    if !m.tool_calls.is_empty() {
        let calls = match (read, raw.get("tool_calls")) {
            (Some(r), Some(c)) if r.tool_calls == m.tool_calls => c.clone(),
            _ => openai_calls(m),
        };
        o.insert("tool_calls".into(), calls);
    }
    if let Some(id) = &m.tool_call_id {
        o.insert("tool_call_id".into(), Value::String(id.clone()));
    }
    match read {
        Some(r) => write_extensions_like(m, r, raw, &mut o),
        None => write_extensions(m, &mut o),
    }
    Value::Object(o)
}

fn write_anthropic_system(doc: &Document, messages: &[Message]) -> Option<Value> {
    let sys: Vec<&Message> = messages.iter().filter(|m| m.role.is_system()).collect();
    let read: Vec<&Source> = doc.sources.iter().filter(|s| s.raw.is_none()).collect();
    // All system content unchanged: the input's own `system`, string or block array.
    let unchanged = sys.len() == read.len()
        && sys.iter().zip(&read).all(|(m, s)| {
            doc.system_source(m)
                .is_some_and(|own| std::ptr::eq(own, *s) && **m == s.read)
        });
    if unchanged && let Some(raw) = &doc.raw_system {
        return Some(raw.clone());
    }
    let raw_blocks = doc.raw_system.as_ref().and_then(Value::as_array);
    let block = |m: &Message| -> Value {
        let own = doc
            .system_source(m)
            .and_then(|s| raw_blocks?.get(s.blocks.start).map(|b| (s, b)));
        match own {
            Some((s, b)) if *m == s.read => b.clone(),
            // A rewritten block keeps its other keys (`cache_control`).
            Some((_, Value::Object(b))) => {
                let mut b = b.clone();
                b.insert("text".into(), Value::String(m.content.clone()));
                Value::Object(b)
            }
            _ => json!({"type": "text", "text": m.content}),
        }
    };
    match sys.as_slice() {
        [] => None,
        [one] if raw_blocks.is_none() => Some(Value::String(one.content.clone())),
        many => Some(Value::Array(many.iter().map(|m| block(m)).collect())),
    }
}

/// One Anthropic message being written: an input message kept whole, or blocks.
enum Entry {
    Raw(usize),
    Blocks {
        role: &'static str,
        blocks: Vec<Value>,
        /// Message-level keys: extensions and the input's unknown keys.
        keys: Map<String, Value>,
    },
}

impl Entry {
    fn role(&self, doc: &Document) -> &'static str {
        match self {
            Entry::Raw(r) => match doc.raw[*r].get("role").and_then(Value::as_str) {
                Some("assistant") => "assistant",
                _ => "user",
            },
            Entry::Blocks { role, .. } => role,
        }
    }

    /// The entry as blocks, so another entry can be merged into it.
    fn into_blocks(self, doc: &Document) -> (&'static str, Vec<Value>, Map<String, Value>) {
        let role = self.role(doc);
        match self {
            Entry::Blocks { blocks, keys, .. } => (role, blocks, keys),
            Entry::Raw(r) => {
                let mut keys = doc.raw[r].as_object().cloned().unwrap_or_default();
                keys.remove("role");
                let blocks = match keys.remove("content") {
                    Some(Value::Array(b)) => b,
                    Some(Value::String(s)) if !s.is_empty() => {
                        vec![json!({"type": "text", "text": s})]
                    }
                    _ => Vec::new(),
                };
                (role, blocks, keys)
            }
        }
    }
}

/// The blocks of one message: the input's own blocks when it is unchanged, else new ones
/// that keep the unknown keys of the block they replace.
fn anthropic_blocks(doc: &Document, m: &Message) -> Vec<Value> {
    let source = doc.source(m);
    let raw_blocks = source.and_then(|(s, raw)| {
        let blocks = raw.get("content")?.as_array()?;
        blocks.get(s.blocks.clone()).map(|b| (s, b))
    });
    if let Some((s, b)) = raw_blocks
        && *m == s.read
        && !b.is_empty()
    {
        return b.to_vec();
    }
    match m.role {
        Role::Tool => {
            let mut b = match raw_blocks {
                Some((_, [Value::Object(b)])) => b.clone(),
                _ => Map::new(),
            };
            b.insert("type".into(), json!("tool_result"));
            b.insert(
                "tool_use_id".into(),
                json!(m.tool_call_id.clone().unwrap_or_default()),
            );
            b.insert("content".into(), json!(m.content));
            if m.is_error {
                b.insert("is_error".into(), Value::Bool(true));
            } else {
                b.remove("is_error");
            }
            vec![Value::Object(b)]
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
                blocks
                    .push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
            }
            blocks
        }
        _ => vec![json!({"type": "text", "text": m.content})],
    }
}

/// Anthropic has no system or tool role: system messages go to the top-level `system`, tool
/// results become `tool_result` blocks of a user message, and consecutive messages of the
/// same role are merged so roles alternate as the API requires. An input message whose
/// parts all come through unchanged and together is written as it was read.
fn write_anthropic_messages(doc: &Document, messages: &[Message]) -> Vec<Value> {
    let msgs: Vec<&Message> = messages.iter().filter(|m| !m.role.is_system()).collect();
    let mut entries: Vec<Entry> = Vec::new();
    let mut k = 0;
    while k < msgs.len() {
        let whole = doc.source(msgs[k]).and_then(|(s, _)| {
            let r = s.raw?;
            let parts = &doc.parts[r];
            let run = msgs.get(k..k + parts.len())?;
            let intact = run.iter().zip(parts).all(|(m, o)| {
                m.origin == Some(*o) && doc.sources.get(o.0 as usize).is_some_and(|s| **m == s.read)
            });
            intact.then_some((r, parts.len()))
        });
        let entry = match whole {
            Some((r, n)) => {
                k += n;
                Entry::Raw(r)
            }
            None => {
                let m = msgs[k];
                k += 1;
                let role = if m.role == Role::Assistant {
                    "assistant"
                } else {
                    "user"
                };
                let mut keys = Map::new();
                match doc.source(m) {
                    Some((s, Value::Object(raw))) => {
                        for (key, v) in raw {
                            if !["role", "content"].contains(&key.as_str())
                                && !EXTENSION_KEYS.contains(&key.as_str())
                            {
                                keys.insert(key.clone(), v.clone());
                            }
                        }
                        write_extensions_like(m, &s.read, raw, &mut keys);
                    }
                    _ => write_extensions(m, &mut keys),
                }
                Entry::Blocks {
                    role,
                    blocks: anthropic_blocks(doc, m),
                    keys,
                }
            }
        };
        // Same-role neighbours are merged (roles must alternate), except two input
        // messages that were already neighbours in the input: those stay as they were.
        let input_neighbours = matches!(
            (entries.last(), &entry),
            (Some(Entry::Raw(a)), Entry::Raw(b)) if *a + 1 == *b
        );
        match entries.pop() {
            Some(prev) if prev.role(doc) == entry.role(doc) && !input_neighbours => {
                let (role, mut blocks, mut keys) = prev.into_blocks(doc);
                let (_, more, more_keys) = entry.into_blocks(doc);
                blocks.extend(more);
                for (key, v) in more_keys {
                    keys.entry(key).or_insert(v);
                }
                entries.push(Entry::Blocks { role, blocks, keys });
            }
            Some(prev) => {
                entries.push(prev);
                entries.push(entry);
            }
            None => entries.push(entry),
        }
    }
    entries
        .into_iter()
        .map(|e| match e {
            Entry::Raw(r) => doc.raw[r].clone(),
            Entry::Blocks { role, blocks, keys } => {
                let mut o = Map::new();
                o.insert("role".into(), Value::String(role.into()));
                // A single plain text block is written as a string, the common form.
                let plain = |b: &Value| {
                    b.as_object()
                        .is_some_and(|o| o.len() == 2 && o.get("type") == Some(&json!("text")))
                };
                let content = match blocks.as_slice() {
                    [b] if plain(b) => b["text"].clone(),
                    _ => Value::Array(blocks),
                };
                o.insert("content".into(), content);
                o.extend(keys);
                Value::Object(o)
            }
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
