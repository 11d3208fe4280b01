//! Re-indexing parses only what changed, keeps ids stable and forgets deleted files.

use acms_core::Depth;
use acms_index::EdgeKind;

use crate::{APP_PY, HELPERS_PY, index, open, write_repo};

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
