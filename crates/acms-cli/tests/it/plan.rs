//! `acms plan ...` and the refreshing `acms query`: a plan with a child end to end in JSON,
//! one-line errors, two processes on one plan, a phase killed mid-way.

use std::process::Stdio;

use crate::{acms, fixture, json, run};

fn edit(path: &std::path::Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from));
    std::fs::write(path, text.replace(from, to)).unwrap();
}

#[test]
fn a_plan_with_a_child_end_to_end_never_stale() {
    let repo = fixture();
    let root = repo.path().to_str().unwrap();
    let started = json(&[
        "plan",
        "start",
        "--repo",
        root,
        "--format",
        "json",
        "apply a discount to the cart total",
    ]);
    let plan = started["plan"]["id"].as_str().unwrap().to_string();
    assert_eq!(plan, "p1");
    let explore = json(&[
        "plan", "phase", "--repo", root, "--format", "json", &plan, "explore", "--budget", "1500",
    ]);
    assert!(explore["tokens"].as_u64().unwrap() <= 1500);
    assert_eq!(explore["seq"], 1);
    assert!(
        explore["context"]
            .as_str()
            .unwrap()
            .contains("return amount * (100 - percent) / 100")
    );

    edit(
        &repo.path().join("shop/pricing.py"),
        "return amount * (100 - percent) / 100",
        "return amount * (100 - min(percent, 90)) / 100  # capped",
    );
    let implement = json(&[
        "plan",
        "phase",
        "--repo",
        root,
        "--format",
        "json",
        &plan,
        "implement",
        "--window",
        "8192",
        "--tool-tokens",
        "1000",
        "--symbol",
        "apply_discount",
    ]);
    assert_eq!(implement["budget"], 8192 - 4096 - 1000);
    assert_eq!(implement["refresh"]["refreshed"], 1);
    let text = implement["context"].as_str().unwrap();
    assert!(text.contains("min(percent, 90)) / 100  # capped"), "{text}");
    assert!(
        implement["diagnostics"]["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().starts_with("refreshed 1 files")),
    );

    let node = implement["manifest"][0]["node"].as_str().unwrap();
    assert_eq!(node.len(), 16, "hex node ids");
    let decided = json(&[
        "plan",
        "decide",
        "--repo",
        root,
        "--format",
        "json",
        &plan,
        "implement",
        "--notes",
        "cap discounts at 90 %",
        "--fragment",
        node,
    ]);
    assert_eq!(decided["decision"]["tier"], "hot");
    assert_eq!(decided["decision"]["manifest"].as_array().unwrap().len(), 1);

    let child = json(&[
        "plan",
        "child",
        "--repo",
        root,
        "--format",
        "json",
        &plan,
        "test the discount cap",
    ]);
    let child_id = child["plan"]["id"].as_str().unwrap().to_string();
    let verify = json(&[
        "plan", "phase", "--repo", root, "--format", "json", &child_id, "verify", "--budget",
        "2000",
    ]);
    let inherited = verify["inherited_tokens"].as_u64().unwrap();
    assert!(inherited > 0 && inherited <= 300, "{inherited}");
    assert!(
        verify["context"]
            .as_str()
            .unwrap()
            .contains("parent plan context")
    );

    let closed = run(&["plan", "close", "--repo", root, &plan]);
    assert!(closed.status.success());
    let history = json(&["plan", "history", "--repo", root, "--format", "json", &plan]);
    assert_eq!(history["history"]["phases"].as_array().unwrap().len(), 2);
    assert_eq!(history["history"]["children"][0], child_id);
    assert_eq!(history["history"]["decisions"][0]["tier"], "warm");
    let text = run(&["plan", "history", "--repo", root, &plan]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("plan p1 (closed)") && text.contains("cap discounts at 90 %"),
        "{text}"
    );

    // Audit: list, inspect, correct.
    let list = json(&[
        "plan", "history", "--repo", root, "--format", "json", "--tier", "warm",
    ]);
    assert_eq!(list["decisions"].as_array().unwrap().len(), 1);
    let shown = run(&["plan", "show", "--repo", root, "d1"]);
    assert!(String::from_utf8_lossy(&shown.stdout).contains("shop/pricing.py"));
    let corrected = json(&[
        "plan",
        "correct",
        "--repo",
        root,
        "--format",
        "json",
        "d1",
        "--note",
        "90 % is too much",
    ]);
    assert_eq!(corrected["decision"]["tier"], "cold");
    assert_eq!(corrected["decision"]["correction"], "90 % is too much");
}

#[test]
fn plain_query_re_indexes_a_file_edited_since_the_index_run() {
    let repo = fixture();
    let root = repo.path().to_str().unwrap();
    assert!(run(&["index", root]).status.success());
    let index = format!("{root}/.acms");
    edit(
        &repo.path().join("shop/pricing.py"),
        "return round(amount * rate, 2)",
        "return round(amount * rate, 4)  # four places",
    );
    let out = run(&[
        "query",
        "--index",
        &index,
        "--budget",
        "1500",
        "sales tax owed on an amount",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("round(amount * rate, 4)  # four places")
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("note: refreshed 1 files before assembly")
    );
}

#[test]
fn bad_input_is_a_one_line_error_with_exit_1() {
    let repo = fixture();
    let root = repo.path().to_str().unwrap();
    let plan = String::from_utf8(run(&["plan", "start", "--repo", root, "task"]).stdout).unwrap();
    let plan = plan.trim();
    for (args, expect) in [
        (
            vec!["plan", "phase", "--repo", root, "p42", "explore"],
            "unknown plan p42",
        ),
        (
            vec!["plan", "phase", "--repo", root, "plan-x", "explore"],
            "is not a plan id",
        ),
        (
            vec!["plan", "decide", "--repo", root, plan, "design"],
            "has no phase `design`",
        ),
        (
            vec![
                "plan", "phase", "--repo", root, plan, "explore", "--budget", "0",
            ],
            "a budget of 0 tokens",
        ),
        (
            vec![
                "plan", "phase", "--repo", root, plan, "explore", "--budget", "9000", "--window",
                "8192",
            ],
            "larger than the model window 8192",
        ),
        (
            vec!["plan", "show", "--repo", root, "d9"],
            "unknown decision d9",
        ),
        (
            vec!["plan", "history", "--repo", root, "--tier", "tepid"],
            "is not a tier",
        ),
        (
            vec!["plan", "start", "--repo", "/nonexistent/acms", "x"],
            "does not exist",
        ),
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("error: ") && err.contains(expect),
            "{args:?}: {err}"
        );
    }
    // A database written by a newer acms is refused, not touched.
    let db = repo.path().join(".acms/plans.sqlite");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute(
        "UPDATE meta SET value = '3' WHERE key = 'schema_version'",
        [],
    )
    .unwrap();
    drop(conn);
    let out = run(&["plan", "history", "--repo", root, plan]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("schema version 3, newer than this acms (2)"),
        "{err}"
    );
}

#[test]
fn two_processes_on_one_plan_both_succeed_and_the_database_stays_sound() {
    let repo = fixture();
    let root = repo.path().to_str().unwrap();
    let plan = String::from_utf8(run(&["plan", "start", "--repo", root, "the cart total"]).stdout)
        .unwrap();
    let plan = plan.trim().to_string();
    let children: Vec<_> = (0..6)
        .map(|i| {
            acms()
                .args([
                    "plan",
                    "phase",
                    "--repo",
                    root,
                    &plan,
                    &format!("w{i}"),
                    "--budget",
                    "800",
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let history = json(&["plan", "history", "--repo", root, "--format", "json", &plan]);
    let mut seqs: Vec<u64> = history["history"]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["seq"].as_u64().unwrap())
        .collect();
    seqs.sort();
    assert_eq!(seqs, (1..=6).collect::<Vec<_>>());
    let conn = rusqlite::Connection::open(repo.path().join(".acms/plans.sqlite")).unwrap();
    let ok: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
}

#[test]
fn a_phase_killed_at_any_point_leaves_a_consistent_database() {
    let repo = fixture();
    let root = repo.path().to_str().unwrap();
    let plan = String::from_utf8(run(&["plan", "start", "--repo", root, "the cart total"]).stdout)
        .unwrap();
    let plan = plan.trim().to_string();
    let phase = |name: &str| {
        acms()
            .args([
                "plan", "phase", "--repo", root, &plan, name, "--budget", "1200",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let t = std::time::Instant::now();
    assert!(phase("first").wait().unwrap().success());
    let full = t.elapsed();
    let mut phases = 1;
    for (round, fraction) in [0.2, 0.5, 0.8, 0.95, 1.1].into_iter().enumerate() {
        // An edit each round, so some kills land in the re-index before the assembly.
        let p = repo.path().join("shop/cart.py");
        let text = std::fs::read_to_string(&p).unwrap();
        std::fs::write(&p, format!("{text}\n# round {round}\n")).unwrap();
        let mut child = phase(&format!("k{round}"));
        std::thread::sleep(full.mul_f64(fraction));
        let _ = child.kill();
        let _ = child.wait();
        let history = json(&["plan", "history", "--repo", root, "--format", "json", &plan]);
        let now = history["history"]["phases"].as_array().unwrap().len();
        assert!(
            now == phases || now == phases + 1,
            "round {round}: {phases} -> {now}"
        );
        phases = now;
        let conn = rusqlite::Connection::open(repo.path().join(".acms/plans.sqlite")).unwrap();
        let ok: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
    }
    // The next phase sees the last edit whatever was interrupted.
    let last = json(&[
        "plan",
        "phase",
        "--repo",
        root,
        "--format",
        "json",
        &plan,
        "after",
        "--budget",
        "3000",
        "--file",
        "shop/cart.py",
    ]);
    assert_eq!(last["seq"].as_u64().unwrap() as usize, phases + 1);
}

/// Issue 37 item 14: a garbled `plans.sqlite` read as "unknown plan p1" (its schema page
/// garbled, the store was created afresh over it). Every plan command must say the store is
/// damaged and how to recover, and leave the file as it found it.
#[test]
fn a_garbled_plan_store_is_reported_damaged_and_left_in_place() {
    let repo = fixture();
    let root = repo.path().to_str().unwrap();
    let db = repo.path().join(".acms/plans.sqlite");
    type Garble = fn(&mut Vec<u8>);
    let garbles: [(&str, Garble); 3] = [
        // The schema page's cell count: the tables vanish, the header stays valid.
        ("schema page", |b| b[103..105].fill(0)),
        ("header", |b| b[..16].copy_from_slice(b"not a database!!")),
        ("middle page", |b| {
            let mid = b.len() / 2;
            b[mid - 200..mid + 200].fill(0xa5)
        }),
    ];
    for (what, garble) in garbles {
        for f in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{f}", db.display()));
        }
        let started = run(&["plan", "start", "--repo", root, "the cart total"]);
        assert!(started.status.success(), "{what}");
        assert_eq!(String::from_utf8_lossy(&started.stdout).trim(), "p1");
        let mut bytes = std::fs::read(&db).unwrap();
        garble(&mut bytes);
        std::fs::write(&db, &bytes).unwrap();
        for args in [
            vec!["plan", "decide", "--repo", root, "p1", "explore"],
            vec!["plan", "close", "--repo", root, "p1"],
            vec!["plan", "phase", "--repo", root, "p1", "explore"],
        ] {
            let out = run(&args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{what} {args:?}: {err}");
            assert!(
                err.contains("plans.sqlite is damaged")
                    && err.contains("move it aside")
                    && !err.contains("unknown plan"),
                "{what} {args:?}: {err}"
            );
            assert_eq!(std::fs::read(&db).unwrap(), bytes, "{what} {args:?}");
        }
    }
}

/// Issue 39 item 10: a decision without notes is recorded, and the command says what it
/// holds (the phase's whole context) and how to add the why; with notes it says nothing more.
#[test]
fn a_decision_without_notes_says_what_it_recorded() {
    let repo = fixture();
    let root = repo.path().to_str().unwrap();
    let out = run(&["plan", "start", "--repo", root, "apply a discount"]);
    let plan = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let out = run(&[
        "plan", "phase", "--repo", root, &plan, "explore", "--budget", "1500",
    ]);
    assert!(out.status.success());
    let out = run(&["plan", "decide", "--repo", root, &plan, "explore"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("has no notes")
            && err.contains("fragments of phase `explore` (its whole context)")
            && err.contains("--notes"),
        "{err}"
    );
    let out = run(&[
        "plan",
        "decide",
        "--repo",
        root,
        &plan,
        "explore",
        "--notes",
        "cap at 90 %",
    ]);
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("has no notes"));
}
