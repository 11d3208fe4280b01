//! The server driven in process, frame by frame, as a host drives it: start-up and progress,
//! argument checks, result bounds, and the ids the text shows.

use super::*;
use std::sync::mpsc;
use std::time::Duration;
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};

use serde_json::json;

/// A client speaking raw JSON-RPC lines to an in-process server.
struct Client {
    write: WriteHalf<DuplexStream>,
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    next: u64,
    serving: tokio::task::JoinHandle<Result<(), Error>>,
}

impl Client {
    /// Starts `server` and sends `initialize`; returns the client and the initialize result.
    async fn start(server: AcmsServer) -> (Client, Value) {
        let (client, server_end) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server_end);
        let serving = tokio::spawn(serve_server(server, server_read, server_write));
        let (read, write) = tokio::io::split(client);
        let mut c = Client {
            write,
            lines: BufReader::new(read).lines(),
            next: 1,
            serving,
        };
        let (init, _) = c
            .request(
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "0"}}),
            )
            .await;
        c.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        (c, init)
    }

    async fn send(&mut self, v: Value) {
        let line = format!("{v}\n");
        self.write.write_all(line.as_bytes()).await.unwrap();
    }

    /// Sends a request; returns its response and the notifications that came before it.
    async fn request(&mut self, method: &str, params: Value) -> (Value, Vec<Value>) {
        let id = self.next;
        self.next += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let mut notes = Vec::new();
        loop {
            let line = tokio::time::timeout(Duration::from_secs(120), self.lines.next_line())
                .await
                .expect("an answer within two minutes")
                .unwrap()
                .expect("the server is still there");
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == json!(id) {
                return (v, notes);
            }
            notes.push(v);
        }
    }

    /// Calls a tool; returns its result and the notifications before it.
    async fn call_with(&mut self, tool: &str, args: Value, meta: Value) -> (Value, Vec<Value>) {
        let (r, notes) = self
            .request(
                "tools/call",
                json!({"name": tool, "arguments": args, "_meta": meta}),
            )
            .await;
        assert!(r["result"].is_object(), "{r}");
        (r["result"].clone(), notes)
    }

    async fn call(&mut self, tool: &str, args: Value) -> Value {
        self.call_with(tool, args, json!({})).await.0
    }

    async fn stop(self) {
        drop(self.write);
        drop(self.lines);
        let _ = self.serving.await;
    }
}

/// The text blocks of a result.
fn texts(r: &Value) -> Vec<String> {
    r["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["text"].as_str().map(str::to_string))
        .collect()
}

fn is_error(r: &Value) -> bool {
    r["isError"] == true
}

fn tokens(text: &str) -> usize {
    Tokenizer::Cl100kBase.counter().count(text)
}

/// The structured content's size as its JSON text.
fn structured_tokens(r: &Value) -> usize {
    tokens(&r["structuredContent"].to_string())
}

/// A workspace on a fresh copy of the fixture (no vectors: no model needed).
fn shop() -> (tempfile::TempDir, Workspace) {
    let dir = acms_testkit::shop();
    let ws = Workspace::open_with(
        dir.path(),
        acms::WorkspaceOptions {
            vectors: false,
            ..acms::WorkspaceOptions::default()
        },
    )
    .unwrap();
    (dir, ws)
}

async fn shop_client() -> (tempfile::TempDir, Client) {
    let (dir, ws) = shop();
    let (c, _) = Client::start(AcmsServer::new(ws)).await;
    (dir, c)
}

/// `initialize` is answered while the workspace is still opening; the first tool call that
/// needs it waits for the opener and carries its error; `compact` needs none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_does_not_wait_for_the_workspace() {
    let (release, released) = mpsc::channel::<()>();
    let server = AcmsServer::opening(
        &ContextConfig::default(),
        Box::new(move |opening: &Opening| {
            // Released by the test only after `initialize` was answered; had the server
            // waited for this thread, the timeout would fire first and the message say so.
            match released.recv_timeout(Duration::from_secs(20)) {
                Ok(()) => opening.fail("opened after initialize".into()),
                Err(_) => opening.fail("the server waited for the workspace".into()),
            }
        }),
    )
    .unwrap();
    let (mut c, init) = Client::start(server).await;
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    assert!(
        init["result"]["capabilities"]["logging"].is_object(),
        "{init}"
    );
    let r = c
        .call(
            "compact",
            json!({"conversation": [{"role": "user", "content": "hi"}], "limit": 100}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    release.send(()).unwrap();
    let r = c.call("search", json!({"query": "x"})).await;
    assert!(is_error(&r));
    assert_eq!(texts(&r), ["opened after initialize"]);
    c.stop().await;
}

/// A call made during the symbol pass waits for it, with a progress notification for its
/// token at each step, and the server logs the steps; it is answered once the workspace is
/// handed over, saying that the semantic part is still missing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_during_the_symbol_pass_waits_with_progress_and_says_what_is_missing() {
    let (dir, ws) = shop();
    let (release, released) = mpsc::channel::<()>();
    let server = AcmsServer::opening(
        &ContextConfig::default(),
        Box::new(move |opening: &Opening| {
            opening.fresh(true);
            opening.stage(Stage::Symbols, 0, 40);
            let _ = released.recv_timeout(Duration::from_secs(20));
            opening.stage(Stage::Symbols, 20, 40);
            std::thread::sleep(Duration::from_millis(300));
            opening.stage(Stage::Keyword, 40, 40);
            std::thread::sleep(Duration::from_millis(300));
            opening.install(ws, Stage::Embedding);
            opening.count(3, 10);
        }),
    )
    .unwrap();
    let (mut c, _) = Client::start(server).await;
    let waiting = tokio::spawn(async move {
        let r = c
            .call_with(
                "context",
                json!({"task": "apply the discount", "budget": 1000}),
                json!({"progressToken": "tok-1"}),
            )
            .await;
        (c, r)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    release.send(()).unwrap();
    let (c, (r, notes)) = waiting.await.unwrap();
    assert!(!is_error(&r), "{r}");
    let progress: Vec<&Value> = notes
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .collect();
    assert!(progress.len() >= 2, "{notes:?}");
    let mut last = -1.0;
    for p in &progress {
        assert_eq!(p["params"]["progressToken"], "tok-1");
        let v = p["params"]["progress"].as_f64().unwrap();
        assert!(v > last, "progress increases: {progress:?}");
        last = v;
    }
    assert!(
        progress.iter().any(|p| p["params"]["message"]
            .as_str()
            .unwrap()
            .contains("of 40 files analyzed")),
        "{progress:?}"
    );
    let logs: Vec<&Value> = notes
        .iter()
        .filter(|n| n["method"] == "notifications/message")
        .collect();
    assert!(
        logs.iter()
            .any(|l| l["params"]["data"].as_str().unwrap().contains("indexing")),
        "{notes:?}"
    );
    let d = &r["structuredContent"];
    assert!(
        d["notes"].as_array().unwrap().iter().any(|n| n
            .as_str()
            .unwrap()
            .starts_with("semantic-embedding: incomplete")),
        "{d}"
    );
    assert!(
        texts(&r)[1].contains("keyword and graph retrieval are complete"),
        "{r}"
    );
    c.stop().await;
    drop(dir);
}

/// The real opener on an unindexed copy: the call waits, gets progress, and is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_staged_opener_indexes_an_unindexed_repository_behind_initialize() {
    let dir = acms_testkit::shop();
    let mut config = ContextConfig::default();
    // No model needed: keyword and graph only.
    config
        .strategies
        .enabled
        .retain(|s| s != "semantic-embedding");
    let spec = OpenSpec {
        repo: dir.path().to_path_buf(),
        index_dir: None,
        config: config.clone(),
    };
    let server = AcmsServer::opening(&config, open::staged(spec)).unwrap();
    let started = Instant::now();
    let (mut c, init) = Client::start(server.clone()).await;
    assert!(started.elapsed() < Duration::from_secs(1), "{init}");
    let (r, _) = c
        .call_with(
            "context",
            json!({"task": "compute the sales tax", "budget": 800}),
            json!({"progressToken": 7}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    assert!(texts(&r)[0].contains("def sales_tax"), "{r}");
    // Without the semantic strategy there are no vectors to wait for.
    for _ in 0..100 {
        if server.status().stage == Stage::Ready {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(server.status().stage, Stage::Ready);
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_argument_is_an_error_naming_its_field() {
    let (_dir, mut c) = shop_client().await;
    let cases = [
        (
            "context",
            json!({"task": "tax", "budget": 300}),
            1,
            vec![
                "budget: 300 is below the minimum of 500 tokens",
                "500–16000",
            ],
        ),
        (
            "context",
            json!({"task": "tax", "budget": "lots"}),
            1,
            vec!["budget: expected a whole number, got the string \"lots\""],
        ),
        ("context", json!({"budget": 1000}), 1, vec!["task: missing"]),
        (
            "context",
            json!({"task": "tax", "files": ["shop/nothing.py"], "symbols": ["NoSuchThing"]}),
            2,
            vec![
                "files[0]: `shop/nothing.py` is not a file of the index",
                "symbols[0]: no symbol named `NoSuchThing`",
            ],
        ),
        (
            "context",
            json!({"task": "tax", "budjet": 1000}),
            1,
            vec!["budjet: not an argument of `context` (its arguments: task, budget"],
        ),
        (
            "search",
            json!({"query": "tax", "strategies": ["bogus"]}),
            1,
            vec![
                "strategies[0]: `bogus` is not a strategy of this server (known: simple-keyword, semantic-embedding, breadth-depth-navigator)",
            ],
        ),
        (
            "search",
            json!({"query": "tax", "limit": 0, "max_tokens": 10}),
            2,
            vec![
                "limit: 0 is below the minimum of 1",
                "max_tokens: 10 is below the minimum of 500",
            ],
        ),
        (
            "expand",
            json!({"target": "__init__"}),
            1,
            vec!["target: `__init__` names", "symbols: pass one of `shop/"],
        ),
        (
            "expand",
            json!({"target": "shop/nothing.py:1-3"}),
            1,
            vec!["target: `shop/nothing.py` is not a file of the index"],
        ),
        (
            "plan_phase",
            json!({"plan": "plan one", "phase": "x".repeat(80)}),
            2,
            vec![
                "plan: `plan one` is not a plan id: pass the id `plan_start`",
                "phase: one word or short phrase of at most 64 characters",
            ],
        ),
        (
            "plan_phase",
            json!({"plan": "p1", "phase": "explore", "tool_definitions": 100}),
            1,
            vec!["tool_definitions: only counts with `window`"],
        ),
        (
            "compact",
            json!({"conversation": 5, "limit": "-3", "format": "gemini"}),
            3,
            vec![
                "conversation: expected an array of messages",
                "limit: expected a number of at least 0",
                "format: `gemini` is not a conversation format",
            ],
        ),
    ];
    for (tool, args, mistakes, wanted) in cases {
        let r = c.call(tool, args.clone()).await;
        assert!(is_error(&r), "{tool} {args}: {r}");
        let text = texts(&r).join("\n");
        assert!(
            text.starts_with(&format!(
                "invalid arguments for `{tool}` ({mistakes} mistake"
            )),
            "{tool} {args}: {text}"
        );
        for w in wanted {
            assert!(text.contains(w), "{tool} {args}: `{w}` not in\n{text}");
        }
    }
    // Errors of the plan tools tell the model which tool to call.
    let r = c
        .call("plan_phase", json!({"plan": "p999", "phase": "explore"}))
        .await;
    assert!(is_error(&r));
    assert!(
        texts(&r)[0].starts_with("unknown plan p999: call `plan_start` first"),
        "{r}"
    );
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn caps_are_reported_and_numeric_strings_are_numbers() {
    let (_dir, mut c) = shop_client().await;
    let r = c
        .call("context", json!({"task": "tax", "budget": 100_000}))
        .await;
    assert!(!is_error(&r), "{r}");
    let caps = r["structuredContent"]["caps"].as_array().unwrap().clone();
    assert_eq!(caps.len(), 1, "{r}");
    assert!(
        caps[0]
            .as_str()
            .unwrap()
            .contains("budget 100000 capped at 16000")
    );
    assert!(
        texts(&r)[1].contains("cap: budget 100000 capped at 16000"),
        "{r}"
    );
    assert_eq!(r["structuredContent"]["budget"], 16_000);
    let r = c
        .call("context", json!({"task": "tax", "budget": "4000"}))
        .await;
    assert!(!is_error(&r), "{r}");
    assert_eq!(r["structuredContent"]["budget"], 4000);
    assert_eq!(r["structuredContent"]["caps"], json!([]));
    let r = c
        .call("search", json!({"query": "tax", "limit": 1000}))
        .await;
    assert_eq!(
        r["structuredContent"]["caps"],
        json!(["limit 1000 capped at 100"])
    );
    // A file named by a unique suffix is read as that file, and the result says so.
    let r = c
        .call(
            "context",
            json!({"task": "tax", "budget": 1000, "files": ["pricing.py"]}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    let notes = r["structuredContent"]["notes"].to_string();
    assert!(
        notes.contains("files[0] `pricing.py` read as `shop/pricing.py`"),
        "{notes}"
    );
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_result_stays_within_its_bound() {
    let (_dir, mut c) = shop_client().await;
    for budget in [500, 1000, 4000, 16_000] {
        let r = c
            .call(
                "context",
                json!({"task": "charge the card for the cart total", "budget": budget}),
            )
            .await;
        assert!(!is_error(&r), "{r}");
        let t = texts(&r);
        assert!(tokens(&t[0]) <= budget, "{budget}");
        assert!(tokens(&t[1]) <= STATUS_BLOCK, "{}", t[1]);
        assert!(
            structured_tokens(&r) <= reply::manifest_bound(budget),
            "{budget}"
        );
        assert_eq!(
            r["structuredContent"]["tokens"].as_u64().unwrap() as usize,
            tokens(&t[0])
        );
    }
    for max in [500, 800] {
        let r = c
            .call(
                "search",
                json!({"query": "cart total card tax", "limit": 100, "max_tokens": max}),
            )
            .await;
        assert!(tokens(&texts(&r)[0]) <= max, "{r}");
        assert!(structured_tokens(&r) <= max);
        if max == 500 {
            assert!(
                r["structuredContent"]["hits_omitted"].as_u64().unwrap() > 0,
                "{r}"
            );
        }
    }
    let r = c
        .call(
            "expand",
            json!({"target": "shop/cart.py:1-37", "budget": 120}),
        )
        .await;
    assert!(!is_error(&r), "{r}");
    assert!(tokens(&texts(&r)[0]) <= 120);
    assert_eq!(r["structuredContent"]["truncated"], true);

    let plan = c
        .call(
            "plan_start",
            json!({"task": "charge the card ".repeat(200)}),
        )
        .await;
    assert!(tokens(&texts(&plan)[0]) <= SMALL_RESULT, "{plan}");
    let id = plan["structuredContent"]["plan"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    for i in 0..12 {
        let r = c
            .call(
                "plan_phase",
                json!({"plan": id, "phase": format!("step {i}"), "budget": 16000}),
            )
            .await;
        assert!(!is_error(&r), "{r}");
        assert!(tokens(&texts(&r)[0]) <= 16_000);
        assert!(structured_tokens(&r) <= reply::manifest_bound(16_000));
        let d = c
            .call(
                "plan_decide",
                json!({"plan": id, "phase": format!("step {i}"), "notes": "n ".repeat(500)}),
            )
            .await;
        assert!(!is_error(&d), "{d}");
        assert!(tokens(&texts(&d)[0]) <= SMALL_RESULT, "{d}");
    }
    let h = c.call("plan_history", json!({"plan": id})).await;
    assert!(!is_error(&h), "{h}");
    assert!(h["structuredContent"]["phases"].is_array(), "{h}");
    assert!(tokens(&texts(&h)[0]) <= DEFAULT_MAX_TOKENS);
    assert_eq!(
        h["structuredContent"]["phases"].as_array().unwrap().len(),
        12,
        "{h}"
    );
    let h = c
        .call("plan_history", json!({"plan": id, "max_tokens": 900}))
        .await;
    let d = &h["structuredContent"];
    assert!(tokens(&texts(&h)[0]) <= 900, "{h}");
    assert!(d["phases_omitted"].as_u64().unwrap() > 0, "{d}");
    // The newest phases are the ones kept.
    let kept = d["phases"].as_array().unwrap();
    assert_eq!(kept.last().unwrap()["phase"], "step 11", "{d}");
    let h = c
        .call(
            "plan_history",
            json!({"plan": id, "phase": "step 3", "max_tokens": 16000}),
        )
        .await;
    let detail = &h["structuredContent"]["detail"];
    assert_eq!(detail["phase"], "step 3", "{h}");
    assert!(!detail["manifest"].as_array().unwrap().is_empty(), "{h}");
    let r = c.call("plan_close", json!({"plan": id})).await;
    assert!(tokens(&texts(&r)[0]) <= SMALL_RESULT, "{r}");
    c.stop().await;
}

/// What the text shows is what `expand` and `plan_decide` take.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expand_and_decide_take_what_the_text_shows() {
    let (_dir, mut c) = shop_client().await;
    let r = c
        .call(
            "context",
            json!({"task": "apply the discount and add sales tax", "budget": 1500}),
        )
        .await;
    let text = texts(&r)[0].clone();
    let header = text
        .lines()
        .find(|l| l.starts_with("# shop/pricing.py:") && l.ends_with("depth 9"))
        .unwrap_or_else(|| panic!("a full-source block of pricing.py in\n{text}"))
        .to_string();
    let location = header[2..].split(" · ").next().unwrap().to_string();
    for target in [
        header.as_str(),
        location.as_str(),
        "compute_total",
        "shop.pricing.sales_tax",
    ] {
        let e = c.call("expand", json!({"target": target})).await;
        assert!(!is_error(&e), "{target}: {e}");
    }
    let e = c.call("expand", json!({"target": location})).await;
    assert!(texts(&e)[0].contains("def compute_total"), "{e}");
    let node = r["structuredContent"]["manifest"][0]["node"]
        .as_str()
        .unwrap()
        .to_string();
    let e = c.call("expand", json!({"target": node})).await;
    assert!(!is_error(&e), "{e}");

    let plan = c
        .call(
            "plan_start",
            json!({"task": "apply the discount and add sales tax"}),
        )
        .await;
    let id = plan["structuredContent"]["plan"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let p = c
        .call(
            "plan_phase",
            json!({"plan": id, "phase": "explore", "budget": 1500}),
        )
        .await;
    let ptext = texts(&p)[0].clone();
    let pheader = ptext
        .lines()
        .find(|l| l.starts_with("# shop/pricing.py:"))
        .unwrap()
        .to_string();
    let d = c
        .call("plan_decide", json!({"plan": id, "phase": "explore", "notes": "tax after discount", "fragments": [pheader]}))
        .await;
    assert!(!is_error(&d), "{d}");
    let decision = &d["structuredContent"]["decision"];
    let n = decision["fragments"].as_u64().unwrap();
    assert!(n >= 1, "{d}");
    assert!(
        decision["refs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r.as_str().unwrap().starts_with("shop/pricing.py:")),
        "{d}"
    );
    let d = c
        .call(
            "plan_decide",
            json!({"plan": id, "phase": "explore", "fragments": ["web/src/nothing.ts:1-2"]}),
        )
        .await;
    assert!(is_error(&d));
    assert!(
        texts(&d)[0].contains(
            "fragments[0]: `web/src/nothing.ts:1-2` is not in the context of phase `explore`"
        ),
        "{d}"
    );
    let d = c
        .call(
            "plan_decide",
            json!({"plan": id, "phase": "verify", "fragments": ["x.py:1-2"]}),
        )
        .await;
    assert!(texts(&d)[0].contains("call `plan_phase` with plan"), "{d}");
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_declare_annotations_and_output_schemas() {
    let (_dir, mut c) = shop_client().await;
    let (r, _) = c.request("tools/list", json!({})).await;
    let tools = r["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 10);
    for t in tools {
        let name = t["name"].as_str().unwrap();
        assert_eq!(t["outputSchema"]["type"], "object", "{name}: {t}");
        let read_only = t["annotations"]["readOnlyHint"].as_bool();
        let writes = name.starts_with("plan_") && name != "plan_history";
        assert_eq!(read_only, Some(!writes), "{name}: {t}");
        if writes {
            assert_eq!(t["annotations"]["destructiveHint"], false, "{name}");
        }
        assert_eq!(t["annotations"]["openWorldHint"], false, "{name}");
        let d = t["description"].as_str().unwrap();
        assert!(
            d.contains("token"),
            "{name}: the description states its bound: {d}"
        );
    }
    let compact = tools.iter().find(|t| t["name"] == "compact").unwrap();
    let conv = &compact["inputSchema"]["properties"]["conversation"];
    assert!(
        conv["anyOf"].as_array().is_some_and(|a| a.len() == 3),
        "{conv}"
    );
    c.stop().await;
}
