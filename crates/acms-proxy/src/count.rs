//! What a request costs in prompt tokens, counted the way the provider does (OpenAI's
//! cookbook recipe), with the configured meter. Every field the provider turns into prompt
//! tokens is counted: messages and their `name` and tool calls, tool definitions (`tools`,
//! legacy `functions`), `response_format`, `tool_choice`, a top-level `system`, and the
//! Responses API's `input`, `instructions` and `text`. Where the recipe is not known
//! exactly (tool schemas), the count errs high: the whole JSON plus the recipe's constants.

use acms_compact::Meter;
use acms_compact::measure::Unit;
use serde_json::Value;

/// Framing of each message (role and separators).
const PER_MESSAGE: usize = 3;
/// A message's `name` costs its text plus this.
const PER_NAME: usize = 1;
/// Priming of the reply, once per request.
pub const REPLY_PRIMING: usize = 3;
/// Framing of each tool definition, on top of its JSON text.
const PER_TOOL: usize = 7;
/// Each `properties` object of a tool schema, and each property in it.
const PER_PROPERTY: usize = 3;
/// Each `enum` item of a tool schema.
const PER_ENUM_ITEM: usize = 3;
/// The block that wraps all tool definitions, once when there are any.
const TOOLS_END: usize = 12;

/// Top-level fields that are prompt tokens besides the messages, counted as their JSON text
/// (a string as its text).
const PROMPT_FIELDS: [&str; 6] = [
    "response_format",
    "tool_choice",
    "function_call",
    "system",
    "instructions",
    "text",
];

/// Sizes in one meter, with the framing constants only for token units (bytes have none).
pub struct Counter<'m> {
    meter: &'m Meter,
    framed: bool,
}

impl<'m> Counter<'m> {
    pub fn new(meter: &'m Meter) -> Counter<'m> {
        let framed = matches!(meter.unit(), Unit::ExactTokens | Unit::EstimatedTokens);
        Counter { meter, framed }
    }

    fn k(&self, n: usize) -> usize {
        if self.framed { n } else { 0 }
    }

    fn text(&self, s: &str) -> usize {
        self.meter.text(s)
    }

    /// A string as its text, anything else as its JSON.
    fn value(&self, v: &Value) -> usize {
        match v {
            Value::String(s) => self.text(s),
            Value::Null => 0,
            other => self.text(&other.to_string()),
        }
    }

    /// Message content: a string, or parts (text parts as their text, Anthropic tool use
    /// as its name and input, a tool result as its content, anything else as its JSON).
    pub fn content(&self, v: &Value) -> usize {
        match v {
            Value::Array(parts) => parts.iter().map(|p| self.part(p)).sum(),
            other => self.value(other),
        }
    }

    fn part(&self, p: &Value) -> usize {
        match p["type"].as_str() {
            Some("tool_use") => self.value(&p["name"]) + self.text(&p["input"].to_string()),
            Some("tool_result") => self.content(&p["content"]),
            _ => match p.get("text").and_then(Value::as_str) {
                Some(t) => self.text(t),
                None => self.text(&p.to_string()),
            },
        }
    }

    /// One chat message: framing, role, content, `name`, tool calls.
    pub fn message(&self, m: &Value) -> usize {
        let mut n = self.k(PER_MESSAGE) + self.value(&m["role"]) + self.content(&m["content"]);
        n += self.name(m);
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            n += self.value(&c["function"]["name"]) + self.value(&c["function"]["arguments"]);
        }
        if !m["function_call"].is_null() {
            n += self.value(&m["function_call"]["name"])
                + self.value(&m["function_call"]["arguments"]);
        }
        n
    }

    /// A message's `name` (what the seam's own sizes leave out).
    pub fn name(&self, m: &Value) -> usize {
        match m["name"].as_str() {
            Some(name) => self.text(name) + self.k(PER_NAME),
            None => 0,
        }
    }

    /// One Responses API `input` item: a message, or any other item as its JSON.
    fn input_item(&self, item: &Value) -> usize {
        if item.get("content").is_some() {
            self.k(PER_MESSAGE) + self.value(&item["role"]) + self.content(&item["content"])
        } else {
            self.k(PER_MESSAGE) + self.value(item)
        }
    }

    /// The tool definitions (`tools` and legacy `functions`): each its JSON, its framing and
    /// the recipe's per-property and per-enum-item constants.
    fn tools(&self, body: &Value) -> usize {
        let tools: Vec<&Value> = ["tools", "functions"]
            .iter()
            .flat_map(|k| body[k].as_array().into_iter().flatten())
            .collect();
        if tools.is_empty() {
            return 0;
        }
        let each: usize = tools
            .iter()
            .map(|t| self.k(PER_TOOL + schema_constants(t)) + self.text(&t.to_string()))
            .sum();
        each + self.k(TOOLS_END)
    }

    /// Every prompt-bearing field except `messages` and `input`, by name (non-zero only).
    pub fn fields(&self, body: &Value) -> Vec<(&'static str, usize)> {
        let mut out = Vec::new();
        let tools = self.tools(body);
        if tools > 0 {
            let name = if body["tools"].is_array() {
                "tools"
            } else {
                "functions"
            };
            out.push((name, tools));
        }
        for key in PROMPT_FIELDS {
            let n = match &body[key] {
                Value::Null => 0,
                v => self.k(PER_MESSAGE) + self.content(v),
            };
            if n > 0 {
                out.push((key, n));
            }
        }
        out
    }

    /// The whole request: messages (or `input`, or a legacy `prompt`), every other
    /// prompt-bearing field, and the reply priming.
    pub fn request(&self, body: &Value) -> usize {
        let mut n = self.k(REPLY_PRIMING);
        n += body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|m| self.message(m))
            .sum::<usize>();
        n += match &body["input"] {
            Value::Array(items) => items.iter().map(|i| self.input_item(i)).sum(),
            Value::Null => 0,
            other => self.k(PER_MESSAGE) + self.value(other),
        };
        n += match &body["prompt"] {
            Value::Array(items) => items.iter().map(|i| self.value(i)).sum(),
            other => self.value(other),
        };
        n + self.fields(body).iter().map(|(_, s)| s).sum::<usize>()
    }
}

/// The recipe's constants for one tool schema: per `properties` object and property, per
/// `enum` item, anywhere in it.
fn schema_constants(v: &Value) -> usize {
    match v {
        Value::Object(o) => o
            .iter()
            .map(|(k, x)| {
                let own = match (k.as_str(), x) {
                    ("properties", Value::Object(p)) => PER_PROPERTY * (1 + p.len()),
                    ("enum", Value::Array(a)) => PER_ENUM_ITEM * a.len(),
                    _ => 0,
                };
                own + schema_constants(x)
            })
            .sum(),
        Value::Array(a) => a.iter().map(schema_constants).sum(),
        _ => 0,
    }
}
