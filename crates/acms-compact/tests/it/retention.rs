//! Fact retention on the committed real-shaped transcripts: the seam's tiered reducer keeps
//! the facts of what it removes or shortens (paths, error lines, failing tests,
//! identifiers), and does better than truncate-oldest; and on the committed real agent
//! trajectories it keeps the task and the last error verbatim. The full-set figures are in
//! docs/BENCHMARKS.md (`cargo bench -p acms-benches --bench compact_facts -- DIR`).

use std::path::PathBuf;
use std::sync::Arc;

use acms_compact::format;
use acms_compact::model::{Message, groups, latest_user};
use acms_compact::retention::{
    last_error, last_error_kept, read_trajectory, retention, task_kept, task_shortened,
    truncate_oldest,
};
use acms_compact::task::{shortened_floor, task_index};
use acms_compact::{
    Assembler, AssemblyPolicy, CompactConfig, CompactionProfile, Compactor, Measured, Meter,
    Outcome, TieredReducer,
};
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

/// One way to compact a conversation to `limit`: `Err` carries the terminated outcome.
type Method = fn(&[Message], usize, &Meter) -> Result<Vec<Message>, Outcome>;

/// The seam with the built-in tiered reducer (as the proxy runs it), trigger margin 0.
fn seam(messages: &[Message], limit: usize, meter: &Meter) -> Result<Vec<Message>, Outcome> {
    let mut policy = AssemblyPolicy::new(limit);
    policy.trigger_margin = 0;
    let p = CompactionProfile::tiered(policy, meter.clone()).unwrap();
    let a = Assembler::new(p.policy, p.meter, p.reducer).unwrap();
    a.assemble(messages.to_vec(), None)
        .map(|b| b.messages)
        .map_err(|t| t.terminated.outcome)
}

/// The assembly configured as `acms compact --hard-limit LIMIT` configures it (code
/// outlines on: they once reached the task inside the summary).
fn cli(messages: &[Message], limit: usize, meter: &Meter) -> Result<Vec<Message>, Outcome> {
    let mut policy = AssemblyPolicy::new(limit);
    policy.trigger_margin = 0;
    let mut config = CompactConfig::new(limit);
    config.keep_recent = limit;
    config.summary_reserve = limit / 5;
    config.restore_file_max = (limit / 10).max(1);
    config.restore_files_total = limit / 4;
    config.category_report = false;
    let c = Compactor::new(config, meter.clone()).unwrap();
    let a = Assembler::new(policy, meter.clone(), Arc::new(TieredReducer::new(c))).unwrap();
    a.assemble(messages.to_vec(), None)
        .map(|b| b.messages)
        .map_err(|t| t.terminated.outcome)
}

/// Size of the groups that hold required content other than the task: system messages,
/// the latest user turn, pinned messages.
fn required_besides_task(messages: &[Message], meter: &Meter) -> usize {
    let latest = latest_user(messages);
    groups(messages)
        .into_iter()
        .filter(|g| {
            g.clone()
                .any(|i| messages[i].role.is_system() || messages[i].pinned || Some(i) == latest)
        })
        .map(|g| messages[g].iter().map(|m| meter.message(m)).sum::<usize>())
        .sum()
}

/// The held-out check of issue 39: on real trajectories (`test_data/trajectories`: four
/// mini-swe-agent runs that were not among those the work was measured on, and four
/// SWE-agent demonstrations), compacted to 50 % and 25 % of their size, the task (the
/// first user message) and the last error the agent saw are still verbatim. Where the
/// required content cannot fit with the task whole, the task is there as its marked
/// shortening; an assembly terminates only when the rest of the required content leaves no
/// room even for that. Each trajectory is read as its agent sent it (observations of a
/// text-only agent are user messages, as `acms compact` and the proxy see them) and with
/// its commands as tool calls.
#[test]
fn real_trajectories_keep_the_task_and_the_last_error() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("test_data/trajectories");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 8, "{files:?}");
    let methods: [(&str, Method); 2] = [("seam", seam), ("cli", cli)];
    // (cases, task verbatim, task shortened, last error verbatim, baseline lost the task,
    // baseline lost the last error)
    let mut n = [0usize; 6];
    // Exact tokens as the bench counts them, and estimated tokens: other cut points.
    for meter in [
        Meter::tokens(Tokenizer::Cl100kBase),
        Meter::estimated_tokens(),
    ] {
        for file in &files {
            let text = std::fs::read_to_string(file).unwrap();
            let name = file.file_name().unwrap().to_string_lossy();
            let views = [
                ("as sent", format::read(&text, None).unwrap().conversation),
                ("tool calls", read_trajectory(&text).unwrap()),
            ];
            for (view, conv) in &views {
                let msgs = &conv.messages;
                let task = task_index(msgs).map(|i| &msgs[i]).expect("a task");
                let last = last_error(msgs);
                let total = Measured::new(conv, &meter).total;
                for frac in [0.5, 0.25] {
                    let limit = (total as f64 * frac) as usize;
                    let base = truncate_oldest(msgs, limit, &meter);
                    n[4] += usize::from(task_kept(msgs, &base) == Some(false));
                    n[5] += usize::from(last_error_kept(msgs, &base) == Some(false));
                    let others = required_besides_task(msgs, &meter);
                    let floor = if latest_user(msgs) == task_index(msgs) {
                        0
                    } else {
                        shortened_floor(task, &meter)
                    };
                    for (method, run) in methods {
                        let case =
                            format!("{name} ({view}) at {frac} by {method}, {}", meter.unit());
                        let out = match run(msgs, limit, &meter) {
                            Ok(out) => out,
                            Err(outcome) => {
                                assert_eq!(outcome, Outcome::Irreducible, "{case}");
                                assert!(others + floor > limit, "{case}: terminated, yet it fits");
                                continue;
                            }
                        };
                        n[0] += 1;
                        let size: usize = out.iter().map(|m| meter.message(m)).sum();
                        assert!(size <= limit, "{case}: {size} > {limit}");
                        if task_kept(msgs, &out) == Some(true) {
                            n[1] += 1;
                        } else {
                            // Only when the task cannot fit whole, and then marked.
                            assert!(
                                others + meter.message(task) > limit,
                                "{case}: the task was lost though it fit"
                            );
                            assert!(task_shortened(msgs, &out), "{case}: the task is not marked");
                            n[2] += 1;
                        }
                        if let Some(line) = &last {
                            assert_eq!(
                                last_error_kept(msgs, &out),
                                Some(true),
                                "{case}: the last error `{line}` is lost"
                            );
                            n[3] += 1;
                        }
                    }
                }
            }
        }
    }
    eprintln!(
        "{} results: task verbatim in {}, shortened with its marker in {}; last error verbatim in {}; truncate-oldest lost the task {} and the last error {} times",
        n[0], n[1], n[2], n[3], n[4], n[5]
    );
    // The check has teeth: most results are of conversations whose task and last error a
    // plain truncation loses.
    assert!(n[0] >= 100 && n[1] >= 90 && n[3] >= 60, "{n:?}");
    assert!(n[4] >= 40 && n[5] >= 20, "{n:?}");
}
