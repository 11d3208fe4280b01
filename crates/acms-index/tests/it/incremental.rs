//! Re-indexing parses only what changed, keeps ids stable and forgets deleted files.

use acms_core::Depth;
use acms_index::{EdgeKind, IndexReport};

use crate::{APP_PY, HELPERS_PY, alter_store, index, open, warnings_for, write_repo};

#[test]
fn reindex_parses_only_changed_files_and_drops_deleted_ones() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    write_repo(
        repo,
        &[
            ("pkg/__init__.py", b""),
            ("pkg/app.py", APP_PY.as_bytes()),
            ("pkg/helpers.py", HELPERS_PY.as_bytes()),
            ("pkg/extra.py", b"def extra():\n    return 3\n"),
        ],
    );
    let first = index(repo);
    assert_eq!(first.parsed, 3, "{first:#?}"); // the empty __init__.py is skipped
    let ids_before: Vec<_> = open(repo).nodes().unwrap().iter().map(|n| n.id).collect();

    let again = index(repo);
    assert_eq!((again.parsed, again.unchanged, again.removed), (0, 3, 0));
    assert!(again.changes.upserted.is_empty() && again.changes.removed.is_empty());
    let ids_again: Vec<_> = open(repo).nodes().unwrap().iter().map(|n| n.id).collect();
    assert_eq!(ids_before, ids_again);

    // Change one file (size changes, so no reliance on mtime granularity), delete another.
    write_repo(
        repo,
        &[(
            "pkg/helpers.py",
            format!("{HELPERS_PY}\n\ndef more():\n    return 4\n").as_bytes(),
        )],
    );
    std::fs::remove_file(repo.join("pkg/extra.py")).unwrap();
    let third = index(repo);
    assert_eq!(
        (third.parsed, third.unchanged, third.removed),
        (1, 1, 1),
        "{third:#?}"
    );

    let store = open(repo);
    let nodes = store.nodes().unwrap();
    assert!(!nodes.iter().any(|n| n.path == "pkg/extra.py"));
    assert!(
        nodes
            .iter()
            .any(|n| n.qualified_name.ends_with("helpers.more"))
    );
    // Unchanged symbols keep their ids.
    let slugify = nodes.iter().find(|n| n.name == "slugify").unwrap();
    assert!(ids_before.contains(&slugify.id));
    // Edges only point at live nodes.
    let live: std::collections::HashSet<_> = nodes.iter().map(|n| n.id).collect();
    for e in store.edges().unwrap() {
        assert!(live.contains(&e.src) && live.contains(&e.dst), "{e:?}");
    }
}

#[test]
fn stores_renderings_edges_and_exact_counts() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    write_repo(
        repo,
        &[
            ("pkg/__init__.py", b"\n"),
            ("pkg/app.py", APP_PY.as_bytes()),
            ("pkg/helpers.py", HELPERS_PY.as_bytes()),
        ],
    );
    index(repo);
    let store = open(repo);
    let nodes = store.nodes().unwrap();
    let route = nodes.iter().find(|n| n.name == "route").unwrap();
    assert_eq!((route.start_line, route.end_line), (9, 13));
    let counter = acms_core::Tokenizer::Cl100kBase.counter();
    for depth in Depth::FALLBACK {
        let text = store.text(route.id, depth).unwrap();
        use acms_core::TokenCounter;
        assert_eq!(
            route.tokens_at(depth) as usize,
            counter.count(&text),
            "{depth}"
        );
    }
    assert!(
        store
            .text(route.id, Depth::Full)
            .unwrap()
            .contains("raise ValueError")
    );
    assert!(
        store
            .text(route.id, Depth::Doc)
            .unwrap()
            .contains("Register a route.")
    );

    let edges = store.edges().unwrap();
    let id = |name: &str| nodes.iter().find(|n| n.name == name).unwrap().id;
    let has = |src, dst, kind| {
        edges
            .iter()
            .any(|e| e.src == src && e.dst == dst && e.kind == kind)
    };
    assert!(has(id("App"), id("route"), EdgeKind::Contains));
    assert!(has(id("route"), id("slugify"), EdgeKind::Calls));
    assert!(has(id("run"), id("route"), EdgeKind::Calls));
    assert!(has(id("App"), id("Base"), EdgeKind::Inherits));
    let app_mod = nodes
        .iter()
        .find(|n| n.path == "pkg/app.py" && n.parent.is_none())
        .unwrap();
    let helpers_mod = nodes
        .iter()
        .find(|n| n.path == "pkg/helpers.py" && n.parent.is_none())
        .unwrap();
    assert!(has(app_mod.id, helpers_mod.id, EdgeKind::Imports));
}

/// Edges as a sorted list, comparable between two stores.
fn edge_list(repo: &std::path::Path) -> Vec<(u64, u64, &'static str, u32)> {
    let mut edges: Vec<_> = open(repo)
        .edges()
        .unwrap()
        .iter()
        .map(|e| (e.src.0, e.dst.0, e.kind.name(), e.confidence.to_bits()))
        .collect();
    edges.sort_unstable();
    edges
}

/// A small Python repository: file `i` defines `f{i}_{k}` for `k < defs[i]`, each calling the
/// functions named in `calls` (resolved across files by name).
fn python_repo(root: &std::path::Path, defs: &[usize], calls: &[(usize, usize)]) {
    let _ = std::fs::remove_dir_all(root.join("pkg"));
    let mut files = Vec::new();
    for (i, &n) in defs.iter().enumerate() {
        let mut text = String::new();
        for k in 0..n {
            text.push_str(&format!("def f{i}_{k}(x):\n"));
            for &(file, def) in calls {
                if def < defs.get(file).copied().unwrap_or(0) && (file, def) != (i, k) {
                    text.push_str(&format!("    f{file}_{def}(x)\n"));
                }
            }
            text.push_str("    return x\n\n");
        }
        files.push((format!("pkg/m{i}.py"), text));
    }
    let files: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_bytes()))
        .collect();
    write_repo(root, &files);
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(8))]

    /// An incremental run writes only the difference of the edges, and ends with exactly the
    /// edges a run from scratch finds.
    #[test]
    fn incremental_edges_equal_a_fresh_index(
        before in proptest::collection::vec(1usize..4, 2..5),
        after in proptest::collection::vec(1usize..4, 2..5),
        calls_before in proptest::collection::vec((0usize..5, 0usize..4), 0..6),
        calls_after in proptest::collection::vec((0usize..5, 0usize..4), 0..6),
    ) {
        let dir = tempfile::tempdir().unwrap();
        python_repo(dir.path(), &before, &calls_before);
        index(dir.path());
        python_repo(dir.path(), &after, &calls_after);
        // A rewrite of the same size within the file system's timestamp granularity would
        // look unchanged to size + mtime: move every mtime on, so content decides.
        for e in std::fs::read_dir(dir.path().join("pkg")).unwrap() {
            let f = std::fs::File::options().write(true).open(e.unwrap().path()).unwrap();
            let later = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
            f.set_modified(later).unwrap();
        }
        index(dir.path());
        let fresh = tempfile::tempdir().unwrap();
        python_repo(fresh.path(), &after, &calls_after);
        index(fresh.path());
        proptest::prop_assert_eq!(edge_list(dir.path()), edge_list(fresh.path()));
    }
}

/// Nodes as comparable rows (everything but nothing left out: a node's every field).
fn node_list(repo: &std::path::Path) -> Vec<acms_index::NodeRecord> {
    let mut nodes = open(repo).nodes().unwrap();
    nodes.sort_by_key(|n| n.id);
    nodes
}

/// The files of a repository in which `pkg/a.py` is edited: the others call its functions
/// (edges into it), it calls theirs (edges out of it), and `shared` is defined in two files,
/// so whether a call to it resolves depends on `pkg/a.py`'s symbols.
fn calling_repo(root: &std::path::Path, a_py: &str) {
    write_repo(
        root,
        &[
            ("pkg/a.py", a_py.as_bytes()),
            (
                "pkg/b.py",
                b"from .a import helper\n\n\ndef user_b(x):\n    helper(x)\n    shared(x)\n    return fresh_fn(x)\n",
            ),
            (
                "pkg/c.py",
                b"def shared(x):\n    return x\n\n\ndef user_c(x):\n    helper(x)\n    return renamed(x)\n",
            ),
            (
                "pkg/d.py",
                b"class Base:\n    pass\n\n\nclass Child(Target):\n    def run(self):\n        return fresh_fn(self)\n",
            ),
        ],
    );
}

const A_BEFORE: &str = "def helper(x):\n    return user_c(x)\n\n\ndef shared(x):\n    return user_b(x)\n\n\nclass Target(Base):\n    def go(self):\n        return helper(self)\n";

/// Edits that add, remove and rename functions other files call: after each, the one-file
/// incremental run (edges resolved only for what the edit affects) must leave exactly the
/// nodes and edges of an index built from scratch on the same tree. Each edit changes edges
/// of files that were not edited (b, c, d), so a run that resolved only the edited file's own
/// references would fail here.
#[test]
fn one_file_edits_leave_the_index_a_fresh_run_builds() {
    let edits = [
        // Adds `fresh_fn`, called from b and d (edges into a), calling b (edge out of a).
        (
            "adds a called function",
            format!("{A_BEFORE}\n\ndef fresh_fn(x):\n    return user_b(x)\n"),
        ),
        // Removes `helper`: the calls from b, c and from a's own method lose their target.
        (
            "removes a called function",
            "def shared(x):\n    return user_b(x)\n\n\nclass Target(Base):\n    def go(self):\n        return helper(self)\n\n\ndef fresh_fn(x):\n    return user_b(x)\n".to_string(),
        ),
        // Renames `shared` to `renamed`: b's call to `shared` now has one candidate (c's),
        // c's call to `renamed` gains one, and the class `Target` d inherits from is renamed
        // away (d's inherit edge goes).
        (
            "renames functions",
            "def renamed(x):\n    return user_b(x)\n\n\nclass Target2(Base):\n    def go(self):\n        return helper(self)\n\n\ndef fresh_fn(x):\n    return user_b(x)\n".to_string(),
        ),
        // And back: every edge the edits removed comes back.
        ("restores the original", A_BEFORE.to_string()),
    ];
    let dir = tempfile::tempdir().unwrap();
    calling_repo(dir.path(), A_BEFORE);
    index(dir.path());
    let mut edges_before = edge_list(dir.path());
    for (what, a_py) in edits {
        std::fs::write(dir.path().join("pkg/a.py"), &a_py).unwrap();
        let f = std::fs::File::options()
            .write(true)
            .open(dir.path().join("pkg/a.py"))
            .unwrap();
        f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(60))
            .unwrap();
        let report = index(dir.path());
        assert_eq!(report.parsed, 1, "{what}");
        assert!(
            report.edges_incremental,
            "{what}: resolved every edge again"
        );

        let fresh = tempfile::tempdir().unwrap();
        calling_repo(fresh.path(), &a_py);
        let fresh_report = index(fresh.path());
        assert!(!fresh_report.edges_incremental);
        let edges = edge_list(dir.path());
        assert_eq!(edges, edge_list(fresh.path()), "{what}");
        assert_eq!(node_list(dir.path()), node_list(fresh.path()), "{what}");
        assert_eq!(
            (report.nodes, report.edges),
            (fresh_report.nodes, fresh_report.edges),
            "{what}"
        );
        // Edges of the files that were not edited changed too.
        let moved = |v: &[(u64, u64, &'static str, u32)]| -> Vec<(u64, u64, &'static str, u32)> {
            let store = open(dir.path());
            let a_nodes: std::collections::HashSet<u64> = store
                .nodes()
                .unwrap()
                .iter()
                .filter(|n| n.path == "pkg/a.py")
                .map(|n| n.id.0)
                .collect();
            v.iter()
                .filter(|e| !a_nodes.contains(&e.0))
                .copied()
                .collect()
        };
        assert_ne!(
            moved(&edges),
            moved(&edges_before),
            "{what}: no edge of b, c or d changed"
        );
        edges_before = edges;
    }
}

#[test]
fn an_index_of_older_analyzers_is_parsed_again() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    write_repo(repo, &[("pkg/app.py", APP_PY.as_bytes())]);
    index(repo);
    assert_eq!(
        open(repo).meta().unwrap().analyzers,
        acms_index::ANALYZERS_VERSION
    );
    assert_eq!(index(repo).parsed, 0);

    // What an acms with older analyzers left: nothing changed in the repository since.
    alter_store(repo, "UPDATE meta SET value = '1' WHERE key = 'analyzers'");
    let again = index(repo);
    assert_eq!((again.parsed, again.unchanged), (1, 0), "{again:#?}");
    assert_eq!(
        open(repo).meta().unwrap().analyzers,
        acms_index::ANALYZERS_VERSION
    );
}

/// A file left out for its content is not read again while its stat stays (a monorepo's
/// data files cost every refresh a read), and the run says the same about it: read again
/// once its stat moves, once the analyzers change, and once on a store written before
/// verdicts were kept.
#[test]
fn a_file_left_out_for_its_content_is_not_read_again_until_its_stat_moves() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    let binary = [b'\0'; 40];
    let text = b"def blob():\n    return 'forty bytes...'\n";
    assert_eq!(text.len(), binary.len());
    write_repo(
        repo,
        &[("pkg/app.py", APP_PY.as_bytes()), ("pkg/blob.py", &binary)],
    );
    let first = index(repo);
    assert_eq!(
        warnings_for(&first, "pkg/blob.py"),
        ["skipped: binary file"]
    );
    let blob = repo.join("pkg/blob.py");
    // Text of the same size behind the same modification time: only a read would tell.
    let swap_keeping_stat = || {
        let mtime = std::fs::metadata(&blob).unwrap().modified().unwrap();
        std::fs::write(&blob, text).unwrap();
        let f = std::fs::File::options().write(true).open(&blob).unwrap();
        f.set_modified(mtime).unwrap();
    };
    swap_keeping_stat();
    let second = index(repo);
    assert_eq!(
        warnings_for(&second, "pkg/blob.py"),
        ["skipped: binary file"]
    );
    assert_eq!(second.parsed, 0);

    // A store written before verdicts were kept has no column for them: it gets one, and
    // the file is read once.
    alter_store(repo, "ALTER TABLE skipped DROP COLUMN verdict");
    let third = index(repo);
    assert!(warnings_for(&third, "pkg/blob.py").is_empty(), "{third:#?}");
    assert_eq!(third.parsed, 1);
    assert!(open(repo).nodes().unwrap().iter().any(|n| n.name == "blob"));

    // Binary again (a later mtime: the stat is compared in whole seconds), then the swap.
    std::fs::write(&blob, binary).unwrap();
    set_mtime(&blob, 10);
    let fourth = index(repo);
    assert_eq!(
        warnings_for(&fourth, "pkg/blob.py"),
        ["skipped: binary file"]
    );
    swap_keeping_stat();
    assert_eq!(index(repo).parsed, 0);
    // Older analyzers: every file is read again.
    alter_store(repo, "UPDATE meta SET value = '1' WHERE key = 'analyzers'");
    let fifth = index(repo);
    assert!(warnings_for(&fifth, "pkg/blob.py").is_empty(), "{fifth:#?}");
    assert_eq!(fifth.parsed, 2);

    // Binary, then text of the same size later: the moved stat is read.
    std::fs::write(&blob, binary).unwrap();
    set_mtime(&blob, 20);
    index(repo);
    std::fs::write(&blob, text).unwrap();
    set_mtime(&blob, 30);
    let sixth = index(repo);
    assert!(warnings_for(&sixth, "pkg/blob.py").is_empty(), "{sixth:#?}");
    assert_eq!(sixth.parsed, 1);
}

/// Runs git in `repo` with fixed identities and commit dates.
fn git(repo: &std::path::Path, date: &str, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .env("GIT_AUTHOR_NAME", "a")
        .env("GIT_AUTHOR_EMAIL", "a@example.com")
        .env("GIT_COMMITTER_NAME", "a")
        .env("GIT_COMMITTER_EMAIL", "a@example.com")
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date)
        .output()
        .unwrap()
        .status
        .success();
    assert!(ok, "git {args:?}");
}

/// A file's recency is its last commit's time, and follows a new commit although the times
/// are kept between runs.
#[test]
fn commit_times_follow_head() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    write_repo(repo, &[("pkg/app.py", APP_PY.as_bytes())]);
    git(repo, "", &["init", "-q"]);
    git(repo, "2020-01-01T00:00:00Z", &["add", "pkg/app.py"]);
    git(repo, "2020-01-01T00:00:00Z", &["commit", "-q", "-m", "one"]);
    let modified = |repo: &std::path::Path| {
        let files = open(repo).files().unwrap();
        files
            .iter()
            .find(|f| f.path == "pkg/app.py")
            .unwrap()
            .modified
    };
    index(repo);
    assert_eq!(modified(repo), 1_577_836_800);

    // A new commit (HEAD moves), the file unchanged on disk since: the run sees the new time.
    write_repo(
        repo,
        &[("pkg/app.py", format!("{APP_PY}\n# two\n").as_bytes())],
    );
    index(repo);
    git(
        repo,
        "2021-01-01T00:00:00Z",
        &["commit", "-q", "-am", "two"],
    );
    index(repo);
    assert_eq!(modified(repo), 1_609_459_200);
}

/// Sets `path`'s modification time `secs` seconds from now.
fn set_mtime(path: &std::path::Path, secs: u64) {
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(secs))
        .unwrap();
}

/// Ids of the nodes of the files `keep` says yes to.
fn ids_where(repo: &std::path::Path, keep: impl Fn(&str) -> bool) -> Vec<acms_core::NodeId> {
    let mut ids: Vec<_> = node_list(repo)
        .into_iter()
        .filter(|n| keep(&n.path))
        .map(|n| n.id)
        .collect();
    ids.sort();
    ids
}

/// The text of every file under `pkg/`, by path.
fn pkg_files(repo: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(repo.join("pkg"))
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            (format!("pkg/{name}"), std::fs::read(e.path()).unwrap())
        })
        .collect()
}

/// Past a few dozen changed files a run writes each file as it is analyzed instead of holding
/// them all (a monorepo's cold index held 1.8 GB), and resolves every edge from the store it
/// is writing: a cold run and a run that changes, adds and removes many files both end with
/// exactly the index a fresh run builds, and report the nodes they replaced.
#[test]
fn many_changed_files_are_written_as_they_come() {
    // Calls only into files 40..44, whose functions stay: a file's text changes only with its
    // own definitions.
    let calls: Vec<(usize, usize)> = (40..44).map(|i| (i, 0)).collect();
    let defs_before: Vec<usize> = (0..48).map(|i| 1 + i % 3).collect();
    // Files 0..40 change, 44..48 are emptied (no longer indexed) and 48..52 are new.
    let mut defs_after: Vec<usize> = (0..52)
        .map(|i| if i < 40 { 1 + (i + 1) % 3 } else { 1 + i % 3 })
        .collect();
    defs_after[44..48].fill(0);

    let dir = tempfile::tempdir().unwrap();
    python_repo(dir.path(), &defs_before, &calls);
    let cold = index(dir.path());
    assert_eq!(cold.parsed, 48);
    assert!(!cold.edges_incremental);
    let mut upserted = cold.changes.upserted.clone();
    upserted.sort();
    assert_eq!(upserted, ids_where(dir.path(), |_| true));
    assert!(cold.changes.removed.is_empty());
    let fresh_before = tempfile::tempdir().unwrap();
    python_repo(fresh_before.path(), &defs_before, &calls);
    let fresh_cold = index(fresh_before.path());
    assert_eq!(edge_list(dir.path()), edge_list(fresh_before.path()));
    assert_eq!(
        (cold.nodes, cold.edges),
        (fresh_cold.nodes, fresh_cold.edges)
    );

    let old_files = pkg_files(dir.path());
    python_repo(dir.path(), &defs_after, &calls);
    let new_files = pkg_files(dir.path());
    let changed = |p: &str| old_files.get(p) != new_files.get(p);
    let replaced = ids_where(dir.path(), changed);
    for e in std::fs::read_dir(dir.path().join("pkg")).unwrap() {
        let path = e.unwrap().path();
        let f = std::fs::File::options().write(true).open(&path).unwrap();
        f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(60))
            .unwrap();
    }
    let report = index(dir.path());
    assert_eq!(
        (report.parsed, report.removed),
        (44, 4),
        "more than the 32 a run holds"
    );
    assert!(!report.edges_incremental);
    let fresh = tempfile::tempdir().unwrap();
    python_repo(fresh.path(), &defs_after, &calls);
    let fresh_report = index(fresh.path());
    assert_eq!(edge_list(dir.path()), edge_list(fresh.path()));
    assert_eq!(node_list(dir.path()), node_list(fresh.path()));
    assert_eq!(
        (report.nodes, report.edges),
        (fresh_report.nodes, fresh_report.edges)
    );
    let mut removed = report.changes.removed.clone();
    removed.sort();
    assert_eq!(removed, replaced, "the nodes of changed and removed files");
    let mut upserted = report.changes.upserted.clone();
    upserted.sort();
    assert_eq!(upserted, ids_where(dir.path(), changed));
}

/// A store keeps the texts it unpacked lately, by path and content hash: a store opened
/// before a file changed reads the new text after the run that indexed it.
#[test]
fn a_store_open_across_a_run_reads_the_new_text() {
    let dir = tempfile::tempdir().unwrap();
    write_repo(dir.path(), &[("a.py", b"def f():\n    return 1\n")]);
    index(dir.path());
    let store = open(dir.path());
    let node = |store: &acms_index::Store| {
        store
            .nodes()
            .unwrap()
            .into_iter()
            .find(|n| n.name == "f")
            .unwrap()
    };
    let f = node(&store);
    assert_eq!(
        store.text(f.id, Depth::Full).unwrap(),
        "def f():\n    return 1"
    );
    write_repo(dir.path(), &[("a.py", b"def f():\n    return 22\n")]);
    assert_eq!(index(dir.path()).parsed, 1);
    let f = node(&store);
    assert_eq!(
        store.text(f.id, Depth::Full).unwrap(),
        "def f():\n    return 22"
    );
    assert_eq!(
        store.file_content("a.py").unwrap().unwrap(),
        "def f():\n    return 22\n"
    );
}

/// Files that are always there: every directory of [`OPTIONAL_FILES`] but three keeps a file,
/// so most runs add and remove files in directories that stay.
const ANCHOR_FILES: &[(&str, &str)] = &[
    ("py/pkg/keep.py", "def anchor():\n    return 1\n"),
    ("py/pkg/sub/keep.py", "def sub_anchor():\n    return 2\n"),
    ("c/lib/keep.c", "int keep(void) { return 0; }\n"),
    ("go/p/keep.go", "package p\n"),
    ("go/q/keep.go", "package q\n"),
    (
        "j/m1/src/main/java/com/x/Keep.java",
        "package com.x;\n\npublic class Keep {}\n",
    ),
    (
        "j/m1/src/main/java/com/y/Keep3.java",
        "package com.y;\n\npublic class Keep3 {}\n",
    ),
    (
        "j/m2/src/main/java/com/x/Keep2.java",
        "package com.x;\n\npublic class Keep2 {}\n",
    ),
    // Not code of the source set: what the set's package sees once the set has code.
    (
        "j/m3/src/main/java/com/x/notes.py",
        "def bar():\n    return 3\n",
    ),
    ("ts/keep.ts", "export const keep = 1;\n"),
    ("ts/util/keep.ts", "export const keepUtil = 1;\n"),
    ("rs/src/keep.rs", "pub fn keep() -> i32 { 0 }\n"),
    ("rs/src/a/keep.rs", "pub fn keep_a() -> i32 { 0 }\n"),
];

/// Files that come and go: each is found by other files' imports in the way of its language
/// (Python packages and relative imports, C includes and the implementation beside a header,
/// Go package directories, Java packages across source sets, TypeScript's `index` files,
/// Rust's `mod`), and defines or calls names other files define or call.
const OPTIONAL_FILES: &[(&str, &str)] = &[
    (
        "py/pkg/__init__.py",
        "from .a import helper\n\n\ndef init_fn():\n    return helper()\n",
    ),
    (
        "py/pkg/a.py",
        "def helper():\n    return shared()\n\n\ndef shared():\n    return 0\n",
    ),
    // The only file of its directory: the directory comes and goes with it.
    ("py/pkg/a/__init__.py", "def helper():\n    return 2\n"),
    (
        "py/pkg/b.py",
        "from . import a\nfrom .a import helper\nimport pkg.c\n\n\ndef shared():\n    return helper()\n\n\ndef use_b():\n    return c_fn()\n",
    ),
    ("py/pkg/c.py", "def c_fn():\n    return shared()\n"),
    (
        "py/pkg/sub/d.py",
        "from ..a import helper\nfrom ..c import c_fn\nfrom . import keep\n\n\ndef d_fn():\n    return helper() + c_fn() + anchor()\n",
    ),
    (
        "py/pkg/sub/__init__.py",
        "def sub_init():\n    return shared()\n",
    ),
    ("c/lib/x.h", "int xf(void);\n"),
    (
        "c/lib/x.c",
        "#include \"x.h\"\nint xf(void) { return yf(); }\n",
    ),
    ("c/lib/y.h", "int yf(void);\n"),
    (
        "c/lib/y.c",
        "#include \"x.h\"\nint yf(void) { return xf(); }\n",
    ),
    (
        "c/main.c",
        "#include \"lib/x.h\"\n#include \"lib/y.h\"\nint main(void) { return xf() + yf(); }\n",
    ),
    (
        "go/p/a.go",
        "package p\n\nfunc Alpha() int { return Beta() }\n",
    ),
    ("go/p/b.go", "package p\n\nfunc Beta() int { return 1 }\n"),
    (
        "go/q/main.go",
        "package q\n\nimport (\n\t\"example.com/m/go/p\"\n\t\"example.com/m/go/r\"\n)\n\nfunc Main() int { return p.Alpha() + Beta() + r.Rfun() }\n",
    ),
    // The only file of its directory, a package another imports.
    ("go/r/r.go", "package r\n\nfunc Rfun() int { return 1 }\n"),
    // A longer suffix of `go/q/main.go`'s import path: the package it finds moves here.
    (
        "m/go/p/x.go",
        "package p\n\nfunc Gamma() int { return 3 }\n",
    ),
    (
        "j/m1/src/main/java/com/x/Foo.java",
        "package com.x;\n\npublic class Foo {\n  public int foo() { return new Bar().bar(); }\n}\n",
    ),
    (
        "j/m2/src/main/java/com/x/Bar.java",
        "package com.x;\n\npublic class Bar {\n  public int bar() { return 1; }\n}\n",
    ),
    (
        "j/m1/src/main/java/com/y/Baz.java",
        "package com.y;\n\nimport com.x.Foo;\nimport com.x.Bar;\n\npublic class Baz {\n  public int baz() { return new Foo().foo(); }\n}\n",
    ),
    // The first code of its source root: the root comes and goes with it.
    (
        "j/m3/src/main/java/com/x/Qux.java",
        "package com.x;\n\npublic class Qux {\n  public int qux() { return new Bar().bar(); }\n}\n",
    ),
    (
        "ts/util/index.ts",
        "export function utilFn() { return 1; }\n",
    ),
    ("ts/util.ts", "export function utilFn() { return 2; }\n"),
    (
        "ts/app.ts",
        "import { utilFn } from './util';\nimport { keep } from './keep';\nexport function app() { return utilFn() + keep; }\n",
    ),
    (
        "rs/src/lib.rs",
        "mod a;\npub fn lib_fn() -> i32 { a::a_fn() }\n",
    ),
    ("rs/src/a.rs", "pub fn a_fn() -> i32 { 1 }\n"),
    ("rs/src/a/mod.rs", "pub fn a_fn() -> i32 { 2 }\n"),
];

/// Writes the anchors and the optional files `present` says are there, and removes the
/// others.
fn languages_repo(root: &std::path::Path, present: &[bool]) {
    let anchors = ANCHOR_FILES.iter().map(|(p, t)| (*p, t.as_bytes()));
    write_repo(root, &anchors.collect::<Vec<_>>());
    for (&(path, text), &there) in OPTIONAL_FILES.iter().zip(present) {
        let p = root.join(path);
        if there {
            write_repo(root, &[(path, text.as_bytes())]);
        } else if p.exists() {
            std::fs::remove_file(&p).unwrap();
        }
    }
    for dir in ["py/pkg/a", "go/r", "m/go/p", "m/go", "m"] {
        let _ = std::fs::remove_dir(root.join(dir));
    }
}

/// The edges and nodes of an index run over `before` then `after` must be those of a run
/// from scratch over `after`: returns the incremental run's report.
fn comes_and_goes(before: &[bool], after: &[bool]) -> IndexReport {
    let dir = tempfile::tempdir().unwrap();
    languages_repo(dir.path(), before);
    index(dir.path());
    languages_repo(dir.path(), after);
    let report = index(dir.path());
    let fresh = tempfile::tempdir().unwrap();
    languages_repo(fresh.path(), after);
    let fresh_report = index(fresh.path());
    let changed: Vec<&str> = OPTIONAL_FILES
        .iter()
        .zip(before.iter().zip(after))
        .filter(|(_, (b, a))| b != a)
        .map(|(f, _)| f.0)
        .collect();
    assert_eq!(
        edge_list(dir.path()),
        edge_list(fresh.path()),
        "files that came or went: {changed:?}"
    );
    assert_eq!(
        node_list(dir.path()),
        node_list(fresh.path()),
        "{changed:?}"
    );
    assert_eq!(
        (report.nodes, report.edges),
        (fresh_report.nodes, fresh_report.edges),
        "{changed:?}"
    );
    report
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(16))]

    /// Files of every import style come and go, a few at a time or many: the index ends with
    /// exactly the nodes and edges a run from scratch finds.
    #[test]
    fn files_that_come_and_go_leave_the_index_a_fresh_run_builds(
        before in proptest::collection::vec(proptest::bool::ANY, OPTIONAL_FILES.len()),
        flips in proptest::collection::vec(0..OPTIONAL_FILES.len(), 1..4),
    ) {
        let mut after = before.clone();
        for i in flips {
            after[i] = !after[i];
        }
        comes_and_goes(&before, &after);
    }
}

/// Index of the optional file at `path`.
fn optional(path: &str) -> usize {
    OPTIONAL_FILES.iter().position(|f| f.0 == path).unwrap()
}

/// A file that appears or goes is resolved from lookups, imports that now find or miss it or
/// its directory included; one that brings a JVM source root resolves every edge again. Each
/// case alone, against a run from scratch.
#[test]
fn one_file_that_comes_or_goes_is_resolved_incrementally() {
    let all = vec![true; OPTIONAL_FILES.len()];
    for path in [
        "py/pkg/c.py",
        "py/pkg/__init__.py",
        "c/lib/x.c",
        "c/lib/y.h",
        "go/p/b.go",
        "j/m2/src/main/java/com/x/Bar.java",
        "ts/util.ts",
        "rs/src/a.rs",
        "py/pkg/a/__init__.py",
        "go/r/r.go",
        "m/go/p/x.go",
    ] {
        let mut without = all.clone();
        without[optional(path)] = false;
        let added = comes_and_goes(&without, &all);
        assert!(added.edges_incremental, "{path} added: resolved every edge");
        let removed = comes_and_goes(&all, &without);
        assert!(
            removed.edges_incremental,
            "{path} removed: resolved every edge"
        );
    }
    let path = "j/m3/src/main/java/com/x/Qux.java";
    let mut without = all.clone();
    without[optional(path)] = false;
    let added = comes_and_goes(&without, &all);
    assert!(!added.edges_incremental, "{path} brings a source root");
    let removed = comes_and_goes(&all, &without);
    assert!(!removed.edges_incremental, "{path} takes a source root");
}

/// What the analysis of an indexed file warned about (a syntax error, invalid UTF-8) stays
/// true while the file is not read again: every run says it, not only the run that read it.
/// A warning read back from the store prints as one line and moves no cursor.
#[test]
fn warnings_of_indexed_files_are_repeated_until_they_change() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    write_repo(
        repo,
        &[
            ("pkg/app.py", APP_PY.as_bytes()),
            (
                "pkg/broken.py",
                b"def broken(:\n    return 1\n\n\ndef fine():\n    return 2\n",
            ),
            ("pkg/latin.py", b"def caf\xe9():\n    return 1\n"),
        ],
    );
    let first = index(repo);
    let broken = warnings_for(&first, "pkg/broken.py");
    let latin = warnings_for(&first, "pkg/latin.py");
    assert!(!broken.is_empty() && !latin.is_empty(), "{first:#?}");
    let second = index(repo);
    assert_eq!(second.parsed, 0);
    assert_eq!(warnings_for(&second, "pkg/broken.py"), broken);
    assert_eq!(warnings_for(&second, "pkg/latin.py"), latin);

    // Mended: its warning goes, and stays gone; a deleted file's goes with it.
    std::fs::write(repo.join("pkg/broken.py"), b"def broken():\n    return 1\n").unwrap();
    std::fs::remove_file(repo.join("pkg/latin.py")).unwrap();
    let third = index(repo);
    assert!(
        warnings_for(&third, "pkg/broken.py").is_empty(),
        "{third:#?}"
    );
    assert!(
        warnings_for(&third, "pkg/latin.py").is_empty(),
        "{third:#?}"
    );
    assert!(index(repo).warnings.is_empty());

    // A store that says more than the analysis did: its text is escaped.
    alter_store(
        repo,
        "INSERT INTO file_warnings(path, message) VALUES ('pkg/app.py', 'x' || char(27) || '[2J' || char(10) || 'y')",
    );
    let fourth = index(repo);
    assert_eq!(warnings_for(&fourth, "pkg/app.py"), ["x\\u{1b}[2J\\u{a}y"]);

    // A store from before the warnings were kept: it gets the table, and runs on.
    alter_store(repo, "DROP TABLE file_warnings");
    assert!(index(repo).warnings.is_empty());
    std::fs::write(repo.join("pkg/broken.py"), b"def broken(:\n").unwrap();
    assert!(!warnings_for(&index(repo), "pkg/broken.py").is_empty());
    assert!(!warnings_for(&index(repo), "pkg/broken.py").is_empty());
}

/// A run that deletes most of the index leaves most pages free: it compacts the store, so
/// the file shrinks with what it holds.
#[test]
fn a_run_that_frees_most_pages_compacts_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    let body: String = (0..40)
        .map(|i| {
            format!("def f{i}(x):\n    \"\"\"Returns x plus {i}.\"\"\"\n    return x + {i}\n\n\n")
        })
        .collect();
    let files: Vec<(String, Vec<u8>)> = (0..60)
        .map(|i| (format!("m{i}.py"), body.clone().into_bytes()))
        .collect();
    let refs: Vec<(&str, &[u8])> = files
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_slice()))
        .collect();
    write_repo(repo, &refs);
    index(repo);
    let db = repo.join(".acms/index.sqlite");
    let pages = || -> (i64, i64) {
        let conn = rusqlite::Connection::open(&db).unwrap();
        let count = |p: &str| -> i64 { conn.query_row(p, [], |r| r.get(0)).unwrap() };
        (count("PRAGMA page_count"), count("PRAGMA freelist_count"))
    };
    let (full, _) = pages();

    for i in 1..55 {
        std::fs::remove_file(repo.join(format!("m{i}.py"))).unwrap();
    }
    let report = index(repo);
    assert_eq!(report.removed, 54);
    let (left, free) = pages();
    assert_eq!(free, 0, "compacted");
    assert!(left * 4 < full, "{left} pages of {full}");
    let store = open(repo);
    assert_eq!(store.files().unwrap().len(), 6);
}
