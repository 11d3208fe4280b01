//! Issue 37 item 4: the limit is on what the provider counts — tools, `response_format`,
//! `name`, a top-level `system`, other endpoints — not only message content. Each request
//! is counted with tiktoken after the provider's recipe ([`provider_tokens`]) wherever it
//! reaches the upstream.

use acms_core::Tokenizer;
use serde_json::{Value, json};

use crate::support::{Recorder, conversation, provider_tokens, proxy, recorder};

const LIMIT: usize = 2_000;
const TOK: Tokenizer = Tokenizer::O200kBase;

fn tokens(v: &Value) -> usize {
    provider_tokens(TOK, v)
}

/// A function tool of about `words` words of description, with parameters and an enum.
pub fn tool(i: usize, words: usize) -> Value {
    json!({"type":"function","function":{
        "name": format!("tool_{i}"),
        "description": format!("Tool {i}: ") + &"reads the repository and reports findings. ".repeat(words / 6 + 1),
        "parameters":{"type":"object","properties":{
            "path":{"type":"string","description":"A path inside the repository."},
            "mode":{"type":"string","enum":["fast","full","diff","blame"]}
        },"required":["path"]}}})
}

fn assert_none_over(up: &Recorder) {
    for r in up.requests() {
        let body: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
        let n = tokens(&body);
        assert!(
            n <= LIMIT,
            "{} {}: {n} tokens reached the upstream",
            r.method,
            r.target
        );
    }
}

async fn post(base: &str, path: &str, body: &Value) -> (u16, Option<String>, Value) {
    let r = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .json(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let outcome = r
        .headers()
        .get("x-acms-outcome")
        .map(|v| v.to_str().unwrap().to_string());
    let v = r.json().await.unwrap_or(Value::Null);
    (status, outcome, v)
}

/// A request whose non-message fields alone are over the limit is refused with a 4xx that
/// names them, and never forwarded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fields_over_the_limit_on_their_own_are_refused() {
    let up = recorder(None).await;
    let (addr, stop) = proxy(TOK, LIMIT, format!("http://{}/v1", up.addr)).await;
    let base = format!("http://{addr}/v1");
    let hi = json!([{"role":"user","content":"hi"}]);
    let tools: Vec<Value> = (0..40).map(|i| tool(i, 60)).collect();
    let schema = json!({"type":"json_schema","json_schema":{"name":"report","schema":{
        "type":"object","description": "field description ".repeat(2_500)}}});
    let cases = [
        ("tools", json!({"model":"m","messages":hi,"tools":tools})),
        (
            "response_format",
            json!({"model":"m","messages":hi,"response_format":schema}),
        ),
        (
            "system",
            json!({"model":"m","messages":hi,"system":"rule ".repeat(3_000)}),
        ),
        (
            "functions",
            json!({"model":"m","messages":hi,"functions":tools.iter().map(|t| t["function"].clone()).collect::<Vec<_>>()}),
        ),
    ];
    for (field, body) in cases {
        assert!(tokens(&body) > LIMIT, "{field}");
        let (status, _, v) = post(&base, "/chat/completions", &body).await;
        assert!((400..500).contains(&status), "{field}: {status} {v}");
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(field), "{field}: {message}");
        assert!(message.contains(&LIMIT.to_string()), "{message}");
    }
    assert!(up.requests().is_empty(), "nothing forwarded");
    let _ = stop.send(());
}

/// Tools that fit, with a long conversation: the messages are bounded to what is left, so
/// the whole request is within the limit as the provider counts it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_and_names_count_against_the_limit() {
    let up = recorder(None).await;
    let (addr, stop) = proxy(TOK, LIMIT, format!("http://{}/v1", up.addr)).await;
    let base = format!("http://{addr}/v1");
    // About 900 tokens of tools and a conversation of several times the limit.
    let mut body = conversation(3, 20, false);
    body["tools"] = json!((0..6).map(|i| tool(i, 80)).collect::<Vec<_>>());
    let (status, outcome, v) = post(&base, "/chat/completions", &body).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(outcome.as_deref(), Some("reduced"));
    // Names are counted: every message's, reserved before the messages are bounded.
    let mut body = conversation(4, 12, false);
    body["messages"][1]["name"] = json!("n".repeat(600));
    let (status, _, v) = post(&base, "/chat/completions", &body).await;
    assert_eq!(status, 200, "{v}");
    // On the latest request it cannot go: refused, not forwarded.
    let mut body =
        json!({"model":"m","messages":[{"role":"user","content":"hi","name":"n".repeat(50_000)}]});
    let before = up.requests().len();
    let (status, _, v) = post(&base, "/chat/completions", &body).await;
    assert_eq!(status, 400, "{v}");
    assert_eq!(v["error"]["code"], "context_length_exceeded");
    assert_eq!(up.requests().len(), before);
    // A request that fits with its tools goes through unchanged, byte for byte.
    body = json!({"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[tool(1, 30)]});
    let (status, outcome, _) = post(&base, "/chat/completions", &body).await;
    assert_eq!((status, outcome.as_deref()), (200, Some("within_limit")));
    assert_eq!(
        serde_json::from_slice::<Value>(&up.requests().last().unwrap().body).unwrap(),
        body
    );
    assert_none_over(&up);
    let _ = stop.send(());
}

/// `/v1/responses`, Anthropic `/v1/messages` and legacy `/v1/completions` are counted too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_completion_endpoints_are_bounded_or_refused() {
    let up = recorder(None).await;
    let (addr, stop) = proxy(TOK, LIMIT, format!("http://{}/v1", up.addr)).await;
    let base = format!("http://{addr}/v1");
    // Responses: an input over the limit is refused with a message that says why.
    let input: Vec<Value> = (0..40)
        .map(|i| json!({"role":"user","content":[{"type":"input_text","text":format!("step {i} ") + &"log line ".repeat(80)}]}))
        .collect();
    let big = json!({"model":"m","input":input,"instructions":"be brief"});
    assert!(tokens(&big) > 2 * LIMIT);
    let (status, _, v) = post(&base, "/responses", &big).await;
    assert_eq!(status, 400, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("responses"),
        "{v}"
    );
    // One that fits is forwarded, counted.
    let small = json!({"model":"m","input":"hello","instructions":"be brief"});
    let (status, outcome, _) = post(&base, "/responses", &small).await;
    assert_eq!((status, outcome.as_deref()), (200, Some("within_limit")));
    // Server-side state the proxy cannot count is refused.
    let chained = json!({"model":"m","input":"more","previous_response_id":"resp_1"});
    let (status, _, v) = post(&base, "/responses", &chained).await;
    assert_eq!(status, 400, "{v}");
    // Legacy completions: a prompt over the limit is refused.
    let legacy = json!({"model":"m","prompt":"word ".repeat(5_000)});
    let (status, _, v) = post(&base, "/completions", &legacy).await;
    assert_eq!(status, 400, "{v}");
    // Anthropic messages: a long tool-using conversation is bounded.
    let mut messages = vec![json!({"role":"user","content":"Fix the config tests."})];
    for i in 0..30 {
        messages.push(json!({"role":"assistant","content":[{"type":"tool_use","id":format!("t{i}"),"name":"bash","input":{"command":"pytest"}}]}));
        messages.push(json!({"role":"user","content":[{"type":"tool_result","tool_use_id":format!("t{i}"),"content":format!("FAILED test_{i}\n").repeat(40)}]}));
    }
    messages.push(json!({"role":"assistant","content":"Looking."}));
    messages.push(json!({"role":"user","content":"Continue."}));
    let anthropic = json!({"model":"claude","max_tokens":100,"system":"You are a coding agent.","messages":messages,"tools":[{"name":"bash","description":"Runs a command.","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}]});
    assert!(tokens(&anthropic) > 3 * LIMIT);
    let (status, outcome, v) = post(&base, "/messages", &anthropic).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(outcome.as_deref(), Some("reduced"));
    let last = up.requests().last().unwrap().clone();
    assert_eq!(last.target, "/v1/messages");
    assert_none_over(&up);
    let _ = stop.send(());
}

/// Issue 39 item 15: a body that is not JSON gets a 400 in an HTTP client's words (where it
/// broke), not the CLI's "pass --format", and nothing is forwarded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_is_not_json_is_a_400_in_the_clients_words() {
    let up = recorder(None).await;
    let (addr, stop) = proxy(TOK, LIMIT, format!("http://{}/v1", up.addr)).await;
    let r = reqwest::Client::new()
        .post(format!("http://{addr}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body("{\"model\": \"m\", \"messages\": [")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let v: Value = r.json().await.unwrap();
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("not valid JSON")
            && message.contains("line 1")
            && !message.contains("--format"),
        "{v}"
    );
    assert!(up.requests().is_empty(), "nothing is forwarded");
    stop.send(()).ok();
}
