//! A damaged or foreign `index.sqlite`: acms refuses to go on with a message that says what to
//! do, never serves an empty body for a missing text, and never deletes a file it did not
//! write (issue 9, items 4 and 9).

use std::path::Path;

use acms_core::Depth;
use acms_index::{DB_FILE, Error, IndexOptions, Store, index_repo};

use crate::{APP_PY, HELPERS_PY, index, open, write_repo};

fn repo_with_code(repo: &Path) {
    let mut files: Vec<(String, String)> = vec![
        ("pkg/app.py".into(), APP_PY.into()),
        ("pkg/helpers.py".into(), HELPERS_PY.into()),
    ];
    // Enough rows that the store spans many pages.
    for i in 0..40 {
        let body: String = (0..20)
            .map(|k| format!("def f{i}_{k}(x):\n    \"\"\"Doc {k}.\"\"\"\n    return x + {k}\n\n"))
            .collect();
        files.push((format!("pkg/m{i}.py"), body));
    }
    let files: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(p, c)| (p.as_str(), c.as_bytes()))
        .collect();
    write_repo(repo, &files);
}

fn rebuild(repo: &Path) -> acms_index::Result<acms_index::IndexReport> {
    let mut opts = IndexOptions::new(repo);
    opts.rebuild = true;
    index_repo(repo, &opts)
}

/// Makes a stored column nullable and sets it to NULL, as a garbled page can read back.
fn null_column(repo: &Path, table: &str, column: &str, decl: &str) {
    let conn = rusqlite::Connection::open(repo.join(".acms").join(DB_FILE)).unwrap();
    let sql: String = conn
        .query_row(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [table],
            |r| r.get(0),
        )
        .unwrap();
    let relaxed = sql.replace(
        &format!("{column} {decl} NOT NULL"),
        &format!("{column} {decl}"),
    );
    assert_ne!(sql, relaxed, "{sql}");
    conn.execute_batch("PRAGMA writable_schema = ON").unwrap();
    conn.execute(
        "UPDATE sqlite_master SET sql = ?1 WHERE type = 'table' AND name = ?2",
        [relaxed.as_str(), table],
    )
    .unwrap();
    drop(conn);
    let conn = rusqlite::Connection::open(repo.join(".acms").join(DB_FILE)).unwrap();
    conn.execute(&format!("UPDATE {table} SET {column} = NULL"), [])
        .unwrap();
}

#[test]
fn a_missing_text_is_an_error_never_an_empty_body() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    repo_with_code(repo);
    index(repo);
    let route = open(repo)
        .nodes()
        .unwrap()
        .into_iter()
        .find(|n| n.name == "route")
        .unwrap();
    assert!(
        open(repo)
            .text(route.id, Depth::Full)
            .unwrap()
            .contains("def route")
    );

    null_column(repo, "files", "content", "TEXT");
    null_column(repo, "nodes", "skeleton", "TEXT");
    let store = open(repo);
    for depth in [Depth::Full, Depth::Skeleton] {
        let err = store.text(route.id, depth).unwrap_err();
        assert!(matches!(err, Error::Damaged { .. }), "{depth:?}: {err}");
        assert!(err.to_string().contains("--rebuild"), "{err}");
    }
    // Depths whose text is intact still read.
    assert!(
        store
            .text(route.id, Depth::Signature)
            .unwrap()
            .contains("def route")
    );
    let err = store.file_renderings("pkg/app.py").unwrap_err();
    assert!(matches!(err, Error::Damaged { .. }), "{err}");
}

/// Garbles one page in the middle of the store: `acms index` used to report success while
/// `PRAGMA integrity_check` failed. Now the run refuses, says to rebuild, and the rebuild
/// leaves a store that passes the check.
#[test]
fn a_garbled_page_stops_the_run_until_a_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    repo_with_code(repo);
    index(repo);
    let db = repo.join(".acms").join(DB_FILE);
    let mut bytes = std::fs::read(&db).unwrap();
    let page = 4096;
    assert!(bytes.len() > 8 * page, "{} bytes", bytes.len());
    let mid = bytes.len() / page / 2 * page;
    for b in &mut bytes[mid + 100..mid + page - 100] {
        *b = 0x5a;
    }
    std::fs::write(&db, &bytes).unwrap();

    let err = index_repo(repo, &IndexOptions::new(repo)).unwrap_err();
    assert!(matches!(err, Error::Damaged { .. }), "{err}");
    assert!(err.to_string().contains("acms index --rebuild"), "{err}");

    let report = rebuild(repo).expect("a rebuild replaces a damaged store");
    assert_eq!(report.files, 42);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    assert!(open(repo).nodes().unwrap().len() > 800);
}

/// `--rebuild` with `--index` pointing at a directory whose `index.sqlite` is someone else's
/// database deleted it. acms now refuses to use or delete a file it did not write: the folder
/// has no seal of this user's acms.
#[test]
fn a_foreign_database_is_never_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    write_repo(&repo, &[("a.py", b"def a():\n    return 1\n")]);
    let index_dir = dir.path().join("shared");
    std::fs::create_dir_all(&index_dir).unwrap();
    let db = index_dir.join(DB_FILE);
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch("CREATE TABLE customers (name TEXT); INSERT INTO customers VALUES ('Ada');")
        .unwrap();
    drop(conn);

    let mut opts = IndexOptions::new(&repo);
    opts.index_dir = index_dir.clone();
    for rebuild in [false, true] {
        opts.rebuild = rebuild;
        let err = index_repo(&repo, &opts).unwrap_err();
        assert!(matches!(err, Error::Untrusted { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.contains("not an index acms wrote for you"), "{msg}");
        assert!(!msg.contains("no such table"), "{msg}");
    }
    let err = Store::open(&index_dir).err().unwrap();
    assert!(matches!(err, Error::Untrusted { .. }), "{err}");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let name: String = conn
        .query_row("SELECT name FROM customers", [], |r| r.get(0))
        .unwrap();
    assert_eq!(name, "Ada");

    // Issue 37 item 8: a foreign database with a `meta(key, value)` table holding
    // `format_version` passed for an old acms store, and `--rebuild` deleted it.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT); \
         INSERT INTO meta VALUES ('format_version', '2');",
    )
    .unwrap();
    drop(conn);
    for rebuild in [false, true] {
        opts.rebuild = rebuild;
        let err = index_repo(&repo, &opts).unwrap_err();
        assert!(matches!(err, Error::Untrusted { .. }), "{err}");
    }
    let conn = rusqlite::Connection::open(&db).unwrap();
    let name: String = conn
        .query_row("SELECT name FROM customers", [], |r| r.get(0))
        .unwrap();
    assert_eq!(name, "Ada", "the customers table survived --rebuild");
    drop(conn);

    // Not SQLite at all: the same refusal, the bytes untouched.
    std::fs::write(&db, b"these are my notes, not a database\n".repeat(200)).unwrap();
    for rebuild in [false, true] {
        opts.rebuild = rebuild;
        let err = index_repo(&repo, &opts).unwrap_err();
        assert!(matches!(err, Error::Untrusted { .. }), "{err}");
    }
    assert!(
        std::fs::read(&db)
            .unwrap()
            .starts_with(b"these are my notes")
    );
}

/// An empty `index.sqlite` (a `touch`) holds nothing: reading it says there is no index yet,
/// and indexing into it works.
#[test]
fn an_empty_database_file_is_no_index_yet() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    write_repo(repo, &[("a.py", b"def a():\n    return 1\n")]);
    std::fs::create_dir_all(repo.join(".acms")).unwrap();
    std::fs::write(repo.join(".acms").join(DB_FILE), b"").unwrap();
    let err = Store::open(&repo.join(".acms")).err().unwrap();
    assert!(matches!(err, Error::IndexNotFound(_)), "{err}");
    assert!(err.to_string().contains("acms index"), "{err}");
    let report = index(repo);
    assert_eq!(report.files, 1);
    assert_eq!(open(repo).nodes().unwrap().len(), 2);
}

/// Every store carries acms's application id in its header from its first run, which is what
/// lets a rebuild tell it from someone else's database without reading any table.
#[test]
fn the_store_header_says_acms_wrote_it() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    write_repo(repo, &[("a.py", b"def a():\n    return 1\n")]);
    index(repo);
    let bytes = std::fs::read(repo.join(".acms").join(DB_FILE)).unwrap();
    let id = i32::from_be_bytes([bytes[68], bytes[69], bytes[70], bytes[71]]);
    assert_eq!(id, acms_index::APPLICATION_ID);
}
