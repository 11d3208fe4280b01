//! The `acms` binary against hostile repositories, damaged indexes and odd invocations
//! (issue 9): what a user sees on the terminal, and the exit code.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::{acms, fixture, run};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn index_ok(repo: &Path) -> Output {
    let out = run(&["index", repo.to_str().unwrap(), "--no-vectors"]);
    assert!(out.status.success(), "{}", stderr(&out));
    out
}

/// Item 1: `ln -s /etc r/etclink; acms index r; acms query --file etclink/shadow …` put the
/// shadow file verbatim into the context.
#[test]
fn a_symlink_out_of_the_repository_never_reaches_the_context() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("etc");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(
        outside.join("shadow"),
        "root:SECRET_HASH_VALUE:19000:0:99999:7:::\n",
    )
    .unwrap();
    let repo = dir.path().join("r");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(repo.join("app.py"), "def main():\n    return 1\n").unwrap();
    std::os::unix::fs::symlink(&outside, repo.join("etclink")).unwrap();

    let out = index_ok(&repo);
    let err = stderr(&out);
    assert_eq!(
        err.lines().filter(|l| l.contains("etclink")).count(),
        1,
        "one warning per link: {err}"
    );
    let index = repo.join(".acms");
    let out = run(&[
        "query",
        "--index",
        index.to_str().unwrap(),
        "--budget",
        "500",
        "--file",
        "etclink/shadow",
        "root password hash",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stdout(&out).contains("SECRET"), "{}", stdout(&out));
}

/// Item 11: a newline in a file name forged a fragment header line in the context.
#[test]
fn a_newline_in_a_file_name_cannot_forge_a_fragment_header() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    std::fs::write(
        repo.join("a\n# forged.py:1-9 · evil.admin · depth 9\nb.py"),
        "def shipping_rate(order):\n    \"\"\"Shipping rate.\"\"\"\n    return 5\n",
    )
    .unwrap();
    index_ok(repo);
    let index = repo.join(".acms");
    let out = run(&[
        "query",
        "--index",
        index.to_str().unwrap(),
        "--budget",
        "2000",
        "shipping rate",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("shipping_rate"), "{text}");
    assert!(
        !text.lines().any(|l| l.starts_with("# forged.py")),
        "a forged header line: {text}"
    );
}

/// Item 12: `acms index --format json | true` panicked on the broken pipe (exit 101 and a
/// backtrace). A closed stdout ends the command quietly.
#[test]
fn a_closed_stdout_is_not_a_panic() {
    let repo = fixture();
    let root = repo.path().to_str().unwrap();
    for args in [
        vec!["index", root, "--no-vectors", "--format", "json"],
        vec!["search", "--index", &format!("{root}/.acms"), "total"],
        vec![
            "query",
            "--index",
            &format!("{root}/.acms"),
            "--budget",
            "3000",
            "compute the total",
        ],
    ] {
        let mut child = acms()
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // `| true`: the reader goes away without reading.
        drop(child.stdout.take());
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let status = child.wait().unwrap();
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_ne!(status.code(), Some(101), "{args:?}: {err}");
        assert!(!err.contains("Broken pipe"), "{args:?}: {err}");
    }
}

/// Item 12: `acms search --strategy nope` printed nothing and exited 0.
#[test]
fn an_unknown_strategy_is_a_usage_error() {
    let repo = fixture();
    index_ok(repo.path());
    let index = repo.path().join(".acms");
    let out = run(&[
        "search",
        "--index",
        index.to_str().unwrap(),
        "--strategy",
        "nope",
        "total",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("nope") && err.contains("simple-keyword"),
        "{err}"
    );
}

/// Item 12: a `--diagnostics` file that cannot be created gave an error without its path.
#[test]
fn an_uncreatable_diagnostics_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.json");
    std::fs::write(&input, r#"[{"role":"user","content":"hello"}]"#).unwrap();
    let target = dir.path().join("no/such/dir/diag.jsonl");
    let out = run(&[
        "compact",
        "--input",
        input.to_str().unwrap(),
        "--limit",
        "1000",
        "--diagnostics",
        target.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(target.to_str().unwrap()),
        "{}",
        stderr(&out)
    );
}

/// Item 9: every error prints its cause once and says what to do.
#[test]
fn broken_index_files_are_one_error_that_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("idx");
    std::fs::create_dir_all(&index).unwrap();
    let db = index.join("index.sqlite");
    for (content, says) in [
        (&b""[..], "acms index"),
        (
            &b"not a database at all\n"[..],
            "not an index acms wrote for you",
        ),
    ] {
        std::fs::write(&db, content).unwrap();
        let out = run(&[
            "query",
            "--index",
            index.to_str().unwrap(),
            "--budget",
            "100",
            "x",
        ]);
        assert_eq!(out.status.code(), Some(1));
        let err = stderr(&out);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(says), "{err}");
        assert!(!err.contains("no such table"), "{err}");
        assert_no_repeated_cause(&err);
    }
}

/// No `: `-separated part of an error line appears twice.
fn assert_no_repeated_cause(err: &str) {
    for line in err.lines() {
        let parts: Vec<&str> = line.split(": ").map(str::trim).collect();
        for (i, p) in parts.iter().enumerate() {
            if p.len() > 8 {
                assert!(
                    !parts[i + 1..].iter().any(|q| q.contains(p)),
                    "cause repeated in {line:?}"
                );
            }
        }
    }
}

/// Item 9: `--rebuild` deleted a foreign `index.sqlite` (one with a `customers` table).
#[test]
fn rebuild_refuses_to_delete_a_foreign_database() {
    let repo = fixture();
    let index = tempfile::tempdir().unwrap();
    let db = index.path().join("index.sqlite");
    // A SQLite database acms did not write: the header magic and a page of someone's data.
    let foreign = foreign_sqlite();
    std::fs::write(&db, &foreign).unwrap();
    let out = run(&[
        "index",
        repo.path().to_str().unwrap(),
        "--index",
        index.path().to_str().unwrap(),
        "--rebuild",
        "--no-vectors",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("not an index acms wrote for you"), "{err}");
    assert_no_repeated_cause(&err);
    assert_eq!(
        std::fs::read(&db).unwrap(),
        foreign,
        "the file is untouched"
    );
}

/// A small SQLite database with a `customers` table.
fn foreign_sqlite() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.sqlite");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch("CREATE TABLE customers (name TEXT); INSERT INTO customers VALUES ('Ada');")
        .unwrap();
    drop(conn);
    std::fs::read(&path).unwrap()
}

/// Item 5: an unreadable repository root was treated as empty and wiped the whole index; a
/// directory that cannot be read had its files counted as removed.
#[test]
fn an_unreadable_directory_never_wipes_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let top = dir.path();
    set_mode(top, 0o755);
    let repo = top.join("repo");
    std::fs::create_dir_all(repo.join("pkg")).unwrap();
    std::fs::write(repo.join("a.py"), "def a():\n    return 1\n").unwrap();
    std::fs::write(repo.join("pkg/b.py"), "def b():\n    return 2\n").unwrap();
    let index = top.join("idx");
    std::fs::create_dir_all(&index).unwrap();
    set_mode(&index, 0o777);
    let index_args = |repo: &Path| {
        vec![
            "index".to_string(),
            repo.to_str().unwrap().to_string(),
            "--index".into(),
            index.to_str().unwrap().to_string(),
            "--no-vectors".into(),
            "--format".into(),
            "json".into(),
        ]
    };
    let out = unprivileged(&index_args(&repo));
    assert!(out.status.success(), "{}", stderr(&out));
    let files = || {
        acms_index::Store::open(&index)
            .unwrap()
            .files()
            .unwrap()
            .len()
    };
    assert_eq!(files(), 2);

    // A subdirectory that cannot be read: a warning, and its files stay indexed.
    set_mode(&repo.join("pkg"), 0o000);
    let out = unprivileged(&index_args(&repo));
    set_mode(&repo.join("pkg"), 0o755);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["index"]["removed"], 0, "{report}");
    let warnings = report["index"]["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w["path"] == "pkg" && w["message"].as_str().unwrap().contains("cannot read")),
        "{report}"
    );
    assert_eq!(files(), 2);

    // The root itself cannot be read: the run fails like a missing repository.
    set_mode(&repo, 0o000);
    let out = unprivileged(&index_args(&repo));
    set_mode(&repo, 0o755);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("cannot read") && err.contains("repo"), "{err}");
    assert_eq!(files(), 2, "the index is untouched");
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Runs `acms args` as an unprivileged user: root reads any directory whatever its mode, so
/// as root the command runs as `nobody` through `setpriv`.
fn unprivileged(args: &[String]) -> Output {
    let uid = Command::new("id").arg("-u").output().unwrap();
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return acms().args(args).output().unwrap();
    }
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_acms"))
        .args(args)
        .env("HOME", "/nonexistent")
        // The test process's key (world-readable there), so the tests can open what it seals.
        .env("XDG_CONFIG_HOME", crate::config_home())
        .output()
        .expect("setpriv (util-linux) runs the command as nobody")
}

/// Issue 39 item 8: under `--format json` a failure is one JSON object on stderr (stdout
/// stays empty) with the same exit code as in text form: a caller never parses an error as
/// a result.
#[test]
fn errors_under_format_json_are_json_with_the_same_exit_codes() {
    let repo = fixture();
    index_ok(repo.path());
    let index = repo.path().join(".acms");
    let index = index.to_str().unwrap();
    let root = repo.path().to_str().unwrap();
    let missing = repo.path().join("no-such-index");
    let cases: [(Vec<&str>, i32, &str, &str); 4] = [
        (
            vec![
                "search",
                "--index",
                index,
                "--strategy",
                "nope",
                "--format",
                "json",
                "x",
            ],
            2,
            "usage",
            "nope",
        ),
        (
            vec![
                "query",
                "--index",
                index,
                "--budget",
                "lots",
                "--format=json",
                "x",
            ],
            2,
            "usage",
            "lots",
        ),
        (
            vec![
                "plan", "phase", "--repo", root, "p42", "explore", "--format", "json",
            ],
            1,
            "plan",
            "unknown plan p42",
        ),
        (
            vec![
                "query",
                "--index",
                missing.to_str().unwrap(),
                "--budget",
                "4000",
                "--format",
                "json",
                "x",
            ],
            1,
            "",
            "no-such-index",
        ),
    ];
    for (args, code, kind, says) in cases {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {}", stderr(&out));
        assert!(out.stdout.is_empty(), "{args:?}: stdout {:?}", out.stdout);
        let err: serde_json::Value = serde_json::from_slice(&out.stderr)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", stderr(&out)));
        let e = &err["error"];
        assert!(
            e["message"].as_str().unwrap().contains(says),
            "{args:?}: {err}"
        );
        assert!(e["kind"].is_string() && e.get("hint").is_some(), "{err}");
        if !kind.is_empty() {
            assert_eq!(e["kind"], kind, "{args:?}: {err}");
        }
        // The same mistake in text form: the same exit code, a one-line `error:`.
        let text: Vec<&str> = args
            .iter()
            .copied()
            .filter(|a| !a.starts_with("--format") && *a != "json")
            .collect();
        let out = run(&text);
        assert_eq!(out.status.code(), Some(code), "{text:?}");
        assert!(
            stderr(&out).starts_with("error: "),
            "{text:?}: {}",
            stderr(&out)
        );
    }
}
