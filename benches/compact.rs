//! Compaction tiers 1, 2 and 4 on a generated 500-message, ~400K-token agent session
//! (tool results are slices of this repository's real sources and shaped test logs).
//!
//! The conversation is measured once outside the timed loop (`measure` reports that cost
//! separately); each tier bench times `Compactor::compact_measured` with only that tier
//! enabled and without the category report, which `pipeline` includes.

use std::hint::black_box;

use acms_compact::model::{Message, Role, ToolCall};
use acms_compact::{CompactConfig, Compactor, Conversation, Measured, Meter};
use acms_core::Tokenizer;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};

const SOURCES: &[(&str, &str)] = &[
    (
        "crates/acms-core/src/config.rs",
        include_str!("../crates/acms-core/src/config.rs"),
    ),
    (
        "crates/acms-compact/src/session.rs",
        include_str!("../crates/acms-compact/src/session.rs"),
    ),
    (
        "crates/acms-compact/src/compactor.rs",
        include_str!("../crates/acms-compact/src/compactor.rs"),
    ),
    (
        "crates/acms-compact/src/format.rs",
        include_str!("../crates/acms-compact/src/format.rs"),
    ),
    (
        "crates/acms-compact/src/model.rs",
        include_str!("../crates/acms-compact/src/model.rs"),
    ),
];

const END: f64 = 1_764_500_000.0;

/// 500 messages: a system prompt, then rounds of user request → tool call → tool result →
/// assistant note; tool results alternate between file reads and test logs.
pub fn session() -> Conversation {
    let mut m = vec![Message::text(
        Role::System,
        "You are a coding agent. Read before you edit; run the tests after every change.",
    )];
    let mut r = 0usize;
    while m.len() < 500 {
        let t = END - (500 - m.len()) as f64 * 30.0;
        if r.is_multiple_of(5) {
            m.push(Message::text(Role::User, format!("Step {r}: continue with the refactor of the config loader and keep tests green.")));
        }
        let (path, src) = SOURCES[r % SOURCES.len()];
        let id = format!("call_{r}");
        let (name, args, body) = if r % 3 == 2 {
            let log: String = (0..200)
                .map(|i| {
                    format!(
                        "test module_{r}::case_{i} ... {}\n",
                        if i % 17 == 0 { "FAILED" } else { "ok" }
                    )
                })
                .collect();
            ("run_tests", r#"{"command":"cargo test"}"#.to_string(), log)
        } else {
            // A slice of real source, varied by round.
            let start = (r * 997) % (src.len().saturating_sub(11_000).max(1));
            let start = (start..src.len())
                .find(|&i| src.is_char_boundary(i))
                .unwrap_or(0);
            let end = (start + 11_000).min(src.len());
            let end = (end..=src.len())
                .find(|&i| src.is_char_boundary(i))
                .unwrap_or(src.len());
            (
                "read_file",
                format!(r#"{{"path":"{path}"}}"#),
                src[start..end].to_string(),
            )
        };
        m.push(Message::calls(
            "",
            vec![ToolCall {
                id: id.clone(),
                name: name.into(),
                arguments: args,
            }],
        ));
        let mut res = Message::tool_result(id, body);
        res.timestamp = Some(t);
        m.push(res);
        m.push(Message::text(
            Role::Assistant,
            format!("Round {r} done; next I will look at the following module."),
        ));
        r += 1;
    }
    m.truncate(500);
    // The last message must be the latest user turn or a complete round; end on a request.
    m.push(Message::text(Role::User, "Now summarize what changed."));
    Conversation::new(m)
}

fn bench(c: &mut Criterion) {
    let meter = Meter::tokens(Tokenizer::Cl100kBase);
    let conv = session();
    let measured = Measured::new(&conv, &meter);
    eprintln!(
        "compact bench: {} messages, {} tokens",
        measured.messages.len(),
        measured.total
    );
    let mut g = c.benchmark_group("compact");
    g.sample_size(10);
    g.bench_function("measure", |b| {
        b.iter(|| black_box(Measured::new(&conv, &meter)))
    });
    let run = |tiers: [bool; 4], limit: usize, categories: bool| {
        let mut config = CompactConfig::new(limit);
        config.tiers = tiers;
        config.category_report = categories;
        Compactor::new(config, meter.clone()).unwrap().at_time(END)
    };
    for (name, tiers, limit) in [
        ("tier1", [true, false, false, false], 200_000),
        ("tier2", [false, true, false, false], 100_000),
        ("tier4", [false, false, false, true], 100_000),
    ] {
        let c = run(tiers, limit, false);
        let out = c.compact_measured(measured.clone()).unwrap();
        eprintln!(
            "{name}: {} -> {} tokens ({:.1}x), {} -> {} messages",
            out.diagnostics.original_size,
            out.diagnostics.final_size,
            out.diagnostics.original_size as f64 / out.diagnostics.final_size as f64,
            out.diagnostics.original_messages,
            out.diagnostics.final_messages
        );
        g.bench_function(name, |b| {
            b.iter_batched(
                || measured.clone(),
                |m| black_box(c.compact_measured(m).unwrap()),
                BatchSize::LargeInput,
            )
        });
    }
    // Tier 1 with every stage forced to run (an unreachable limit): sentinel for old results,
    // then tree-sitter outlines for every remaining older file read.
    let all = run([true, false, false, false], 1, false);
    g.bench_function("tier1_all_stages", |b| {
        b.iter_batched(
            || measured.clone(),
            |m| black_box(all.compact_measured(m).is_err()),
            BatchSize::LargeInput,
        )
    });
    let full = run([true; 4], 100_000, true);
    g.bench_function("pipeline_100k_with_categories", |b| {
        b.iter_batched(
            || measured.clone(),
            |m| black_box(full.compact_measured(m).unwrap()),
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
