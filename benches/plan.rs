//! Plans on a large repository (issue 12): a phase with a no-change refresh (refresh time and
//! whole phase), a phase after one edited file, the MCP `context` call's overhead over the
//! library call, and the plan database's size after 500 decisions.
//!
//! `ACMS_BENCH_REPO=/path/to/repo cargo bench -p acms-benches --bench plan` (default: the
//! docutils corpus of `scripts/fetch-corpus.sh`). The MCP part needs the release binary:
//! `cargo build --release -p acms-cli` first (else it is skipped). The repository is copied to
//! a temporary directory; vectors use `ACMS_MODEL_DIR` when set, else the built-in embedder.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

use acms::plan::{NewPhase, PlanStore, SystemClock, TierPolicy};
use acms::{BudgetSpec, PhaseRequest, Query, Workspace};

const PHASES: usize = 30;
const EDITS: usize = 10;
const BUDGET: usize = 8_000;

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

fn main() -> anyhow::Result<()> {
    let src = match std::env::var_os("ACMS_BENCH_REPO") {
        Some(p) => std::path::PathBuf::from(p),
        None => acms_benches::fetch_corpus("docutils")?,
    };
    let copy = acms_benches::copy_tree(&src)?;
    let repo = copy.path();
    let t = Instant::now();
    let mut ws = Workspace::open(repo)?;
    let nodes = ws.engine().retriever().corpus().nodes().len();
    let files = ws.refresh()?.checked;
    println!(
        "repository {}: {files} files walked, {nodes} nodes; indexed on open in {:.1} s",
        src.display(),
        t.elapsed().as_secs_f64()
    );
    let task = "simplify the expression and collect the common factors of the polynomial";
    let (plan, _) = ws.start_plan(task)?;
    let request = || PhaseRequest {
        budget: BudgetSpec::tokens(BUDGET),
        ..PhaseRequest::default()
    };
    ws.phase(plan.id, "warm-up", request())?;

    // No-change refresh: the phase re-checks every file and assembles.
    let (mut refresh, mut whole, mut assemble) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..PHASES {
        let t = Instant::now();
        let p = ws.phase(plan.id, &format!("p{i}"), request())?;
        whole.push(ms(t));
        refresh.push(p.refresh.scan_ms);
        assemble.push(p.context.diagnostics.millis);
        assert_eq!(p.refresh.refreshed, 0);
    }
    let (r50, r95) = acms_benches::p50_p95(&mut refresh);
    let (w50, w95) = acms_benches::p50_p95(&mut whole);
    let (a50, a95) = acms_benches::p50_p95(&mut assemble);
    println!(
        "\n| phase, nothing changed ({PHASES} runs, {BUDGET}-token budget) | p50 ms | p95 ms |"
    );
    println!("|---|---|---|");
    println!("| refresh (walk + stat of every file) | {r50:.1} | {r95:.1} |");
    println!("| assembly (`Engine::assemble`) | {a50:.1} | {a95:.1} |");
    println!("| whole phase (maintenance, refresh, assembly, record) | {w50:.1} | {w95:.1} |");

    // One edited file before each phase.
    let mut py: Vec<std::path::PathBuf> = walk_py(repo, 2_000);
    if py.is_empty() {
        py = walk_py(repo, 0);
    }
    anyhow::ensure!(
        !py.is_empty(),
        "no Python file to edit in {}",
        repo.display()
    );
    py.sort();
    let step = (py.len() / EDITS).max(1);
    let (mut total, mut scan, mut index, mut reopen) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..EDITS {
        let file = &py[(i * step) % py.len()];
        let mut text = std::fs::read_to_string(file)?;
        text.push_str(&format!(
            "\n\ndef acms_bench_edit_{i}(x):\n    return x + {i}\n"
        ));
        std::fs::write(file, text)?;
        let t = Instant::now();
        let p = ws.phase(plan.id, &format!("e{i}"), request())?;
        total.push(ms(t));
        assert_eq!(p.refresh.refreshed, 1);
        scan.push(p.refresh.scan_ms);
        index.push(p.refresh.index_ms);
        reopen.push(p.refresh.reopen_ms);
    }
    let row = |label: &str, v: &mut Vec<f64>| {
        let (a, b) = acms_benches::p50_p95(v);
        println!("| {label} | {a:.1} | {b:.1} |");
    };
    println!("\n| phase after one edited file ({EDITS} runs) | p50 ms | p95 ms |");
    println!("|---|---|---|");
    row("detect (walk, stat, hash of the changed file)", &mut scan);
    row(
        "re-index (store run, keyword, vectors of the file)",
        &mut index,
    );
    row("reopen the engine on the new generation", &mut reopen);
    row("whole phase", &mut total);

    mcp_overhead(repo, &mut ws)?;
    db_size()?;
    Ok(())
}

/// Python files under `dir` of at least `min` bytes (and under 60 kB: typical edits).
fn walk_py(dir: &Path, min: u64) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        {
            continue;
        }
        if p.is_dir() {
            out.extend(walk_py(&p, min));
        } else if p.extension().is_some_and(|x| x == "py")
            && std::fs::metadata(&p).is_ok_and(|m| m.len() >= min && m.len() < 60_000)
        {
            out.push(p);
        }
    }
    out
}

/// `context` through `acms mcp` (round trip on stdio) against the library call in-process;
/// the server reports the time its library call took, so the difference is the protocol's.
fn mcp_overhead(repo: &Path, ws: &mut Workspace) -> anyhow::Result<()> {
    let bin = acms_benches::workspace_root().join("target/release/acms");
    if !bin.is_file() {
        println!(
            "\nMCP overhead: skipped ({} missing: cargo build --release -p acms-cli)",
            bin.display()
        );
        return Ok(());
    }
    let queries = [
        "simplify the expression",
        "collect the common factors of a polynomial",
        "solve a linear system of equations",
        "differentiate a trigonometric function",
        "print a matrix in LaTeX",
    ];
    let mut library = Vec::new();
    for round in 0..6 {
        for q in queries {
            let t = Instant::now();
            ws.context(Query::new(q), BudgetSpec::tokens(BUDGET))?;
            if round > 0 {
                library.push(ms(t));
            }
        }
    }
    let mut child = Command::new(&bin)
        .args(["mcp", "--repo"])
        .arg(repo)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut stdin = child.stdin.take().expect("piped");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    let mut id = 0u64;
    let mut rpc = |method: &str, params: serde_json::Value| -> anyhow::Result<serde_json::Value> {
        id += 1;
        let msg =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{msg}")?;
        stdin.flush()?;
        loop {
            let mut line = String::new();
            anyhow::ensure!(stdout.read_line(&mut line)? > 0, "server closed stdout");
            let v: serde_json::Value = serde_json::from_str(&line)?;
            if v["id"] == serde_json::json!(id) {
                return Ok(v);
            }
        }
    };
    rpc(
        "initialize",
        serde_json::json!({"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"}}),
    )?;
    let (mut round_trip, mut overhead) = (Vec::new(), Vec::new());
    for round in 0..6 {
        for q in queries {
            let t = Instant::now();
            let v = rpc(
                "tools/call",
                serde_json::json!({"name": "context", "arguments": {"task": q, "budget": BUDGET}}),
            )?;
            let total = ms(t);
            let inside = v["result"]["structuredContent"]["millis"]
                .as_f64()
                .ok_or_else(|| anyhow::anyhow!("no millis in {v}"))?;
            if round > 0 {
                round_trip.push(total);
                overhead.push(total - inside);
            }
        }
    }
    drop(stdin);
    child.wait()?;
    let (l50, l95) = acms_benches::p50_p95(&mut library);
    let (r50, r95) = acms_benches::p50_p95(&mut round_trip);
    let (o50, o95) = acms_benches::p50_p95(&mut overhead);
    println!("\n| `context`, {BUDGET}-token budget, 25 calls | p50 ms | p95 ms |");
    println!("|---|---|---|");
    println!("| library `Workspace::context` in-process | {l50:.1} | {l95:.1} |");
    println!("| MCP round trip over stdio (release `acms mcp`) | {r50:.1} | {r95:.1} |");
    println!(
        "| MCP overhead (round trip - library time inside the server) | {o50:.2} | {o95:.2} |"
    );
    Ok(())
}

/// The plan database after 500 decisions, each on a phase of 40 fragments.
fn db_size() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let policy = TierPolicy::default();
    let mut store = PlanStore::open(dir.path(), policy, Arc::new(SystemClock))?;
    let t = Instant::now();
    let mut plan = store.start("bench plan 0", None)?.0.id;
    for i in 0..500u64 {
        if i % 10 == 0 {
            store.close(plan)?;
            plan = store.start(&format!("bench plan {i}"), None)?.0.id;
        }
        let manifest = (0..40)
            .map(|k| acms::FragmentRef {
                node: acms::NodeId(i * 1_000 + k),
                path: format!("sympy/core/module_{}.py", (i + k) % 97),
                start_line: 10 * k as u32 + 1,
                end_line: 10 * k as u32 + 9,
                name: format!("sympy.core.module_{}.Class{k}.method_{i}", (i + k) % 97),
                depth: acms::Depth::Full,
                tokens: 150,
                score: 0.5,
            })
            .collect();
        store.record_phase(NewPhase {
            plan,
            name: format!("phase{i}"),
            focus: "a focus sentence of moderate length for the phase".into(),
            budget: 8_000,
            tokens: 6_000,
            refreshed: 0,
            manifest,
            inputs: acms::PhaseInputs::default(),
        })?;
        store.decide(
            plan,
            &format!("phase{i}"),
            Some("a decision note of about one sentence, as agents write them"),
            &[],
        )?;
    }
    let took = t.elapsed().as_secs_f64();
    let counts = store.maintain()?.counts;
    // Closing the last connection folds the WAL into the database file.
    drop(store);
    let size = |name: &str| std::fs::metadata(dir.path().join(name)).map_or(0, |m| m.len());
    let db = acms::plan::DB_FILE;
    let bytes = size(db) + size(&format!("{db}-wal"));
    println!(
        "\nplan database after 500 decisions (40 fragments each, 500 phases, 50 plans): {:.2} MB; \
         tiers hot/warm/cold {counts:?}; 500 x (phase + decision) in {took:.1} s",
        bytes as f64 / 1e6
    );
    Ok(())
}
