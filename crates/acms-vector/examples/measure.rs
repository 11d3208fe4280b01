//! Quick measurements behind the defaults of acms-vector, without criterion: HNSW build time,
//! recall@10 and query latency against the exact scan at several sizes, and embedding
//! throughput. The criterion version is `benches/vector.rs`.
//!
//! `cargo run --release -p acms-vector --example measure -- [sizes] [M] [ef_construction]
//! [ef_search]`, e.g. `-- 5000,20000 16 100 128`. The model is measured by the `embed` bench.

use std::time::Instant;

use acms_vector::{Embedder, HashEmbedder, IndexParams, VectorIndex};

#[path = "common/rng.rs"]
mod rng;
use rng::{DIM, Rng};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, d: usize| args.get(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    let sizes: Vec<usize> = args
        .first()
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![5_000, 20_000, 50_000]);
    let defaults = IndexParams::default();
    let params = IndexParams {
        exact_scan_below: 0,
        max_connections: arg(1, defaults.max_connections),
        ef_construction: arg(2, defaults.ef_construction),
        ef_search: arg(3, defaults.ef_search),
    };

    let texts: Vec<String> = (0..512)
        .map(|i| {
            format!(
                "pub fn parse_config_{i}(input: &str, limit: usize) -> Result<Config>\n/// Parses \
                 the configuration from the given text and stops after `limit` items."
            )
        })
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let hash = HashEmbedder::default();
    let t = Instant::now();
    hash.embed(&refs).unwrap();
    println!(
        "hash embedder: {:.0} texts/s",
        refs.len() as f64 / t.elapsed().as_secs_f64()
    );
    // The model's throughput is measured by `cargo bench -p acms-benches --bench embed`.

    let mut rng = Rng(7);
    let centres: Vec<Vec<f32>> = if std::env::var_os("ACMS_CLUSTERED").is_some() {
        (0..100).map(|_| rng.unit_vector()).collect()
    } else {
        Vec::new()
    };
    let queries: Vec<Vec<f32>> = (0..200).map(|_| rng.clustered(&centres)).collect();
    for n in sizes {
        let mut idx = VectorIndex::new("measure", DIM, params).unwrap();
        for i in 0..n {
            idx.upsert(i as u64, &rng.clustered(&centres)).unwrap();
        }
        let t = Instant::now();
        idx.build_graph();
        let build = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let exact: Vec<Vec<u64>> = queries
            .iter()
            .map(|q| {
                idx.search_exact(q, 10)
                    .unwrap()
                    .iter()
                    .map(|h| h.id)
                    .collect()
            })
            .collect();
        let exact_ms = t.elapsed().as_secs_f64() * 1e3 / queries.len() as f64;
        let t = Instant::now();
        let approx: Vec<Vec<u64>> = queries
            .iter()
            .map(|q| idx.search(q, 10).unwrap().iter().map(|h| h.id).collect())
            .collect();
        let hnsw_ms = t.elapsed().as_secs_f64() * 1e3 / queries.len() as f64;
        let found: usize = exact
            .iter()
            .zip(&approx)
            .map(|(e, a)| a.iter().filter(|id| e.contains(id)).count())
            .sum();
        let dir = std::env::temp_dir().join(format!("acms-measure-{n}-{}", std::process::id()));
        let t = Instant::now();
        idx.save(&dir).unwrap();
        let save = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let loaded = VectorIndex::load(&dir, params).unwrap();
        let load = t.elapsed().as_secs_f64() * 1e3;
        assert!(loaded.uses_graph());
        let _ = std::fs::remove_dir_all(&dir);
        println!(
            "n {n:>6} M {} efc {} efs {}: build {build:.2} s, recall@10 {:.3}, exact {exact_ms:.2} \
             ms/query, hnsw {hnsw_ms:.3} ms/query, save {save:.0} ms, load {load:.0} ms",
            params.max_connections,
            params.ef_construction,
            params.ef_search,
            found as f64 / (10 * queries.len()) as f64
        );
    }
}
