//! Fact retention of compaction on real agent trajectories (bench binary, measuring only).
//!
//! `cargo bench -p acms-benches --bench compact_facts -- DIR [--as-sent] [--verbose]` reads
//! every `*.json` / `*.traj` trajectory in DIR (mini-swe-agent `.traj.json`, SWE-agent
//! `.traj`, or OpenAI-format message lists; `ACMS_TRAJ_DIR` when no argument is given;
//! without either, the committed transcripts and trajectories of
//! `crates/acms-compact/test_data`), compacts each to 50% and 25% of its exact cl100k size
//! with every method, and prints the mean fact retention (see `acms_compact::retention`),
//! overall and per probe kind, the mean final size, and in how many results the task (the
//! first user message) and the last error the agent saw are still verbatim
//! (`retention::task_kept`, `retention::last_error_kept`; a task shortened with its marker
//! because it could not fit is counted apart).
//!
//! Methods: `truncate-oldest` and `observation-masking` (baselines), `compactor` (the tier
//! pipeline alone: `Compactor::compact`), `seam` (the bounded assembly with the built-in
//! tiered reducer, trigger margin 0, three attempts) and `cli` (the assembly configured as
//! `acms compact` configures it: code outlines on).

use std::path::PathBuf;
use std::sync::Arc;

use acms_compact::retention::{self, ProbeKind, Retention};
use acms_compact::{
    Assembler, AssemblyPolicy, CompactConfig, CompactionProfile, Compactor, Conversation, Measured,
    Meter, TieredReducer,
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
                .filter(|p| p.extension().is_some_and(|x| x == "json" || x == "traj"))
                .collect();
            files.sort();
            for f in files {
                let text = std::fs::read_to_string(&f).expect("readable trajectory");
                let read = if as_sent() {
                    retention::read_as_sent(&text)
                } else {
                    retention::read_trajectory(&text)
                };
                match read {
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
            // The committed real trajectories (as sent; see test_data/trajectories/README.md).
            let mut files: Vec<PathBuf> = std::fs::read_dir(data.join("trajectories"))
                .expect("test_data/trajectories")
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect();
            files.sort();
            for f in files {
                let text = std::fs::read_to_string(&f).expect("readable trajectory");
                let conv = if as_sent() {
                    retention::read_as_sent(&text)
                } else {
                    retention::read_trajectory(&text)
                };
                let name = f.file_name().unwrap().to_string_lossy().into_owned();
                out.push((name, conv.expect("trajectory parses")));
            }
        }
    }
    out
}

/// `--as-sent`: read trajectories as the agent sent them (a text-only agent's observations
/// stay user messages, as `acms compact` and the proxy see them) instead of turning each
/// command and its output into a tool call and result.
fn as_sent() -> bool {
    std::env::args().any(|a| a == "--as-sent")
}

const METHODS: [&str; 5] = [
    "truncate-oldest",
    "observation-masking",
    "compactor",
    "seam",
    "cli",
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
        "cli" => {
            // As `acms compact --hard-limit LIMIT` builds its profile (crates/acms-cli).
            let mut policy = AssemblyPolicy::new(limit);
            policy.trigger_margin = 0;
            let mut config = CompactConfig::new(limit);
            config.window = Some(limit);
            config.keep_recent = limit;
            config.summary_reserve = limit / 5;
            config.restore_file_max = (limit / 10).max(1);
            config.restore_files_total = limit / 4;
            config.restore_skill_max = (limit / 10).max(1);
            config.category_report = false;
            let c = Compactor::new(config, meter.clone()).ok()?;
            let a = Assembler::new(policy, meter.clone(), Arc::new(TieredReducer::new(c))).ok()?;
            a.assemble(conv.messages.clone(), None)
                .ok()
                .map(|b| b.messages)
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
        "{} trajectories ({}), {} messages and {} cl100k tokens on average",
        inputs.len(),
        if as_sent() {
            "as sent"
        } else {
            "commands as tool calls"
        },
        inputs.iter().map(|(_, c)| c.messages.len()).sum::<usize>() / inputs.len().max(1),
        sizes.iter().sum::<usize>() / inputs.len().max(1)
    );
    let verbose = std::env::args().any(|a| a == "--verbose");
    for frac in [0.5, 0.25] {
        println!("\n### limit = {:.0}% of each trajectory\n", frac * 100.0);
        println!(
            "| method | retention (mean) | min | paths | error lines | test names | identifiers | probes (mean) | final size / limit | failed | task verbatim | last error verbatim |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
        for method in METHODS {
            let mut ratios = Vec::new();
            let mut kinds: std::collections::BTreeMap<ProbeKind, (usize, usize)> =
                Default::default();
            let mut probes = 0;
            let mut fill = 0.0;
            let mut failed = 0;
            // (kept, results that have one)
            let mut task = (0, 0);
            // Tasks not verbatim but present as their marked shortening.
            let mut shortened = 0;
            let mut last_error = (0, 0);
            for ((name, conv), &total) in inputs.iter().zip(&sizes) {
                let limit = (total as f64 * frac) as usize;
                let Some(out) = run(method, conv, limit, &meter) else {
                    failed += 1;
                    continue;
                };
                let size: usize = out.iter().map(|m| meter.message(m)).sum();
                if size > limit && method.starts_with(['t', 'o']) {
                    // A baseline that cannot drop what it keeps (system prompt, latest
                    // request) fails like an irreducible compaction.
                    failed += 1;
                    continue;
                }
                assert!(size <= limit, "{method} {name}: {size} > {limit}");
                let r: Retention = retention::retention(&conv.messages, &out);
                let t = retention::task_kept(&conv.messages, &out);
                if t == Some(false) && retention::task_shortened(&conv.messages, &out) {
                    shortened += 1;
                }
                let e = retention::last_error_kept(&conv.messages, &out);
                for (count, kept) in [(&mut task, t), (&mut last_error, e)] {
                    if let Some(k) = kept {
                        count.0 += usize::from(k);
                        count.1 += 1;
                    }
                }
                if verbose {
                    eprintln!(
                        "{method} {frac} {name}: {:.3} ({}/{}) task {t:?} last error {e:?}",
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
                "| {method} | **{:.3}** | {:.3} | {} | {} | {} | {} | {:.0} | {:.2} | {failed} | {} of {}{} | {} of {} |",
                ratios.iter().sum::<f64>() / n,
                ratios.iter().copied().fold(f64::INFINITY, f64::min),
                kind(ProbeKind::Path),
                kind(ProbeKind::ErrorLine),
                kind(ProbeKind::TestName),
                kind(ProbeKind::Identifier),
                probes as f64 / n,
                fill / n,
                task.0,
                task.1,
                if shortened > 0 {
                    format!(" (+{shortened} shortened, marked)")
                } else {
                    String::new()
                },
                last_error.0,
                last_error.1,
            );
        }
    }
}
