//! The HTTP client against a tiny HTTP server on 127.0.0.1 started by each test.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::thread::JoinHandle;
use std::time::Duration;

use acms_llm::{ChatMessage, Error, HttpClient, LlmClient};

/// Serves one request with `status` and `body`; returns the URL and a handle yielding the raw
/// request (headers and body) it received.
fn serve_once(status: u16, body: &'static str) -> (String, JoinHandle<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream);
        let mut head = String::new();
        let mut len = 0usize;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap();
            }
            head.push_str(&line);
            if line == "\r\n" || line.is_empty() {
                break;
            }
        }
        let mut buf = vec![0u8; len];
        reader.read_exact(&mut buf).unwrap();
        let resp = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        reader.get_mut().write_all(resp.as_bytes()).unwrap();
        head + &String::from_utf8(buf).unwrap()
    });
    (url, handle)
}

fn client(url: &str) -> HttpClient {
    HttpClient::new(
        url,
        "test-model",
        Some("k-123".into()),
        Duration::from_secs(5),
    )
}

#[test]
fn sends_openai_request_and_reads_reply() {
    let (url, h) = serve_once(
        200,
        r#"{"choices":[{"message":{"role":"assistant","content":"pong"}}]}"#,
    );
    let reply = client(&url)
        .chat(
            &[ChatMessage::system("s"), ChatMessage::user("ping")],
            Some(7),
        )
        .unwrap();
    assert_eq!(reply, "pong");
    let req = h.join().unwrap();
    assert!(req.starts_with("POST /v1/chat/completions "), "{req}");
    assert!(
        req.to_ascii_lowercase()
            .contains("authorization: bearer k-123")
    );
    let body: serde_json::Value =
        serde_json::from_str(req.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["max_tokens"], 7);
    assert_eq!(body["messages"][1]["role"], "user");
    assert_eq!(body["messages"][1]["content"], "ping");
}

fn check_error(status: u16, body: &'static str, expected: fn(&Error) -> bool) {
    let (url, h) = serve_once(status, body);
    let err = client(&url)
        .chat(&[ChatMessage::user("x")], None)
        .unwrap_err();
    h.join().unwrap();
    assert!(expected(&err), "{status}: {err:?}");
}

#[test]
fn maps_provider_errors() {
    check_error(413, "{}", |e| {
        matches!(e, Error::ContextOverflow { status: 413 })
    });
    check_error(
        400,
        r#"{"error":{"message":"This model's maximum context length is 4097 tokens.","code":"context_length_exceeded"}}"#,
        |e| matches!(e, Error::ContextOverflow { status: 400 }),
    );
    check_error(
        400,
        r#"{"error":{"code":"bad_thing"}}"#,
        |e| matches!(e, Error::Status { status: 400, code: Some(c) } if c == "bad_thing"),
    );
    check_error(500, "oops", |e| {
        matches!(
            e,
            Error::Status {
                status: 500,
                code: None
            }
        )
    });
    check_error(200, "not json", |e| matches!(e, Error::BadResponse(_)));
}

#[test]
fn unreachable_server_is_transport_error() {
    // Bind then drop to get a port nobody listens on.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let c = HttpClient::new(
        &format!("http://127.0.0.1:{port}"),
        "m",
        None,
        Duration::from_secs(2),
    );
    assert!(matches!(
        c.chat(&[ChatMessage::user("x")], None),
        Err(Error::Transport(_))
    ));
}
