//! `acms compact` end to end on the real-shaped transcripts of acms-compact's test data:
//! exit codes, output within the limit, same format out as in, diagnostics as JSON lines.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use acms::compact::format;
use acms::compact::{Measured, Meter};
use acms::core::Tokenizer;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../acms-compact/test_data")
        .join(name)
}

fn compact(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_acms"))
        .arg("compact")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let input = stdin.unwrap_or("").to_string();
    let mut pipe = child.stdin.take().unwrap();
    std::thread::spawn(move || std::io::Write::write_all(&mut pipe, input.as_bytes()));
    child.wait_with_output().unwrap()
}

/// Runs on a fixture at `limit` and checks exit 0, output within the limit and diagnostics.
fn check_fits(name: &str, limit: usize, unit: &str) {
    let file = data(name);
    let out = compact(
        &[
            "--input",
            file.to_str().unwrap(),
            "--limit",
            &limit.to_string(),
            "--unit",
            unit,
            "--now",
            "1764500000",
        ],
        None,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{name} at {limit}: {stderr}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let original = format::read(&std::fs::read_to_string(&file).unwrap(), None).unwrap();
    let doc = format::read(&stdout, Some(original.format)).unwrap();
    let meter = match unit {
        "bytes" => Meter::bytes(),
        _ => Meter::tokens(Tokenizer::Cl100kBase),
    };
    let size = Measured::new(&doc.conversation, &meter).total;
    assert!(size <= limit, "{name}: {size} > {limit}");
    let lines: Vec<serde_json::Value> = stderr
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let result = lines.last().unwrap();
    // The closing human line states the outcome.
    assert!(
        stderr.lines().last().unwrap().starts_with("acms compact: "),
        "{stderr}"
    );
    assert_eq!(result["event"], "result");
    // Anthropic output merges consecutive user blocks, so the read-back size may be smaller
    // than the size the compactor measured; never larger than the limit.
    assert!(result["final_size"].as_u64().unwrap() <= limit as u64);
    if original.format == format::Format::OpenAi {
        assert_eq!(result["final_size"], size);
    }
    assert_eq!(result["limit"], limit);
}

#[test]
fn compacts_real_shaped_transcripts() {
    for (name, limit) in [
        ("openai_fix_failing_tests.json", 20_000),
        ("openai_fix_failing_tests.json", 6_000),
        ("openai_fix_failing_tests.json", 2_000),
        ("anthropic_config_change.json", 3_000),
        ("anthropic_config_change.json", 800),
        ("openai_messy.json", 1_000),
    ] {
        check_fits(name, limit, "tokens");
    }
    check_fits("openai_fix_failing_tests.json", 20_000, "bytes");
}

#[test]
fn fitting_input_is_unchanged_and_stdin_works() {
    let json = r#"[{"role":"user","content":"hi"}]"#;
    let out = compact(&["--limit", "100"], Some(json));
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v, serde_json::from_str::<serde_json::Value>(json).unwrap());
}

#[test]
fn exit_codes_for_bad_input_and_no_fit() {
    let bad = compact(&["--limit", "100"], Some("{not json"));
    assert_eq!(bad.status.code(), Some(4));
    let role = compact(
        &["--limit", "100"],
        Some(r#"[{"role":"wizard","content":"x"}]"#),
    );
    assert_eq!(role.status.code(), Some(4));
    let missing = compact(
        &["--limit", "100", "--input", "/nonexistent/conv.json"],
        None,
    );
    assert_eq!(missing.status.code(), Some(4));
    let big = format!(
        r#"[{{"role":"system","content":"s"}},{{"role":"user","content":"{}"}}]"#,
        "word ".repeat(500)
    );
    let dir = tempfile::tempdir().unwrap();
    let diag = dir.path().join("diag.jsonl");
    let no_fit = compact(
        &["--limit", "50", "--diagnostics", diag.to_str().unwrap()],
        Some(&big),
    );
    assert_eq!(no_fit.status.code(), Some(3));
    assert!(no_fit.stdout.is_empty(), "nothing is forwarded");
    let lines = std::fs::read_to_string(diag).unwrap();
    assert!(
        lines
            .lines()
            .last()
            .unwrap()
            .contains(r#""outcome":"irreducible""#)
    );
    assert!(String::from_utf8_lossy(&no_fit.stderr).contains("against a hard limit of 50 tokens"));
}

#[test]
fn new_flags_and_outcome_line() {
    let file = data("openai_fix_failing_tests.json");
    let dir = tempfile::tempdir().unwrap();
    let diag = dir.path().join("d.jsonl");
    let out = compact(
        &[
            "--input",
            file.to_str().unwrap(),
            "--hard-limit",
            "6000",
            "--trigger-margin",
            "1000",
            "--max-attempts",
            "2",
            "--diagnostics",
            diag.to_str().unwrap(),
            "--now",
            "1764500000",
        ],
        None,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let text = std::fs::read_to_string(&diag).unwrap();
    let last = text.lines().last().unwrap();
    assert!(last.starts_with("acms compact: reduced"), "{last}");
    assert!(last.contains("hard limit 6000, trigger 5000"), "{last}");
    let result: serde_json::Value = text
        .lines()
        .filter(|l| l.contains(r#""event":"result""#))
        .map(|l| serde_json::from_str(l).unwrap())
        .next()
        .unwrap();
    assert!(result["final_size"].as_u64().unwrap() <= 5000);
    assert_eq!(result["unit"], "exact_tokens");
    assert_eq!(result["max_attempts"], 2);
    // Issue 39 item 14: the seam's events follow, with one assembly id.
    let events: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["assembly_id"].is_string())
        .collect();
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["started", "completed", "composed"], "{text}");
    assert!(
        events
            .iter()
            .all(|e| e["assembly_id"] == events[0]["assembly_id"])
    );
    assert_eq!(events[2]["size_after"], result["final_size"]);
    // Estimated tokens are labelled as such.
    let est = compact(
        &[
            "--input",
            file.to_str().unwrap(),
            "--limit",
            "5000",
            "--unit",
            "estimated",
        ],
        None,
    );
    assert_eq!(est.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&est.stderr).contains("estimated tokens"));
}

#[test]
fn unchanged_input_is_written_byte_for_byte() {
    let json = "{\"system\":[{\"type\":\"text\",\"text\":\"s\",\"cache_control\":{\"type\":\"ephemeral\"}}],\n  \"messages\":[{\"role\":\"user\",\"content\":\"hi \\ud800\",\"x\":1}]}";
    let out = compact(&["--limit", "1000"], Some(json));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap(), format!("{json}\n"));
    // With a BOM too.
    let bom = format!("\u{feff}{json}");
    let out = compact(&["--limit", "1000"], Some(&bom));
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn offloads_to_artifacts() {
    let dir = tempfile::tempdir().unwrap();
    let file = data("openai_fix_failing_tests.json");
    let out = compact(
        &[
            "--input",
            file.to_str().unwrap(),
            "--limit",
            "9000",
            "--artifacts",
            dir.path().to_str().unwrap(),
            "--now",
            "1764500000",
        ],
        None,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("artifact://sha256/"));
    assert!(dir.path().join("sha256").is_dir());
}
