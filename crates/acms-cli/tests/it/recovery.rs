//! Damaged or out-of-step index parts (issue 9, items 4, 7 and 10): acms notices, says so,
//! and repairs what it can in one run.

use std::path::Path;
use std::process::Output;

use crate::{fixture, run};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn index(repo: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["index", repo.to_str().unwrap(), "--no-vectors"];
    args.extend(extra);
    run(&args)
}

fn index_ok(repo: &Path, extra: &[&str]) {
    let out = index(repo, extra);
    assert!(out.status.success(), "{}", stderr(&out));
}

fn keyword_hits(repo: &Path) -> Output {
    let index = repo.join(".acms");
    run(&[
        "search",
        "--index",
        index.to_str().unwrap(),
        "--strategy",
        "simple-keyword",
        "sales tax",
    ])
}

/// Deletes the keyword index's position files: the index still opens (and used to take
/// incremental commits) while every search fails.
fn delete_keyword_segments(repo: &Path) -> usize {
    let mut deleted = 0;
    for e in std::fs::read_dir(repo.join(".acms/keyword")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "pos") {
            std::fs::remove_file(&p).unwrap();
            deleted += 1;
        }
    }
    deleted
}

/// Item 7: with the keyword files deleted, plain `acms index` reported "0 documents written"
/// and never repaired; the first `--rebuild` failed (its error printed three times).
#[test]
fn deleted_keyword_files_are_rebuilt_by_the_next_run() {
    let repo = fixture();
    let root = repo.path();
    index_ok(root, &[]);
    assert!(delete_keyword_segments(root) > 0);

    let out = index(root, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("(rebuilt)"), "{}", stdout(&out));
    let hits = keyword_hits(root);
    assert!(
        stdout(&hits).contains("shop.pricing.sales_tax"),
        "{}",
        stdout(&hits)
    );

    assert!(delete_keyword_segments(root) > 0);
    let out = index(root, &["--rebuild"]);
    assert!(
        out.status.success(),
        "the first --rebuild succeeds: {}",
        stderr(&out)
    );
    let hits = keyword_hits(root);
    assert!(
        stdout(&hits).contains("shop.pricing.sales_tax"),
        "{}",
        stdout(&hits)
    );
}

/// Item 10: a run killed between the store commit and the keyword commit left keyword results
/// silently stale. The store commit alone (what such a kill leaves) is made here with the
/// library; every query then says the keyword index is behind, until `acms index` repairs it.
#[test]
fn a_keyword_index_behind_the_store_is_reported() {
    let repo = fixture();
    let root = repo.path();
    index_ok(root, &[]);
    std::fs::write(
        root.join("shop/extra.py"),
        "def gift_wrap(order):\n    return order\n",
    )
    .unwrap();
    // The store commits; the keyword index is not updated (the process "died" here).
    acms_index::index_repo(root, &acms_index::IndexOptions::new(root)).unwrap();

    let index_dir = root.join(".acms");
    let out = run(&[
        "query",
        "--index",
        index_dir.to_str().unwrap(),
        "--budget",
        "2000",
        "sales tax",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("keyword index") && err.contains("acms index"),
        "the stale keyword index is reported: {err}"
    );
    let hits = keyword_hits(root);
    assert!(stderr(&hits).contains("keyword index"), "{}", stderr(&hits));

    index_ok(root, &[]);
    let out = keyword_hits(root);
    assert!(!stderr(&out).contains("keyword index"), "{}", stderr(&out));
}

/// Item 4: a garbled page in `index.sqlite` let `acms index` report success; the run now
/// refuses with one line that says to rebuild, and `--rebuild` repairs it in one run.
#[test]
fn a_garbled_store_is_refused_until_rebuilt() {
    let repo = fixture();
    let root = repo.path();
    index_ok(root, &[]);
    crate::garble_table_page(&root.join(".acms/index.sqlite"), "nodes");

    let out = index(root, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr(&out);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("damaged") && err.contains("--rebuild"),
        "{err}"
    );

    let out = index(root, &["--rebuild"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let hits = keyword_hits(root);
    assert!(
        stdout(&hits).contains("shop.pricing.sales_tax"),
        "{}",
        stdout(&hits)
    );
}

/// Item 4: a NULL text (what a garbled row reads back as) became an empty fragment body in
/// the context. `Store::text` now fails with `Error::Damaged`, and the query fails with the
/// message to rebuild instead of showing empty bodies.
#[test]
fn a_missing_fragment_text_fails_the_query() {
    let repo = fixture();
    let root = repo.path();
    index_ok(root, &[]);
    let db = root.join(".acms/index.sqlite");
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        let sql: String = conn
            .query_row(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'files'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        conn.execute_batch("PRAGMA writable_schema = ON").unwrap();
        conn.execute(
            "UPDATE sqlite_master SET sql = ?1 WHERE type = 'table' AND name = 'files'",
            [sql.replace("content TEXT NOT NULL", "content TEXT")],
        )
        .unwrap();
    }
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute("UPDATE files SET content = NULL", []).unwrap();
    drop(conn);

    let index_dir = root.join(".acms");
    let out = run(&[
        "query",
        "--index",
        index_dir.to_str().unwrap(),
        "--budget",
        "4000",
        "apply a discount and add the sales tax",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains("damaged") && err.contains("--rebuild"),
        "{err}"
    );
}
