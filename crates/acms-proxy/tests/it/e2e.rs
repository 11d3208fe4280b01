//! End to end: 200 concurrent long tool-using conversations through the proxy to a fake
//! upstream on loopback. None is forwarded over the limit, none is lost, terminated ones
//! get the provider-style error and never reach the upstream, streaming is relayed.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use acms_compact::{AssemblyPolicy, CompactionProfile, Meter};
use acms_proxy::{ProxyConfig, ProxyState};
use serde_json::{Value, json};

use crate::support::{conversation, upstream};

async fn start(
    meter: Meter,
    limit: usize,
    upstream_url: String,
) -> (String, Arc<ProxyState>, tokio::sync::oneshot::Sender<()>) {
    let config = ProxyConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream: upstream_url,
        profile: CompactionProfile::tiered(AssemblyPolicy::new(limit), meter).unwrap(),
        allow_remote: false,
    };
    let listener = acms_proxy::bind(&config).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let state = ProxyState::new(&config).unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let s = state.clone();
    tokio::spawn(async move {
        acms_proxy::serve(listener, s, async {
            let _ = rx.await;
        })
        .await
        .unwrap()
    });
    (format!("http://{addr}/v1"), state, tx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_conversations_none_over_none_lost() {
    let meter = Meter::estimated_tokens();
    let limit = 6_000;
    let up = upstream(meter.clone(), limit).await;
    let (base, state, stop) = start(meter.clone(), limit, format!("http://{}/v1", up.addr)).await;
    let client = reqwest::Client::new();
    let mut tasks = Vec::new();
    for id in 0..200 {
        // Sizes from below the limit to about four times it; every tenth is irreducible
        // (a system prompt over the limit on its own).
        let rounds = if id % 10 == 0 { 2 } else { 6 + id % 40 };
        let mut body = conversation(id, rounds, id % 4 == 0);
        if id % 10 == 9 {
            body["messages"][0]["content"] = json!("rule. ".repeat(8_000));
        }
        let (client, base) = (client.clone(), base.clone());
        tasks.push(tokio::spawn(async move {
            let r = client
                .post(format!("{base}/chat/completions"))
                .header("authorization", "Bearer test-key")
                .json(&body)
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            let outcome = r
                .headers()
                .get("x-acms-outcome")
                .map(|v| v.to_str().unwrap().to_string());
            let text = r.text().await.unwrap();
            (id, status, outcome, text)
        }));
    }
    let mut ok = 0;
    let mut terminated = 0;
    let mut outcomes = std::collections::BTreeMap::new();
    for t in tasks {
        let (id, status, outcome, text) = t.await.unwrap();
        *outcomes
            .entry(outcome.clone().unwrap_or_default())
            .or_insert(0) += 1;
        if id % 10 == 9 {
            assert_eq!(status, 400, "{id}: {text}");
            let v: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(v["error"]["code"], "context_length_exceeded");
            assert_eq!(v["error"]["type"], "invalid_request_error");
            assert!(!text.contains("rule."), "the error carries no content");
            terminated += 1;
            continue;
        }
        assert_eq!(status, 200, "{id}: {text}");
        if id % 4 == 0 {
            assert!(text.starts_with("data: "), "streamed: {text}");
            assert!(text.contains(&format!("done {id}")));
            assert!(text.trim_end().ends_with("data: [DONE]"));
        } else {
            let v: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(v["choices"][0]["message"]["content"], format!("done {id}"));
        }
        ok += 1;
    }
    assert_eq!(ok + terminated, 200, "none lost");
    assert_eq!(terminated, 20);
    assert_eq!(
        up.seen.requests.load(Ordering::SeqCst),
        ok,
        "terminated calls never forwarded"
    );
    assert_eq!(
        up.seen.over_limit.load(Ordering::SeqCst),
        0,
        "none over the limit"
    );
    assert!(up.seen.max_size.load(Ordering::SeqCst) as usize <= limit);
    let mut ids = up.seen.ids.lock().unwrap().clone();
    ids.sort();
    ids.dedup();
    assert_eq!(
        ids.len(),
        ok,
        "every conversation reached the upstream once"
    );
    assert!(
        outcomes.get("reduced").copied().unwrap_or(0) > 50,
        "{outcomes:?}"
    );
    assert!(
        outcomes.get("within_limit").copied().unwrap_or(0) > 0,
        "{outcomes:?}"
    );
    assert_eq!(state.stats.terminated.load(Ordering::SeqCst), 20);
    let _ = stop.send(());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unchanged_requests_are_forwarded_byte_for_byte_and_other_paths_pass_through() {
    let meter = Meter::tokens(acms_core::Tokenizer::Cl100kBase);
    let up = upstream(meter.clone(), 100_000).await;
    let (base, state, stop) = start(meter, 100_000, format!("http://{}/v1", up.addr)).await;
    let client = reqwest::Client::new();
    // A lone surrogate and unknown fields: read, not rejected, forwarded unchanged.
    let body = r#"{"model":"fake","metadata":{"conversation":"x"},"messages":[{"role":"user","content":"hi \ud800","name":"alice","x-extra":1}]}"#;
    let r = client
        .post(format!("{base}/chat/completions"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-acms-outcome"], "within_limit");
    // Timing headers are numbers only (microseconds), the queue wait among them.
    for h in [
        "x-acms-assembly-us",
        "x-acms-queue-us",
        "x-acms-overhead-us",
    ] {
        let v = r.headers()[h].to_str().unwrap();
        assert!(v.parse::<u64>().is_ok(), "{h}: {v}");
    }
    assert_eq!(state.stats.forwarded_unchanged.load(Ordering::SeqCst), 1);
    let models: Value = client
        .get(format!("{base}/models"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["data"][0]["id"], "fake");
    // Not JSON: a 400 that says why, nothing forwarded.
    let bad = client
        .post(format!("{base}/chat/completions"))
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    assert_eq!(up.seen.requests.load(Ordering::SeqCst), 1);
    let _ = stop.send(());
}

#[tokio::test]
async fn refuses_non_loopback_without_allow_remote() {
    let config = ProxyConfig {
        listen: "0.0.0.0:0".parse().unwrap(),
        upstream: "http://127.0.0.1:1/v1".into(),
        profile: CompactionProfile::tiered(AssemblyPolicy::new(1000), Meter::bytes()).unwrap(),
        allow_remote: false,
    };
    assert!(matches!(
        acms_proxy::bind(&config).await,
        Err(acms_proxy::Error::NotLoopback(_))
    ));
    let bad = ProxyConfig {
        upstream: "ftp://x".into(),
        listen: "127.0.0.1:0".parse().unwrap(),
        ..config
    };
    assert!(matches!(
        ProxyState::new(&bad),
        Err(acms_proxy::Error::Upstream)
    ));
}
