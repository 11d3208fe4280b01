//! A fake OpenAI-compatible upstream on loopback that measures every request it receives,
//! and generators of long tool-using conversations. Shared with the proxy bench.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use acms_compact::Meter;
use acms_compact::format::{self, Format};
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// What the fake upstream saw.
#[derive(Default)]
pub struct Seen {
    pub requests: AtomicUsize,
    pub max_size: AtomicU64,
    pub over_limit: AtomicUsize,
    pub ids: Mutex<Vec<String>>,
}

pub struct Upstream {
    pub addr: SocketAddr,
    pub seen: Arc<Seen>,
}

struct UpstreamState {
    seen: Arc<Seen>,
    meter: Meter,
    limit: usize,
}

async fn complete(State(s): State<Arc<UpstreamState>>, body: Bytes) -> Response {
    let text = String::from_utf8_lossy(&body);
    let doc = format::read(&text, Some(Format::OpenAi)).expect("the proxy forwards valid JSON");
    let size: usize = doc
        .conversation
        .messages
        .iter()
        .map(|m| s.meter.message(m))
        .sum();
    s.seen.requests.fetch_add(1, Ordering::SeqCst);
    s.seen.max_size.fetch_max(size as u64, Ordering::SeqCst);
    if size > s.limit {
        s.seen.over_limit.fetch_add(1, Ordering::SeqCst);
    }
    // The proxy forwards unchanged bodies byte for byte, lone surrogates included.
    let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    let id = v["metadata"]["conversation"]
        .as_str()
        .unwrap_or("")
        .to_string();
    s.seen.ids.lock().unwrap().push(id.clone());
    let reply = format!("done {id}");
    if v["stream"] == json!(true) {
        let chunk = |delta: Value, finish: Value| {
            format!(
                "data: {}\n\n",
                json!({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"fake",
                       "choices":[{"index":0,"delta":delta,"finish_reason":finish}]})
            )
        };
        let sse = format!(
            "{}{}{}data: [DONE]\n\n",
            chunk(json!({"role":"assistant","content":""}), Value::Null),
            chunk(json!({"content": reply}), Value::Null),
            chunk(json!({}), json!("stop"))
        );
        return ([("content-type", "text/event-stream")], sse).into_response();
    }
    let body = json!({"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"fake",
        "choices":[{"index":0,"message":{"role":"assistant","content":reply},"finish_reason":"stop"}],
        "usage":{"prompt_tokens":size,"completion_tokens":2,"total_tokens":size + 2}});
    ([("content-type", "application/json")], body.to_string()).into_response()
}

async fn models() -> Response {
    (
        [("content-type", "application/json")],
        json!({"object":"list","data":[{"id":"fake","object":"model","created":1,"owned_by":"acms"}]}).to_string(),
    )
        .into_response()
}

/// Starts the fake upstream on 127.0.0.1 (a random port); it checks every request against
/// `limit` in `meter`'s unit.
pub async fn upstream(meter: Meter, limit: usize) -> Upstream {
    let seen = Arc::new(Seen::default());
    let state = Arc::new(UpstreamState {
        seen: seen.clone(),
        meter,
        limit,
    });
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(complete))
        .route("/v1/models", axum::routing::get(models))
        .layer(axum::extract::DefaultBodyLimit::max(256 * 1024 * 1024))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Upstream { addr, seen }
}

/// A long tool-using conversation as an OpenAI request body: `rounds` rounds of
/// assistant tool call → tool result (test logs and file reads of varied length).
pub fn conversation(id: usize, rounds: usize, stream: bool) -> Value {
    let mut messages = vec![
        json!({"role":"system","content":"You are a coding agent. Read before you edit; run the tests after every change."}),
        json!({"role":"user","content":format!("Task {id}: fix the failing config loader tests in src/config.py.")}),
    ];
    for r in 0..rounds {
        let call_id = format!("call_{id}_{r}");
        let (name, args, body) = if r % 3 == 2 {
            let log: String = (0..(20 + (id * 7 + r * 13) % 60))
                .map(|i| {
                    if i % 11 == 0 {
                        format!(
                            "FAILED tests/test_config.py::test_case_{r}_{i} - KeyError: 'key_{i}'\n"
                        )
                    } else {
                        format!("tests/test_config.py::test_case_{r}_{i} PASSED\n")
                    }
                })
                .collect();
            (
                "bash",
                json!({"command":"python -m pytest tests/test_config.py -q"}),
                log,
            )
        } else {
            let src: String = (0..(30 + (id * 11 + r * 17) % 90))
                .map(|i| {
                    format!("def function_{r}_{i}(value):\n    return value * {i}  # module {r}\n")
                })
                .collect();
            (
                "read_file",
                json!({"path": format!("src/module_{r}.py")}),
                src,
            )
        };
        messages.push(json!({"role":"assistant","content":null,"tool_calls":[{"id":call_id,"type":"function","function":{"name":name,"arguments":args.to_string()}}]}));
        messages.push(json!({"role":"tool","tool_call_id":call_id,"content":body}));
    }
    messages.push(json!({"role":"user","content":"Continue, then report what changed."}));
    json!({"model":"fake","stream":stream,"metadata":{"conversation":id.to_string()},"messages":messages})
}

/// One request as the recording upstream received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    /// Path and query as they reached the upstream.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
}

/// A fake upstream that records every request on every path and method and answers each
/// with a small chat completion (or with `status` and `location`, for redirects).
pub struct Recorder {
    pub addr: SocketAddr,
    pub seen: Arc<Mutex<Vec<Recorded>>>,
}

impl Recorder {
    pub fn requests(&self) -> Vec<Recorded> {
        self.seen.lock().unwrap().clone()
    }
}

/// Starts a recording upstream on 127.0.0.1; with `redirect_to`, every answer is a 307 to
/// that URL (same path) instead of a completion.
pub async fn recorder(redirect_to: Option<String>) -> Recorder {
    let seen: Arc<Mutex<Vec<Recorded>>> = Arc::default();
    let s = seen.clone();
    let app = axum::Router::new()
        .fallback(
            move |method: axum::http::Method,
                  uri: axum::http::Uri,
                  headers: axum::http::HeaderMap,
                  body: Bytes| {
                let s = s.clone();
                let redirect_to = redirect_to.clone();
                async move {
                    let target = uri
                        .path_and_query()
                        .map(|p| p.as_str().to_string())
                        .unwrap_or_default();
                    s.lock().unwrap().push(Recorded {
                        method: method.to_string(),
                        target: target.clone(),
                        headers: headers
                            .iter()
                            .map(|(k, v)| {
                                (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into())
                            })
                            .collect(),
                        body,
                    });
                    if let Some(to) = redirect_to {
                        return (
                            axum::http::StatusCode::TEMPORARY_REDIRECT,
                            [("location", format!("{to}{target}"))],
                            "",
                        )
                            .into_response();
                    }
                    let body = json!({"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"fake",
                        "choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]});
                    ([("content-type", "application/json")], body.to_string()).into_response()
                }
            },
        )
        .layer(axum::extract::DefaultBodyLimit::max(256 * 1024 * 1024));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Recorder { addr, seen }
}

/// Prompt tokens of a request body as the provider counts them, with tiktoken (the
/// reference tokenizer, not the one the proxy uses) after OpenAI's cookbook recipe: 3 tokens
/// framing each message, `name` plus 1, 3 priming the reply; function definitions as the
/// cookbook counts them (7 per function, its `name:description`, 3 per parameter and its
/// `name:type:description`, 3 per enum item, 12 at the end); `response_format` and any
/// other prompt-bearing field as their JSON; Anthropic's `system` as one more message;
/// Responses API `input` items and `instructions` as messages.
pub fn provider_tokens(tokenizer: acms_core::Tokenizer, body: &Value) -> usize {
    use acms_core::TokenCounter;
    let counter = tokenizer.tiktoken();
    let n = |s: &str| counter.count(s);
    let text_of = |v: &Value| -> usize {
        match v {
            Value::String(s) => n(s),
            Value::Null => 0,
            // Text parts and blocks; Anthropic tool use as its name and input, a tool
            // result as its content's text.
            Value::Array(parts) => parts
                .iter()
                .map(|p| match p["type"].as_str() {
                    Some("tool_use") => {
                        n(p["name"].as_str().unwrap_or("")) + n(&p["input"].to_string())
                    }
                    Some("tool_result") => match &p["content"] {
                        Value::String(s) => n(s),
                        Value::Array(b) => {
                            b.iter().map(|x| n(x["text"].as_str().unwrap_or(""))).sum()
                        }
                        _ => 0,
                    },
                    _ => match p.get("text").and_then(Value::as_str) {
                        Some(t) => n(t),
                        None => n(&p.to_string()),
                    },
                })
                .sum(),
            other => n(&other.to_string()),
        }
    };
    let mut total = 3;
    for m in body["messages"].as_array().into_iter().flatten() {
        total += 3 + n(m["role"].as_str().unwrap_or(""));
        total += text_of(&m["content"]);
        if let Some(name) = m["name"].as_str() {
            total += n(name) + 1;
        }
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            total += n(c["function"]["name"].as_str().unwrap_or(""));
            total += n(c["function"]["arguments"].as_str().unwrap_or(""));
        }
    }
    for item in body["input"].as_array().into_iter().flatten() {
        total += 3 + text_of(&item["content"]);
    }
    if let Some(s) = body["input"].as_str() {
        total += 3 + n(s);
    }
    if let Some(s) = body["instructions"].as_str() {
        total += 3 + n(s);
    }
    if !body["system"].is_null() {
        total += 3 + text_of(&body["system"]);
    }
    let tools: Vec<&Value> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(body["functions"].as_array().into_iter().flatten())
        .collect();
    for t in &tools {
        let f = if t["function"].is_object() {
            &t["function"]
        } else {
            t
        };
        total += 7;
        let desc = f["description"].as_str().unwrap_or("");
        total += n(&format!(
            "{}:{}",
            f["name"].as_str().unwrap_or(""),
            desc.trim_end_matches('.')
        ));
        let props = f["parameters"]["properties"].as_object();
        if let Some(props) = props.filter(|p| !p.is_empty()) {
            total += 3;
            for (key, p) in props {
                total += 3;
                for item in p["enum"].as_array().into_iter().flatten() {
                    total += 3 + n(item.as_str().unwrap_or(""));
                }
                total += n(&format!(
                    "{key}:{}:{}",
                    p["type"].as_str().unwrap_or(""),
                    p["description"]
                        .as_str()
                        .unwrap_or("")
                        .trim_end_matches('.')
                ));
            }
        }
    }
    if !tools.is_empty() {
        total += 12;
    }
    for key in ["response_format", "tool_choice"] {
        if !body[key].is_null() {
            total += n(&body[key].to_string());
        }
    }
    if !body["text"].is_null() {
        total += n(&body["text"].to_string());
    }
    total
}

/// A proxy on 127.0.0.1 (a random port) in front of `upstream_url`, bounding at `limit`
/// tokens of `tokenizer`. Returns its address and the sender that stops it.
pub async fn proxy(
    tokenizer: acms_core::Tokenizer,
    limit: usize,
    upstream_url: String,
) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
    proxy_with(
        tokenizer,
        limit,
        upstream_url,
        acms_proxy::ServeLimits::default(),
    )
    .await
}

/// [`proxy`] with connection `limits`.
pub async fn proxy_with(
    tokenizer: acms_core::Tokenizer,
    limit: usize,
    upstream_url: String,
    limits: acms_proxy::ServeLimits,
) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
    let config = config(tokenizer, limit, upstream_url);
    let listener = acms_proxy::bind(&config).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let state = acms_proxy::ProxyState::new(&config).unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        acms_proxy::serve_with(listener, state, limits, async {
            let _ = rx.await;
        })
        .await
        .unwrap()
    });
    (addr, tx)
}

/// A proxy configuration on 127.0.0.1:0.
pub fn config(
    tokenizer: acms_core::Tokenizer,
    limit: usize,
    upstream_url: String,
) -> acms_proxy::ProxyConfig {
    acms_proxy::ProxyConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream: upstream_url,
        profile: acms_compact::CompactionProfile::tiered(
            acms_compact::AssemblyPolicy::new(limit),
            Meter::tokens(tokenizer),
        )
        .unwrap(),
        allow_remote: false,
    }
}

/// A response read off the wire.
#[derive(Debug)]
pub struct Raw {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Raw {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Sends one HTTP/1.1 request with `target` exactly as given (no client normalises it, as
/// reqwest and `url` would) and reads the whole response.
pub async fn raw(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Raw {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut head = format!(
        "{method} {target} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(body).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    parse_response(&out)
}

/// Parses one HTTP/1.1 response (content-length, chunked or read to the end).
pub fn parse_response(bytes: &[u8]) -> Raw {
    let split = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a complete response head");
    let head = String::from_utf8_lossy(&bytes[..split]).to_string();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let rest = &bytes[split + 4..];
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        let mut out = Vec::new();
        let mut at = 0;
        while let Some(nl) = rest[at..].windows(2).position(|w| w == b"\r\n") {
            let size = usize::from_str_radix(
                String::from_utf8_lossy(&rest[at..at + nl])
                    .split(';')
                    .next()
                    .unwrap()
                    .trim(),
                16,
            )
            .unwrap();
            at += nl + 2;
            if size == 0 {
                break;
            }
            out.extend_from_slice(&rest[at..at + size]);
            at += size + 2;
        }
        out
    } else {
        rest.to_vec()
    };
    Raw {
        status,
        headers,
        body: String::from_utf8_lossy(&body).to_string(),
    }
}
