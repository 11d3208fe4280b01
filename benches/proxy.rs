//! Proxy overhead at 200 concurrent requests (bench binary).
//!
//! A fake OpenAI-compatible upstream on loopback answers at once; 200 clients send long
//! tool-using conversations (about 2-6x the limit, exact cl100k tokens) concurrently, for
//! several waves, first straight to the upstream, then through the proxy. Reported per
//! request, p50 / p95:
//! - `assembly`: time inside the bounded assembly (the proxy's `x-acms-assembly-us`);
//! - `queue wait`: time waiting for one of the proxy's per-core CPU permits
//!   (`x-acms-queue-us`; at 200 concurrent requests on 2 cores nearly all requests queue);
//! - `overhead in proxy`: the proxy's own time before forwarding minus the assembly and the
//!   queue wait (`x-acms-overhead-us`: body read, JSON read/write, blocking-pool hand-off);
//! - client latency direct and through the proxy, and through-proxy minus direct minus
//!   assembly (the end-to-end overhead beyond the assembly, relay included).
//!
//! `cargo bench -p acms-benches --bench proxy` (`-- --waves N`; `-- --log json|text` writes
//! the proxy's per-request log, to a sink, as `acms proxy` does to stderr by default).

use std::sync::Arc;
use std::time::Instant;

use acms_benches::p50_p95;
use acms_compact::{AssemblyPolicy, CompactionProfile, Meter};
use acms_core::Tokenizer;
use serde_json::{Value, json};

fn conversation(id: usize, rounds: usize) -> Value {
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
    json!({"model":"fake","messages":messages})
}

async fn upstream() -> String {
    async fn complete(body: axum::body::Bytes) -> axum::response::Response {
        let _ = body.len();
        axum::response::IntoResponse::into_response((
            [("content-type", "application/json")],
            r#"{"id":"x","object":"chat.completion","created":1,"model":"fake","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}"#,
        ))
    }
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(complete))
        .layer(axum::extract::DefaultBodyLimit::max(256 * 1024 * 1024));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v1")
}

struct Sample {
    latency_ms: f64,
    assembly_ms: f64,
    queue_ms: f64,
    overhead_ms: f64,
}

async fn wave(client: &reqwest::Client, url: &str, bodies: &Arc<Vec<String>>) -> Vec<Sample> {
    let tasks: Vec<_> = (0..bodies.len())
        .map(|i| {
            let (client, url, bodies) = (client.clone(), url.to_string(), bodies.clone());
            tokio::spawn(async move {
                let start = Instant::now();
                let r = client
                    .post(&url)
                    .header("content-type", "application/json")
                    .body(bodies[i].clone())
                    .send()
                    .await
                    .unwrap();
                assert!(r.status().is_success(), "{}", r.status());
                let us = |h: &str| {
                    r.headers()
                        .get(h)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.parse::<f64>().ok())
                        .unwrap_or(0.0)
                        / 1000.0
                };
                let (assembly_ms, queue_ms, overhead_ms) = (
                    us("x-acms-assembly-us"),
                    us("x-acms-queue-us"),
                    us("x-acms-overhead-us"),
                );
                let _ = r.bytes().await.unwrap();
                Sample {
                    latency_ms: start.elapsed().as_secs_f64() * 1000.0,
                    assembly_ms,
                    queue_ms,
                    overhead_ms,
                }
            })
        })
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

fn main() {
    let waves: usize = std::env::args()
        .skip_while(|a| a != "--waves")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(5);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let up = upstream().await;
        let limit = 8_000;
        let meter = Meter::tokens(Tokenizer::Cl100kBase);
        let config = acms_proxy::ProxyConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            upstream: up.clone(),
            profile: CompactionProfile::tiered(AssemblyPolicy::new(limit), meter).unwrap(),
            allow_remote: false,
        };
        let listener = acms_proxy::bind(&config).await.unwrap();
        let proxy = format!("http://{}/v1/chat/completions", listener.local_addr().unwrap());
        let log = match std::env::args().skip_while(|a| a != "--log").nth(1).as_deref() {
            Some("json") => acms_proxy::LogFormat::Json,
            Some("text") => acms_proxy::LogFormat::Text,
            _ => acms_proxy::LogFormat::Off,
        };
        println!("request log: {log:?}");
        let log = acms_proxy::RequestLog::to(log, std::io::sink());
        let state = acms_proxy::ProxyState::with_log(&config, log).unwrap();
        tokio::spawn(acms_proxy::serve(listener, state, std::future::pending()));
        let bodies: Arc<Vec<String>> =
            Arc::new((0..200).map(|i| conversation(i, 20 + i % 40).to_string()).collect());
        let client = reqwest::Client::builder().pool_max_idle_per_host(256).build().unwrap();
        let direct_url = format!("{up}/chat/completions");
        // Warm-up: connections, the proxy's size cache (an agent resends its history).
        wave(&client, &direct_url, &bodies).await;
        wave(&client, &proxy, &bodies).await;
        let (mut direct, mut via, mut assembly, mut queue, mut overhead, mut e2e) = (
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
        );
        for _ in 0..waves {
            let d = wave(&client, &direct_url, &bodies).await;
            let d50 = p50_p95(&mut d.iter().map(|s| s.latency_ms).collect::<Vec<_>>()).0;
            direct.extend(d.iter().map(|s| s.latency_ms));
            for s in wave(&client, &proxy, &bodies).await {
                via.push(s.latency_ms);
                assembly.push(s.assembly_ms);
                queue.push(s.queue_ms);
                overhead.push(s.overhead_ms);
                e2e.push((s.latency_ms - d50 - s.assembly_ms - s.queue_ms).max(0.0));
            }
        }
        // The same requests one at a time: the per-request cost without queueing for the CPU.
        let (mut seq_assembly, mut seq_queue, mut seq_overhead, mut seq_e2e) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let single: Arc<Vec<String>> = Arc::new(bodies.iter().take(50).cloned().collect());
        for i in 0..single.len() {
            let one = Arc::new(vec![single[i].clone()]);
            let d = wave(&client, &direct_url, &one).await;
            let p = wave(&client, &proxy, &one).await;
            seq_assembly.push(p[0].assembly_ms);
            seq_queue.push(p[0].queue_ms);
            seq_overhead.push(p[0].overhead_ms);
            seq_e2e.push(
                (p[0].latency_ms - d[0].latency_ms - p[0].assembly_ms - p[0].queue_ms).max(0.0),
            );
        }
        println!("one request at a time (50 requests)");
        println!("| per request | p50 ms | p95 ms |\n|---|---|---|");
        for (name, v) in [
            ("bounded assembly (in proxy)", &mut seq_assembly),
            ("queue wait for a CPU permit", &mut seq_queue),
            ("proxy overhead before forwarding, beyond assembly and queue", &mut seq_overhead),
            ("end to end: through proxy - direct - assembly - queue", &mut seq_e2e),
        ] {
            let (p50, p95) = p50_p95(v);
            println!("| {name} | {p50:.2} | {p95:.2} |");
        }
        println!("200 concurrent requests x {waves} waves, limit {limit} cl100k tokens, 20-59 tool rounds each");
        println!("| per request | p50 ms | p95 ms |\n|---|---|---|");
        for (name, v) in [
            ("client latency, direct to upstream", &mut direct),
            ("client latency, through the proxy", &mut via),
            ("bounded assembly (in proxy)", &mut assembly),
            ("queue wait for a CPU permit", &mut queue),
            ("proxy overhead before forwarding, beyond assembly and queue", &mut overhead),
            ("end to end: through proxy - direct p50 - assembly - queue", &mut e2e),
        ] {
            let (p50, p95) = p50_p95(v);
            println!("| {name} | {p50:.2} | {p95:.2} |");
        }
    });
}
