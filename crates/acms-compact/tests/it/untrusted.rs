//! Untrusted input at the artifact store and the writer (issue 37, items 3, 10, 13, 15): an
//! artifact file that is not what the store wrote is refused without blocking, what
//! compaction keeps round-trips byte for byte, an offload the output does not reference is
//! never written, and a secret in a tool result never reaches the store.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use acms_compact::format::{self, Format};
use acms_compact::model::{Message, Role};
use acms_compact::{
    ArtifactStore, AssemblyPolicy, CompactConfig, CompactionProfile, Compactor, Conversation,
    Meter, OFFLOAD_MARKER, Seam, Stage,
};
use acms_core::Tokenizer;

use crate::{call, filler, session};

fn tokens() -> Meter {
    Meter::tokens(Tokenizer::Cl100kBase)
}

fn total(messages: &[Message]) -> usize {
    let meter = tokens();
    messages.iter().map(|m| meter.message(m)).sum()
}

fn artifact_path(dir: &Path, digest: &str) -> PathBuf {
    dir.join("sha256").join(&digest[..2]).join(digest)
}

/// Every body file in the store (temporary files are not bodies).
fn stored_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(shards) = std::fs::read_dir(dir.join("sha256")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for shard in shards {
        for f in std::fs::read_dir(shard.unwrap().path()).unwrap() {
            let p = f.unwrap().path();
            if !p.file_name().unwrap().to_string_lossy().starts_with('.') {
                out.push(p);
            }
        }
    }
    out
}

/// Runs `f` on its own thread and fails the test when it has not returned within 10 s: a
/// read that blocks on a FIFO would otherwise hang the whole suite.
fn within<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(10))
        .expect("the artifact store blocked instead of refusing the file")
}

fn mkfifo(path: &Path) {
    let ok = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap()
        .success();
    assert!(ok, "mkfifo {}", path.display());
}

#[test]
fn artifact_reads_refuse_symlinks() {
    let dir = tempfile::tempdir().unwrap();
    let store = ArtifactStore::new(dir.path());
    let body = b"a body that verifies wherever it is read from\n".repeat(20);
    let r = store.put(&body).unwrap();
    let path = artifact_path(dir.path(), &r.digest);
    // The same bytes outside the store: following the link would even verify.
    let outside = dir.path().join("outside.txt");
    std::fs::write(&outside, &body).unwrap();
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(&outside, &path).unwrap();
    let e = store.get(&r.uri()).unwrap_err().to_string();
    assert!(e.contains("not a regular file"), "{e}");
    assert!(!e.contains("outside.txt"), "errors name no path: {e}");
    // A link to a device is refused the same way, before anything is read.
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
    let e = store.get_digest(&r.digest).unwrap_err().to_string();
    assert!(e.contains("not a regular file"), "{e}");
    // Storing the body again replaces the link with the body.
    store.put(&body).unwrap();
    assert!(std::fs::symlink_metadata(&path).unwrap().is_file());
    assert_eq!(store.get(&r.uri()).unwrap(), body);
}

#[test]
fn artifact_reads_and_writes_refuse_fifos_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(ArtifactStore::new(dir.path()));
    let body = b"fifo victim\n".repeat(50);
    let r = store.put(&body).unwrap();
    let path = artifact_path(dir.path(), &r.digest);
    std::fs::remove_file(&path).unwrap();
    mkfifo(&path);
    let (s, uri) = (Arc::clone(&store), r.uri());
    let got = within(move || s.get(&uri).map_err(|e| e.to_string()));
    let e = got.unwrap_err();
    assert!(e.contains("not a regular file"), "{e}");
    // Storing the same body replaces the FIFO instead of blocking on it.
    let (s, b) = (Arc::clone(&store), body.clone());
    within(move || s.put(&b).map_err(|e| e.to_string())).unwrap();
    assert!(std::fs::symlink_metadata(&path).unwrap().is_file());
    assert_eq!(store.get(&r.uri()).unwrap(), body);
}

/// An old user message with a lone surrogate and numbers no f64 holds; the compactor keeps it.
const KEPT_USER: &str = r#"{"role":"user","content":"task: fix the parser \ud800 (cut by a JS slice)","x-seed":123456789012345678901234567890,"x-inf":1e400}"#;
/// The latest request, kept by rule.
const LATEST: &str =
    r#"{"role":"user","content":"now finish \udfff","x-big":-98765432109876543210987654321.50e-3}"#;
/// Fields of a tool result that compaction rewrites: they must come through untouched.
const UNTOUCHED_FIELDS: &str = r#"{"n":123456789012345678901234567890,"f":1e400,"s":"\ud800"}"#;

fn lossy_document() -> String {
    let mut msgs = vec![
        r#"{"role":"system","content":"You are careful."}"#.to_string(),
        KEPT_USER.to_string(),
    ];
    for i in 0..10 {
        msgs.push(format!(
            r#"{{"role":"assistant","content":null,"tool_calls":[{{"id":"c{i}","type":"function","function":{{"name":"run","arguments":"{{\"command\":\"pytest -k t{i}\"}}"}}}}]}}"#
        ));
        let mut result = serde_json::json!({
            "role": "tool",
            "tool_call_id": format!("c{i}"),
            "content": filler(&format!("run{i}"), 150),
        })
        .to_string();
        if i == 0 {
            result.pop();
            result.push_str(&format!(r#","x-run":{UNTOUCHED_FIELDS}}}"#));
        }
        msgs.push(result);
    }
    msgs.push(LATEST.to_string());
    format!(
        "{{\"model\":\"m\",\"seed\":123456789012345678901234567890,\"x-limit\":1e400,\"messages\":[\n{}\n]}}",
        msgs.join(",\n")
    )
}

#[test]
fn kept_messages_and_fields_round_trip_exactly_after_a_reduction() {
    let text = lossy_document();
    let doc = format::read(&text, None).unwrap();
    assert_eq!(doc.format, Format::OpenAi);
    assert_eq!(doc.repairs.lone_surrogates, 3);
    let size = total(&doc.conversation.messages);
    // Tight enough that old tool results are cleared, loose enough that the old user
    // message stays (a session summary would take it in).
    let seam = Seam::new(
        CompactionProfile::tiered(AssemblyPolicy::new(size * 7 / 10), tokens()).unwrap(),
        None,
    )
    .unwrap();
    let p = seam
        .prepare(None, doc.conversation.messages.clone())
        .unwrap();
    assert!(p.changed);
    let reduced = Conversation::new(p.messages);
    let written = [
        format::write(&doc, &reduced),
        format::write_compact(&doc, &reduced),
    ];
    for out in &written {
        // Kept messages are their input text, byte for byte.
        assert!(out.contains(KEPT_USER), "{out}");
        assert!(out.contains(LATEST), "{out}");
        // Top-level fields acms does not touch, exactly as given.
        assert!(out.contains("123456789012345678901234567890,"), "{out}");
        assert!(out.contains("1e400"), "{out}");
        assert!(!out.contains("e+29"), "{out}");
        // A rewritten message keeps the fields the rewrite did not touch.
        assert!(out.contains(UNTOUCHED_FIELDS), "{out}");
        assert!(!out.contains('\u{fffd}'), "{out}");
        // And the output is a conversation again, smaller than the input.
        let again = format::read(out, Some(Format::OpenAi)).unwrap();
        assert!(total(&again.conversation.messages) < size);
    }
}

#[test]
fn rewritten_anthropic_messages_keep_untouched_blocks_exactly() {
    let tool_use = r#"{"type":"tool_use","id":"t1","name":"run","input":{"seed":123456789012345678901234567890,"x":1e400,"s":"\ud800"}}"#;
    let first = r#"{"role":"user","content":"go \ud800","cache_control":{"type":"ephemeral"}}"#;
    let text = format!(
        r#"{{"system":"s","max_tokens":123456789012345678901234567890,"messages":[{first},{{"role":"assistant","content":[{{"type":"text","text":"a long explanation"}},{tool_use}]}},{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t1","content":"ok","x-meta":1e400}}]}},{{"role":"assistant","content":"done"}},{{"role":"user","content":"latest"}}]}}"#
    );
    let doc = format::read(&text, None).unwrap();
    assert_eq!(doc.format, Format::Anthropic);
    let mut conv = doc.conversation.clone();
    let a = conv
        .messages
        .iter()
        .position(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
        .unwrap();
    conv.messages[a].content = "short".into();
    let t = conv
        .messages
        .iter()
        .position(|m| m.role == Role::Tool)
        .unwrap();
    conv.messages[t].content = "[cleared]".into();
    for out in [
        format::write(&doc, &conv),
        format::write_compact(&doc, &conv),
    ] {
        assert!(out.contains(first), "{out}");
        assert!(out.contains(tool_use), "{out}");
        assert!(out.contains("\"x-meta\""), "{out}");
        assert!(!out.contains("e+29"), "{out}");
        assert!(out.contains("123456789012345678901234567890"), "{out}");
        let again = format::read(&out, Some(Format::Anthropic)).unwrap();
        assert_eq!(again.conversation.messages[a].content, "short");
        assert_eq!(again.conversation.messages[t].content, "[cleared]");
    }
}

/// The issue's scenario: a 22 800-byte tool result is offloaded, then the reducer drops the
/// round that held its reference. The body must not be left in the store.
#[test]
fn offloads_the_output_does_not_reference_are_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(ArtifactStore::new(dir.path()));
    let big: String = filler("build", 400).chars().take(22_800).collect();
    assert_eq!(big.len(), 22_800);
    let mut m = vec![
        Message::text(Role::System, "You are a careful coding agent."),
        Message::text(Role::User, "task: make the build pass"),
        call("c0", "run", r#"{"command":"make"}"#),
        Message::tool_result("c0", big),
    ];
    for i in 1..=6 {
        m.push(call(&format!("c{i}"), "run", r#"{"command":"make test"}"#));
        m.push(Message::tool_result(
            format!("c{i}"),
            filler(&format!("t{i}"), 30),
        ));
    }
    m.push(Message::text(Role::User, "latest: and now?"));
    let size = total(&m);
    let seam = Seam::new(
        CompactionProfile::tiered(AssemblyPolicy::new(size / 5), tokens())
            .unwrap()
            .with_artifacts(Arc::clone(&store)),
        None,
    )
    .unwrap();
    let p = seam.prepare(None, m).unwrap();
    // The offload happened, and the final output no longer holds its reference.
    assert!(!p.diagnostics.artifacts.is_empty());
    let output: String = p.messages.iter().map(|m| m.render()).collect();
    assert!(!output.contains(OFFLOAD_MARKER), "{output}");
    let files = stored_files(dir.path());
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        assert!(
            output.contains(&name),
            "{name} is stored but not referenced"
        );
    }
    assert!(files.is_empty(), "{files:?}");
}

#[test]
fn compactor_offloads_are_written_only_when_the_output_references_them() {
    let dir = tempfile::tempdir().unwrap();
    let conv = session(8, 400, 1_700_000_000.0);
    let before = acms_compact::Measured::new(&conv, &tokens()).total;
    let mut c = CompactConfig::new(before / 6);
    c.keep_recent = 300;
    c.summary_reserve = 400;
    c.offload_min_bytes = 4096;
    let out = Compactor::new(c, tokens())
        .unwrap()
        .at_time(1_700_000_000.0)
        .with_artifacts(ArtifactStore::new(dir.path()))
        .compact(&conv)
        .unwrap();
    assert!(
        out.diagnostics
            .stages
            .iter()
            .any(|s| s.stage == Stage::Offload && s.accepted)
    );
    let output: String = out
        .conversation
        .messages
        .iter()
        .map(|m| m.render())
        .collect();
    for f in stored_files(dir.path()) {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        assert!(
            output.contains(&name),
            "{name} is stored but not referenced"
        );
    }
    for r in &out.diagnostics.artifacts {
        assert!(output.contains(&r.digest), "{} reported", r.digest);
    }
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

fn secret_result() -> String {
    let s = secrets();
    format!(
        "aws_access_key_id = {}\naws_secret_access_key = {}\n{}-----BEGIN RSA {}-----\n{}\n{}\n-----END RSA {}-----\nDATABASE_URL=postgresql://app:{}@db.internal:5432/prod\nGITHUB_TOKEN={}\nOPENAI_API_KEY={}\n{}",
        s[0],
        s[1],
        filler("env", 150),
        "PRIVATE KEY",
        s[2],
        s[2],
        "PRIVATE KEY",
        s[3],
        s[4],
        s[5],
        filler("more", 150)
    )
}

#[test]
fn secrets_are_redacted_before_a_body_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(ArtifactStore::new(dir.path()));
    let body = secret_result();
    assert!(body.len() > 16 * 1024);
    let mut m = vec![
        Message::text(Role::System, "You are a careful coding agent."),
        Message::text(Role::User, "task: why does the deploy fail?"),
        call("c0", "run", r#"{"command":"env; cat config/*"}"#),
        Message::tool_result("c0", body),
    ];
    for i in 1..=5 {
        m.push(call(&format!("c{i}"), "run", r#"{"command":"make test"}"#));
        m.push(Message::tool_result(format!("c{i}"), format!("ok {i}")));
    }
    m.push(Message::text(Role::User, "latest: fix it"));
    let size = total(&m);
    let seam = Seam::new(
        CompactionProfile::tiered(AssemblyPolicy::new(size / 2), tokens())
            .unwrap()
            .with_artifacts(Arc::clone(&store)),
        None,
    )
    .unwrap();
    let p = seam.prepare(None, m).unwrap();
    let stub = &p.messages[3].content;
    assert!(stub.starts_with(OFFLOAD_MARKER), "{stub}");
    assert!(stub.contains("secret values redacted"), "{stub}");
    let output: String = p.messages.iter().map(|m| m.render()).collect();
    let files = stored_files(dir.path());
    assert_eq!(files.len(), 1);
    let stored = std::fs::read_to_string(&files[0]).unwrap();
    assert!(stored.contains("[redacted aws-access-key-id]"), "{stored}");
    for s in secrets() {
        assert!(!output.contains(&s), "{s} in the output");
        assert!(!stored.contains(&s), "{s} in the artifact store");
    }
    // The reference resolves to the redacted body.
    let name = files[0].file_name().unwrap().to_string_lossy().to_string();
    assert!(stub.contains(&name));
    assert_eq!(store.get_digest(&name).unwrap(), stored.as_bytes());
}
