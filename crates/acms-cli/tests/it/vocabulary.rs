//! One vocabulary on every surface: the library's serde types, the CLI's `--format json` and
//! the MCP tools' structured content name the same things the same way — `phase` for a
//! phase (never `name`), `path` + `start_line` + `end_line` for a place (never `lines`), node
//! ids as 16-hex-digit strings (they use all 64 bits; a JSON number above 2^53 loses digits
//! in JavaScript), and no other integer above 2^53 anywhere.

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

use crate::{fixture, json};

/// Integers a JSON reader that parses numbers as doubles keeps exactly.
const EXACT: u64 = 1 << 53;

/// Checks `v` and everything inside it; `at` names the surface for the failure message.
fn speaks_the_vocabulary(v: &Value, at: &str) {
    match v {
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                assert!(u <= EXACT, "{at}: {u} is above 2^53");
            }
        }
        Value::Array(items) => items.iter().for_each(|i| speaks_the_vocabulary(i, at)),
        Value::Object(map) => {
            assert!(!map.contains_key("lines"), "{at}: `lines` in {v}");
            if let Some(node) = map.get("node").filter(|n| !n.is_null()) {
                let s = node.as_str().unwrap_or_else(|| panic!("{at}: node {node}"));
                assert!(
                    s.len() == 16 && s.bytes().all(|b| b.is_ascii_hexdigit()),
                    "{at}: node `{s}`"
                );
            }
            if map.contains_key("start_line") || map.contains_key("end_line") {
                for k in ["path", "start_line", "end_line"] {
                    assert!(map.contains_key(k), "{at}: {k} missing in {v}");
                }
            }
            if map.contains_key("seq") {
                assert!(
                    map.contains_key("phase"),
                    "{at}: a phase without `phase`: {v}"
                );
                assert!(!map.contains_key("name"), "{at}: a phase with `name`: {v}");
            }
            map.values().for_each(|i| speaks_the_vocabulary(i, at));
        }
        _ => {}
    }
}

/// How many objects in `v` hold a place (so a check cannot pass on an empty result).
fn places(v: &Value) -> usize {
    match v {
        Value::Array(items) => items.iter().map(places).sum(),
        Value::Object(map) => {
            usize::from(map.contains_key("start_line")) + map.values().map(places).sum::<usize>()
        }
        _ => 0,
    }
}

#[test]
fn the_library_the_cli_and_mcp_name_things_the_same_way() {
    let repo = fixture();
    let root = repo.path().to_str().unwrap().to_string();
    let task = "charge the card for the cart total";

    // The CLI: query, search (graph reasons carry node ids), a plan's phase and history.
    json(&["index", &root, "--format", "json"]);
    let index = format!("{root}/.acms");
    let query = json(&[
        "query", "--index", &index, "--format", "json", "--budget", "2000", task,
    ]);
    let search = json(&["search", "--index", &index, "--format", "json", task]);
    let plan = json(&["plan", "start", "--repo", &root, "--format", "json", task]);
    let id = plan["plan"]["id"].as_str().unwrap().to_string();
    let phase = json(&[
        "plan", "phase", "--repo", &root, "--format", "json", &id, "explore", "--budget", "2000",
    ]);
    let history = json(&["plan", "history", "--repo", &root, "--format", "json", &id]);
    for (v, at) in [
        (&query, "cli query"),
        (&search, "cli search"),
        (&phase, "cli plan phase"),
        (&history, "cli plan history"),
    ] {
        speaks_the_vocabulary(v, at);
    }
    assert!(places(&query) > 0 && places(&search) > 0 && places(&history) > 0);
    assert!(
        search.to_string().contains("\"hops\""),
        "the graph strategy's reasons are checked too"
    );
    assert_eq!(history["history"]["phases"][0]["phase"], "explore");

    // The library: the same types serialized by a program that links acms.
    let mut ws = acms::Workspace::open(repo.path()).unwrap();
    let (h, _) = ws.history(id.parse().unwrap()).unwrap();
    let lib = serde_json::to_value(&h).unwrap();
    speaks_the_vocabulary(&lib, "library history");
    assert_eq!(lib, history["history"], "the CLI prints the library's type");
    let ctx = ws
        .context(acms::Query::new(task), acms::BudgetSpec::tokens(2_000))
        .unwrap();
    speaks_the_vocabulary(
        &serde_json::to_value(&ctx.context).unwrap(),
        "library context",
    );
    drop(ws);

    // MCP: context, search, a phase and its history with fragments.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_acms"));
        cmd.env("XDG_CONFIG_HOME", crate::config_home())
            .args(["mcp", "--repo", &root]);
        let client = ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap();
        let mut seen = 0;
        for (tool, a) in [
            ("context", json!({"task": task, "budget": 2000})),
            ("search", json!({"query": task})),
            (
                "plan_phase",
                json!({"plan": id, "phase": "design", "budget": 2000}),
            ),
            ("plan_history", json!({"plan": id, "phase": "explore"})),
        ] {
            let r = client
                .call_tool(
                    CallToolRequestParams::new(tool)
                        .with_arguments(a.as_object().cloned().unwrap()),
                )
                .await
                .unwrap();
            assert_ne!(r.is_error, Some(true), "{tool}: {r:?}");
            let v = r.structured_content.expect("structured content");
            speaks_the_vocabulary(&v, &format!("mcp {tool}"));
            seen += places(&v);
        }
        assert!(seen > 0);
        client.cancel().await.unwrap();
    });
}
