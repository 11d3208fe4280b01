//! Bad input degrades to typed errors or warnings, never a panic.

use acms_compact::format::{self, Format};
use acms_compact::model::{Message, Role, StructureWarning};
use acms_compact::{CompactConfig, Compactor, Conversation, Error, Meter, Outcome};
use acms_core::Tokenizer;

use crate::{assert_valid, call, filler};

fn check_read_error(json: &str, expected: fn(&Error) -> bool) {
    match format::read(json, None) {
        Err(e) => assert!(expected(&e), "{e:?}"),
        Ok(doc) => panic!("expected an error, got {doc:?}"),
    }
}

#[test]
fn malformed_json_and_unknown_roles() {
    check_read_error("[{\"role\": \"user\", ", |e| {
        matches!(e, Error::Json { .. })
    });
    check_read_error("", |e| matches!(e, Error::Json { .. }));
    check_read_error(r#"[{"role":"function","content":"x"}]"#, |e| {
        matches!(e, Error::UnknownRole { index: 0, .. })
    });
    check_read_error(
        r#"{"system":"s","messages":[{"role":"tool","content":"x"}]}"#,
        |e| matches!(e, Error::UnknownRole { .. }),
    );
    // The error names what to fix, not the content.
    let e = format::read(r#"[{"role":"wizard"}]"#, None).unwrap_err();
    assert!(e.to_string().contains("unknown role `wizard`"), "{e}");
}

#[test]
fn orphan_tool_result_is_reported_then_kept_as_text() {
    let json = r#"[{"role":"system","content":"s"},
        {"role":"user","content":"q"},
        {"role":"tool","tool_call_id":"ghost","content":"stale output"},
        {"role":"assistant","content":"ok"}]"#;
    let doc = format::read(json, Some(Format::OpenAi)).unwrap();
    assert_eq!(
        doc.warnings,
        vec![StructureWarning::OrphanToolResult { index: 2 }]
    );
    let m = &doc.conversation.messages[2];
    assert_eq!(m.role, Role::User);
    assert!(m.content.ends_with("stale output"));
    // The compactor also reports orphans in a conversation built by hand.
    let conv = Conversation::new(vec![
        Message::text(Role::User, "q"),
        Message::tool_result("ghost", "x"),
    ]);
    let out = Compactor::new(CompactConfig::new(10_000), Meter::bytes())
        .unwrap()
        .compact(&conv)
        .unwrap();
    assert_eq!(
        out.diagnostics.warnings,
        vec![StructureWarning::OrphanToolResult { index: 1 }]
    );
}

#[test]
fn single_message_bigger_than_limit() {
    let meter = Meter::tokens(Tokenizer::Cl100kBase);
    // An old tool result bigger than the limit: compaction removes it.
    let mut conv = vec![
        Message::text(Role::System, "s"),
        Message::text(Role::User, "read it"),
        call("c1", "read_file", r#"{"path":"big.log"}"#),
        Message::tool_result("c1", filler("log", 2000)),
        Message::text(Role::User, "now summarize"),
    ];
    let c = Compactor::new(CompactConfig::new(300), meter.clone()).unwrap();
    let out = c.compact(&Conversation::new(conv.clone())).unwrap();
    assert_valid(&Conversation::new(conv.clone()), &out, 300, &meter);
    // The latest user message itself bigger than the limit: a typed error.
    conv.push(Message::text(Role::User, filler("paste", 2000)));
    assert!(matches!(
        c.compact(&Conversation::new(conv)),
        Err(Error::Irreducible { .. })
    ));
}

#[test]
fn empty_conversation() {
    let doc = format::read("[]", None).unwrap();
    let out = Compactor::new(CompactConfig::new(1), Meter::bytes())
        .unwrap()
        .compact(&doc.conversation)
        .unwrap();
    assert!(out.conversation.messages.is_empty());
    assert_eq!(out.diagnostics.outcome, Outcome::WithinLimit);
    assert!(Compactor::new(CompactConfig::new(0), Meter::bytes()).is_err());
}

#[test]
fn ten_megabyte_conversation() {
    // ~10 MB of OpenAI JSON: 440 rounds of 23 KB tool output.
    let mut msgs = vec![serde_json::json!({"role":"system","content":"sys"})];
    let body = filler("build", 380);
    for r in 0..440 {
        msgs.push(serde_json::json!({"role":"user","content":format!("step {r}")}));
        msgs.push(serde_json::json!({"role":"assistant","content":null,"tool_calls":[
            {"id":format!("c{r}"),"type":"function","function":{"name":"bash","arguments":"{\"cmd\":\"make\"}"}}]}));
        msgs.push(serde_json::json!({"role":"tool","tool_call_id":format!("c{r}"),"content":body}));
    }
    let json = serde_json::to_string(&msgs).unwrap();
    assert!(json.len() > 10_000_000, "{}", json.len());
    let doc = format::read(&json, None).unwrap();
    let meter = Meter::bytes();
    let limit = 200_000;
    let out = Compactor::new(CompactConfig::new(limit), meter.clone())
        .unwrap()
        .compact(&doc.conversation)
        .unwrap();
    assert_valid(&doc.conversation, &out, limit, &meter);
    let written = format::write(&doc, &out.conversation);
    assert!(written.len() < json.len() / 10);
}
