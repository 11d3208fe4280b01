//! Issue 37 item 12: `acms mcp` fed raw frames that its SDK's transport dropped without a word
//! (a lone surrogate, a 50 MB frame, 100 000-deep nesting, a last frame without its newline,
//! JSON that is no message). Every request gets exactly one answer, an error carrying its id
//! when the id can be read; a session is read to its end under a deadline, so a missing answer
//! fails the test instead of hanging it.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::fixture;

const DEADLINE: Duration = Duration::from_secs(120);

fn initialize() -> Vec<Vec<u8>> {
    vec![
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "frames", "version": "0"}}})
        .to_string()
        .into_bytes(),
        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec(),
    ]
}

/// Runs `acms mcp` on the fixture, writes `initialize` and `frames` (each followed by a
/// newline, but for the last when `last_newline` is false), closes stdin and returns every
/// message the server wrote before exiting.
fn session(frames: &[Vec<u8>], last_newline: bool) -> Vec<Value> {
    let repo = fixture();
    let mut child = crate::acms()
        .args(["mcp", "--repo", repo.path().to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut all = initialize();
    all.extend(frames.iter().cloned());
    // Written on its own thread: a large frame fills the pipe until the server reads it.
    let writer = std::thread::spawn(move || {
        let n = all.len();
        for (i, f) in all.into_iter().enumerate() {
            if stdin.write_all(&f).is_err() {
                return;
            }
            if (i + 1 < n || last_newline) && stdin.write_all(b"\n").is_err() {
                return;
            }
        }
        let _ = stdin.flush();
    });
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let start = Instant::now();
    let mut messages = Vec::new();
    loop {
        let left = DEADLINE.saturating_sub(start.elapsed());
        match rx.recv_timeout(left) {
            Ok(line) => {
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not a protocol message ({e}): {line:?}"));
                assert_eq!(v["jsonrpc"], "2.0", "{v}");
                // Server notifications (progress and log lines while the repository is
                // indexed) answer no frame; how many arrive depends on timing.
                if v.get("method").is_none() {
                    messages.push(v);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                panic!("the server did not finish within {DEADLINE:?}; it wrote {messages:?}");
            }
        }
    }
    writer.join().unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    let init: Vec<&Value> = messages.iter().filter(|m| m["id"] == 1).collect();
    assert!(
        init.len() == 1 && init[0]["result"]["serverInfo"]["name"] == "acms",
        "{messages:?}"
    );
    messages
}

/// The one message answering `id`.
fn answer(messages: &[Value], id: Value) -> &Value {
    let found: Vec<&Value> = messages.iter().filter(|m| m["id"] == id).collect();
    assert_eq!(found.len(), 1, "answers to {id}: {messages:?}");
    found[0]
}

fn call(id: u64, query: &str) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"search","arguments":{{"query":{query}}}}}}}"#
    )
    .into_bytes()
}

fn list(id: Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"})
        .to_string()
        .into_bytes()
}

#[test]
fn a_lone_surrogate_gets_a_parse_error_carrying_the_id() {
    let m = session(&[call(7, r#""\ud800 sales""#), list(json!(8))], true);
    let e = answer(&m, json!(7));
    assert_eq!(e["error"]["code"], -32700, "{e}");
    assert!(answer(&m, json!(8))["result"]["tools"].is_array());
}

#[test]
fn a_50_mb_frame_gets_an_error_carrying_the_id_and_the_next_frame_is_served() {
    let big = format!("\"{}\"", "x".repeat(50 * 1024 * 1024));
    let m = session(&[call(7, &big), list(json!("after"))], true);
    let e = answer(&m, json!(7));
    assert_eq!(e["error"]["code"], -32600, "{e}");
    let message = e["error"]["message"].as_str().unwrap();
    assert!(message.contains("8388608"), "{message}");
    assert!(answer(&m, json!("after"))["result"]["tools"].is_array());
}

#[test]
fn nesting_100_000_deep_gets_a_parse_error_carrying_the_id() {
    let deep = format!("{{\"q\":{}{}}}", "[".repeat(100_000), "]".repeat(100_000));
    let m = session(&[call(7, &deep), list(json!(8))], true);
    let e = answer(&m, json!(7));
    assert_eq!(e["error"]["code"], -32700, "{e}");
    assert!(answer(&m, json!(8))["result"]["tools"].is_array());
}

#[test]
fn the_last_frame_is_answered_without_its_newline() {
    let m = session(&[list(json!(7))], false);
    assert!(answer(&m, json!(7))["result"]["tools"].is_array());
}

#[test]
fn errors_for_malformed_frames_carry_the_id_when_it_can_be_read() {
    let m = session(
        &[
            br#"{"jsonrpc":"2.0","id":"s-1","method":"tools/list" trailing"#.to_vec(),
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"not an object"}"#.to_vec(),
            b"not json at all {".to_vec(),
            b"".to_vec(),
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":7}"#.to_vec(),
            list(json!(8)),
            list(json!(8)),
        ],
        true,
    );
    assert_eq!(answer(&m, json!("s-1"))["error"]["code"], -32700);
    assert_eq!(answer(&m, json!(7))["error"]["code"], -32600);
    let anonymous: Vec<&Value> = m.iter().filter(|v| v["id"].is_null()).collect();
    assert!(
        anonymous.len() == 1 && anonymous[0]["error"]["code"] == -32700,
        "one error without an id (the frame with none), nothing for the blank line or the notification: {m:?}"
    );
    // The same id twice: both answered, once each (rmcp alone answers one of the two only
    // when the second arrives before the first is answered).
    let eights: Vec<&Value> = m.iter().filter(|v| v["id"] == 8).collect();
    assert_eq!(eights.len(), 2, "{m:?}");
    assert_eq!(m.len(), 1 + 2 + 1 + 2, "{m:?}");
}
