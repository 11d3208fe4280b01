//! Issue 37 item 4: every spelling of a completion path is bounded or refused, never passed
//! through; a path that climbs above the upstream's base path is refused.

use acms_core::Tokenizer;
use serde_json::Value;

use crate::support::{conversation, provider_tokens, proxy, raw, recorder};

const LIMIT: usize = 2_000;

/// Every body the upstream received is within the limit as the provider counts it.
fn assert_none_over(up: &crate::support::Recorder) {
    for r in up.requests() {
        let body: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
        let n = provider_tokens(Tokenizer::O200kBase, &body);
        assert!(
            n <= LIMIT,
            "{} {} reached the upstream with {n} tokens (limit {LIMIT})",
            r.method,
            r.target
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completion_path_spellings_are_bounded_or_refused() {
    let up = recorder(None).await;
    let (addr, stop) = proxy(
        Tokenizer::O200kBase,
        LIMIT,
        format!("http://{}/v1", up.addr),
    )
    .await;
    let body = conversation(7, 40, false).to_string();
    assert!(
        provider_tokens(Tokenizer::O200kBase, &serde_json::from_str(&body).unwrap()) > 4 * LIMIT
    );
    for path in [
        "/v1/chat/completions",
        "/v1/./chat/completions",
        "/v1/%2e/chat/completions",
        "/v1/%2E/chat/completions",
        "/v1/x/../chat/completions",
        "/v1/x/%2e%2e/chat/completions",
        "/chat/./completions",
        "/v1/chat/%2E%2E/chat/completions",
        "//v1//chat///completions",
        "/v1/chat/completions/",
        "/V1/Chat/Completions",
        "/v1/%63hat/%63ompletions",
        "/v1/chat%2Fcompletions",
        "/v1/chat/completions;x=1",
        "/v1/chat/completions?api-version=1",
        "/v1/deployments/gpt/chat/completions",
    ] {
        let before = up.requests().len();
        let r = raw(
            addr,
            "POST",
            path,
            &[("content-type", "application/json")],
            body.as_bytes(),
        )
        .await;
        let reached = up.requests().len() - before;
        match r.status {
            200 => {
                assert!(r.header("x-acms-outcome").is_some(), "{path}: not bounded");
                assert_eq!(reached, 1, "{path}");
                // Forwarded as normalised: what was bounded is what the upstream routes.
                let t = up.requests().last().unwrap().target.to_ascii_lowercase();
                let p = t.split('?').next().unwrap();
                assert!(
                    p.ends_with("/chat/completions"),
                    "{path} reached the upstream as {t}"
                );
                assert!(
                    !p.contains("/.") && !p.contains("//") && !p.contains('%'),
                    "{path}: {t}"
                );
            }
            400..=499 => assert_eq!(reached, 0, "{path}: refused but forwarded"),
            other => panic!("{path}: {other} {}", r.body),
        }
        assert_none_over(&up);
    }
    let _ = stop.send(());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstream_base_path_cannot_be_escaped() {
    let up = recorder(None).await;
    let (addr, stop) = proxy(
        Tokenizer::O200kBase,
        LIMIT,
        format!("http://{}/v1", up.addr),
    )
    .await;
    for path in [
        "/v1/../../../x",
        "/../x",
        "/v1/%2e%2e/%2e%2e/x",
        "/v1/..%2f..%2fx",
        "/v1/..\\..\\x",
    ] {
        let r = raw(addr, "GET", path, &[], b"").await;
        assert_eq!(r.status, 400, "{path}: {}", r.body);
        // hyper refuses some spellings itself (an empty 400); ours say why.
        if !r.body.is_empty() {
            let v: Value = serde_json::from_str(&r.body).unwrap();
            assert!(
                v["error"]["message"].as_str().unwrap().contains("path"),
                "{}",
                r.body
            );
        }
    }
    assert!(up.requests().is_empty(), "{:?}", up.requests());
    // A dot segment that stays inside the base is fine, and reaches the base's own path.
    let r = raw(addr, "GET", "/v1/x/../models", &[], b"").await;
    assert_eq!(r.status, 200);
    assert_eq!(up.requests()[0].target, "/v1/models");
    let _ = stop.send(());
}
