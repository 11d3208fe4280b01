//! Bounded assembly at the provider seam on a 500-message agent session whose reduction
//! needs two reducer attempts (tier 1 alone does not reach the trigger threshold; the tier 2
//! proposal does).
//!
//! - `assemble_500_two_attempts_warm`: the steady state of an agent loop — the same history
//!   is resent each call, so per-message sizes come from the seam's size cache.
//! - `assemble_500_two_attempts_growing`: each call adds one new round before the latest
//!   user turn (new sizes, a shifted summary span), the rest as in the warm case.
//! - `assemble_500_two_attempts_cold`: a fresh assembler per call (every message counted).
//! - `within_limit_500`: a call that needs no change (measure + forward as is).

use std::hint::black_box;

use acms_compact::{
    Assembler, AssemblyPolicy, CompactionProfile, Measured, Message, Meter, Outcome, ToolCall,
};
use acms_core::Tokenizer;
use criterion::{Criterion, criterion_group, criterion_main};

#[path = "compact.rs"]
#[allow(dead_code)]
mod compact_bench;

fn assembler(limit: usize, meter: &Meter) -> Assembler {
    let mut policy = AssemblyPolicy::new(limit);
    policy.max_attempts = 3;
    let p = CompactionProfile::tiered(policy, meter.clone()).unwrap();
    Assembler::new(p.policy, p.meter, p.reducer).unwrap()
}

fn bench(c: &mut Criterion) {
    let meter = Meter::tokens(Tokenizer::Cl100kBase);
    let conv = compact_bench::session();
    let total = Measured::new(&conv, &meter).total;
    // A limit tier 1 cannot reach: clearing every old result still leaves too much.
    let limit = total / 40;
    let warm = assembler(limit, &meter);
    let b = warm.assemble(conv.messages.clone(), None).unwrap();
    eprintln!(
        "seam bench: {} messages, {total} tokens -> {} tokens (limit {limit}), outcome {:?}, {} attempts",
        conv.messages.len(),
        b.diagnostics.final_size,
        b.diagnostics.outcome,
        b.diagnostics.attempts
    );
    assert_eq!(b.diagnostics.outcome, Outcome::Reduced);
    assert_eq!(
        b.diagnostics.attempts, 2,
        "the bench needs a reducer that takes two attempts"
    );
    let mut g = c.benchmark_group("seam");
    g.sample_size(20);
    g.bench_function("assemble_500_two_attempts_warm", |bch| {
        bch.iter(|| black_box(warm.assemble(conv.messages.clone(), None).unwrap()))
    });
    // An agent loop: every call resends the history plus one new round (a new call and a
    // result never seen before), so the compacted span shifts and the summary, ledger and
    // new sizes are computed again; only unchanged old messages hit the caches.
    let mut round = 0usize;
    g.bench_function("assemble_500_two_attempts_growing", |bch| {
        bch.iter(|| {
            round += 1;
            let mut messages = conv.messages.clone();
            let id = format!("grow_{round}");
            messages.insert(
                messages.len() - 1,
                Message::calls(
                    "",
                    vec![ToolCall {
                        id: id.clone(),
                        name: "run_tests".into(),
                        arguments: format!(r#"{{"command":"cargo test round_{round}"}}"#),
                    }],
                ),
            );
            let log: String = (0..120)
                .map(|i| format!("test round_{round}::case_{i} ... ok\n"))
                .collect();
            messages.insert(messages.len() - 1, Message::tool_result(id, log));
            black_box(warm.assemble(messages, None).unwrap())
        })
    });
    g.sample_size(10);
    g.bench_function("assemble_500_two_attempts_cold", |bch| {
        bch.iter(|| {
            let a = assembler(limit, &meter);
            black_box(a.assemble(conv.messages.clone(), None).unwrap())
        })
    });
    let fits = assembler(total * 2, &meter);
    fits.assemble(conv.messages.clone(), None).unwrap();
    g.bench_function("within_limit_500_warm", |bch| {
        bch.iter(|| black_box(fits.assemble(conv.messages.clone(), None).unwrap()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
