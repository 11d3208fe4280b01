//! Each bad input degrades to one warning naming the file; the run goes on.

use acms_index::{Error, IndexOptions, index_repo};

use crate::{index, open, warnings_for, write_repo};

#[test]
fn bad_files_warn_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    let mut big = b"x = 1\n".repeat(200_000);
    big.push(b'\n');
    let nested_py = format!("x = {}{}\n", "[".repeat(10_000), "]".repeat(10_000));
    write_repo(
        repo,
        &[
            ("good.py", b"def ok():\n    return 1\n"),
            ("image.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"),
            ("latin1.py", b"def caf\xe9():\n    return 1\n"),
            ("empty.py", b""),
            ("big.py", &big),
            (
                "broken.py",
                b"def broken(:\n    return\n\ndef fine():\n    return 2\n",
            ),
            ("nested.py", nested_py.as_bytes()),
        ],
    );
    std::os::unix::fs::symlink(repo.join("loop"), repo.join("loop/inner")).ok();
    std::fs::create_dir_all(repo.join("loop")).unwrap();
    std::os::unix::fs::symlink(repo.join("loop"), repo.join("loop/self")).unwrap();
    std::os::unix::fs::symlink(repo.join("missing.py"), repo.join("dangling.py")).unwrap();

    // Generous: the nesting warning is what is checked here, not the timeout, and a debug
    // build on a busy machine walks 10 000 levels slowly.
    let mut opts = IndexOptions::new(repo);
    opts.config.index.parse_timeout_ms = 600_000;
    let report = index_repo(repo, &opts).expect("index run");

    assert_eq!(warnings_for(&report, "image.png").len(), 1, "{report:#?}");
    assert!(warnings_for(&report, "image.png")[0].contains("binary"));
    assert_eq!(warnings_for(&report, "latin1.py").len(), 1);
    assert!(warnings_for(&report, "latin1.py")[0].contains("UTF-8"));
    assert_eq!(warnings_for(&report, "empty.py").len(), 1);
    assert_eq!(warnings_for(&report, "big.py").len(), 1);
    assert!(warnings_for(&report, "big.py")[0].contains("max-size"));
    assert!(!warnings_for(&report, "broken.py").is_empty());
    assert_eq!(warnings_for(&report, "dangling.py").len(), 1);
    assert_eq!(warnings_for(&report, "nested.py").len(), 1, "{report:#?}");
    assert!(warnings_for(&report, "nested.py")[0].contains("nesting"));
    assert!(
        report
            .warnings
            .iter()
            .any(|w| w.message.contains("symlink loop")),
        "{:#?}",
        report.warnings
    );

    let store = open(repo);
    let nodes = store.nodes().unwrap();
    let names: Vec<&str> = nodes.iter().map(|n| n.qualified_name.as_str()).collect();
    assert!(names.contains(&"good.ok"), "{names:?}");
    // What tree-sitter recovers from a file with a syntax error is still indexed.
    assert!(names.contains(&"broken.fine"), "{names:?}");
    // Invalid bytes are replaced, the symbol is kept.
    assert!(
        names.iter().any(|n| n.starts_with("latin1.caf")),
        "{names:?}"
    );
    // Pathological nesting is indexed without overflowing the stack.
    assert!(nodes.iter().any(|n| n.path == "nested.py"));
    assert!(
        !nodes
            .iter()
            .any(|n| n.path == "image.png" || n.path == "big.py")
    );
}

#[test]
fn missing_repo_and_unwritable_index_dir_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    assert!(matches!(
        index_repo(&missing, &IndexOptions::new(&missing)),
        Err(Error::RepoNotFound(_))
    ));
    write_repo(dir.path(), &[("a.py", b"x = 1\n"), ("file", b"")]);
    let mut opts = IndexOptions::new(dir.path());
    // A directory cannot be created below a regular file, even by root.
    opts.index_dir = dir.path().join("file/index");
    let err = index_repo(dir.path(), &opts).unwrap_err();
    assert!(matches!(err, Error::IndexDir { .. }), "{err}");
}

#[test]
fn a_missing_index_and_a_foreign_format_say_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let err = acms_index::Store::open(dir.path())
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("acms index"), "{err}");

    write_repo(dir.path(), &[("a.py", b"x = 1\n")]);
    index(dir.path());
    set_format(dir.path(), 999);
    let err = acms_index::Store::open(&dir.path().join(".acms"))
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("--rebuild"), "{err}");
    let mut opts = IndexOptions::new(dir.path());
    opts.rebuild = true;
    index_repo(dir.path(), &opts).expect("rebuild replaces an unreadable index");
    assert!(acms_index::Store::open(&dir.path().join(".acms")).is_ok());
}

/// Rewrites the stored format version, as an index from another acms version would have.
fn set_format(repo: &std::path::Path, version: u32) {
    let conn = rusqlite::Connection::open(repo.join(".acms/index.sqlite")).unwrap();
    conn.execute(
        "UPDATE meta SET value = ?1 WHERE key = 'format_version'",
        [version.to_string()],
    )
    .unwrap();
}

/// The format version a store records.
fn stored_format(conn: &rusqlite::Connection) -> String {
    conn.query_row(
        "SELECT value FROM meta WHERE key = 'format_version'",
        [],
        |r| r.get(0),
    )
    .unwrap()
}

/// Rewrites a store as version 5 wrote it: edges and references in rowid tables indexed by
/// source, their kinds by name, every doc rendering stored in full.
fn as_version_5(repo: &std::path::Path) {
    let conn = rusqlite::Connection::open(repo.join(".acms/index.sqlite")).unwrap();
    conn.execute_batch(
        "CREATE TABLE e5 (src INTEGER NOT NULL, dst INTEGER NOT NULL, kind TEXT NOT NULL, confidence REAL NOT NULL);
         INSERT INTO e5 SELECT src, dst, CASE kind WHEN 0 THEN 'calls' WHEN 1 THEN 'contains'
             WHEN 2 THEN 'imports' WHEN 3 THEN 'inherits' END, confidence FROM edges;
         DROP TABLE edges;
         ALTER TABLE e5 RENAME TO edges;
         CREATE INDEX edges_src ON edges(src);
         CREATE INDEX edges_dst ON edges(dst);
         CREATE TABLE r5 (src INTEGER NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL);
         INSERT INTO r5 SELECT src, name, CASE kind WHEN 1 THEN 'inherits' ELSE 'call' END FROM refs;
         DROP TABLE refs;
         ALTER TABLE r5 RENAME TO refs;
         CREATE INDEX refs_src ON refs(src);
         CREATE INDEX refs_name ON refs(name);
         UPDATE nodes SET with_doc = signature WHERE with_doc = '';",
    )
    .unwrap();
    drop(conn);
    set_format(repo, 5);
}

/// Every rendering of every node, by path.
fn all_texts(store: &acms_index::Store) -> Vec<(String, String)> {
    use acms_core::Depth;
    let mut out = Vec::new();
    for n in store.nodes().unwrap() {
        for depth in [Depth::Signature, Depth::Doc, Depth::Skeleton, Depth::Full] {
            out.push((n.path.clone(), store.text(n.id, depth).unwrap()));
        }
    }
    out
}

/// A version-5 store (edges and references with rowids and kind names, doc renderings in
/// full) is read as it is; its next index run migrates it in place and compacts it: the same
/// edges and texts as a store this version builds, kinds as codes, no full re-index.
#[test]
fn a_version_5_store_is_read_and_migrated() {
    let dir = tempfile::tempdir().unwrap();
    let files: &[(&str, &[u8])] = &[
        (
            "a.py",
            b"class Base:\n    \"\"\"The base.\"\"\"\n\n    def run(self):\n        return helper(1)\n\n\ndef helper(x):\n    return x\n",
        ),
        (
            "b.py",
            b"from a import Base, helper\n\n\nclass Child(Base):\n    def go(self):\n        value = helper(2)\n        return value\n",
        ),
    ];
    write_repo(dir.path(), files);
    index(dir.path());
    let db = dir.path().join(".acms/index.sqlite");
    let built = open(dir.path());
    let (edges, texts) = (built.edges().unwrap(), all_texts(&built));
    drop(built);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let empty: i64 = conn
        .query_row("SELECT count(*) FROM nodes WHERE with_doc = ''", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert!(
        empty > 0,
        "a doc rendering equal to the signature is stored empty"
    );
    drop(conn);
    assert!(
        edges
            .iter()
            .any(|e| e.kind == acms_index::EdgeKind::Inherits)
    );

    as_version_5(dir.path());
    let old = open(dir.path());
    assert_eq!(old.edges().unwrap(), edges, "readable as it is");
    assert_eq!(all_texts(&old), texts);
    drop(old);

    std::fs::write(dir.path().join("c.py"), "X = 1\n").unwrap();
    let report = index(dir.path());
    assert_eq!(
        (report.parsed, report.unchanged),
        (1, 2),
        "migrated, not rebuilt"
    );
    let conn = rusqlite::Connection::open(&db).unwrap();
    assert_eq!(stored_format(&conn), "6");
    for table in ["edges", "refs"] {
        let sql: String = conn
            .query_row(
                "SELECT sql FROM sqlite_master WHERE name = ?1",
                [table],
                |r| r.get(0),
            )
            .unwrap();
        assert!(sql.contains("WITHOUT ROWID"), "{sql}");
        let kinds: Vec<String> = conn
            .prepare(&format!("SELECT DISTINCT typeof(kind) FROM {table}"))
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(kinds, ["integer"], "{table}");
    }
    let free: i64 = conn
        .query_row("PRAGMA freelist_count", [], |r| r.get(0))
        .unwrap();
    assert_eq!(free, 0, "compacted after the migration");
    drop(conn);
    let migrated = open(dir.path());
    assert_eq!(migrated.edges().unwrap(), edges);
    assert_eq!(
        all_texts(&migrated)
            .into_iter()
            .filter(|t| t.0 != "c.py")
            .collect::<Vec<_>>(),
        texts
    );
}

/// A version-4 store (files' texts stored plain) is read as it is; its next index run migrates
/// it (to version 6) and packs what it writes, and the plain texts it keeps still read the
/// same.
#[test]
fn a_version_4_store_with_plain_texts_is_read_and_extended() {
    let dir = tempfile::tempdir().unwrap();
    write_repo(
        dir.path(),
        &[
            (
                "a.py",
                b"def helper(x):\n    \"\"\"Doubles \xc3\xa9.\"\"\"\n    return 2 * x\n" as &[u8],
            ),
            (
                "b.py",
                b"from a import helper\n\n\ndef go():\n    return helper(2)\n",
            ),
        ],
    );
    index(dir.path());
    let texts = all_texts;
    as_version_5(dir.path());
    let packed = texts(&open(dir.path()));
    let db = dir.path().join(".acms/index.sqlite");
    {
        // As version 4 wrote it: every text plain.
        let store = open(dir.path());
        let plain: Vec<(String, String)> = ["a.py", "b.py"]
            .iter()
            .map(|p| (p.to_string(), store.file_content(p).unwrap().unwrap()))
            .collect();
        drop(store);
        let conn = rusqlite::Connection::open(&db).unwrap();
        for (path, text) in plain {
            conn.execute(
                "UPDATE files SET content = ?1 WHERE path = ?2",
                [text, path],
            )
            .unwrap();
        }
    }
    set_format(dir.path(), 4);
    let kinds = || -> Vec<String> {
        let conn = rusqlite::Connection::open(&db).unwrap();
        let mut stmt = conn
            .prepare("SELECT path || ' ' || typeof(content) FROM files ORDER BY path")
            .unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    };
    assert_eq!(kinds(), ["a.py text", "b.py text"]);
    assert_eq!(texts(&open(dir.path())), packed, "readable as it is");

    std::fs::write(
        dir.path().join("b.py"),
        "from a import helper\n\n\ndef go():\n    return helper(30)\n",
    )
    .unwrap();
    let report = index(dir.path());
    assert_eq!((report.parsed, report.unchanged), (1, 1), "not rebuilt");
    assert_eq!(kinds(), ["a.py text", "b.py blob"]);
    let conn = rusqlite::Connection::open(&db).unwrap();
    assert_eq!(stored_format(&conn), "6");
    let store = open(dir.path());
    assert_eq!(
        store.file_content("a.py").unwrap().unwrap(),
        std::fs::read_to_string(dir.path().join("a.py")).unwrap()
    );
    assert_eq!(
        store.file_content("b.py").unwrap().unwrap(),
        std::fs::read_to_string(dir.path().join("b.py")).unwrap()
    );
}

/// A version-3 store (references with their file's path) is read as it is, and the next
/// index run migrates it in place: the same references, edges and answers as a store built
/// by this version, and no full re-index.
#[test]
fn a_version_3_store_is_read_and_migrated() {
    let dir = tempfile::tempdir().unwrap();
    write_repo(
        dir.path(),
        &[
            (
                "a.py",
                b"class Base:\n    def run(self):\n        return helper(1)\n\n\ndef helper(x):\n    return x\n" as &[u8],
            ),
            (
                "b.py",
                b"from a import Base, helper\n\n\nclass Child(Base):\n    def go(self):\n        value = helper(2)\n        return value\n",
            ),
        ],
    );
    index(dir.path());
    as_version_5(dir.path());
    let db = dir.path().join(".acms/index.sqlite");
    // Kinds as version 5 names them, and as codes after the migration.
    let refs = |conn: &rusqlite::Connection| -> Vec<(i64, String, String)> {
        let mut stmt = conn
            .prepare(
                "SELECT src, name, CASE kind WHEN 1 THEN 'inherits' WHEN 0 THEN 'call' ELSE kind END
                 FROM refs ORDER BY src, name",
            )
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    };
    let before = refs(&rusqlite::Connection::open(&db).unwrap());
    assert!(!before.is_empty());
    {
        // As version 3 wrote it.
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(
            "CREATE TABLE old (path TEXT NOT NULL, src INTEGER NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL);
             INSERT INTO old SELECT n.path, r.src, r.name, r.kind FROM refs r JOIN nodes n ON n.id = r.src;
             DROP TABLE refs;
             ALTER TABLE old RENAME TO refs;
             CREATE INDEX refs_path ON refs(path);",
        )
        .unwrap();
    }
    set_format(dir.path(), 3);
    let store = acms_index::Store::open(&dir.path().join(".acms")).expect("readable as it is");
    let edges = store.edges().unwrap();
    drop(store);

    std::fs::write(
        dir.path().join("b.py"),
        "from a import Base, helper\n\n\nclass Child(Base):\n    def go(self):\n        value = helper(30)\n        return value\n",
    )
    .unwrap();
    let report = index_repo(dir.path(), &IndexOptions::new(dir.path())).unwrap();
    assert_eq!(
        (report.parsed, report.unchanged),
        (1, 1),
        "migrated, not rebuilt"
    );
    let conn = rusqlite::Connection::open(&db).unwrap();
    assert_eq!(stored_format(&conn), "6");
    let cols: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('refs')")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(cols, ["src", "name", "kind"]);
    assert_eq!(refs(&conn), before);
    let store = acms_index::Store::open(&dir.path().join(".acms")).unwrap();
    assert_eq!(store.edges().unwrap().len(), edges.len());
}
