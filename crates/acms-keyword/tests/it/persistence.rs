//! Persistence: reopen, generation round trip, concurrent instances, damaged directories.

use acms_keyword::{Error, KeywordIndex};

use crate::fixture::{docs, ids};

const QUERIES: &[&str] = &[
    "user",
    "render the response template",
    "getUserName",
    "http",
];

#[test]
fn reopen_returns_the_same_results() {
    let tmp = tempfile::tempdir().unwrap();
    let before: Vec<_> = {
        let mut index = KeywordIndex::create_or_open(tmp.path()).unwrap();
        index.apply(&[], &docs()).unwrap();
        index.apply(&[5], &[]).unwrap();
        QUERIES
            .iter()
            .map(|q| index.search(q, 10).unwrap())
            .collect()
    };
    let index = KeywordIndex::create_or_open(tmp.path()).unwrap();
    let after: Vec<_> = QUERIES
        .iter()
        .map(|q| index.search(q, 10).unwrap())
        .collect();
    assert_eq!(before, after);
    assert_eq!(index.num_docs(), 11);
    assert_eq!(index.generation(), 2);
}

#[test]
fn generation_round_trip() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("nested/keyword");
    let mut index = KeywordIndex::create_or_open(&dir).unwrap();
    assert_eq!(index.generation(), 0);
    assert_eq!(index.num_docs(), 0);
    index.apply(&[], &docs()).unwrap();
    assert_eq!(index.generation(), 1);
    index.apply(&[], &[]).unwrap();
    assert_eq!(index.generation(), 2);
    index
        .apply_with_generation(&[3], &[], "store-a", 42)
        .unwrap();
    assert_eq!(index.generation(), 42);
    drop(index);

    let mut index = KeywordIndex::create_or_open(&dir).unwrap();
    assert_eq!(index.generation(), 42);
    assert_eq!(index.store(), "store-a");
    assert_eq!(index.num_docs(), 11);
    index.apply(&[], &[]).unwrap();
    assert_eq!(index.generation(), 43);
    assert_eq!(index.store(), "store-a", "an increment keeps the store id");
}

/// tantivy deletes the files its `.managed.json` lists once they are unused. A list planted in
/// the folder (an index shipped with a repository) must not make it delete anything: the
/// index is refused before tantivy reads the list, and every file stays.
#[test]
fn a_managed_list_naming_files_outside_the_folder_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("idx/keyword");
    KeywordIndex::create_or_open(&dir)
        .unwrap()
        .apply(&[], &docs())
        .unwrap();
    let victim = tmp.path().join("victim.txt");
    std::fs::write(&victim, "precious").unwrap();
    let managed = dir.join(".managed.json");
    let list: Vec<String> =
        serde_json::from_str(&std::fs::read_to_string(&managed).unwrap()).unwrap();
    for planted in [victim.display().to_string(), "../../victim.txt".to_string()] {
        let mut list = list.clone();
        list.push(planted.clone());
        std::fs::write(&managed, serde_json::to_string(&list).unwrap()).unwrap();
        let err = KeywordIndex::create_or_open(&dir).unwrap_err();
        assert!(
            matches!(&err, Error::ForeignFile { name, .. } if *name == planted),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    }
    std::fs::write(&managed, serde_json::to_string(&list).unwrap()).unwrap();
    assert!(
        KeywordIndex::create_or_open(&dir).is_ok(),
        "plain names are fine"
    );
}

#[test]
fn a_second_instance_sees_commits_after_reload() {
    let tmp = tempfile::tempdir().unwrap();
    let mut writer = KeywordIndex::create_or_open(tmp.path()).unwrap();
    let mut reader = KeywordIndex::create_or_open(tmp.path()).unwrap();
    writer.apply(&[], &docs()).unwrap();
    assert_eq!(ids(&reader, "user", 10), Vec::<u64>::new());
    assert_eq!(reader.generation(), 0);
    reader.reload().unwrap();
    assert_eq!(reader.generation(), 1);
    assert_eq!(ids(&reader, "getUserName", 1), [3]);
}

#[test]
fn only_one_writer_at_a_time() {
    let tmp = tempfile::tempdir().unwrap();
    let mut first = KeywordIndex::create_or_open(tmp.path()).unwrap();
    let mut second = KeywordIndex::create_or_open(tmp.path()).unwrap();
    first.apply(&[], &docs()).unwrap();
    let err = second.apply(&[1], &[]).unwrap_err();
    assert!(matches!(err, Error::Locked { .. }), "{err}");
    assert!(err.to_string().contains("another process"), "{err}");
    // Once the first writer is gone the second may write. Its generation continues from the
    // last commit on disk even without a reload, so it never goes backwards.
    drop(first);
    assert_eq!(second.generation(), 0);
    second.apply(&[1], &[]).unwrap();
    assert_eq!(second.generation(), 2);
    assert_eq!(second.num_docs(), 11);
}

fn rewrite_meta(dir: &std::path::Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = dir.join("meta.json");
    let mut meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut meta);
    std::fs::write(&path, serde_json::to_string(&meta).unwrap()).unwrap();
}

#[test]
fn damaged_directories_are_errors_not_panics() {
    // A payload that is not ours.
    let tmp = tempfile::tempdir().unwrap();
    KeywordIndex::create_or_open(tmp.path())
        .unwrap()
        .apply(&[], &docs())
        .unwrap();
    rewrite_meta(tmp.path(), |m| m["payload"] = "nightly build 7".into());
    let err = KeywordIndex::create_or_open(tmp.path()).unwrap_err();
    assert!(matches!(err, Error::BadPayload { .. }), "{err}");
    assert!(err.to_string().contains("re-index"), "{err}");

    // A truncated meta.json.
    let tmp = tempfile::tempdir().unwrap();
    KeywordIndex::create_or_open(tmp.path()).unwrap();
    std::fs::write(tmp.path().join("meta.json"), "{\"segments\": [").unwrap();
    let err = KeywordIndex::create_or_open(tmp.path()).unwrap_err();
    assert!(matches!(err, Error::Tantivy { .. }), "{err}");

    // A different schema (another acms version, or someone else's tantivy index).
    let tmp = tempfile::tempdir().unwrap();
    let mut schema = tantivy::schema::Schema::builder();
    schema.add_text_field("title", tantivy::schema::TEXT);
    tantivy::Index::create_in_dir(tmp.path(), schema.build()).unwrap();
    let err = KeywordIndex::create_or_open(tmp.path()).unwrap_err();
    assert!(matches!(err, Error::SchemaMismatch { .. }), "{err}");

    // A file where the directory should be.
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    assert!(KeywordIndex::create_or_open(&file).is_err());
}

/// Issue 9, item 7: with the `.pos` files deleted the index still opens, searches fail and a
/// commit "succeeds"; `check` finds it so the caller can rebuild.
#[test]
fn check_finds_deleted_segment_files() {
    let tmp = tempfile::tempdir().unwrap();
    let mut index = KeywordIndex::create_or_open(tmp.path()).unwrap();
    index.apply(&[], &docs()).unwrap();
    index.check().expect("an intact index passes");
    drop(index);
    let mut deleted = 0;
    for e in std::fs::read_dir(tmp.path()).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "pos") {
            std::fs::remove_file(p).unwrap();
            deleted += 1;
        }
    }
    assert!(deleted > 0);
    let index = KeywordIndex::create_or_open(tmp.path()).expect("it still opens");
    let err = index.check().unwrap_err();
    assert!(matches!(err, Error::Damaged { .. }), "{err}");
    assert!(err.to_string().contains("acms index"), "{err}");
}

/// Documents added in batches are one commit: the same index as one apply of them all, and
/// a batch that fails leaves the previous commit served, nothing of the earlier batches.
#[test]
fn batches_commit_once_or_not_at_all() {
    let doc = |id: u64, word: &str| {
        let name = format!("{word}{id}");
        let signature = format!("def {name}():");
        crate::fixture::doc(
            id,
            "f.py",
            &format!("m.{name}"),
            "function",
            &signature,
            "",
            word,
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let mut index = KeywordIndex::create_or_open(dir.path()).unwrap();
    let batches = (0..3u64).map(|b| {
        Ok::<_, Error>(
            (0..10)
                .map(|i| doc(b * 10 + i, "alpha"))
                .collect::<Vec<_>>(),
        )
    });
    index.apply_batches(&[], batches, "s", 1).unwrap();
    assert_eq!(index.num_docs(), 30);
    assert_eq!(index.generation(), 1);

    let failing = vec![Ok(vec![doc(100, "beta")]), Err(Error::DuplicateId(7))];
    assert!(index.apply_batches(&[0, 1], failing, "s", 2).is_err());
    let again = KeywordIndex::create_or_open(dir.path()).unwrap();
    assert_eq!((again.num_docs(), again.generation()), (30, 1));
    assert!(again.search("beta100", 5).unwrap().is_empty());

    // An id twice across batches is refused like an id twice in one.
    let twice: Vec<Result<_, Error>> =
        vec![Ok(vec![doc(200, "gamma")]), Ok(vec![doc(200, "gamma")])];
    assert!(index.apply_batches(&[], twice, "s", 2).is_err());
}
