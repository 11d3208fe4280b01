//! `acms proxy` end to end: the binary in front of a one-thread fake upstream on loopback;
//! a request that fits is forwarded, one that cannot be bounded gets the provider-style
//! error and never reaches the upstream.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::acms;

/// Serves every connection with a fixed chat completion; records request bodies.
fn fake_upstream() -> (String, Arc<Mutex<Vec<String>>>, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let count = Arc::new(AtomicUsize::new(0));
    let (b, c) = (bodies.clone(), count.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { break };
            let mut reader = BufReader::new(stream);
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
                if line == "\r\n" {
                    break;
                }
            }
            let mut buf = vec![0u8; len];
            if reader.read_exact(&mut buf).is_err() {
                continue;
            }
            b.lock()
                .unwrap()
                .push(String::from_utf8_lossy(&buf).into_owned());
            c.fetch_add(1, Ordering::SeqCst);
            let body = r#"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"pong"},"finish_reason":"stop"}]}"#;
            let resp = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = reader.get_mut().write_all(resp.as_bytes());
        }
    });
    (url, bodies, count)
}

struct Proxy(Child);

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `acms proxy` on a free port; returns it and its base URL.
fn start(upstream: &str, limit: &str) -> (Proxy, String) {
    let (proxy, base, _) = start_with(upstream, limit, &[]);
    (proxy, base)
}

/// [`start`] with more arguments; also returns the rest of its stderr.
fn start_with(
    upstream: &str,
    limit: &str,
    more: &[&str],
) -> (Proxy, String, BufReader<std::process::ChildStderr>) {
    let mut child = acms()
        .args([
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            upstream,
            "--limit",
            limit,
            "--unit",
            "estimated",
        ])
        .args(more)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let base = line
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .trim_end_matches(',')
        .to_string();
    (Proxy(child), base, err)
}

fn post(url: &str, body: &str) -> (u16, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut r = agent
        .post(url)
        .header("content-type", "application/json")
        .send(body)
        .unwrap();
    let status = r.status().as_u16();
    (status, r.body_mut().read_to_string().unwrap())
}

/// Issue 39 item 14: one privacy-safe line per request on stderr, in text by default and in
/// JSON with `--log-format json`, with the assembly's events.
#[test]
fn the_proxy_logs_each_request_on_stderr() {
    let (upstream, _, _) = fake_upstream();
    let secret = "sk-NEVER-LOGGED-77";
    let mut messages = vec![
        serde_json::json!({"role":"system","content":"be brief"}),
        serde_json::json!({"role":"user","content":format!("task {secret}")}),
    ];
    for i in 0..20 {
        messages.push(serde_json::json!({"role":"assistant","content":null,"tool_calls":[{"id":format!("c{i}"),"type":"function","function":{"name":"bash","arguments":"{}"}}]}));
        messages.push(serde_json::json!({"role":"tool","tool_call_id":format!("c{i}"),"content":"FAILED tests/t.py::test_x - KeyError\n".repeat(40)}));
    }
    messages.push(serde_json::json!({"role":"user","content":"go on"}));
    let body = serde_json::json!({"model":"m","messages":messages}).to_string();

    let (proxy, base, mut err) = start_with(&upstream, "2000", &[]);
    let (status, _) = post(&format!("{base}/chat/completions"), &body);
    assert_eq!(status, 200);
    let mut head = String::new();
    err.read_line(&mut head).unwrap();
    assert!(
        head.starts_with("acms proxy: POST /v1/chat/completions 200 reduced, "),
        "{head}"
    );
    assert!(head.contains("estimated tokens (limit 2000)"), "{head}");
    let mut event = String::new();
    err.read_line(&mut event).unwrap();
    assert!(event.starts_with("  #0 started "), "{event}");
    drop(proxy);

    let (proxy, base, mut err) = start_with(&upstream, "2000", &["--log-format", "json"]);
    let (status, _) = post(&format!("{base}/chat/completions"), &body);
    assert_eq!(status, 200);
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert!(!line.contains(secret), "{line}");
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["outcome"], "reduced");
    assert!(v["size_after"].as_u64().unwrap() <= 2000, "{v}");
    let events = v["events"].as_array().unwrap();
    assert_eq!(events[0]["event"], "started");
    assert_eq!(events[0]["assembly_id"], events[1]["assembly_id"]);
    drop(proxy);
}

#[test]
fn proxy_forwards_bounded_requests_and_refuses_irreducible_ones() {
    let (upstream, bodies, count) = fake_upstream();
    let (_proxy, base) = start(&upstream, "2000");
    let mut messages = vec![
        serde_json::json!({"role":"system","content":"be brief"}),
        serde_json::json!({"role":"user","content":"task"}),
    ];
    for i in 0..20 {
        messages.push(serde_json::json!({"role":"assistant","content":null,"tool_calls":[{"id":format!("c{i}"),"type":"function","function":{"name":"bash","arguments":"{\"command\":\"pytest\"}"}}]}));
        messages.push(serde_json::json!({"role":"tool","tool_call_id":format!("c{i}"),"content":"FAILED tests/t.py::test_x - KeyError\n".repeat(40)}));
    }
    messages.push(serde_json::json!({"role":"user","content":"go on"}));
    let body = serde_json::json!({"model":"m","messages":messages}).to_string();
    let (status, text) = post(&format!("{base}/chat/completions"), &body);
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("pong"));
    assert_eq!(count.load(Ordering::SeqCst), 1);
    let forwarded = bodies.lock().unwrap()[0].clone();
    // Bounded in the unit the proxy counts (estimated tokens of the messages), not in JSON
    // bytes: escapes and keys make the wire form larger than what is counted.
    let sent = acms::compact::format::read(&forwarded, None).unwrap();
    let size = acms::compact::Measured::new(
        &sent.conversation,
        &acms::compact::Meter::estimated_tokens(),
    )
    .total;
    assert!(
        forwarded.len() < body.len() && size <= 2000,
        "{} bytes, {size} estimated tokens",
        forwarded.len()
    );
    // Irreducible: 400 context_length_exceeded, not forwarded.
    let huge = serde_json::json!({"model":"m","messages":[{"role":"system","content":"x".repeat(20_000)},{"role":"user","content":"hi"}]}).to_string();
    let (status, text) = post(&format!("{base}/chat/completions"), &huge);
    assert_eq!(status, 400);
    assert!(text.contains("context_length_exceeded"), "{text}");
    assert!(text.contains("2000 estimated tokens"), "{text}");
    assert_eq!(count.load(Ordering::SeqCst), 1);
}

#[test]
fn proxy_refuses_a_public_address() {
    let out = crate::run(&[
        "proxy",
        "--listen",
        "0.0.0.0:0",
        "--upstream",
        "http://127.0.0.1:9/v1",
        "--limit",
        "100",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--allow-remote"));
}

/// The startup banner is read by people and logs: a password in the upstream URL stays out.
#[test]
fn the_banner_does_not_print_upstream_credentials() {
    let mut child = acms()
        .args([
            "proxy",
            "--listen",
            "127.0.0.1:0",
            "--upstream",
            "https://alice:hunter2-secret@upstream.invalid/v1",
            "--limit",
            "1000",
        ])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _proxy = Proxy(child);
    assert!(line.contains("listening on"), "{line}");
    assert!(line.contains("upstream.invalid"), "{line}");
    assert!(!line.contains("hunter2-secret"), "{line}");
    // Issue 39 item 15: the banner says which tokenizer counts the limit.
    assert!(line.contains("counted with o200k_base"), "{line}");
}
