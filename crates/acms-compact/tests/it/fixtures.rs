//! Real-shaped transcripts (built by `test_data/make_fixtures.py` from real source files):
//! read, compact at shrinking limits, write back in the same format, and check every
//! invariant. Run with `--nocapture` to see the compaction ratios.

use std::path::PathBuf;

use acms_compact::format::{self, Format};
use acms_compact::model::StructureWarning;
use acms_compact::{
    CompactConfig, Compactor, DeterministicSummarizer, Error, Measured, Meter, Outcome,
};
use acms_core::Tokenizer;

use crate::assert_valid;

fn fixture(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("test_data")
        .join(name);
    std::fs::read_to_string(p).unwrap()
}

/// Compacts `name` at fractions of its size; returns (fraction, final size, tier, outcome).
fn check(name: &str, format: Format, summarizer: bool) -> Vec<(f64, usize, u8, Outcome)> {
    let json = fixture(name);
    let doc = format::read(&json, None).unwrap();
    assert_eq!(doc.format, format);
    let meter = Meter::tokens(Tokenizer::Cl100kBase);
    let total = Measured::new(&doc.conversation, &meter).total;
    let mut rows = Vec::new();
    for frac in [1.0, 0.5, 0.25, 0.1] {
        let limit = (total as f64 * frac) as usize;
        let mut config = CompactConfig::new(limit);
        // Scaled to the fixture: the spec's 10K/20K defaults exceed these sessions.
        config.keep_recent = limit / 5;
        config.summary_reserve = limit / 5;
        config.restore_file_max = limit / 10;
        let mut c = Compactor::new(config, meter.clone())
            .unwrap()
            .at_time(1_764_500_000.0);
        if summarizer {
            c = c.with_summarizer(Box::new(DeterministicSummarizer));
        }
        match c.compact(&doc.conversation) {
            Ok(out) => {
                assert_valid(&doc.conversation, &out, limit, &meter);
                // Written back in the same format, it reads back to the same conversation
                // (modulo Anthropic's merging of consecutive same-role messages).
                let written = format::write(&doc, &out.conversation);
                let again = format::read(&written, Some(format)).unwrap();
                assert!(
                    Measured::new(&again.conversation, &meter).total <= limit,
                    "{name} at {frac}: re-read is over the limit"
                );
                // No result lost its call on the way (a call still waiting for its result
                // in the input may stay waiting).
                assert!(
                    again
                        .warnings
                        .iter()
                        .all(|w| matches!(w, StructureWarning::MissingToolResult { .. })),
                    "{:?}",
                    again.warnings
                );
                let d = &out.diagnostics;
                rows.push((frac, d.final_size, d.tier, d.outcome));
            }
            Err(Error::Irreducible { size, .. }) => {
                rows.push((frac, size, 4, Outcome::Irreducible))
            }
            Err(e) => panic!("{name} at {frac}: {e}"),
        }
    }
    eprintln!("{name} ({total} tokens, summarizer: {summarizer}):");
    for (frac, size, tier, outcome) in &rows {
        eprintln!(
            "  limit {:>4.0}%: {size:>6} tokens ({:.1}x smaller), tier {tier}, {outcome:?}",
            frac * 100.0,
            total as f64 / *size as f64
        );
    }
    rows
}

#[test]
fn openai_session_compacts_at_every_limit() {
    for summarizer in [false, true] {
        let rows = check("openai_fix_failing_tests.json", Format::OpenAi, summarizer);
        assert_eq!(rows[0].3, Outcome::WithinLimit);
        assert!(rows.iter().all(|r| r.3 != Outcome::Irreducible), "{rows:?}");
    }
}

#[test]
fn anthropic_session_compacts_at_every_limit() {
    for summarizer in [false, true] {
        let rows = check(
            "anthropic_config_change.json",
            Format::Anthropic,
            summarizer,
        );
        assert_eq!(rows[0].3, Outcome::WithinLimit);
        assert!(rows.iter().all(|r| r.3 != Outcome::Irreducible), "{rows:?}");
    }
}

#[test]
fn messy_session_reports_and_compacts() {
    let doc = format::read(&fixture("openai_messy.json"), None).unwrap();
    assert_eq!(
        doc.warnings,
        vec![
            StructureWarning::OrphanToolResult { index: 2 },
            StructureWarning::MissingToolResult { index: 7 }
        ]
    );
    check("openai_messy.json", Format::OpenAi, false);
}
