//! Relevance and packing on a repository shaped like the real-issue failures (issue 10): many
//! word matches for the task's vocabulary, one function the task names, a test file and a
//! vendored copy that share its words.

use acms_assemble::{AssembledContext, Engine, ManifestEntry};
use acms_core::{ContextConfig, Depth};

use crate::{assemble, index};

fn write(dir: &tempfile::TempDir, rel: &str, text: String) {
    let p = dir.path().join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// The best score among the packed fragments `pred` picks (0 when none).
fn best_score(ctx: &AssembledContext, pred: &dyn Fn(&ManifestEntry) -> bool) -> f64 {
    ctx.manifest
        .iter()
        .filter(|m| pred(m))
        .map(|m| m.score)
        .fold(0.0, f64::max)
}

/// A small client library: `Client.send` is the answer; every other file talks about
/// timeouts and requests too.
fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let w = |rel: &str, text: String| write(&dir, rel, text);
    let mut client = String::from(
        "\"\"\"HTTP client.\"\"\"\n\nclass Client:\n    \"\"\"Sends requests with a timeout.\"\"\"\n\n",
    );
    client.push_str("    def __init__(self, timeout=None):\n        self.timeout = timeout\n\n");
    client.push_str(
        "    def send(self, request, timeout=None):\n        \"\"\"Send a request and wait for the response.\"\"\"\n",
    );
    for i in 0..30 {
        client.push_str(&format!(
            "        step_{i} = request.prepare_{i}(self.timeout)\n"
        ));
    }
    client.push_str("        return transport.roundtrip(request)\n\n");
    for i in 0..12 {
        client.push_str(&format!(
            "    def option_{i}(self):\n        \"\"\"Request option {i} with a timeout.\"\"\"\n        return self.timeout\n\n"
        ));
    }
    w("httpclient/client.py", client);
    for m in 0..8 {
        let mut s = format!("\"\"\"Timeout helpers {m} for requests.\"\"\"\n\n");
        for i in 0..10 {
            s.push_str(&format!(
                "def timeout_request_{m}_{i}(request, timeout):\n    \"\"\"Apply the request timeout.\"\"\"\n    return request.with_timeout(timeout * {i})\n\n"
            ));
        }
        w(&format!("httpclient/helpers_{m}.py"), s);
    }
    let mut t = String::from("from httpclient.client import Client\n\n");
    for i in 0..10 {
        t.push_str(&format!(
            "def test_send_timeout_{i}():\n    \"\"\"The client sends the request with its timeout.\"\"\"\n    assert Client(timeout={i}).send(None) is None\n\n"
        ));
    }
    w("tests/test_client.py", t);
    let mut v = String::from("class Client:\n    \"\"\"Vendored request client.\"\"\"\n\n");
    for i in 0..10 {
        v.push_str(&format!(
            "    def send_{i}(self, request, timeout=None):\n        \"\"\"Send a request with a timeout.\"\"\"\n        return request\n\n"
        ));
    }
    w("httpclient/_vendor/oldclient.py", v);
    index(dir.path(), None);
    dir
}

fn engine(dir: &tempfile::TempDir) -> Engine {
    let mut config = ContextConfig::default();
    config.strategies.enabled = vec![
        "simple-keyword".to_string(),
        "breadth-depth-navigator".to_string(),
    ];
    Engine::open(&dir.path().join(".acms"), &config).unwrap()
}

const TASK: &str =
    "`Client.send()` ignores the timeout: a request sent with timeout=5 waits forever";

#[test]
fn the_named_method_ranks_first_and_is_shown_in_full_with_its_class_line() {
    let dir = repository();
    let ctx = assemble(&engine(&dir), TASK, 1500);
    let send = ctx
        .manifest
        .iter()
        .find(|m| m.name.ends_with("Client.send") && m.path == "httpclient/client.py")
        .expect("Client.send packed");
    assert_eq!(send.depth, Depth::Full, "{:#?}", ctx.manifest);
    let best = ctx.manifest.iter().map(|m| m.score).fold(0.0, f64::max);
    assert_eq!(send.score, best, "the named method scores highest");
    assert!(
        ctx.text
            .contains("        return transport.roundtrip(request)")
    );
    assert!(
        ctx.text.contains("class Client:"),
        "a method comes with its class's line"
    );
}

#[test]
fn scores_separate_the_answer_from_word_matches_tests_and_vendored_code() {
    let dir = repository();
    let ctx = assemble(&engine(&dir), TASK, 8000);
    let score = |pred: &dyn Fn(&ManifestEntry) -> bool| best_score(&ctx, pred);
    let send = score(&|m| m.name.ends_with("Client.send") && !m.path.contains("_vendor"));
    let helpers = score(&|m| m.path.contains("helpers_"));
    let tests = score(&|m| m.path.starts_with("tests/"));
    let vendored = score(&|m| m.path.contains("_vendor"));
    assert!(send > 0.0, "{:#?}", ctx.manifest);
    for (what, s) in [
        ("helpers", helpers),
        ("tests", tests),
        ("vendored", vendored),
    ] {
        assert!(
            s <= 0.5 * send,
            "{what} scores {s} against the answer's {send}: not separated"
        );
    }
}

/// Asserts that the answer (`Client.send`, not the vendored copy) is packed and that the best
/// fragment `pred` picks scores at most half of it.
fn assert_at_most_half_the_answer(
    ctx: &AssembledContext,
    what: &str,
    pred: &dyn Fn(&ManifestEntry) -> bool,
) {
    let send = best_score(ctx, &|m| {
        m.name.ends_with("Client.send") && !m.path.contains("_vendor")
    });
    let other = best_score(ctx, pred);
    assert!(send > 0.0, "{:#?}", ctx.manifest);
    assert!(
        other <= 0.5 * send,
        "{what} scores {other} against the answer's {send}"
    );
}

#[test]
fn a_name_that_lands_in_vendored_code_does_not_lift_it() {
    let dir = repository();
    // `send_3` is defined only in the vendored copy: the task's word, not its subject.
    let task = format!("{TASK}; the retry loop calls `send_3()` again");
    let ctx = assemble(&engine(&dir), &task, 8000);
    assert_at_most_half_the_answer(&ctx, "the named vendored method", &|m| {
        m.name.ends_with("send_3")
    });
}

#[test]
fn code_whose_banner_says_it_is_generated_is_demoted_like_a_generated_path() {
    let dir = repository();
    // An ordinary path; only the generator's banner says what the file is.
    let mut parser = String::from(
        "# *** GENERATED BY `setup.py antlr`, DO NOT EDIT BY HAND ***\n\nclass ClientParser:\n",
    );
    for i in 0..10 {
        parser.push_str(&format!(
            "    def send_timeout_{i}(self, request, timeout=None):\n        \"\"\"Client send with a timeout.\"\"\"\n        return request\n\n"
        ));
    }
    write(&dir, "httpclient/parsing/clientparser.py", parser);
    index(dir.path(), None);
    // The name lands in the generated parser only: a coincidence of words, as with vendored
    // code.
    let task = format!("{TASK}; the parser calls `send_timeout_3()` first");
    let ctx = assemble(&engine(&dir), &task, 8000);
    assert_at_most_half_the_answer(&ctx, "generated code", &|m| m.path.contains("clientparser"));
}

/// A repository where the task names one function that calls many helpers the task says
/// nothing about, and another module matches the task's words directly.
fn walk_repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let w = |rel: &str, text: String| write(&dir, rel, text);
    let mut report = String::from("from ledger.steps import *\n\ndef build_report(rows):\n");
    for i in 0..16 {
        report.push_str(&format!("    rows = step_{i}(rows)\n"));
    }
    report.push_str("    return rows\n");
    w("ledger/report.py", report);
    let mut steps = String::new();
    for i in 0..16 {
        steps.push_str(&format!(
            "def step_{i}(rows):\n    \"\"\"Stage {i} of the pipeline.\"\"\"\n    return [r for r in rows if r.stage != {i}]\n\n"
        ));
    }
    w("ledger/steps.py", steps);
    w(
        "ledger/rounding.py",
        "def round_negative_totals(total):\n    \"\"\"Round negative totals towards zero.\"\"\"\n    \
         if total < 0:\n        return -round(-total)\n    return round(total)\n"
            .to_string(),
    );
    index(dir.path(), None);
    dir
}

#[test]
fn what_the_graph_walk_reaches_does_not_outrank_a_direct_match() {
    let dir = walk_repository();
    let task = "build_report rounds negative totals the wrong way";
    let ctx = assemble(&engine(&dir), task, 8000);
    let score = |pred: &dyn Fn(&ManifestEntry) -> bool| best_score(&ctx, pred);
    let rounding = score(&|m| m.name.ends_with("round_negative_totals"));
    let walked = score(&|m| m.path == "ledger/steps.py");
    assert!(rounding > 0.0, "{:#?}", ctx.manifest);
    assert!(
        walked < rounding,
        "a callee the task never mentions scores {walked} against the direct match's {rounding}"
    );
}

/// A function with a nested closure, and a class with methods: the task names both.
fn nested_repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut s = String::from(
        "def make_handler(routes, timeout):\n    \"\"\"Build the request handler for the routes.\"\"\"\n    table = dict(routes)\n",
    );
    for i in 0..20 {
        s.push_str(&format!("    limit_{i} = timeout * {i}\n"));
    }
    s.push_str(
        "\n    def handle(request):\n        return table[request.path](request)\n\n    return handle\n\n\n",
    );
    s.push_str("class Registry:\n    \"\"\"Routes by path.\"\"\"\n\n");
    s.push_str("    def register(self, path, fn):\n        self.routes[path] = fn\n\n");
    s.push_str("    def lookup(self, path):\n        return self.routes.get(path)\n");
    write(&dir, "web/handlers.py", s);
    index(dir.path(), None);
    dir
}

#[test]
fn a_function_with_a_nested_candidate_is_shown_in_full_and_a_class_with_one_is_not() {
    let dir = nested_repository();
    let task = "`make_handler(routes, timeout)` drops the timeout; `Registry.lookup` is fine";
    let ctx = assemble(&engine(&dir), task, 4000);
    let depth = |name: &str| {
        ctx.manifest
            .iter()
            .find(|m| m.name.ends_with(name))
            .map(|m| m.depth)
    };
    // A nested function is part of its parent's body: before, the walk's hit on `handle`
    // capped `make_handler` at its skeleton and its body was never shown.
    assert_eq!(
        depth("make_handler"),
        Some(Depth::Full),
        "{:#?}",
        ctx.manifest
    );
    assert!(ctx.text.contains("    limit_19 = timeout * 19"));
    assert_eq!(
        ctx.text.matches("def handle(request)").count(),
        1,
        "the nested function is shown once, inside its parent's region"
    );
    // ...and not paid for twice: it is left out of the packing as enclosed.
    let engine = engine(&dir);
    let handle = engine
        .retriever()
        .corpus()
        .find_symbol("make_handler.handle")[0]
        .id;
    assert!(
        depth("make_handler.handle").is_none(),
        "{:#?}",
        ctx.manifest
    );
    assert!(
        ctx.dropped
            .iter()
            .any(|d| d.node == handle && d.reason == acms_assemble::DropReason::Enclosed),
        "{:#?}",
        ctx.dropped
    );
    // A class whose method is also a candidate stays an outline: the method is paid once.
    assert!(depth("Registry.lookup").is_some(), "{:#?}", ctx.manifest);
    assert!(depth("Registry").is_none_or(|d| d <= Depth::Skeleton));
}

/// The same handler in two adapters of the project (a fix usually has to change both) and in
/// a vendored library.
fn adapters_repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let handler = |runtime: &str| {
        let mut s = format!(
            "\"\"\"Static files for the {runtime} runtime.\"\"\"\n\ndef serve_static(root, request):\n    \"\"\"Answer a request for a static file under root.\"\"\"\n"
        );
        for i in 0..12 {
            s.push_str(&format!(
                "    part_{i} = request.path.split('/')[{i}]\n    check_{i}(root, part_{i})\n"
            ));
        }
        s.push_str(&format!("    return {runtime}_open(root, request.path)\n"));
        s
    };
    for runtime in ["deno", "bun"] {
        write(
            &dir,
            &format!("adapters/{runtime}/static.py"),
            handler(runtime),
        );
    }
    write(&dir, "vendor/oldserver/static.py", handler("old"));
    index(dir.path(), None);
    dir
}

#[test]
fn a_copy_in_the_project_is_named_by_its_signature_and_a_vendored_copy_dropped() {
    let dir = adapters_repository();
    let task = "`serve_static` answers a request for a path with `..` from outside the root";
    let ctx = assemble(&engine(&dir), task, 4000);
    let depth_in = |part: &str| {
        ctx.manifest
            .iter()
            .find(|m| m.name.ends_with("serve_static") && m.path.contains(part))
            .map(|m| m.depth)
    };
    let (deno, bun) = (depth_in("deno"), depth_in("bun"));
    // One adapter's handler is shown whole, the other's near-identical copy by its signature
    // (with its doc line: the signature alone is under `min-fragment-tokens`): its place is
    // named without paying its body twice.
    let mut depths = [deno, bun];
    depths.sort();
    assert_eq!(depths[1], Some(Depth::Full), "{:#?}", ctx.manifest);
    assert!(
        depths[0].is_some_and(|d| d <= Depth::Doc),
        "{:#?}",
        ctx.manifest
    );
    assert_eq!(
        ctx.text.matches("check_11(root, part_11)").count(),
        1,
        "{}",
        ctx.text
    );
    assert_eq!(depth_in("vendor"), None, "{:#?}", ctx.manifest);
    assert!(
        ctx.dropped
            .iter()
            .any(|d| d.reason == acms_assemble::DropReason::Duplicate),
        "{:#?}",
        ctx.dropped
    );
}

#[test]
fn unit_tests_inside_a_rust_source_file_are_demoted_like_a_test_file() {
    let dir = tempfile::tempdir().unwrap();
    let tests = |suffix: &str| {
        let mut s = String::new();
        for i in 0..6 {
            s.push_str(&format!(
                "    #[test]\n    fn keeps_serving_after_the_shutdown_signal_fires_{suffix}{i}() {{\n        let signal = Signal::after({i});\n        serve_with_shutdown(Listener::bind(), signal);\n    }}\n\n"
            ));
        }
        s
    };
    let mut serve = String::from(
        "/// Serves connections until the shutdown signal fires.\npub fn serve_with_shutdown(listener: Listener, signal: Signal) {\n",
    );
    for i in 0..20 {
        serve.push_str(&format!(
            "    let conn_{i} = listener.accept_{i}(&signal);\n"
        ));
    }
    serve.push_str("}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n");
    serve.push_str(&tests("inline_"));
    serve.push_str("}\n");
    write(&dir, "src/serve.rs", serve);
    // The same tests in the crate's `tests/` directory, which the path marks as tests.
    write(
        &dir,
        "tests/serve.rs",
        format!("use srv::*;\n\n{}", tests("outside_")),
    );
    write(
        &dir,
        "Cargo.toml",
        "[package]\nname = \"srv\"\n".to_string(),
    );
    index(dir.path(), None);
    let ctx = assemble(
        &engine(&dir),
        "the server keeps serving after the shutdown signal fires",
        8000,
    );
    let inline = best_score(&ctx, &|m| m.name.contains("fires_inline_"));
    let outside = best_score(&ctx, &|m| m.name.contains("fires_outside_"));
    assert!(outside > 0.0, "{:#?}", ctx.manifest);
    assert!(
        (inline - outside).abs() <= 0.1 * outside,
        "inline tests score {inline}, the same tests in tests/ {outside}: {:#?}",
        ctx.manifest
    );
}
