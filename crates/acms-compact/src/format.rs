//! Readers and writers for the two conversation wire formats: OpenAI chat-completions
//! messages (`tool_calls`, `role: "tool"` results) and Anthropic messages (`tool_use` /
//! `tool_result` content blocks, top-level `system`). A document may be a bare array of
//! messages or an object with a `messages` key; other top-level keys are written back
//! unchanged.
//!
//! **Round trip:** every parsed message remembers the JSON text it came from ([`Origin`]).
//! Whatever acms did not change is written back as its input text, byte for byte: an
//! unchanged message, the top-level keys (in input order), and in a rewritten message every
//! field, block and unchanged `tool_use` the rewrite did not touch (Anthropic
//! `cache_control`, a `system` block array, OpenAI `name`, unknown fields). Prompt caching
//! depends on this, and so does fidelity: a number no f64 holds (`1e400`,
//! `123456789012345678901234567890`) or a lone UTF-16 surrogate escape (`\ud800`, common in
//! text cut by JavaScript) is never re-serialized. Only for reading are such values
//! repaired: the escape reads as U+FFFD, the number as null; both, and a dropped UTF-8
//! byte-order mark, are reported in [`Document::repairs`].
//!
//! Reading normalizes tool structure (see [`crate::model::normalize`]) and reports what it
//! fixed. Extension keys `pinned`/`required` (bool) and `timestamp` (unix seconds) are read
//! on every message and written back only where set. This module does no compaction.

use std::ops::Range;

use serde_json::value::RawValue;
use serde_json::{Value, json};

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
    /// Lone UTF-16 surrogate escapes read as U+FFFD (the output keeps them as written).
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

/// A member of the top-level object.
#[derive(Debug, Clone)]
enum Member {
    /// A key acms does not touch, with its value's input text.
    Kept(Box<RawValue>),
    /// Where `messages` goes.
    Messages,
    /// Where Anthropic's `system` goes.
    System,
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
    /// The top-level object's members in input order, or `None` for a bare array.
    envelope: Option<Vec<(String, Member)>>,
    /// The `messages` array as read (values, with lone surrogates and unreadable numbers
    /// repaired): what the readers look at.
    raw: Vec<Value>,
    /// The `messages` array as its input text: what the writers copy.
    raw_text: Vec<Box<RawValue>>,
    /// Anthropic's top-level `system` as its input text.
    raw_system: Option<Box<RawValue>>,
    /// Indexed by [`Origin`].
    sources: Vec<Source>,
    /// Origins of the messages read from each raw message, in order.
    parts: Vec<Vec<Origin>>,
}

/// The members of a JSON object in input order, each value as its input text. Fails on a
/// key that is not valid Unicode (a lone surrogate escape).
struct Fields<'a>(Vec<(String, &'a RawValue)>);

impl<'de> serde::Deserialize<'de> for Fields<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Fields<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Fields<'de>, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry::<String, &'de RawValue>()? {
                    out.push(entry);
                }
                Ok(Fields(out))
            }
        }
        d.deserialize_map(Visit)
    }
}

/// The top level of a document: a bare array of messages or an object.
enum Top<'a> {
    Array(Vec<&'a RawValue>),
    Object(Vec<(String, &'a RawValue)>),
}

/// Splits `text` into its top-level parts without reading any value: numbers and strings
/// stay as written. `None` when it is neither an array nor an object.
fn top(text: &str) -> std::result::Result<Option<Top<'_>>, serde_json::Error> {
    let whole: &RawValue = serde_json::from_str(text)?;
    Ok(match whole.get().as_bytes().first() {
        Some(b'[') => Some(Top::Array(serde_json::from_str(whole.get())?)),
        Some(b'{') => Some(Top::Object(
            serde_json::from_str::<Fields<'_>>(whole.get())?.0,
        )),
        _ => None,
    })
}

/// Parses `text` as a value for reading. Input serde_json cannot hold as a value — a lone
/// surrogate escape, a number beyond f64 such as `1e400` — is read with the escape as
/// U+FFFD and the number as null; the count of escapes replaced is added to `surrogates`.
/// The input text itself is what gets written back.
fn lossy(text: &str, surrogates: &mut usize) -> std::result::Result<Value, serde_json::Error> {
    match serde_json::from_str(text) {
        Ok(v) => Ok(v),
        Err(e) => {
            let (fixed, n, numbers) = sanitize(text);
            if n == 0 && numbers == 0 {
                return Err(e);
            }
            *surrogates += n;
            serde_json::from_str(&fixed)
        }
    }
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
    // A lone surrogate in a top-level key is the one thing the raw split cannot hold: only
    // then is the whole text repaired first.
    let fixed;
    let parsed = match top(text) {
        Ok(t) => t,
        Err(e) => {
            let (f, n, _) = sanitize_surrogates(text);
            if n == 0 {
                return Err(json_error(e));
            }
            repairs.lone_surrogates += n;
            fixed = f;
            top(&fixed).map_err(json_error)?
        }
    };
    let (members, messages) = match parsed {
        Some(Top::Array(a)) => (None, a),
        Some(Top::Object(o)) => {
            // As serde_json reads an object, the last of duplicate keys wins.
            let Some(at) = o.iter().rposition(|(k, _)| k == "messages") else {
                return Err(bad(0, "the document has no `messages` array"));
            };
            let msgs: Vec<&RawValue> = serde_json::from_str(o[at].1.get())
                .map_err(|_| bad(0, "the document has no `messages` array"))?;
            (Some((o, at)), msgs)
        }
        None => {
            return Err(bad(
                0,
                "expected an array of messages or an object with `messages`",
            ));
        }
    };
    let mut views = Vec::with_capacity(messages.len());
    for (i, m) in messages.iter().enumerate() {
        let v = lossy(m.get(), &mut repairs.lone_surrogates)
            .map_err(|_| bad(i, "the message is not readable JSON"))?;
        views.push(v);
    }
    let has_system = members
        .as_ref()
        .is_some_and(|(o, _)| o.iter().any(|(k, _)| k == "system"));
    let format = format.unwrap_or_else(|| detect(has_system, &views));
    let mut envelope = None;
    let mut raw_system = None;
    if let Some((o, at)) = members {
        let system_at = (format == Format::Anthropic)
            .then(|| o.iter().rposition(|(k, _)| k == "system"))
            .flatten();
        let mut kept = Vec::with_capacity(o.len());
        for (j, (k, v)) in o.into_iter().enumerate() {
            let member = if j == at {
                Member::Messages
            } else if Some(j) == system_at {
                raw_system = Some(v.to_owned());
                Member::System
            } else if k == "messages" || (system_at.is_some() && k == "system") {
                continue; // an earlier duplicate
            } else {
                Member::Kept(v.to_owned())
            };
            kept.push((k, member));
        }
        envelope = Some(kept);
    }
    let mut reader = Reader::default();
    match format {
        Format::OpenAi => {
            for (i, m) in views.iter().enumerate() {
                let msg = read_openai(i, m)?;
                reader.push(msg, Some(i), 0..0);
            }
        }
        Format::Anthropic => {
            if let Some(sys) = &raw_system {
                let v = lossy(sys.get(), &mut repairs.lone_surrogates)
                    .map_err(|_| bad(0, "`system` is not readable JSON"))?;
                read_anthropic_system(&v, &mut reader)?;
            }
            for (i, m) in views.iter().enumerate() {
                read_anthropic(i, m, &mut reader)?;
            }
        }
    }
    let mut parts = vec![Vec::new(); views.len()];
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
        raw: views,
        raw_text: messages.into_iter().map(ToOwned::to_owned).collect(),
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

/// [`sanitize`] without touching numbers.
fn sanitize_surrogates(text: &str) -> (String, usize, usize) {
    scan(text, false)
}

/// Replaces `\uXXXX` escapes of unpaired UTF-16 surrogates inside JSON strings with
/// `\ufffd`, and numbers that are not a finite f64 with `null`; returns the text and how
/// many of each were replaced.
fn sanitize(text: &str) -> (String, usize, usize) {
    scan(text, true)
}

fn scan(text: &str, numbers: bool) -> (String, usize, usize) {
    let b = text.as_bytes();
    let hex4 = |at: usize| -> Option<u32> {
        let s = text.get(at..at + 4)?;
        u32::from_str_radix(s, 16).ok()
    };
    let is_high = |u: u32| (0xD800..0xDC00).contains(&u);
    let is_low = |u: u32| (0xDC00..0xE000).contains(&u);
    let mut out = String::with_capacity(text.len());
    let (mut i, mut last, mut n, mut in_string) = (0usize, 0usize, 0usize, false);
    let mut replaced_numbers = 0;
    while i < b.len() {
        match (in_string, b[i]) {
            (false, b'"') => {
                in_string = true;
                i += 1;
            }
            (false, c) if numbers && (c == b'-' || c.is_ascii_digit()) => {
                let end = i + b[i..]
                    .iter()
                    .take_while(|c| matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                    .count();
                let token = &text[i..end];
                if !token.parse::<f64>().is_ok_and(f64::is_finite) {
                    out.push_str(&text[last..i]);
                    out.push_str("null");
                    last = end;
                    replaced_numbers += 1;
                }
                i = end;
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
    (out, n, replaced_numbers)
}

fn detect(has_system: bool, messages: &[Value]) -> Format {
    if has_system {
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

/// `m`'s extension keys as written fresh.
fn extensions(m: &Message) -> Vec<(&'static str, Out<'static>)> {
    let mut o = Vec::new();
    if m.pinned {
        o.push(("pinned", Out::Value(Value::Bool(true))));
    }
    if let Some(t) = m.timestamp {
        o.push(("timestamp", Out::Value(json!(t))));
    }
    o
}

/// The keys of a rewritten message acms derives: the format's own, plus the extension keys
/// when they no longer say what the input's did (otherwise the input's stay as written).
fn owned_keys<'k>(format_keys: &[&'k str], m: &Message, read: Option<&Message>) -> Vec<&'k str> {
    let mut owned = format_keys.to_vec();
    if read.is_none_or(|r| m.pinned != r.pinned || m.timestamp != r.timestamp) {
        owned.extend(EXTENSION_KEYS);
    }
    owned
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
                role: short(other),
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
                role: short(other),
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

/// A JSON value being written: input text copied as it was read, or a value acms built.
/// Only what acms changed is ever re-serialized, so numbers no f64 holds and lone surrogate
/// escapes in everything else come through byte for byte.
#[derive(Debug, Clone)]
enum Out<'a> {
    Raw(&'a RawValue),
    Value(Value),
    Array(Vec<Out<'a>>),
    Object(Vec<(String, Out<'a>)>),
}

impl serde::Serialize for Out<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            Out::Raw(r) => r.serialize(s),
            Out::Value(v) => v.serialize(s),
            Out::Array(a) => s.collect_seq(a),
            Out::Object(o) => {
                let mut m = s.serialize_map(Some(o.len()))?;
                for (k, v) in o {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
        }
    }
}

/// The members of the input object `raw`, in order, each as its input text (as values,
/// repaired, when a key is not valid Unicode); empty when it is not an object.
fn members(raw: &RawValue) -> Vec<(String, Out<'_>)> {
    if let Ok(Fields(f)) = serde_json::from_str::<Fields<'_>>(raw.get()) {
        return f.into_iter().map(|(k, v)| (k, Out::Raw(v))).collect();
    }
    match lossy(raw.get(), &mut 0) {
        Ok(Value::Object(o)) => o.into_iter().map(|(k, v)| (k, Out::Value(v))).collect(),
        _ => Vec::new(),
    }
}

/// The last member `key` of `members` (as serde_json reads duplicates).
fn member<'a>(members: &[(String, Out<'a>)], key: &str) -> Option<Out<'a>> {
    members
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
}

/// The elements of the input array `raw`, each as its input text.
fn elements(raw: &RawValue) -> Option<Vec<&RawValue>> {
    serde_json::from_str(raw.get()).ok()
}

/// `input`'s members in order, with each key in `owned` replaced by its entry in `derived`
/// (dropped when `derived` has none); derived keys the input lacks are appended.
fn merge<'a>(
    input: Vec<(String, Out<'a>)>,
    owned: &[&str],
    derived: Vec<(&str, Out<'a>)>,
) -> Out<'a> {
    Out::Object(merge_members(input, owned, derived))
}

fn merge_members<'a>(
    input: Vec<(String, Out<'a>)>,
    owned: &[&str],
    mut derived: Vec<(&str, Out<'a>)>,
) -> Vec<(String, Out<'a>)> {
    let mut out = Vec::with_capacity(input.len() + derived.len());
    for (k, v) in input {
        if !owned.contains(&k.as_str()) {
            out.push((k, v));
        } else if let Some(at) = derived.iter().position(|(d, _)| *d == k) {
            let (_, v) = derived.remove(at);
            out.push((k, v));
        }
    }
    out.extend(derived.into_iter().map(|(k, v)| (k.to_string(), v)));
    out
}

/// An [`Out`] as a value: input text is read as [`read`] reads it (lossy).
fn into_value(out: Out<'_>) -> Value {
    match out {
        Out::Raw(r) => lossy(r.get(), &mut 0).unwrap_or(Value::Null),
        Out::Value(v) => v,
        Out::Array(a) => Value::Array(a.into_iter().map(into_value).collect()),
        Out::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, into_value(v))).collect()),
    }
}

/// Writes `conversation` in `doc`'s format and envelope, as pretty JSON. What acms did not
/// change is its input text, byte for byte.
pub fn write(doc: &Document, conversation: &Conversation) -> String {
    // Serializing values and valid input text cannot fail.
    serde_json::to_string_pretty(&to_out(doc, conversation)).unwrap_or_default()
}

/// Writes `conversation` in `doc`'s format and envelope, as compact JSON (whitespace inside
/// what acms did not change is kept as it was).
pub fn write_compact(doc: &Document, conversation: &Conversation) -> String {
    serde_json::to_string(&to_out(doc, conversation)).unwrap_or_default()
}

/// The document [`write_compact`] writes, as a value. Lossy where the input is: a lone
/// surrogate escape reads as U+FFFD and a number beyond f64 as null.
pub fn to_value(doc: &Document, conversation: &Conversation) -> Value {
    into_value(to_out(doc, conversation))
}

fn to_out<'a>(doc: &'a Document, conversation: &'a Conversation) -> Out<'a> {
    let messages = Out::Array(match doc.format {
        Format::OpenAi => conversation
            .messages
            .iter()
            .map(|m| write_openai(doc, m))
            .collect(),
        Format::Anthropic => write_anthropic_messages(doc, &conversation.messages),
    });
    let mut system = (doc.format == Format::Anthropic)
        .then(|| write_anthropic_system(doc, &conversation.messages))
        .flatten();
    let Some(envelope) = &doc.envelope else {
        return match system {
            None => messages,
            Some(s) => Out::Object(vec![("system".into(), s), ("messages".into(), messages)]),
        };
    };
    // Members in input order; a `system` the input did not have goes before `messages`.
    let has_slot = envelope.iter().any(|(_, m)| matches!(m, Member::System));
    let mut messages = Some(messages);
    let mut o = Vec::with_capacity(envelope.len() + 1);
    for (k, member) in envelope {
        match member {
            Member::Kept(v) => o.push((k.clone(), Out::Raw(v))),
            Member::System => {
                if let Some(s) = system.take() {
                    o.push((k.clone(), s));
                }
            }
            Member::Messages => {
                if !has_slot && let Some(s) = system.take() {
                    o.push(("system".into(), s));
                }
                if let Some(m) = messages.take() {
                    o.push((k.clone(), m));
                }
            }
        }
    }
    Out::Object(o)
}

impl Document {
    /// The source of `m` and its index in `messages`, when it was read from there.
    fn source(&self, m: &Message) -> Option<(&Source, usize)> {
        let s = self.sources.get(m.origin?.0 as usize)?;
        let r = s.raw.filter(|r| *r < self.raw_text.len())?;
        Some((s, r))
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
    into_value(write_openai(&Document::empty(Format::OpenAi), m))
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
            raw_text: Vec::new(),
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

fn write_openai<'a>(doc: &'a Document, m: &Message) -> Out<'a> {
    let source = doc.source(m);
    if let Some((s, r)) = source
        && *m == s.read
    {
        return Out::Raw(&doc.raw_text[r]);
    }
    let read = source.map(|(s, _)| &s.read);
    let input = source.map_or_else(Vec::new, |(_, r)| members(&doc.raw_text[r]));
    let mut d: Vec<(&str, Out<'a>)> = vec![("role", Out::Value(json!(m.role.name())))];
    let content = match (read, member(&input, "content")) {
        (Some(r), Some(c)) if r.content == m.content && r.role == m.role => c,
        _ if m.role == Role::Assistant && !m.tool_calls.is_empty() && m.content.is_empty() => {
            Out::Value(Value::Null)
        }
        _ => Out::Value(Value::String(m.content.clone())),
    };
    d.push(("content", content));
    if !m.tool_calls.is_empty() {
        let calls = match (read, member(&input, "tool_calls")) {
            (Some(r), Some(c)) if r.tool_calls == m.tool_calls => c,
            _ => Out::Value(openai_calls(m)),
        };
        d.push(("tool_calls", calls));
    }
    if let Some(id) = &m.tool_call_id {
        d.push(("tool_call_id", Out::Value(json!(id))));
    }
    let owned = owned_keys(&OPENAI_KEYS, m, read);
    if owned.len() > OPENAI_KEYS.len() {
        d.extend(extensions(m));
    }
    merge(input, &owned, d)
}

fn write_anthropic_system<'a>(doc: &'a Document, messages: &[Message]) -> Option<Out<'a>> {
    let sys: Vec<&Message> = messages.iter().filter(|m| m.role.is_system()).collect();
    let read: Vec<&Source> = doc.sources.iter().filter(|s| s.raw.is_none()).collect();
    // All system content unchanged: the input's own `system`, string or block array.
    let unchanged = sys.len() == read.len()
        && sys.iter().zip(&read).all(|(m, s)| {
            doc.system_source(m)
                .is_some_and(|own| std::ptr::eq(own, *s) && **m == s.read)
        });
    if unchanged && let Some(raw) = &doc.raw_system {
        return Some(Out::Raw(raw));
    }
    let raw_blocks = doc.raw_system.as_deref().and_then(elements);
    let block = |m: &Message| -> Out<'a> {
        let own = doc
            .system_source(m)
            .and_then(|s| raw_blocks.as_ref()?.get(s.blocks.start).map(|b| (s, *b)));
        match own {
            Some((s, b)) if *m == s.read => Out::Raw(b),
            // A rewritten block keeps its other keys (`cache_control`).
            Some((_, b)) if b.get().starts_with('{') => merge(
                members(b),
                &["text"],
                vec![("text", Out::Value(json!(m.content)))],
            ),
            _ => Out::Value(json!({"type": "text", "text": m.content})),
        }
    };
    match sys.as_slice() {
        [] => None,
        [one] if raw_blocks.is_none() => Some(Out::Value(json!(one.content))),
        many => Some(Out::Array(many.iter().map(|m| block(m)).collect())),
    }
}

/// One Anthropic message being written: an input message kept whole, or blocks.
enum Entry<'a> {
    Raw(usize),
    Blocks {
        role: &'static str,
        blocks: Vec<Out<'a>>,
        /// Message-level keys: extensions and the input's unknown keys.
        keys: Vec<(String, Out<'a>)>,
    },
}

impl<'a> Entry<'a> {
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
    fn into_blocks(
        self,
        doc: &'a Document,
    ) -> (&'static str, Vec<Out<'a>>, Vec<(String, Out<'a>)>) {
        let role = self.role(doc);
        match self {
            Entry::Blocks { blocks, keys, .. } => (role, blocks, keys),
            Entry::Raw(r) => {
                let mut keys = members(&doc.raw_text[r]);
                let content = member(&keys, "content");
                keys.retain(|(k, _)| k != "role" && k != "content");
                let blocks = match (doc.raw[r].get("content"), content) {
                    (Some(Value::Array(_)), Some(Out::Raw(c))) => elements(c)
                        .unwrap_or_default()
                        .into_iter()
                        .map(Out::Raw)
                        .collect(),
                    (Some(Value::Array(b)), _) => b.iter().cloned().map(Out::Value).collect(),
                    (Some(Value::String(s)), Some(text)) if !s.is_empty() => {
                        vec![Out::Object(vec![
                            ("type".into(), Out::Value(json!("text"))),
                            ("text".into(), text),
                        ])]
                    }
                    _ => Vec::new(),
                };
                (role, blocks, keys)
            }
        }
    }
}

/// The blocks of one message: the input's own blocks when it is unchanged, else new ones
/// that keep the input blocks they can (an unchanged `tool_use`) and the unknown keys of
/// the block they replace.
fn anthropic_blocks<'a>(doc: &'a Document, m: &Message) -> Vec<Out<'a>> {
    let source = doc.source(m);
    let raw_blocks: Option<(&Source, Vec<&'a RawValue>)> = source.and_then(|(s, r)| {
        let content = member(&members(&doc.raw_text[r]), "content")?;
        let Out::Raw(content) = content else {
            return None;
        };
        let blocks = elements(content)?;
        blocks.get(s.blocks.clone()).map(|b| (s, b.to_vec()))
    });
    if let Some((s, b)) = &raw_blocks
        && *m == s.read
        && !b.is_empty()
    {
        return b.iter().map(|b| Out::Raw(b)).collect();
    }
    match m.role {
        Role::Tool => {
            let mut derived = vec![
                ("type", Out::Value(json!("tool_result"))),
                (
                    "tool_use_id",
                    Out::Value(json!(m.tool_call_id.clone().unwrap_or_default())),
                ),
                ("content", Out::Value(json!(m.content))),
            ];
            if m.is_error {
                derived.push(("is_error", Out::Value(Value::Bool(true))));
            }
            let input = match raw_blocks.as_ref().map(|(_, b)| b.as_slice()) {
                Some([b]) if b.get().starts_with('{') => members(b),
                _ => Vec::new(),
            };
            vec![merge(
                input,
                &["type", "tool_use_id", "content", "is_error"],
                derived,
            )]
        }
        Role::Assistant => {
            let mut blocks = Vec::new();
            if !m.content.is_empty() {
                blocks.push(Out::Value(json!({"type": "text", "text": m.content})));
            }
            for c in &m.tool_calls {
                // A call the rewrite did not touch is its input block, as written.
                let own = raw_blocks.as_ref().and_then(|(s, b)| {
                    let read = s.read.tool_calls.iter().find(|r| r.id == c.id)?;
                    if read != c {
                        return None;
                    }
                    b.iter().copied().find(|b| {
                        let v = lossy(b.get(), &mut 0).unwrap_or(Value::Null);
                        v.get("type").and_then(Value::as_str) == Some("tool_use")
                            && v.get("id").and_then(Value::as_str) == Some(c.id.as_str())
                    })
                });
                if let Some(b) = own {
                    blocks.push(Out::Raw(b));
                    continue;
                }
                let input: Value = serde_json::from_str(&c.arguments)
                    .ok()
                    .filter(Value::is_object)
                    .unwrap_or_else(|| json!({"arguments": c.arguments}));
                blocks.push(Out::Value(
                    json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}),
                ));
            }
            blocks
        }
        _ => vec![Out::Value(json!({"type": "text", "text": m.content}))],
    }
}

/// Anthropic has no system or tool role: system messages go to the top-level `system`, tool
/// results become `tool_result` blocks of a user message, and consecutive messages of the
/// same role are merged so roles alternate as the API requires. An input message whose
/// parts all come through unchanged and together is written as it was read.
fn write_anthropic_messages<'a>(doc: &'a Document, messages: &[Message]) -> Vec<Out<'a>> {
    let msgs: Vec<&Message> = messages.iter().filter(|m| !m.role.is_system()).collect();
    let mut entries: Vec<Entry<'a>> = Vec::new();
    let mut k = 0;
    while k < msgs.len() {
        let whole = doc.source(msgs[k]).and_then(|(_, r)| {
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
                let source = doc.source(m);
                let read = source.map(|(s, _)| &s.read);
                let input = source.map_or_else(Vec::new, |(_, r)| members(&doc.raw_text[r]));
                let owned = owned_keys(&["role", "content"], m, read);
                let extended = owned.len() > 2;
                let mut keys = merge_members(input, &owned, Vec::new());
                if extended {
                    keys.extend(extensions(m).into_iter().map(|(k, v)| (k.to_string(), v)));
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
                    if !keys.iter().any(|(k, _)| *k == key) {
                        keys.push((key, v));
                    }
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
            Entry::Raw(r) => Out::Raw(&doc.raw_text[r]),
            Entry::Blocks { role, blocks, keys } => {
                // A single plain text block acms wrote is written as a string, the common
                // form.
                let plain = |b: &Out<'_>| match b {
                    Out::Value(Value::Object(o)) => {
                        o.len() == 2 && o.get("type") == Some(&json!("text"))
                    }
                    _ => false,
                };
                let content = match blocks.as_slice() {
                    [Out::Value(b)] if plain(&blocks[0]) => Out::Value(b["text"].clone()),
                    _ => Out::Array(blocks),
                };
                let mut o = vec![("role".to_string(), Out::Value(json!(role)))];
                o.push(("content".into(), content));
                o.extend(keys);
                Out::Object(o)
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
    fn untouched_text_is_written_as_read() {
        let text = r#"{"z":1e400,"messages":[{"role":"user","content":"a \ud800"},{"content":"b","role":"assistant","x":123456789012345678901234567890}],"a":[1.50]}"#;
        let doc = read(text, None).unwrap();
        assert_eq!(doc.repairs.lone_surrogates, 1);
        assert_eq!(doc.conversation.messages[0].content, "a \u{fffd}");
        // Nothing changed: the input, byte for byte, keys in input order.
        assert_eq!(write_compact(&doc, &doc.conversation), text);
        // A rewritten message keeps its other fields in place and as written.
        let mut conv = doc.conversation.clone();
        conv.messages[1].content = "c".into();
        assert_eq!(
            write_compact(&doc, &conv),
            r#"{"z":1e400,"messages":[{"role":"user","content":"a \ud800"},{"content":"c","role":"assistant","x":123456789012345678901234567890}],"a":[1.50]}"#
        );
        // Reading sees what serde_json can hold.
        assert_eq!(to_value(&doc, &doc.conversation)["z"], Value::Null);
    }

    #[test]
    fn empty_conversation() {
        let doc = read("[]", None).unwrap();
        assert!(doc.conversation.messages.is_empty());
        assert_eq!(write(&doc, &doc.conversation), "[]");
    }
}
