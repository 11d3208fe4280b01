//! `acms artifact verify` and `acms compact --artifacts` against untrusted input (issue 37,
//! items 3, 10, 13, 15): a store file replaced by a link to a device, a FIFO or an oversized
//! file is refused quickly with a clear error; kept messages come out byte for byte; every
//! body in the store is referenced by the output; no secret lands in the store.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs `acms ARGS` with `stdin`, its address space capped at 1 GiB (so a read without a
/// bound fails fast instead of taking the machine's memory) and killed after 20 s.
fn bounded(args: &[&str], stdin: &str) -> (Output, Duration) {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1048576 && exec \"$@\"")
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_acms"))
        .args(args)
        .env("XDG_CONFIG_HOME", crate::config_home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let input = stdin.to_string();
    let mut pipe = child.stdin.take().unwrap();
    std::thread::spawn(move || std::io::Write::write_all(&mut pipe, input.as_bytes()));
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("acms {args:?} hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (child.wait_with_output().unwrap(), start.elapsed())
}

fn artifact_path(dir: &Path, digest: &str) -> PathBuf {
    dir.join("sha256").join(&digest[..2]).join(digest)
}

/// Runs `acms artifact verify` on `digest` and expects a clear, quick refusal.
fn refused(dir: &Path, digest: &str, says: &str) {
    let (out, took) = bounded(
        &[
            "artifact",
            "verify",
            digest,
            "--artifacts",
            dir.to_str().unwrap(),
        ],
        "",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(says), "{stderr}");
    assert!(out.stdout.is_empty());
    assert!(took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn artifact_verify_refuses_devices_fifos_and_oversized_files() {
    let dir = tempfile::tempdir().unwrap();
    let store = acms::compact::ArtifactStore::new(dir.path());
    let r = store.put(b"a body\n").unwrap();
    let path = artifact_path(dir.path(), &r.digest);
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
    refused(dir.path(), &r.digest, "not a regular file");
    std::fs::remove_file(&path).unwrap();
    let ok = Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap()
        .success();
    assert!(ok);
    refused(dir.path(), &r.digest, "not a regular file");
    // A sparse 2 GiB file: refused on its size, never read.
    std::fs::remove_file(&path).unwrap();
    std::fs::File::create(&path)
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    refused(dir.path(), &r.digest, "larger than");
}

/// Secret-shaped values, assembled at run time so this file holds none a scanner would flag.
fn secrets() -> Vec<String> {
    vec![
        ["AKIA", "IOSFODNN7EXAMPLE"].concat(),
        ["wJalrXUtnFEMI/K7MDENG", "/bPxRfiCYEXAMPLEKEY"].concat(),
        [
            "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lg",
            "OEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0",
        ]
        .concat(),
        ["s3cr3t-", "Pw-prod"].concat(),
        ["ghp_", "aB3dE5fG7hJ9kL1mN3pQ5rS7tV9wX1yZ3bC5"].concat(),
        ["sk-proj-", "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2"].concat(),
    ]
}

fn lines(seed: &str, n: usize) -> String {
    (0..n)
        .map(|i| format!("{seed} line {i}: the quick brown fox jumps over the lazy dog\n"))
        .collect()
}

const KEPT_USER: &str = r#"{"role":"user","content":"task: fix the parser \ud800 (cut by a JS slice)","x-seed":123456789012345678901234567890,"x-inf":1e400}"#;
const LATEST: &str =
    r#"{"role":"user","content":"now finish \udfff","x-big":-98765432109876543210987654321.50e-3}"#;

/// An OpenAI request: a kept user message and a latest one that serde_json cannot hold as
/// values, then `results` rounds of tool output (the first `first` bytes long).
fn conversation(first: &str, results: usize) -> String {
    let mut msgs = vec![
        r#"{"role":"system","content":"You are careful."}"#.to_string(),
        KEPT_USER.to_string(),
    ];
    for i in 0..results {
        msgs.push(format!(
            r#"{{"role":"assistant","content":null,"tool_calls":[{{"id":"c{i}","type":"function","function":{{"name":"run","arguments":"{{\"command\":\"make t{i}\"}}"}}}}]}}"#
        ));
        let content = if i == 0 {
            first.to_string()
        } else {
            lines(&format!("run{i}"), 60)
        };
        msgs.push(
            serde_json::json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": content})
                .to_string(),
        );
    }
    msgs.push(LATEST.to_string());
    format!(
        "{{\"model\":\"m\",\"seed\":123456789012345678901234567890,\"x-limit\":1e400,\"messages\":[\n{}\n]}}",
        msgs.join(",\n")
    )
}

fn compact(input: &str, limit: usize, artifacts: &Path) -> String {
    let (out, _) = bounded(
        &[
            "compact",
            "--limit",
            &limit.to_string(),
            "--artifacts",
            artifacts.to_str().unwrap(),
        ],
        input,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("acms compact: reduced"), "{stderr}");
    String::from_utf8(out.stdout).unwrap()
}

/// Every body file in the store.
fn stored(dir: &Path) -> Vec<(String, String)> {
    let Ok(shards) = std::fs::read_dir(dir.join("sha256")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for shard in shards {
        for f in std::fs::read_dir(shard.unwrap().path()).unwrap() {
            let p = f.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if !name.starts_with('.') {
                out.push((name, std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    out
}

#[test]
fn compact_keeps_kept_messages_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    // Old tool results are cleared; the old user message stays (a tighter limit would fold
    // it into a session summary).
    let out = compact(&conversation(&lines("first", 60), 10), 6500, dir.path());
    assert!(out.contains(KEPT_USER), "{out}");
    assert!(out.contains(LATEST), "{out}");
    assert!(
        out.contains("\"seed\": 123456789012345678901234567890,"),
        "{out}"
    );
    assert!(out.contains("\"x-limit\": 1e400"), "{out}");
    assert!(!out.contains('\u{fffd}'), "{out}");
}

#[test]
fn compact_stores_only_referenced_offloads() {
    // The issue's scenario: a 22 800-byte tool result, offloaded, then dropped by the reducer.
    let dir = tempfile::tempdir().unwrap();
    let first: String = lines("build", 400).chars().take(22_800).collect();
    let out = compact(&conversation(&first, 8), 1500, dir.path());
    for (name, _) in stored(dir.path()) {
        assert!(out.contains(&name), "{name} is stored but not referenced");
    }
}

#[test]
fn compact_never_stores_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let s = secrets();
    let result = format!(
        "aws_access_key_id = {}\naws_secret_access_key = {}\n{}-----BEGIN RSA {}-----\n{}\n{}\n-----END RSA {}-----\nDATABASE_URL=postgresql://app:{}@db.internal:5432/prod\nGITHUB_TOKEN={}\nOPENAI_API_KEY={}\n{}",
        s[0],
        s[1],
        lines("env", 150),
        "PRIVATE KEY",
        s[2],
        s[2],
        "PRIVATE KEY",
        s[3],
        s[4],
        s[5],
        lines("more", 150)
    );
    let input = conversation(&result, 7);
    let out = compact(&input, 6000, dir.path());
    let files = stored(dir.path());
    assert_eq!(files.len(), 1, "{out}");
    assert!(out.contains(&files[0].0));
    assert!(out.contains("secret values redacted"), "{out}");
    for secret in &s {
        assert!(!out.contains(secret.as_str()), "{secret} in the output");
        assert!(
            !files[0].1.contains(secret.as_str()),
            "{secret} in the artifact store"
        );
    }
}
