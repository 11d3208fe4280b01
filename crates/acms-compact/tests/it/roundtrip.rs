//! Unchanged messages round-trip unchanged through read and write (prompt caching depends
//! on it): Anthropic `cache_control` and `system` block arrays, OpenAI `name` and unknown
//! fields. A lone UTF-16 surrogate or a byte-order mark does not reject the conversation.

use acms_compact::format::{self, Format};
use acms_compact::model::{Role, is_cleared};
use acms_compact::{AssemblyPolicy, CompactionProfile, Meter, Seam};
use serde_json::{Value, json};

fn same(input: &str, format: Format) {
    let doc = format::read(input, None).unwrap();
    assert_eq!(doc.format, format);
    let out: Value = serde_json::from_str(&format::write(&doc, &doc.conversation)).unwrap();
    let expected: Value = serde_json::from_str(input.trim_start_matches('\u{feff}')).unwrap();
    assert_eq!(out, expected);
}

const ANTHROPIC: &str = r#"{"model":"claude","max_tokens":10,
  "system":[{"type":"text","text":"You are careful.","cache_control":{"type":"ephemeral"}},
            {"type":"text","text":"Second block."}],
  "messages":[
    {"role":"user","content":[{"type":"text","text":"fix it","cache_control":{"type":"ephemeral"}}]},
    {"role":"assistant","content":[{"type":"text","text":"reading"},{"type":"tool_use","id":"t1","name":"read_file","input":{"path":"a.py"},"cache_control":{"type":"ephemeral"}}]},
    {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"BIG BODY"}],"cache_control":{"type":"ephemeral"}},{"type":"text","text":"now fix"}]},
    {"role":"assistant","content":"done","x-vendor":{"k":1}},
    {"role":"user","content":"thanks"}]}"#;

const OPENAI: &str = r#"{"model":"gpt","temperature":0,"messages":[
    {"role":"system","content":"rules","name":"policy"},
    {"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}],"name":"alice","x-extra":[1,2]},
    {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.rs\"}"},"x-call":true}],"refusal":null},
    {"role":"tool","tool_call_id":"c1","content":"fn main() {}","name":"read_file"},
    {"role":"user","content":"more"}]}"#;

#[test]
fn unchanged_documents_round_trip_exactly() {
    same(ANTHROPIC, Format::Anthropic);
    same(OPENAI, Format::OpenAi);
    same(
        r#"{"system":"plain string","messages":[{"role":"user","content":"x"}]}"#,
        Format::Anthropic,
    );
}

#[test]
fn unchanged_messages_keep_their_fields_when_others_change() {
    // Clear the Anthropic tool result: everything else stays as it was read.
    let doc = format::read(ANTHROPIC, None).unwrap();
    let mut conv = doc.conversation.clone();
    let i = conv
        .messages
        .iter()
        .position(|m| m.role == Role::Tool)
        .unwrap();
    conv.messages[i].content = "[Old tool result content cleared]".into();
    let out: Value = serde_json::from_str(&format::write(&doc, &conv)).unwrap();
    let input: Value = serde_json::from_str(ANTHROPIC).unwrap();
    assert_eq!(out["system"], input["system"]);
    assert_eq!(out["messages"][0], input["messages"][0]);
    assert_eq!(out["messages"][1], input["messages"][1]);
    assert_eq!(out["messages"][3], input["messages"][3]);
    let block = &out["messages"][2]["content"][0];
    assert_eq!(block["content"], "[Old tool result content cleared]");
    assert_eq!(block["cache_control"], json!({"type":"ephemeral"}));
    assert_eq!(
        out["messages"][2]["content"][1],
        input["messages"][2]["content"][1]
    );

    // OpenAI: a rewritten tool result keeps `name`; untouched messages are as read.
    let doc = format::read(OPENAI, None).unwrap();
    let mut conv = doc.conversation.clone();
    conv.messages[3].content = "[cleared]".into();
    let out: Value = serde_json::from_str(&format::write(&doc, &conv)).unwrap();
    let input: Value = serde_json::from_str(OPENAI).unwrap();
    for k in [0, 1, 2, 4] {
        assert_eq!(out["messages"][k], input["messages"][k], "message {k}");
    }
    assert_eq!(out["messages"][3]["name"], "read_file");
    assert_eq!(out["messages"][3]["content"], "[cleared]");
    assert_eq!(out["model"], "gpt");
}

#[test]
fn lone_surrogates_and_bom_do_not_reject_the_conversation() {
    let text = "\u{feff}[{\"role\":\"user\",\"content\":\"cut \\ud800 here \\udfff and a pair \\ud83e\\udd80 ok \\\\ud800 literal\"}]";
    let doc = format::read(text, None).unwrap();
    assert!(doc.repairs.bom);
    assert_eq!(doc.repairs.lone_surrogates, 2);
    let c = &doc.conversation.messages[0].content;
    assert_eq!(
        c,
        "cut \u{fffd} here \u{fffd} and a pair 🦀 ok \\ud800 literal"
    );
    // A BOM alone, with valid JSON.
    let doc = format::read("\u{feff}[{\"role\":\"user\",\"content\":\"x\"}]", None).unwrap();
    assert!(doc.repairs.bom);
    assert_eq!(doc.repairs.lone_surrogates, 0);
    // Still an error when the JSON is broken for another reason.
    assert!(format::read("[{\"role\":\"user\",\"content\":\"\\ud800", None).is_err());
}

#[test]
fn compaction_keeps_unchanged_messages_verbatim() {
    // Compact an Anthropic conversation whose old tool results must go: the system block
    // array with cache_control and the first user message survive as read.
    let mut messages = vec![
        json!({"role":"user","content":[{"type":"text","text":"task","cache_control":{"type":"ephemeral"}}]}),
    ];
    for i in 0..12 {
        messages.push(json!({"role":"assistant","content":[{"type":"tool_use","id":format!("t{i}"),"name":"run","input":{"command":"pytest"}}]}));
        messages.push(json!({"role":"user","content":[{"type":"tool_result","tool_use_id":format!("t{i}"),"content":"line of output\n".repeat(200)}]}));
    }
    messages.push(json!({"role":"user","content":"go on"}));
    let doc_json = json!({"system":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}}],"messages":messages}).to_string();
    let doc = format::read(&doc_json, None).unwrap();
    let meter = Meter::tokens(acms_core::Tokenizer::Cl100kBase);
    let size: usize = doc
        .conversation
        .messages
        .iter()
        .map(|m| meter.message(m))
        .sum();
    let seam = Seam::new(
        CompactionProfile::tiered(AssemblyPolicy::new(size / 2), meter).unwrap(),
        None,
    )
    .unwrap();
    let p = seam
        .prepare(None, doc.conversation.messages.clone())
        .unwrap();
    assert!(p.changed);
    assert!(p.messages.iter().any(|m| is_cleared(&m.content)));
    let out: Value = serde_json::from_str(&format::write(
        &doc,
        &acms_compact::Conversation::new(p.messages),
    ))
    .unwrap();
    let input: Value = serde_json::from_str(&doc_json).unwrap();
    assert_eq!(out["system"], input["system"]);
    assert_eq!(out["messages"][0], input["messages"][0]);
    assert_eq!(
        out["messages"].as_array().unwrap().last(),
        input["messages"].as_array().unwrap().last()
    );
}

#[test]
fn compact_writer_writes_the_same_document_as_to_value() {
    // What the proxy forwards: unchanged, rewritten, dropped and new messages.
    for input in [OPENAI, ANTHROPIC, r#"[{"role":"user","content":"bare"}]"#] {
        let doc = format::read(input, None).unwrap();
        let same: Value =
            serde_json::from_str(&format::write_compact(&doc, &doc.conversation)).unwrap();
        assert_eq!(same, format::to_value(&doc, &doc.conversation));
        let mut conv = doc.conversation.clone();
        if let Some(i) = conv.messages.iter().position(|m| m.role == Role::Tool) {
            conv.messages[i].content = "[Old tool result content cleared]".into();
        }
        conv.messages.remove(0);
        conv.messages.push(acms_compact::Message::text(
            Role::User,
            "new é \u{2028} \"q\"",
        ));
        let changed: Value = serde_json::from_str(&format::write_compact(&doc, &conv)).unwrap();
        assert_eq!(changed, format::to_value(&doc, &conv));
    }
}
