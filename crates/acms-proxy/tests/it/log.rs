//! The request log: one line per request with sizes, outcome and the seam's events, never
//! content.

use std::io::Write;
use std::sync::{Arc, Mutex};

use acms_compact::Meter;
use acms_proxy::{LogFormat, ProxyState, RequestLog};
use serde_json::{Value, json};

use crate::support::{config, conversation, upstream};

/// A writer the test reads back.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Shared {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

/// A proxy logging in `format` to a buffer, in front of the fake upstream.
async fn start(
    format: LogFormat,
    limit: usize,
) -> (String, Shared, tokio::sync::oneshot::Sender<()>) {
    let meter = Meter::tokens(acms_core::Tokenizer::O200kBase);
    let up = upstream(meter, limit).await;
    let config = config(
        acms_core::Tokenizer::O200kBase,
        limit,
        format!("http://{}/v1", up.addr),
    );
    let out = Shared::default();
    let state = ProxyState::with_log(&config, RequestLog::to(format, out.clone())).unwrap();
    let listener = acms_proxy::bind(&config).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        acms_proxy::serve(listener, state, async {
            let _ = rx.await;
        })
        .await
        .unwrap()
    });
    (format!("http://{addr}/v1"), out, tx)
}

const SECRET: &str = "tok-SECRET-4242";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_request_gets_one_json_line_with_sizes_and_its_events_and_no_content() {
    let limit = 4_000;
    let (base, out, stop) = start(LogFormat::Json, limit).await;
    let client = reqwest::Client::new();

    // Over the limit: compacted. The secret is in a message and in the query string.
    let mut long = conversation(7, 30, false);
    long["messages"][1]["content"] = json!(format!("Task: fix it. key {SECRET}"));
    let r = client
        .post(format!("{base}/chat/completions?api_key={SECRET}"))
        .json(&long)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // Within the limit: forwarded unchanged.
    let short = conversation(8, 1, false);
    let r = client
        .post(format!("{base}/chat/completions"))
        .json(&short)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // Not JSON: refused, nothing forwarded.
    let r = client
        .post(format!("{base}/chat/completions"))
        .body(format!("not json {SECRET}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    // Another path: passed through.
    let r = client.get(format!("{base}/models")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let _ = stop.send(());

    let text = out.text();
    assert!(
        !text.contains(SECRET),
        "content or query string logged:\n{text}"
    );
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "one line per request:\n{text}");

    let compacted = &lines[0];
    assert_eq!(compacted["method"], "POST");
    assert_eq!(compacted["path"], "/v1/chat/completions");
    assert_eq!(compacted["status"], 200);
    assert_eq!(compacted["outcome"], "reduced");
    assert_eq!(compacted["unit"], "tokens");
    assert_eq!(compacted["hard_limit"], limit);
    let before = compacted["size_before"].as_u64().unwrap();
    let after = compacted["size_after"].as_u64().unwrap();
    assert!(
        before > limit as u64 && after <= limit as u64,
        "{compacted}"
    );
    assert!(compacted["bytes_out"].as_u64().unwrap() < compacted["bytes_in"].as_u64().unwrap());
    assert!(compacted["assemblies"].as_u64().unwrap() >= 1);
    assert!(compacted["attempts"].as_u64().unwrap() >= 1);
    assert!(compacted["ms"].as_f64().unwrap() > 0.0);
    // The event stream of the request's (first) assembly: started, completed, composed, one id.
    let events = compacted["events"].as_array().unwrap();
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        &names[..3],
        ["started", "completed", "composed"],
        "{names:?}"
    );
    let id = &events[0]["assembly_id"];
    assert!(id.as_str().is_some_and(|s| s.len() == 36), "{id}");
    assert!(events[..3].iter().all(|e| &e["assembly_id"] == id));
    assert_eq!(events[1]["outcome"], "reduced");

    let unchanged = &lines[1];
    assert_eq!(unchanged["outcome"], "within_limit");
    assert_eq!(unchanged["size_before"], unchanged["size_after"]);
    assert_eq!(unchanged["bytes_in"], unchanged["bytes_out"]);

    let bad = &lines[2];
    assert_eq!(
        (bad["status"].as_u64(), bad["outcome"].as_str()),
        (Some(400), Some("bad_request"))
    );
    assert!(bad["bytes_out"].is_null(), "nothing forwarded: {bad}");

    let models = &lines[3];
    assert_eq!(models["method"], "GET");
    assert_eq!(models["path"], "/v1/models");
    assert_eq!(models["outcome"], "passed_through");
    assert!(models["events"].as_array().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_text_line_states_the_outcome_sizes_and_events() {
    let limit = 4_000;
    let (base, out, stop) = start(LogFormat::Text, limit).await;
    let r = reqwest::Client::new()
        .post(format!("{base}/chat/completions"))
        .json(&conversation(3, 30, false))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let _ = stop.send(());
    let text = out.text();
    let mut lines = text.lines();
    let head = lines.next().unwrap();
    assert!(
        head.starts_with("acms proxy: POST /v1/chat/completions 200 reduced, "),
        "{head}"
    );
    assert!(head.contains(&format!("tokens (limit {limit})")), "{head}");
    assert!(head.contains(" bytes, ") && head.ends_with(" ms"), "{head}");
    let events: Vec<&str> = lines.collect();
    assert!(events.len() >= 3, "{text}");
    assert!(events.iter().all(|l| l.starts_with("  #")), "{text}");
    assert!(events[0].contains(" started "), "{text}");
    assert!(
        events[1].contains(" completed ") && events[1].contains(": reduced"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logging_off_writes_nothing() {
    let (base, out, stop) = start(LogFormat::Off, 4_000).await;
    let r = reqwest::Client::new()
        .post(format!("{base}/chat/completions"))
        .json(&conversation(3, 30, false))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let _ = stop.send(());
    assert!(out.text().is_empty());
}
