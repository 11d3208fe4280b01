//! `acms index`, `acms query` and `acms search` on the fixture.

use crate::{fixture, run};

#[test]
fn index_then_query_as_json_within_budget() {
    let repo = fixture();
    let root = repo.path().to_str().unwrap();
    let out = run(&["index", root, "--format", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(stats["index"]["nodes"].as_u64().unwrap() > 10, "{stats}");
    assert!(stats["index"]["languages"]["python"].as_u64().unwrap() >= 3);

    let again = run(&["index", root, "--format", "json"]);
    let stats: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(stats["index"]["parsed"], 0, "nothing changed: {stats}");

    let index = format!("{root}/.acms");
    let out = run(&[
        "query",
        "--index",
        &index,
        "--budget",
        "1500",
        "--format",
        "json",
        "apply a discount and add the sales tax",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ctx: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(ctx["tokens"].as_u64().unwrap() <= 1500);
    let names: Vec<&str> = ctx["manifest"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"shop.pricing.compute_total"), "{names:?}");
    assert!(
        ctx["context"]
            .as_str()
            .unwrap()
            .contains("# shop/pricing.py:")
    );

    let out = run(&[
        "query",
        "--index",
        &index,
        "--budget",
        "800",
        "--tokenizer",
        "o200k",
        "-",
    ]);
    assert!(out.status.success(), "stdin task (empty) is fine");

    let out = run(&[
        "search",
        "--index",
        &index,
        "--strategy",
        "simple-keyword",
        "sales tax",
    ]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("shop.pricing.sales_tax"));
}

#[test]
fn missing_inputs_are_one_line_errors_with_a_nonzero_exit() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let out = run(&["index", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("does not exist"));

    let out = run(&[
        "query",
        "--index",
        missing.to_str().unwrap(),
        "--budget",
        "100",
        "x",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("acms index"));

    let out = run(&["query", "--budget", "x"]);
    assert_eq!(out.status.code(), Some(2), "usage errors exit 2");
}

#[test]
fn search_help_names_every_built_in_strategy() {
    let out = run(&["search", "--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for s in acms::core::StrategyId::BUILT_IN {
        assert!(
            help.contains(s.as_str()),
            "{} missing from:\n{help}",
            s.as_str()
        );
    }
}
