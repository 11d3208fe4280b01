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
