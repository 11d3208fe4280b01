//! VectorIndex: HNSW recall against the exact scan, save/load round trips, damaged files.

use std::fs;
use std::path::Path;
use std::sync::OnceLock;

use acms_vector::{Error, IndexParams, VECTORS_FILE, VectorIndex};

use crate::random_vectors;

fn build(n: usize, dim: usize, params: IndexParams) -> (VectorIndex, Vec<Vec<f32>>) {
    let mut idx = VectorIndex::new("test-embedder", dim, params).unwrap();
    for (i, v) in random_vectors(n, dim, 7).iter().enumerate() {
        idx.upsert(1000 + i as u64, v).unwrap();
    }
    idx.build_graph();
    (idx, random_vectors(50, dim, 99))
}

fn recall_at_10(idx: &VectorIndex, queries: &[Vec<f32>]) -> f64 {
    let mut found = 0usize;
    for q in queries {
        let exact: Vec<u64> = idx
            .search_exact(q, 10)
            .unwrap()
            .iter()
            .map(|h| h.id)
            .collect();
        let approx = idx.search(q, 10).unwrap();
        found += approx.iter().filter(|h| exact.contains(&h.id)).count();
    }
    found as f64 / (10 * queries.len()) as f64
}

/// Default graph parameters with the threshold lowered so a test-sized index uses the graph.
fn graph_params() -> IndexParams {
    IndexParams {
        exact_scan_below: 500,
        ..IndexParams::default()
    }
}

#[test]
fn hnsw_recall_at_10_on_random_vectors_is_at_least_095() {
    // Random vectors are the worst case for a graph index (no cluster structure); real
    // embeddings do better. 128 dims keep this test quick in a debug build; the benchmark
    // measures 384 dims at 5k/20k/50k vectors (docs/BENCHMARKS.md).
    let (idx, queries) = build(2000, 128, graph_params());
    assert!(idx.uses_graph());
    let recall = recall_at_10(&idx, &queries);
    assert!(recall >= 0.95, "recall@10 = {recall}");
}

#[test]
fn save_and_load_round_trip_with_and_without_graph() {
    for (n, params) in [(40, IndexParams::default()), (800, graph_params())] {
        let dir = tempfile::tempdir().unwrap();
        let (mut idx, queries) = build(n, 32, params);
        idx.remove(1003);
        idx.save(dir.path()).unwrap();
        let loaded = VectorIndex::load(dir.path(), params).unwrap();
        assert_eq!(loaded.embedder_id(), "test-embedder");
        assert_eq!((loaded.dim(), loaded.len()), (32, n - 1));
        assert_eq!(loaded.ids(), idx.ids());
        assert_eq!(loaded.uses_graph(), n >= params.exact_scan_below, "n = {n}");
        assert!(!loaded.contains(1003));
        for q in &queries {
            // Same graph, same vectors: identical answers, not merely similar ones.
            assert_eq!(loaded.search(q, 10).unwrap(), idx.search(q, 10).unwrap());
        }
        // Saving again replaces the graph generation instead of accumulating files.
        let mut loaded = loaded;
        loaded.save(dir.path()).unwrap();
        let files = fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(files, if loaded.uses_graph() { 3 } else { 1 });
    }
}

#[test]
fn a_reloaded_graph_accepts_new_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let (mut idx, _) = build(600, 16, graph_params());
    idx.save(dir.path()).unwrap();
    let mut loaded = VectorIndex::load(dir.path(), graph_params()).unwrap();
    let mut v = vec![0.0f32; 16];
    v[3] = 1.0;
    loaded.upsert(7, &v).unwrap();
    assert!(loaded.uses_graph());
    assert_eq!(loaded.search(&v, 1).unwrap()[0].id, 7);
}

fn load_error(dir: &Path) -> String {
    match VectorIndex::load(dir, graph_params()) {
        Ok(_) => String::from("loaded"),
        Err(e) => e.to_string(),
    }
}

/// A saved index with a graph, built once and copied by every damage case.
fn saved_index() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let (mut idx, _) = build(600, 16, graph_params());
        idx.save(dir.path()).unwrap();
        dir
    })
    .path()
}

/// Damages one file of a saved index and checks the error names that file and says what.
fn check(damage: impl Fn(&Path), file_suffix: &str, expected: &str) {
    let dir = tempfile::tempdir().unwrap();
    for e in fs::read_dir(saved_index()).unwrap() {
        let p = e.unwrap().path();
        fs::copy(&p, dir.path().join(p.file_name().unwrap())).unwrap();
    }
    let target = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(file_suffix))
        .unwrap();
    damage(&target);
    let err = load_error(dir.path());
    assert!(
        err.contains(&*target.to_string_lossy()) && err.contains(expected),
        "{file_suffix}: {err}"
    );
}

fn truncate(p: &Path) {
    let len = fs::metadata(p).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(p)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
}

fn flip_byte(p: &Path) {
    let mut b = fs::read(p).unwrap();
    let i = b.len() / 3;
    b[i] ^= 0x01;
    fs::write(p, b).unwrap();
}

#[test]
fn damaged_files_are_errors_naming_the_file() {
    check(truncate, VECTORS_FILE, "checksum mismatch");
    check(flip_byte, VECTORS_FILE, "checksum mismatch");
    check(
        |p| fs::write(p, b"tiny").unwrap(),
        VECTORS_FILE,
        "truncated",
    );
    check(truncate, ".hnsw.graph", "checksum mismatch");
    check(flip_byte, ".hnsw.graph", "checksum mismatch");
    check(truncate, ".hnsw.data", "checksum mismatch");
    check(flip_byte, ".hnsw.data", "checksum mismatch");
    check(
        |p| fs::remove_file(p).unwrap(),
        ".hnsw.data",
        "No such file",
    );
    let empty = tempfile::tempdir().unwrap();
    assert!(matches!(
        VectorIndex::load(empty.path(), IndexParams::default()),
        Err(Error::Io { .. })
    ));
}

#[test]
fn an_interrupted_save_leaves_the_previous_index_readable() {
    let dir = tempfile::tempdir().unwrap();
    let (mut idx, queries) = build(600, 16, graph_params());
    idx.save(dir.path()).unwrap();
    let before = idx.search(&queries[0], 5).unwrap();
    // What a save killed before its commit point leaves behind: a new graph generation and a
    // half-written temp file of vectors.bin. Neither is referenced by vectors.bin yet.
    fs::write(
        dir.path().join("hnsw-0123456789abcdef.hnsw.graph"),
        b"partial",
    )
    .unwrap();
    fs::write(dir.path().join(format!(".{VECTORS_FILE}.tmp")), b"partial").unwrap();
    let loaded = VectorIndex::load(dir.path(), graph_params()).unwrap();
    assert_eq!(loaded.search(&queries[0], 5).unwrap(), before);
    // The next save cleans the orphan graph up.
    let mut loaded = loaded;
    loaded.save(dir.path()).unwrap();
    assert!(!dir.path().join("hnsw-0123456789abcdef.hnsw.graph").exists());
}
