//! Fact retention on the committed real-shaped transcripts: the seam's tiered reducer keeps
//! the facts of what it removes or shortens (paths, error lines, failing tests,
//! identifiers), and does better than truncate-oldest. The real-trajectory figures are in
//! docs/BENCHMARKS.md (`cargo bench -p acms-benches --bench compact_facts -- DIR`).

use std::path::PathBuf;

use acms_compact::format;
use acms_compact::retention::{retention, truncate_oldest};
use acms_compact::{Assembler, AssemblyPolicy, CompactionProfile, Measured, Meter};
use acms_core::Tokenizer;

fn fixture(name: &str) -> acms_compact::Conversation {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("test_data")
        .join(name);
    format::read(&std::fs::read_to_string(p).unwrap(), None)
        .unwrap()
        .conversation
}

#[test]
fn seam_keeps_the_facts_it_removes() {
    let meter = Meter::tokens(Tokenizer::Cl100kBase);
    let mut probes = 0;
    for name in [
        "openai_fix_failing_tests.json",
        "anthropic_config_change.json",
    ] {
        let conv = fixture(name);
        let total = Measured::new(&conv, &meter).total;
        for (frac, floor) in [(0.5, 0.9), (0.25, 0.75)] {
            let limit = (total as f64 * frac) as usize;
            let mut policy = AssemblyPolicy::new(limit);
            policy.trigger_margin = 0;
            let p = CompactionProfile::tiered(policy, meter.clone()).unwrap();
            let a = Assembler::new(p.policy, p.meter, p.reducer).unwrap();
            let out = a.assemble(conv.messages.clone(), None).unwrap();
            let ours = retention(&conv.messages, &out.messages);
            let theirs = retention(
                &conv.messages,
                &truncate_oldest(&conv.messages, limit, &meter),
            );
            eprintln!(
                "{name} at {frac}: seam {:.3} ({}/{} probes), truncate-oldest {:.3}",
                ours.ratio(),
                ours.present,
                ours.probes,
                theirs.ratio()
            );
            probes += ours.probes;
            assert!(
                ours.ratio() >= floor,
                "{name} at {frac}: {:.3} < {floor}",
                ours.ratio()
            );
            assert!(ours.ratio() >= theirs.ratio());
        }
    }
    assert!(
        probes > 20,
        "the reducers removed facts to look for: {probes}"
    );
}
