//! Fact retention of compaction on real agent trajectories (bench binary, measuring only).
//!
//! `cargo bench -p acms-benches --bench compact_facts -- DIR` reads every `*.json` trajectory
//! in DIR (mini-swe-agent `.traj.json` or OpenAI-format message lists; `ACMS_TRAJ_DIR` when
//! no argument is given; without either, the committed real-shaped transcripts of
//! `crates/acms-compact/test_data`), compacts each to 50% and 25% of its exact cl100k size
//! with every method, and prints the mean fact retention (see `acms_compact::retention`),
//! overall and per probe kind, plus the mean final size.
//!
//! Methods: `truncate-oldest` and `observation-masking` (baselines), `compactor` (the tier
//! pipeline as `acms compact` ran it before the seam: `Compactor::compact`), and `seam` (the
//! bounded assembly with the built-in tiered reducer, trigger margin 0, three attempts).

use std::path::PathBuf;

use acms_compact::retention::{self, ProbeKind, Retention};
use acms_compact::{
    Assembler, AssemblyPolicy, CompactConfig, CompactionProfile, Compactor, Conversation, Measured,
    Meter,
};
use acms_core::Tokenizer;

fn inputs() -> Vec<(String, Conversation)> {
    let dir = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("ACMS_TRAJ_DIR").map(PathBuf::from));
    let mut out = Vec::new();
    match dir {
        Some(dir) => {
            let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect();
            files.sort();
            for f in files {
                let text = std::fs::read_to_string(&f).expect("readable trajectory");
                match retention::read_trajectory(&text) {
                    Ok(c) => out.push((f.file_name().unwrap().to_string_lossy().into_owned(), c)),
                    Err(e) => eprintln!("skipping {}: {e}", f.display()),
                }
            }
        }
        None => {
            let data = acms_benches::workspace_root().join("crates/acms-compact/test_data");
            for name in [
                "openai_fix_failing_tests.json",
                "anthropic_config_change.json",
                "openai_messy.json",
            ] {
                let text = std::fs::read_to_string(data.join(name)).expect("fixture");
                let doc = acms_compact::format::read(&text, None).expect("fixture parses");
                out.push((name.to_string(), doc.conversation));
            }
        }
    }
    out
}

const METHODS: [&str; 4] = [
    "truncate-oldest",
    "observation-masking",
    "compactor",
    "seam",
];

fn run(
    method: &str,
    conv: &Conversation,
    limit: usize,
    meter: &Meter,
) -> Option<Vec<acms_compact::Message>> {
    match method {
        "truncate-oldest" => Some(retention::truncate_oldest(&conv.messages, limit, meter)),
        "observation-masking" => Some(retention::observation_masking(&conv.messages, limit, meter)),
        "compactor" => {
            let mut config = CompactConfig::new(limit);
            config.keep_recent = limit;
            config.summary_reserve = limit / 5;
            config.restore_file_max = limit / 10;
            config.category_report = false;
            let c = Compactor::new(config, meter.clone()).ok()?;
            c.compact(conv).ok().map(|o| o.conversation.messages)
        }
        _ => {
            let mut policy = AssemblyPolicy::new(limit);
            policy.trigger_margin = 0;
            let profile = CompactionProfile::tiered(policy, meter.clone()).ok()?;
            let a = Assembler::new(profile.policy, profile.meter, profile.reducer).ok()?;
            a.assemble(conv.messages.clone(), None)
                .ok()
                .map(|b| b.messages)
        }
    }
}

fn main() {
    let meter = Meter::tokens(Tokenizer::Cl100kBase);
    let inputs = inputs();
    let sizes: Vec<usize> = inputs
        .iter()
        .map(|(_, c)| Measured::new(c, &meter).total)
        .collect();
    println!(
        "{} trajectories, {} messages and {} cl100k tokens on average",
        inputs.len(),
        inputs.iter().map(|(_, c)| c.messages.len()).sum::<usize>() / inputs.len().max(1),
        sizes.iter().sum::<usize>() / inputs.len().max(1)
    );
    let verbose = std::env::args().any(|a| a == "--verbose");
    for frac in [0.5, 0.25] {
        println!("\n### limit = {:.0}% of each trajectory\n", frac * 100.0);
        println!(
            "| method | retention (mean) | min | paths | error lines | test names | identifiers | probes (mean) | final size / limit | failed |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|");
        for method in METHODS {
            let mut ratios = Vec::new();
            let mut kinds: std::collections::BTreeMap<ProbeKind, (usize, usize)> =
                Default::default();
            let mut probes = 0;
            let mut fill = 0.0;
            let mut failed = 0;
            for ((name, conv), &total) in inputs.iter().zip(&sizes) {
                let limit = (total as f64 * frac) as usize;
                let Some(out) = run(method, conv, limit, &meter) else {
                    failed += 1;
                    continue;
                };
                let size: usize = out.iter().map(|m| meter.message(m)).sum();
                assert!(size <= limit, "{method} {name}: {size} > {limit}");
                let r: Retention = retention::retention(&conv.messages, &out);
                if verbose {
                    eprintln!(
                        "{method} {frac} {name}: {:.3} ({}/{})",
                        r.ratio(),
                        r.present,
                        r.probes
                    );
                }
                ratios.push(r.ratio());
                probes += r.probes;
                fill += size as f64 / limit as f64;
                for (k, n, p) in r.by_kind {
                    let e = kinds.entry(k).or_default();
                    e.0 += n;
                    e.1 += p;
                }
            }
            let n = ratios.len().max(1) as f64;
            let kind = |k: ProbeKind| {
                kinds.get(&k).map_or("-".to_string(), |(n, p)| {
                    format!("{:.2}", *p as f64 / (*n).max(1) as f64)
                })
            };
            println!(
                "| {method} | **{:.3}** | {:.3} | {} | {} | {} | {} | {:.0} | {:.2} | {failed} |",
                ratios.iter().sum::<f64>() / n,
                ratios.iter().copied().fold(f64::INFINITY, f64::min),
                kind(ProbeKind::Path),
                kind(ProbeKind::ErrorLine),
                kind(ProbeKind::TestName),
                kind(ProbeKind::Identifier),
                probes as f64 / n,
                fill / n,
            );
        }
    }
}
