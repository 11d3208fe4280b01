//! Issue 37: random mixes of path spellings, endpoints and prompt-bearing fields sent to the
//! real proxy on loopback; nothing reaches the recording upstream over the limit as the
//! provider counts it (tiktoken, independently of the proxy's own counter).

use std::net::SocketAddr;
use std::sync::OnceLock;

use acms_core::Tokenizer;
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::fields::tool;
use crate::support::{Recorder, provider_tokens, proxy, raw, recorder};

const LIMIT: usize = 1_500;

struct World {
    rt: tokio::runtime::Runtime,
    addr: SocketAddr,
    up: Recorder,
}

fn world() -> &'static World {
    static W: OnceLock<World> = OnceLock::new();
    W.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (addr, up) = rt.block_on(async {
            let up = recorder(None).await;
            let (addr, stop) = proxy(
                Tokenizer::O200kBase,
                LIMIT,
                format!("http://{}/v1", up.addr),
            )
            .await;
            // Runs for the whole test binary.
            std::mem::forget(stop);
            (addr, up)
        });
        World { rt, addr, up }
    })
}

/// A path to `endpoint` in one of many spellings.
fn spelled(endpoint: &'static str) -> impl Strategy<Value = String> {
    let prefix = prop::sample::select(vec![
        "/v1",
        "/v1/.",
        "/v1/%2e",
        "/v1/x/..",
        "/v1/x/%2E%2E",
        "//v1/",
        "",
        "/v1/deployments/d",
        "/V1",
    ]);
    let sep = prop::sample::select(vec!["/", "//", "/./", "/%2e/", "%2F", "/a/../"]);
    let upper = any::<bool>();
    let trailing = prop::sample::select(vec!["", "/", "/.", "?api-version=1"]);
    (prefix, sep, upper, trailing).prop_map(move |(prefix, sep, upper, trailing)| {
        let e = endpoint.replace('/', sep);
        let e = if upper {
            e.to_uppercase().replace("%2E", "%2e")
        } else {
            e
        };
        format!("{prefix}/{e}{trailing}")
    })
}

fn text(words: usize) -> String {
    (0..words).map(|i| format!("word{} ", i % 97)).collect()
}

prop_compose! {
    fn message()(role in prop::sample::select(vec!["user", "assistant", "system"]),
                 words in 0usize..400, name in prop::option::weighted(0.2, 0usize..200)) -> Value {
        let mut m = json!({"role": role, "content": text(words)});
        if let Some(n) = name {
            m["name"] = json!(format!("n{}", "x".repeat(n)));
        }
        m
    }
}

prop_compose! {
    fn body()(messages in prop::collection::vec(message(), 1..14),
              tools in prop::collection::vec(0usize..300, 0..5),
              schema in prop::option::weighted(0.3, 0usize..900),
              system in prop::option::weighted(0.3, 0usize..900),
              input in prop::option::weighted(0.3, prop::collection::vec(0usize..500, 1..5)),
              prompt in prop::option::weighted(0.2, 0usize..2_000)) -> Value {
        let mut b = json!({"model": "m", "max_tokens": 10, "messages": messages});
        if !tools.is_empty() {
            b["tools"] = json!(tools.iter().enumerate().map(|(i, w)| tool(i, *w)).collect::<Vec<_>>());
        }
        if let Some(w) = schema {
            b["response_format"] = json!({"type":"json_schema","json_schema":{"name":"r","schema":{"type":"object","description":text(w)}}});
        }
        if let Some(w) = system {
            b["system"] = json!(text(w));
        }
        if let Some(items) = input {
            b["input"] = json!(items.iter().map(|w| json!({"role":"user","content":text(*w)})).collect::<Vec<_>>());
            b["instructions"] = json!("be brief");
        }
        if let Some(w) = prompt {
            b["prompt"] = json!(text(w));
        }
        b
    }
}

fn request() -> impl Strategy<Value = (String, Value)> {
    let path = prop_oneof![
        spelled("chat/completions"),
        spelled("completions"),
        spelled("responses"),
        spelled("messages"),
    ];
    (path, body())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn nothing_reaches_the_upstream_over_the_limit((path, body) in request()) {
        let w = world();
        let before = w.up.requests().len();
        let bytes = body.to_string();
        let r = w.rt.block_on(raw(w.addr, "POST", &path, &[("content-type", "application/json")], bytes.as_bytes()));
        // hyper may refuse a spelling itself; the proxy answers or refuses, never fails.
        prop_assert!(r.status == 200 || (400..500).contains(&r.status), "{path}: {} {}", r.status, r.body);
        let new = &w.up.requests()[before..];
        prop_assert!(new.len() <= 1);
        if r.status != 200 {
            prop_assert!(new.is_empty(), "{path}: refused but forwarded");
        }
        for seen in new {
            let v: Value = serde_json::from_slice(&seen.body).unwrap_or(Value::Null);
            let n = provider_tokens(Tokenizer::O200kBase, &v);
            prop_assert!(n <= LIMIT, "{path} reached the upstream as {} with {n} tokens", seen.target);
        }
    }
}

fn state() -> &'static std::sync::Arc<acms_proxy::ProxyState> {
    static S: OnceLock<std::sync::Arc<acms_proxy::ProxyState>> = OnceLock::new();
    S.get_or_init(|| {
        let c = crate::support::config(Tokenizer::O200kBase, 300, "http://127.0.0.1:9/v1".into());
        acms_proxy::ProxyState::new(&c).unwrap()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// The fuzz target's properties, on a budget: normalising is idempotent and leaves no
    /// dot or empty segment; bounding arbitrary bodies never panics and never lets more
    /// than the limit through.
    #[test]
    fn path_and_body_handling_never_panics(
        raw_path in "[/.%2eEfF5cC\\\\a-z;]{0,24}",
        body in prop_oneof![
            any::<String>(),
            "\\{\"(messages|input|prompt|tools|system)\":\\[(\\{\"role\":\"(user|system|tool)\",\"content\":(\"[a-z ]{0,40}\"|null|\\[\\{\"type\":\"text\",\"text\":\"x\"\\}\\]|7)\\},?){0,4}\\]\\}",
        ],
    ) {
        if let Ok(p) = acms_proxy::path::normalize(&raw_path) {
            prop_assert_eq!(acms_proxy::path::normalize(&p), Ok(p.clone()));
            prop_assert!(p == "/" || p[1..].split('/').all(|s| !s.is_empty() && s != "." && s != ".."), "{}", p);
        }
        for e in [acms_proxy::path::Endpoint::Chat, acms_proxy::path::Endpoint::Messages,
                  acms_proxy::path::Endpoint::Responses, acms_proxy::path::Endpoint::Legacy] {
            if let acms_proxy::Prepared::Forward { body, .. } = acms_proxy::prepare(state(), e, body.clone().into())
                && let Ok(v) = serde_json::from_slice::<Value>(&body)
            {
                prop_assert!(provider_tokens(Tokenizer::O200kBase, &v) <= 300);
            }
        }
    }
}
