//! Integration tests of acms-compact: one binary, one module per concern.

mod bad_input;
mod fixtures;
mod privacy;
mod props;
mod retention;
mod roundtrip;
mod seam;
mod tiers;
mod untrusted;

use acms_compact::model::{Message, Role, ToolCall};
use acms_compact::verify::{Reference, structure};
use acms_compact::{Compacted, Conversation, Measured, Meter};

/// An assistant message calling `name` with `args` (JSON), id `id`.
pub fn call(id: &str, name: &str, args: &str) -> Message {
    Message::calls(
        "",
        vec![ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: args.into(),
        }],
    )
}

/// `n` lines of filler text, distinct per `seed`.
pub fn filler(seed: &str, n: usize) -> String {
    (0..n)
        .map(|i| format!("{seed} line {i}: the quick brown fox jumps over the lazy dog\n"))
        .collect()
}

/// A session: system prompt, then `rounds` rounds of user → read_file → result → reply,
/// each tool result `lines` long, timestamps one minute apart ending at `end`.
pub fn session(rounds: usize, lines: usize, end: f64) -> Conversation {
    let mut m = vec![Message::text(
        Role::System,
        "You are a careful coding agent.",
    )];
    for r in 0..rounds {
        let t = end - ((rounds - r) as f64) * 60.0 * 10.0;
        m.push(Message::text(
            Role::User,
            format!("request {r}: look at module {r}"),
        ));
        m.push(call(
            &format!("c{r}"),
            "read_file",
            &format!(r#"{{"path":"src/mod{r}.py"}}"#),
        ));
        let mut res = Message::tool_result(format!("c{r}"), filler(&format!("mod{r}"), lines));
        res.timestamp = Some(t);
        m.push(res);
        m.push(Message::text(
            Role::Assistant,
            format!("Module {r} looks fine."),
        ));
    }
    Conversation::new(m)
}

/// Checks the invariants every successful compaction must hold (the task verbatim unless
/// the diagnostics report that it had to be shortened).
pub fn assert_valid(input: &Conversation, out: &Compacted, limit: usize, meter: &Meter) {
    let measured = Measured::new(&out.conversation, meter);
    assert!(measured.total <= limit, "{} > {limit}", measured.total);
    assert_eq!(measured.total, out.diagnostics.final_size);
    let mut normalized = input.messages.clone();
    acms_compact::model::normalize(&mut normalized);
    let mut reference = Reference::of(&normalized);
    if out
        .diagnostics
        .stages
        .iter()
        .any(|s| s.stage == acms_compact::Stage::ShortenTask && s.accepted)
    {
        reference = reference.allow_shortened_task();
    }
    structure(&reference, &out.conversation.messages).expect("structurally valid output");
}
