//! Embedding and vector-search benchmarks of `acms-vector`.
//!
//! - `embed/hash` and `embed/model`: texts per second of the built-in `HashEmbedder` and of the
//!   default model (fastembed + ONNX Runtime on all cores) on short code-like texts. The model
//!   is the default one in the user cache (installed on demand, `acms model fetch`); without it the model bench
//!   is skipped with a message. Whole-repository embedding throughput per model is the `embed`
//!   bench.
//! - `search/{exact,hnsw}/{5000,20000,50000}`: one top-10 query against 384-dim unit vectors
//!   clustered around 100 random centres (uniform random vectors have no neighbourhood
//!   structure and make any graph index look broken; see docs/BENCHMARKS.md for both), exact
//!   scan versus the graph at default params.
//!
//! Before the criterion timings it prints, per size, the HNSW build time and recall@10 against
//! the exact scan, and (with the model) texts/s per batch size, which is how the defaults
//! (`DEFAULT_BATCH_SIZE`, `IndexParams::default()`) were chosen. `ACMS_VECTOR_SIZES=5000,20000`
//! limits the sizes; under `cargo test --benches` (no `--bench` argument) only 2 000 vectors
//! and 64 texts are used.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use acms_vector::{Embedder, FastEmbedder, HashEmbedder, IndexParams, ModelOptions, VectorIndex};

#[path = "../crates/acms-vector/examples/common/rng.rs"]
mod rng;
use criterion::{BenchmarkId, Criterion, Throughput};
use rng::{DIM, Rng};

const K: usize = 10;

/// Short texts shaped like the compact node renderings that get embedded (signature + doc).
fn code_texts(n: usize) -> Vec<String> {
    let verbs = [
        "parse", "load", "render", "count", "merge", "resolve", "fetch", "encode",
    ];
    let nouns = [
        "config", "token", "request", "graph", "buffer", "symbol", "budget", "path",
    ];
    let types = [
        "String", "Vec<u8>", "Node", "Config", "usize", "Response", "Depth",
    ];
    let mut rng = Rng(42);
    (0..n)
        .map(|i| {
            let (v, o, t) = (rng.pick(&verbs), rng.pick(&nouns), rng.pick(&types));
            format!(
                "pub fn {v}_{o}_{i}(input: &{t}, limit: usize) -> Result<{t}>\n/// {v}s the {o} \
                 from the given {t} and stops after `limit` items; errors name the input."
            )
        })
        .collect()
}

fn model_dir() -> Option<PathBuf> {
    acms::model::install(acms::model::DEFAULT_MODEL, None)
        .inspect_err(|e| eprintln!("no model: {e}"))
        .ok()
}

fn sizes(test_mode: bool) -> Vec<usize> {
    if test_mode {
        return vec![2_000];
    }
    match std::env::var("ACMS_VECTOR_SIZES") {
        Ok(s) => s.split(',').filter_map(|x| x.trim().parse().ok()).collect(),
        Err(_) => vec![5_000, 20_000, 50_000],
    }
}

fn bench_embed(c: &mut Criterion, test_mode: bool) {
    let texts = code_texts(if test_mode { 64 } else { 512 });
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut g = c.benchmark_group("embed");
    g.throughput(Throughput::Elements(refs.len() as u64));
    let hash = HashEmbedder::default();
    g.bench_function("hash", |b| b.iter(|| hash.embed(black_box(&refs)).unwrap()));

    let Some(dir) = model_dir() else {
        eprintln!("embed/model skipped: no model (run `acms model fetch`)");
        return;
    };
    if !test_mode {
        // One pass per batch size, to justify DEFAULT_BATCH_SIZE.
        for batch in [16, 32, 64, 128, 256] {
            let options = ModelOptions {
                batch_size: batch,
                ..ModelOptions::default()
            };
            let Ok(m) = FastEmbedder::with_options(&dir, options) else {
                continue;
            };
            m.embed(&refs[..32]).unwrap(); // warm-up
            let t = Instant::now();
            m.embed(&refs).unwrap();
            let secs = t.elapsed().as_secs_f64();
            eprintln!(
                "model batch {batch:>3}: {:.0} texts/s ({} texts in {secs:.2} s)",
                refs.len() as f64 / secs,
                refs.len()
            );
        }
    }
    match FastEmbedder::new(&dir) {
        Ok(m) => {
            g.sample_size(10);
            g.bench_function("model", |b| b.iter(|| m.embed(black_box(&refs)).unwrap()));
        }
        Err(e) => eprintln!("embed/model skipped: {e}"),
    }
    g.finish();
}

fn bench_search(c: &mut Criterion, test_mode: bool) {
    let mut rng = Rng(7);
    let centres: Vec<Vec<f32>> = (0..100).map(|_| rng.unit_vector()).collect();
    let queries: Vec<Vec<f32>> = (0..100).map(|_| rng.clustered(&centres)).collect();
    let mut g = c.benchmark_group("search");
    for n in sizes(test_mode) {
        let vectors: Vec<Vec<f32>> = (0..n).map(|_| rng.clustered(&centres)).collect();
        // Threshold 0: always build the graph, so both paths can be timed at every size.
        let params = IndexParams {
            exact_scan_below: 0,
            ..IndexParams::default()
        };
        let mut idx = VectorIndex::new("bench", DIM, params).unwrap();
        for (i, v) in vectors.iter().enumerate() {
            idx.upsert(i as u64, v).unwrap();
        }
        let t = Instant::now();
        idx.build_graph();
        let build = t.elapsed();
        let mut found = 0;
        for q in &queries {
            let exact: Vec<u64> = idx
                .search_exact(q, K)
                .unwrap()
                .iter()
                .map(|h| h.id)
                .collect();
            found += idx
                .search(q, K)
                .unwrap()
                .iter()
                .filter(|h| exact.contains(&h.id))
                .count();
        }
        let recall = found as f64 / (K * queries.len()) as f64;
        let dir =
            std::env::temp_dir().join(format!("acms-vector-bench-{n}-{}", std::process::id()));
        let t = Instant::now();
        idx.save(&dir).unwrap();
        let save = t.elapsed();
        let t = Instant::now();
        let reloaded = VectorIndex::load(&dir, params).unwrap();
        let load = t.elapsed();
        assert!(reloaded.uses_graph());
        let _ = std::fs::remove_dir_all(&dir);
        eprintln!(
            "n = {n:>6}: HNSW build {:.2} s (M {}, ef_construction {}), recall@{K} {recall:.3} \
             (ef_search {}), save {:.0} ms, load {:.0} ms",
            build.as_secs_f64(),
            params.max_connections,
            params.ef_construction,
            params.ef_search,
            save.as_secs_f64() * 1e3,
            load.as_secs_f64() * 1e3,
        );
        let mut qi = 0;
        g.bench_with_input(BenchmarkId::new("exact", n), &idx, |b, idx| {
            b.iter(|| {
                qi = (qi + 1) % queries.len();
                idx.search_exact(black_box(&queries[qi]), K).unwrap()
            })
        });
        g.bench_with_input(BenchmarkId::new("hnsw", n), &idx, |b, idx| {
            b.iter(|| {
                qi = (qi + 1) % queries.len();
                idx.search(black_box(&queries[qi]), K).unwrap()
            })
        });
    }
    g.finish();
}

fn main() {
    // Same rule as criterion: `cargo bench` passes `--bench`; without it (`cargo test
    // --benches`) or with `--test` the bench only checks that it runs, on small inputs.
    let args: Vec<String> = std::env::args().collect();
    let test_mode = !args.iter().any(|a| a == "--bench") || args.iter().any(|a| a == "--test");
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    bench_embed(&mut c, test_mode);
    bench_search(&mut c, test_mode);
    c.final_summary();
}
