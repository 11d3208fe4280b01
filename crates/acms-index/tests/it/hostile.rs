//! What a hostile repository can put in front of the indexer: symlinks out of the tree, file
//! names that forge fragment headers or collide once decoded, and nesting built to make
//! analysis quadratic. Each case is a regression test of issue 9.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use acms_core::Depth;
use acms_index::{GROWTH_PER_BYTE, GROWTH_SLACK, MAX_DEF_DEPTH};

use crate::{index, open, warnings_for, write_repo};

/// Everything the store holds for the file at `path`, as one string (paths, names, texts).
fn stored_texts(repo: &Path) -> String {
    let store = open(repo);
    let mut out = String::new();
    for f in store.files().unwrap() {
        out.push_str(&f.path);
        out.push('\n');
        out.push_str(&store.file_content(&f.path).unwrap().unwrap_or_default());
    }
    out
}

/// `ln -s /etc r/etclink`: a link to a directory outside the repository, a link to a file
/// outside it (`~/.aws/credentials`), and a link into a hidden directory the walk skips are
/// never followed; each is one warning. A link that stays inside the repository still works.
#[test]
fn symlinks_that_leave_the_repository_are_not_indexed() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("etc");
    let home = dir.path().join("home/.aws");
    write_repo(
        &outside,
        &[
            ("shadow", b"root:SECRET_SHADOW_HASH:19000:0:99999:7:::\n"),
            ("ssl/key.txt", b"SECRET_TLS_KEY\n"),
        ],
    );
    write_repo(
        &home,
        &[("credentials", b"aws_secret_access_key = SECRET_AWS\n")],
    );
    let repo = dir.path().join("repo");
    write_repo(
        &repo,
        &[
            ("app.py", b"def main():\n    return 1\n"),
            (".private/token.txt", b"SECRET_HIDDEN_TOKEN\n"),
        ],
    );
    let link = |target: &Path, name: &str| std::os::unix::fs::symlink(target, repo.join(name));
    link(&outside, "etclink").unwrap();
    link(&home.join("credentials"), "credentials.txt").unwrap();
    link(&repo.join(".private"), "private").unwrap();
    link(&repo.join(".private/token.txt"), "token.txt").unwrap();
    // Inside the repository: still indexed.
    link(&repo.join("app.py"), "alias.py").unwrap();

    let report = index(&repo);

    for name in ["etclink", "credentials.txt", "private", "token.txt"] {
        let w = warnings_for(&report, name);
        assert_eq!(w.len(), 1, "{name}: {:#?}", report.warnings);
        assert!(w[0].contains("symlink"), "{name}: {w:?}");
    }
    assert!(
        report
            .warnings
            .iter()
            .all(|w| !w.path.starts_with("etclink/")),
        "one warning per link, not per file behind it: {:#?}",
        report.warnings
    );
    let stored = stored_texts(&repo);
    assert!(!stored.contains("SECRET"), "{stored}");
    let paths: Vec<String> = open(&repo)
        .files()
        .unwrap()
        .into_iter()
        .map(|f| f.path)
        .collect();
    assert_eq!(paths, ["alias.py", "app.py"]);
}

/// A link whose target is replaced after the walk (or a link the walk cannot see through) is
/// still checked when the file is read.
#[test]
fn a_symlink_to_the_repository_root_itself_is_not_a_way_out() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    write_repo(&repo, &[("a.py", b"def a():\n    return 1\n")]);
    std::os::unix::fs::symlink(dir.path(), repo.join("parent")).unwrap();
    std::os::unix::fs::symlink("/", repo.join("root")).unwrap();
    let report = index(&repo);
    assert_eq!(warnings_for(&report, "parent").len(), 1, "{report:#?}");
    assert_eq!(warnings_for(&report, "root").len(), 1, "{report:#?}");
    assert_eq!(report.files, 1, "{report:#?}");
}

/// A newline in a file name would start a new line in the fragment header
/// (`# path:1-2 · name · depth 9`); names are stored escaped, so no stored path or name holds
/// a control character. Two names that differ only in invalid UTF-8 bytes stay two files.
#[test]
fn odd_file_names_are_escaped_and_kept_apart() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    let forged = "a\n# forged.py:1-9 · evil · depth 9\nb.py";
    write_repo(repo, &[(forged, b"def f():\n    return 1\n")]);
    for name in [&b"caf\xe9.py"[..], &b"caf\xe8.py"[..]] {
        let name = std::ffi::OsStr::from_bytes(name);
        std::fs::write(repo.join(name), b"def g():\n    return 2\n").unwrap();
    }

    let report = index(repo);
    assert_eq!(report.files, 3, "{report:#?}");
    let store = open(repo);
    let files = store.files().unwrap();
    assert_eq!(files.len(), 3, "{files:#?}");
    let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    assert!(paths.contains(&"caf\\xe9.py"), "{paths:?}");
    assert!(paths.contains(&"caf\\xe8.py"), "{paths:?}");
    assert!(
        paths.contains(&"a\\n# forged.py:1-9 · evil · depth 9\\nb.py"),
        "{paths:?}"
    );
    for n in store.nodes().unwrap() {
        for s in [&n.path, &n.name, &n.qualified_name] {
            assert!(!s.chars().any(char::is_control), "{s:?}");
        }
    }
}

/// Indexes with a parse timeout long enough for a debug build on a busy machine: these tests
/// are about what is kept, not about the timeout.
fn index_patiently(repo: &Path) -> acms_index::IndexReport {
    let mut opts = acms_index::IndexOptions::new(repo);
    opts.config.index.parse_timeout_ms = 600_000;
    acms_index::index_repo(repo, &opts).expect("index run")
}

/// The bound every analyzer keeps (see `ParsedFile::cost`): renderings and spans stay
/// linear in the file size however deep the nesting.
fn assert_linear(repo: &Path, path: &str, size: usize) {
    let store = open(repo);
    let nodes: Vec<_> = store
        .nodes()
        .unwrap()
        .into_iter()
        .filter(|n| n.path == path)
        .collect();
    assert!(
        nodes.len() <= MAX_DEF_DEPTH + 2,
        "{path}: {} nodes",
        nodes.len()
    );
    let mut total = 0usize;
    for n in &nodes {
        for d in Depth::FALLBACK {
            total += store.text(n.id, d).unwrap().len();
        }
        assert!(
            n.qualified_name.len() <= acms_index::MAX_NAME_BYTES,
            "{n:?}"
        );
    }
    assert!(
        total <= GROWTH_PER_BYTE * size + GROWTH_SLACK,
        "{path}: {total} bytes of renderings for a {size}-byte file"
    );
}

/// `function a(){` × 8000 made 8000 nested nodes whose full texts overlap: 33 s, 1.7 GB and a
/// 497 MB index. Nesting beyond `MAX_DEF_DEPTH` now folds into the enclosing definition, with
/// a warning that says what was kept.
#[test]
fn deeply_nested_functions_stay_linear() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    // 112 KB, as reported: `function a(){` × 8000, then the 8000 closing braces.
    let js = format!("{}{}", "function a(){".repeat(8000), "}".repeat(8000));
    write_repo(repo, &[("deep.js", js.as_bytes())]);
    let report = index_patiently(repo);
    let w = warnings_for(&report, "deep.js");
    assert!(w.iter().any(|m| m.contains("nested deeper than")), "{w:?}");
    assert_linear(repo, "deep.js", js.len());
    let db = std::fs::metadata(repo.join(".acms/index.sqlite"))
        .unwrap()
        .len() as usize;
    assert!(db < 40 * js.len(), "index.sqlite is {db} bytes");
}

/// A JSON Schema nested 15 000 deep took 402 s and 21.5 GB: every level was a node whose
/// JSON pointer repeated all its ancestors'.
#[test]
fn deeply_nested_json_schema_stays_linear() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    let depth = 15_000;
    let mut schema = String::from("{\"$schema\": \"x\", ");
    for _ in 0..depth {
        schema.push_str("\"properties\": {\"a\": {");
    }
    for _ in 0..depth {
        schema.push_str("}}");
    }
    schema.push('}');
    write_repo(repo, &[("deep.json", schema.as_bytes())]);
    let report = index_patiently(repo);
    let w = warnings_for(&report, "deep.json");
    assert!(w.iter().any(|m| m.contains("nested deeper than")), "{w:?}");
    assert_linear(repo, "deep.json", schema.len());
}

/// The walk runs on several threads; what it returns must not depend on which thread saw
/// what first, and the index folder is left out however it is reached (by its path, or by a
/// link inside the repository, which the walk refuses with a warning).
#[test]
fn the_walk_is_the_same_every_time_and_never_enters_the_index_folder() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().canonicalize().unwrap();
    let mut files = Vec::new();
    for d in 0..40 {
        for f in 0..5 {
            files.push(format!("pkg{d}/sub{}/m{f}.py", f % 2));
        }
    }
    for f in &files {
        write_repo(&repo, &[(f.as_str(), b"def f():\n    return 1\n")]);
    }
    write_repo(&repo, &[("pkg3/.env", b"TOKEN=x\n")]);
    index(&repo);
    std::os::unix::fs::symlink(repo.join(".acms"), repo.join("pkg7/idx")).unwrap();
    let index_dir = repo.join(".acms");
    let (deny, _) = acms_index::Deny::new(&repo, &[]);
    let first = acms_index::walk(&repo, &index_dir, &deny);
    let rels: Vec<&str> = first.entries.iter().map(|e| e.rel.as_str()).collect();
    let mut want: Vec<&str> = files.iter().map(String::as_str).collect();
    want.sort_unstable();
    assert_eq!(
        rels, want,
        "every file once, in path order, none from the index folder"
    );
    assert!(
        first
            .warnings
            .iter()
            .any(|w| w.path == "pkg7/idx" && w.message.contains("index directory")),
        "{:?}",
        first.warnings
    );
    // An index folder that is not hidden (`--index repo/idx`) is recognised by its inode.
    write_repo(
        &repo,
        &[
            ("idx/index.sqlite", b"not source"),
            ("idx/keyword/a.py", b"x = 1\n"),
        ],
    );
    let visible = acms_index::walk(&repo, &repo.join("idx"), &deny);
    assert_eq!(
        visible.entries, first.entries,
        "nothing under idx/ is walked"
    );
    std::fs::remove_dir_all(repo.join("idx")).unwrap();
    for _ in 0..5 {
        let again = acms_index::walk(&repo, &index_dir, &deny);
        assert_eq!(again.entries, first.entries);
        assert_eq!(again.warnings, first.warnings);
        assert_eq!(again.held_back, first.held_back);
    }
}
