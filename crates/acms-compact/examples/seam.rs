//! A long tool-using session through the provider seam, with every event printed.
//!
//! `cargo run -p acms-compact --example seam`
//!
//! A fake provider plays the model: for 40 rounds it asks for a tool (file reads and test
//! runs whose results are long), then answers. The agent loop appends every call and
//! result to its history and sends the whole history on each round, as agents do. The
//! client stack wraps the provider with the compaction component, so every intermediate
//! call is bounded to the hard limit; the provider checks that it never receives more.
//! Halfway through, the host explicitly rehydrates an offloaded log (budget-checked).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use acms_compact::model::{Message, Role, ToolCall};
use acms_compact::{
    ArtifactStore, AssemblyPolicy, Capability, CapabilityProfile, ChatProvider, ChatRequest,
    ChatResponse, ClientStack, CompactionEvent, CompactionProfile, Meter, ProgressSink, Run,
};
use acms_core::Tokenizer;

const HARD_LIMIT: usize = 6_000;

/// The model: asks for a tool on each of its first 40 turns, then answers.
struct FakeModel {
    meter: Meter,
    turns: AtomicUsize,
    max_seen: AtomicUsize,
}

impl ChatProvider for FakeModel {
    fn complete(&self, request: &ChatRequest) -> acms_compact::Result<ChatResponse> {
        let size: usize = request.messages.iter().map(|m| self.meter.message(m)).sum();
        assert!(size <= HARD_LIMIT, "the provider received {size} tokens");
        self.max_seen.fetch_max(size, Ordering::SeqCst);
        let turn = self.turns.fetch_add(1, Ordering::SeqCst);
        let message = if turn < 40 {
            let (name, args) = if turn % 3 == 2 {
                (
                    "run_tests",
                    r#"{"command":"pytest tests/test_config.py -q"}"#.to_string(),
                )
            } else {
                ("read_file", format!(r#"{{"path":"src/module_{turn}.py"}}"#))
            };
            Message::calls(
                format!("Step {turn}: next I need {name}."),
                vec![ToolCall {
                    id: format!("call_{turn}"),
                    name: name.into(),
                    arguments: args,
                }],
            )
        } else {
            Message::text(
                Role::Assistant,
                "Done: the loader handles missing keys now.",
            )
        };
        Ok(ChatResponse { message })
    }
}

/// The tools: long outputs, like real file reads and test logs.
fn run_tool(call: &ToolCall, turn: usize) -> String {
    if call.name == "run_tests" {
        (0..60)
            .map(|i| match i % 13 {
                0 => format!(
                    "FAILED tests/test_config.py::test_key_{turn}_{i} - KeyError: 'key_{i}'\n"
                ),
                _ => format!("tests/test_config.py::test_key_{turn}_{i} PASSED\n"),
            })
            .collect()
    } else {
        (0..80)
            .map(|i| {
                format!("def handler_{turn}_{i}(request):\n    return respond(request, {i})\n")
            })
            .collect()
    }
}

/// Prints every event on one line (events carry numbers and ids, never content).
struct Printer;

impl ProgressSink for Printer {
    fn report(&self, event: &CompactionEvent) {
        println!("  event {event}");
    }
}

fn main() -> acms_compact::Result<()> {
    let meter = Meter::tokens(Tokenizer::Cl100kBase);
    let dir = std::env::temp_dir().join(format!("acms-seam-example-{}", std::process::id()));
    let store = Arc::new(ArtifactStore::new(&dir));
    let mut policy = AssemblyPolicy::new(HARD_LIMIT);
    policy.trigger_margin = 500;
    policy.offload_min_bytes = 2 * 1024;
    let profile = CompactionProfile::tiered(policy, meter.clone())?.with_artifacts(store.clone());
    let model = Arc::new(FakeModel {
        meter: meter.clone(),
        turns: AtomicUsize::new(0),
        max_seen: AtomicUsize::new(0),
    });
    let client = ClientStack::new(
        model.clone(),
        CapabilityProfile::none().with(Capability::Compaction),
    )
    .compaction(profile)?
    .build(Some(Arc::new(Printer)))?;
    let seam = client.seam().expect("compaction is installed");

    let run = Run::new();
    let mut history = vec![
        Message::text(
            Role::System,
            "You are a coding agent. Read before you edit; run the tests after every change.",
        ),
        Message::text(
            Role::User,
            "The config loader crashes on missing keys: fix it and keep the tests green.",
        ),
    ];
    for round in 0.. {
        let size: usize = history.iter().map(|m| meter.message(m)).sum();
        println!(
            "round {round}: history {} messages, {size} tokens",
            history.len()
        );
        let reply = client.complete_in(
            &run,
            &ChatRequest {
                messages: history.clone(),
                ..ChatRequest::default()
            },
        )?;
        let calls = reply.message.tool_calls.clone();
        history.push(reply.message);
        if calls.is_empty() {
            break;
        }
        for call in &calls {
            history.push(Message::tool_result(call.id.clone(), run_tool(call, round)));
        }
        // Halfway: the host stores a long log and explicitly brings it back, within a
        // budget; the seam delivers it once in this run and evicts it from later calls.
        if round == 20 {
            let log = run_tool(&calls[0], 999);
            let r = store.put(log.as_bytes())?;
            match seam.rehydrate(&run, &store, &r.uri(), 2_000) {
                Ok(r) => history.push(r.message),
                Err(f) => println!("  rehydration refused: {}", f.error),
            }
        }
    }
    let size: usize = history.iter().map(|m| meter.message(m)).sum();
    println!(
        "finished: the history grew to {size} tokens; the largest request the provider received was {} tokens (hard limit {HARD_LIMIT})",
        model.max_seen.load(Ordering::SeqCst)
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
