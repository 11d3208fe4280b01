//! The embedding run: resumable after an interruption, a changed embedder re-embeds and says
//! why, one writer at a time, no silent substitute for a missing model.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use acms_core::ContextConfig;
use acms_index::{IndexOptions, NodeChanges, index_repo};
use acms_retrieve::{
    Query, Retriever, StrategyRegistry, VectorOptions, names as strategy, update_derived,
    update_vectors, vector_generation,
};
use acms_vector::{Embedder, HashEmbedder, VectorIndex, VectorLock};

use crate::hash_config;

/// A repository of `n` small documented Python functions in ten files.
fn repo(n: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for f in 0..10 {
        let body: String = (0..n / 10)
            .map(|k| {
                format!(
                    "def func_{f}_{k}(value):\n    \"\"\"Scale the value by {k} for file {f}.\"\"\"\n    return value * {k}\n\n"
                )
            })
            .collect();
        std::fs::write(dir.path().join(format!("m{f}.py")), body).unwrap();
    }
    dir
}

/// Indexes symbols and keywords only (no vectors yet); returns the run's changes.
fn index(repo: &Path) -> NodeChanges {
    let opts = IndexOptions::new(repo);
    let report = index_repo(repo, &opts).unwrap();
    update_derived(&opts.index_dir, &report.changes, &hash_config(), None).unwrap();
    report.changes
}

/// Wraps the hashing embedder; fails every call once `fail_after` texts were embedded.
struct Flaky {
    inner: HashEmbedder,
    embedded: AtomicUsize,
    fail_after: usize,
}

impl Embedder for Flaky {
    fn id(&self) -> &str {
        self.inner.id()
    }
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn embed(&self, texts: &[&str]) -> acms_vector::Result<Vec<Vec<f32>>> {
        if self.embedded.load(Ordering::SeqCst) + texts.len() > self.fail_after {
            return Err(acms_vector::Error::Embed("interrupted".into()));
        }
        self.embedded.fetch_add(texts.len(), Ordering::SeqCst);
        self.inner.embed(texts)
    }
}

fn every_batch() -> VectorOptions<'static> {
    VectorOptions {
        checkpoint_every: Duration::ZERO,
        ..VectorOptions::default()
    }
}

#[test]
fn an_interrupted_embedding_run_resumes_where_it_stopped() {
    let dir = repo(600);
    let changes = index(dir.path());
    let index_dir = dir.path().join(".acms");
    let config = hash_config();
    let flaky = Flaky {
        inner: HashEmbedder::default(),
        embedded: AtomicUsize::new(0),
        fail_after: 300,
    };
    let err = update_vectors(&index_dir, &changes, &config, &flaky, &every_batch());
    assert!(err.is_err(), "the embedder failed mid-way");
    let saved = flaky.embedded.load(Ordering::SeqCst);
    assert!(saved > 0 && saved < 610, "{saved}");
    // The checkpoint holds what was embedded, and the vectors are not marked complete.
    let partial = VectorIndex::load(&index_dir.join("vectors"), Default::default()).unwrap();
    assert_eq!(partial.len(), saved);
    assert_eq!(
        vector_generation(
            &index_dir,
            &config.strategies.semantic_embedding,
            &store_id(&index_dir)
        ),
        None
    );

    // A query meanwhile uses what exists and says the strategy is incomplete.
    let r = Retriever::open(&index_dir, &config, &StrategyRegistry::new(), None).unwrap();
    let note = r.notes().join("\n");
    assert!(
        note.contains("incomplete") && note.contains(&format!("{saved} of 610")),
        "{note}"
    );
    let e = r.retrieve(
        &Query::new("scale the value"),
        &[strategy::SEMANTIC.into()],
        &Default::default(),
        4000,
    );
    assert!(!e.hits.is_empty(), "partial vectors still answer: {e:?}");

    // The next run embeds only the rest.
    let all = update_vectors(
        &index_dir,
        &NodeChanges::default(),
        &config,
        &HashEmbedder::default(),
        &VectorOptions::default(),
    )
    .unwrap();
    assert!(all.complete && !all.rebuilt, "{all:?}");
    assert_eq!(all.embedded, 610 - saved, "{all:?}");
    assert_eq!(all.vectors, Some(610));
    let r = Retriever::open(&index_dir, &config, &StrategyRegistry::new(), None).unwrap();
    assert!(
        !r.notes().join("\n").contains("incomplete"),
        "{:?}",
        r.notes()
    );
}

/// A run that embeds the index from scratch leaves every vector in `vectors.bin`: the log its
/// last checkpoints appended (here 30 of 1 310 vectors) would be replayed by every load.
#[test]
fn a_first_embedding_run_leaves_no_log_to_replay() {
    let dir = repo(1300);
    let changes = index(dir.path());
    let index_dir = dir.path().join(".acms");
    let config = hash_config();
    let e = HashEmbedder::default();
    let run = update_vectors(&index_dir, &changes, &config, &e, &every_batch()).unwrap();
    assert_eq!(run.vectors, Some(1310));
    let log = index_dir.join("vectors").join(acms_vector::DELTA_FILE);
    assert!(!log.exists(), "{}", log.display());
}

#[test]
fn tests_and_vendored_code_get_vectors_only_when_all_places_are_asked_for() {
    let dir = repo(50);
    std::fs::create_dir_all(dir.path().join("tests")).unwrap();
    std::fs::write(
        dir.path().join("tests/test_scale.py"),
        "def test_scale():\n    assert func_0_1(2) == 2\n\ndef test_zero():\n    assert func_0_0(2) == 0\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("vendor")).unwrap();
    std::fs::write(
        dir.path().join("vendor/lib.py"),
        "def vendored(value):\n    return value\n",
    )
    .unwrap();
    // A Rust unit test inside the source file it tests is a test too.
    std::fs::write(
        dir.path().join("scale.rs"),
        "pub fn scale(x: u32) -> u32 {\n    x * 2\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn scales() {\n        assert_eq!(super::scale(1), 2);\n    }\n}\n",
    )
    .unwrap();
    let changes = index(dir.path());
    let index_dir = dir.path().join(".acms");
    let embed = |changes: &NodeChanges, all_places: bool| {
        let mut config = hash_config();
        config.strategies.semantic_embedding.all_places = all_places;
        let options = VectorOptions::default();
        update_vectors(
            &index_dir,
            changes,
            &config,
            &HashEmbedder::default(),
            &options,
        )
        .unwrap()
    };
    let source = embed(&changes, false);
    // Ten modules and fifty functions, `scale` and its file's module; not the test file's
    // three nodes, vendor's two, nor the unit test `scales`.
    assert!(source.complete, "{source:?}");
    assert_eq!(source.vectors, Some(62), "{source:?}");

    // Asking for every place: the vectors are no longer complete for that choice, and the
    // next run embeds only what was left out.
    let mut config = hash_config();
    config.strategies.semantic_embedding.all_places = true;
    let s = &config.strategies.semantic_embedding;
    assert_eq!(
        vector_generation(&index_dir, s, &store_id(&index_dir)),
        None
    );
    let r = Retriever::open(&index_dir, &config, &StrategyRegistry::new(), None).unwrap();
    assert!(r.notes().join("\n").contains("62 of 68"), "{:?}", r.notes());
    let all = embed(&NodeChanges::default(), true);
    assert!(all.complete && !all.rebuilt, "{all:?}");
    assert_eq!((all.embedded, all.vectors), (6, Some(68)), "{all:?}");

    // And back: the extra vectors are dropped, nothing is embedded.
    let back = embed(&NodeChanges::default(), false);
    assert_eq!((back.embedded, back.vectors), (0, Some(62)), "{back:?}");
}

#[test]
fn a_new_embedder_dimension_re_embeds_everything_and_says_why() {
    let dir = repo(50);
    let changes = index(dir.path());
    let index_dir = dir.path().join(".acms");
    let config = hash_config();
    let first = update_vectors(
        &index_dir,
        &changes,
        &config,
        &HashEmbedder::default(),
        &VectorOptions::default(),
    )
    .unwrap();
    assert!(first.complete && first.note.is_none(), "{first:?}");
    let second = update_vectors(
        &index_dir,
        &NodeChanges::default(),
        &config,
        &HashEmbedder::new(64),
        &VectorOptions::default(),
    )
    .unwrap();
    assert!(second.rebuilt && second.complete, "{second:?}");
    assert_eq!(second.embedded, 60);
    let note = second.note.unwrap();
    assert!(
        note.contains("dimension 384") && note.contains("dimension 64"),
        "{note}"
    );
    let stored = VectorIndex::load(&index_dir.join("vectors"), Default::default()).unwrap();
    assert_eq!((stored.dim(), stored.len()), (64, 60));
}

#[test]
fn only_changed_texts_are_re_embedded() {
    let dir = repo(50);
    let changes = index(dir.path());
    let index_dir = dir.path().join(".acms");
    let config = hash_config();
    let e = HashEmbedder::default();
    update_vectors(&index_dir, &changes, &config, &e, &VectorOptions::default()).unwrap();
    // Edit one function's body in m3.py: its file is re-parsed, but only that function's text
    // (and the module's, whose head it is in) changed.
    let path = dir.path().join("m3.py");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replacen("return value * 0", "return value * 1000", 1),
    )
    .unwrap();
    let opts = IndexOptions::new(dir.path());
    let report = index_repo(dir.path(), &opts).unwrap();
    assert!(report.changes.upserted.len() >= 6);
    let again = update_vectors(
        &index_dir,
        &report.changes,
        &config,
        &e,
        &VectorOptions::default(),
    )
    .unwrap();
    assert!(again.complete && !again.rebuilt, "{again:?}");
    assert!(
        (1..=2).contains(&again.embedded),
        "only the edited function (and its module) are re-embedded: {again:?}"
    );
    // Nothing changed: nothing is embedded and nothing rewritten.
    let report = index_repo(dir.path(), &opts).unwrap();
    let idle = update_vectors(
        &index_dir,
        &report.changes,
        &config,
        &e,
        &VectorOptions::default(),
    )
    .unwrap();
    assert_eq!((idle.embedded, idle.complete), (0, true));
}

#[test]
fn a_second_writer_skips_embedding_and_says_so() {
    let dir = repo(20);
    let changes = index(dir.path());
    let index_dir = dir.path().join(".acms");
    let held = VectorLock::try_acquire(&index_dir).unwrap().expect("free");
    let report = update_vectors(
        &index_dir,
        &changes,
        &hash_config(),
        &HashEmbedder::default(),
        &VectorOptions::default(),
    )
    .unwrap();
    assert!(!report.complete && report.embedded == 0, "{report:?}");
    assert!(
        report.note.unwrap().contains("another acms process"),
        "the skip is explained"
    );
    assert!(VectorLock::try_acquire(&index_dir).unwrap().is_none());
    drop(held);
    let report = update_vectors(
        &index_dir,
        &changes,
        &hash_config(),
        &HashEmbedder::default(),
        &VectorOptions::default(),
    )
    .unwrap();
    assert!(report.complete && report.embedded == 30, "{report:?}");
}

#[test]
fn without_a_model_the_semantic_strategy_is_unavailable_not_hashed() {
    let dir = repo(20);
    let changes = index(dir.path());
    let index_dir = dir.path().join(".acms");
    // Vectors exist (built with the hashing embedder), but the configuration asks for a model
    // in a directory that holds none: no silent substitute.
    update_vectors(
        &index_dir,
        &changes,
        &hash_config(),
        &HashEmbedder::default(),
        &VectorOptions::default(),
    )
    .unwrap();
    let empty = tempfile::tempdir().unwrap();
    let mut config = ContextConfig::default();
    config.strategies.semantic_embedding.model_dir =
        Some(empty.path().join("none").to_string_lossy().into_owned());
    let r = Retriever::open(&index_dir, &config, &StrategyRegistry::new(), None).unwrap();
    let note = r.notes().join("\n");
    assert!(
        note.contains("unavailable")
            && note.contains("no embedding model")
            && note.contains("acms model fetch"),
        "{note}"
    );
    let e = r.retrieve(
        &Query::new("scale the value"),
        &[],
        &Default::default(),
        4000,
    );
    assert!(e.hits.iter().all(|h| h.strategy != strategy::SEMANTIC));
    assert!(e.hits.iter().any(|h| h.strategy == strategy::KEYWORD));
}

#[test]
fn a_process_keeps_its_vectors_across_incremental_runs_and_engine_opens() {
    use std::sync::Arc;

    use acms_retrieve::shared_vectors;
    use acms_vector::IndexParams;

    let dir = repo(60);
    let changes = index(dir.path());
    let index_dir = dir.path().join(".acms");
    let vdir = index_dir.join("vectors");
    let config = hash_config();
    let params = IndexParams::from_config(&config.strategies.semantic_embedding);
    let embedder = HashEmbedder::default();
    update_vectors(
        &index_dir,
        &changes,
        &config,
        &embedder,
        &VectorOptions::default(),
    )
    .unwrap();
    let kept = shared_vectors(&vdir, params).unwrap();
    assert!(Arc::ptr_eq(&kept, &shared_vectors(&vdir, params).unwrap()));

    // One edited file: its vectors are updated in the kept copy, which still matches the disk.
    let path = dir.path().join("m3.py");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        format!(
            "{text}def postage_for_parcel(weight):\n    \"\"\"Postage of a parcel by its weight.\"\"\"\n    return weight * 3\n"
        ),
    )
    .unwrap();
    let opts = IndexOptions::new(dir.path());
    let report = index_repo(dir.path(), &opts).unwrap();
    let derived = update_derived(&index_dir, &report.changes, &config, Some(&embedder)).unwrap();
    assert!(
        derived.vectors_complete && !derived.vectors_rebuilt,
        "{derived:?}"
    );
    let reopened = shared_vectors(&vdir, params).unwrap();
    assert!(Arc::ptr_eq(&kept, &reopened));
    {
        let kept = kept.read().unwrap();
        let fresh = VectorIndex::load(&vdir, params).unwrap();
        assert_eq!(kept.len(), fresh.len());
        for &id in fresh.ids() {
            assert_eq!(kept.get(id), fresh.get(id));
            assert_eq!(kept.tag(id), fresh.tag(id));
        }
    }
    let r = Retriever::open(&index_dir, &config, &StrategyRegistry::new(), None).unwrap();
    let e = crate::run(&r, Query::new("postage of a parcel"), strategy::SEMANTIC);
    let found = crate::names(&r, &e, strategy::SEMANTIC);
    assert!(
        found
            .first()
            .is_some_and(|n| n.ends_with("postage_for_parcel")),
        "{found:?}"
    );

    // Another writer: the kept copy is not handed out any more.
    let mut other = VectorIndex::load(&vdir, params).unwrap();
    let gone = other.ids()[0];
    other.remove(gone);
    other.save(&vdir).unwrap();
    let after = shared_vectors(&vdir, params).unwrap();
    assert!(!Arc::ptr_eq(&kept, &after));
    assert!(!after.read().unwrap().contains(gone));
}

/// The id of the store in `index_dir`, which the vectors' completion marker names.
fn store_id(index_dir: &std::path::Path) -> String {
    acms_index::Store::open(index_dir)
        .unwrap()
        .meta()
        .unwrap()
        .store_id
}
