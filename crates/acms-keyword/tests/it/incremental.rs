//! Incremental updates: deletes, replacements, re-adds, atomicity of a rejected call.

use std::collections::BTreeMap;

use acms_keyword::{Error, KeywordDoc, KeywordIndex};

use crate::fixture::{doc, docs, ids, index};

#[test]
fn removed_ids_are_never_returned() {
    let (_tmp, mut index) = index();
    index.apply(&[4], &[]).unwrap();
    assert_eq!(index.num_docs(), 11);
    for query in [
        "get_user_name",
        "getUserName",
        "user name",
        "login",
        "users.rs",
    ] {
        assert!(!ids(&index, query, 20).contains(&4), "{query}");
    }
    // Re-adding brings it back.
    let four = docs().into_iter().find(|d| d.id == 4).unwrap();
    index.apply(&[], &[four]).unwrap();
    assert_eq!(ids(&index, "get_user_name", 1), [4]);
    assert_eq!(index.num_docs(), 12);
}

#[test]
fn adding_an_existing_id_replaces_it() {
    let (_tmp, mut index) = index();
    let changed = doc(
        1,
        "web/pages.py",
        "web.pages.render_page",
        "function",
        "def render_page(page)",
        "Render a page.",
        "    return page.html()",
    );
    index.apply(&[], &[changed]).unwrap();
    assert_eq!(index.num_docs(), 12, "replaced, not duplicated");
    assert_eq!(ids(&index, "render_page", 1), [1]);
    assert!(!ids(&index, "templating", 20).contains(&1));
    assert_eq!(ids(&index, "render_template", 1), [9]);
}

#[test]
fn remove_and_add_in_one_call() {
    let (_tmp, mut index) = index();
    let replacement = doc(
        7,
        "src/config/loader.rs",
        "config::loader::load_config",
        "function",
        "pub fn load_config(path: &Path) -> Result<Config>",
        "Loads the configuration.",
        "",
    );
    // 7 is both removed and added: the added version wins. 10 is removed.
    index.apply(&[7, 10, 999], &[replacement]).unwrap();
    assert_eq!(index.num_docs(), 11);
    assert_eq!(ids(&index, "load_config", 1), [7]);
    assert!(!ids(&index, "parse toml", 20).contains(&7));
    assert_eq!(ids(&index, "smtplib", 20), Vec::<u64>::new());
}

#[test]
fn a_rejected_call_changes_nothing() {
    let (_tmp, mut index) = index();
    let generation = index.generation();
    let dup = docs().into_iter().take(1).collect::<Vec<_>>();
    let twice = [dup[0].clone(), dup[0].clone()];
    let err = index.apply(&[2], &twice).unwrap_err();
    assert!(matches!(err, Error::DuplicateId(1)), "{err}");
    assert_eq!(index.generation(), generation);
    assert_eq!(index.num_docs(), 12);
    assert_eq!(ids(&index, "make_response", 1), [2]);
    // The index is still usable afterwards.
    index.apply(&[2], &[]).unwrap();
    assert_eq!(index.num_docs(), 11);
}

/// A one-term tag (letters only, so the tokenizer does not split it).
fn tag(prefix: &str, n: u64) -> String {
    let letter = char::from(b'a' + u8::try_from(n % 26).unwrap_or(0));
    format!("{prefix}{letter}")
}

fn marked(id: u64, version: u32) -> KeywordDoc {
    KeywordDoc {
        id,
        path: format!("src/m{id}.rs"),
        qualified_name: format!("m{id}::item{id}"),
        name: format!("item{id}"),
        kind: "function".into(),
        signature: format!("fn item{id}() -> u32"),
        doc: format!("Version v{version}x of item."),
        body: format!("{} {}", tag("mark", id), tag("ver", u64::from(version))),
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(12))]

    /// After any sequence of applies, the index holds exactly the model's documents, each in
    /// its latest version.
    #[test]
    fn index_matches_a_model(
        steps in proptest::collection::vec(
            (proptest::collection::vec(0u64..12, 0..5), proptest::collection::vec(0u64..12, 0..6)),
            1..5,
        )
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let mut index = KeywordIndex::create_or_open(tmp.path()).unwrap();
        let mut model: BTreeMap<u64, u32> = BTreeMap::new();
        for (step, (remove, add)) in steps.into_iter().enumerate() {
            let version = u32::try_from(step).unwrap();
            let mut add_ids = add;
            add_ids.sort_unstable();
            add_ids.dedup();
            let docs: Vec<KeywordDoc> = add_ids.iter().map(|&id| marked(id, version)).collect();
            index.apply(&remove, &docs).unwrap();
            for id in &remove {
                model.remove(id);
            }
            for &id in &add_ids {
                model.insert(id, version);
            }
            proptest::prop_assert_eq!(index.num_docs(), model.len() as u64);
            proptest::prop_assert_eq!(index.generation(), step as u64 + 1);
        }
        for id in 0u64..12 {
            let found = ids(&index, &tag("mark", id), 5);
            match model.get(&id) {
                Some(&version) => {
                    proptest::prop_assert_eq!(&found, &vec![id]);
                    let query = format!("{} {}", tag("mark", id), tag("ver", u64::from(version)));
                    let current = ids(&index, &query, 5);
                    proptest::prop_assert_eq!(current.first(), Some(&id));
                    let hits = index.search(&query, 1).unwrap();
                    proptest::prop_assert_eq!(&hits[0].matched_terms, &index.query_terms(&query));
                }
                None => proptest::prop_assert!(found.is_empty(), "{} found: {:?}", id, found),
            }
        }
    }
}

/// Deleted and live documents of the committed segments, read from tantivy's `meta.json`.
fn deleted_and_max(dir: &std::path::Path) -> (u64, u64) {
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("meta.json")).unwrap()).unwrap();
    let segments = meta["segments"].as_array().unwrap();
    let max: u64 = segments
        .iter()
        .map(|s| s["max_doc"].as_u64().unwrap())
        .sum();
    let deleted: u64 = segments
        .iter()
        .map(|s| s["deletes"]["num_deleted_docs"].as_u64().unwrap_or(0))
        .sum();
    (deleted, max)
}

#[test]
fn repeated_replacements_do_not_pile_up_deleted_documents() {
    // Many short-lived writers, each replacing the same documents: the pattern of
    // incremental `acms index` runs, whose background merges die with the process.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kw");
    {
        let mut index = KeywordIndex::create_or_open(&dir).unwrap();
        index.apply(&[], &docs()).unwrap();
    }
    for _ in 0..30 {
        let mut index = KeywordIndex::create_or_open(&dir).unwrap();
        index.apply(&[], &docs()[..8]).unwrap();
    }
    let (deleted, max) = deleted_and_max(&dir);
    assert!(
        deleted * 100 <= max * 30,
        "{deleted} deleted of {max} documents after 30 runs"
    );
    let index = KeywordIndex::create_or_open(&dir).unwrap();
    assert_eq!(index.num_docs(), 12);
    assert_eq!(ids(&index, "get_user_name", 1), [4]);
}

/// The segments tantivy's last commit lists: (id, documents, deleted documents).
fn segments(dir: &std::path::Path) -> Vec<(String, u64, u64)> {
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("meta.json")).unwrap()).unwrap();
    let segments = meta["segments"].as_array().unwrap();
    segments
        .iter()
        .map(|s| {
            let deletes = s["deletes"]["num_deleted_docs"].as_u64().unwrap_or(0);
            let id = s["segment_id"].as_str().unwrap().to_string();
            (id, s["max_doc"].as_u64().unwrap(), deletes)
        })
        .collect()
}

/// One replaced document per apply, as an edit makes: the segments stay few, and the large
/// segments that hold the documents are not rewritten for their count alone (a whole-index
/// merge every few edits), only once deletes make up a large share of them.
#[test]
fn edits_merge_their_small_segments_and_leave_the_large_one() {
    let base = docs();
    let many: Vec<KeywordDoc> = (0..400u64)
        .map(|i| {
            let mut d = base[(i % base.len() as u64) as usize].clone();
            d.id = 1000 + i;
            d
        })
        .collect();
    let (tmp, mut index) = crate::fixture::index_of(&many);
    let dir = tmp.path().join("kw");
    let large: Vec<String> = segments(&dir).into_iter().map(|s| s.0).collect();
    let mut large_kept = true;
    for i in 0..60u64 {
        let mut d = many[(i % 400) as usize].clone();
        d.signature = format!("{} // editmark{i}", d.signature);
        index.apply(&[d.id], &[d]).unwrap();
        let now = segments(&dir);
        assert!(now.len() <= 9, "edit {i}: {} segments", now.len());
        large_kept &= large.iter().all(|l| now.iter().any(|s| &s.0 == l));
    }
    assert!(
        large_kept,
        "a large segment was merged on the segment count alone"
    );
    assert_eq!(index.num_docs(), 400);
    assert_eq!(ids(&index, "editmark59", 1), [1059]);
    // Deletes past the share merge everything into one segment.
    let replaced: Vec<KeywordDoc> = many.iter().take(200).cloned().collect();
    let gone: Vec<u64> = replaced.iter().map(|d| d.id).collect();
    index.apply(&gone, &replaced).unwrap();
    assert_eq!(segments(&dir).len(), 1);
    assert_eq!(index.num_docs(), 400);
}
