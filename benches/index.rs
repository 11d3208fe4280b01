//! Index benchmark on a real ≥ 50k-line Python project from PyPI (docutils, fetched by
//! `scripts/fetch-corpus.sh`): cold index (symbols, no embeddings) on all cores and on one,
//! a re-index with nothing changed, and a re-index after one file changed.
//!
//! `cargo bench -p acms-benches --bench index` — prints a markdown table.

use std::time::Instant;

use acms::index::{IndexOptions, index_repo};

fn main() -> anyhow::Result<()> {
    let corpus = std::env::var("ACMS_BENCH_CORPUS").unwrap_or_else(|_| "docutils".into());
    let src = acms_benches::fetch_corpus(&corpus)?;
    let (bytes, lines) = acms_benches::source_size(&src);
    let mb = bytes as f64 / 1e6;
    println!("corpus {corpus}: {lines} lines, {mb:.1} MB of text files\n");
    println!("| run | seconds | files parsed | files/s | MB/s |");
    println!("|---|---|---|---|---|");
    let row = |name: &str, secs: f64, parsed: usize, mbytes: f64| {
        println!(
            "| {name} | {secs:.2} | {parsed} | {:.0} | {:.2} |",
            parsed as f64 / secs,
            mbytes / secs
        );
    };

    // Cold, single thread.
    let repo = acms_benches::copy_tree(&src)?;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
    let t = Instant::now();
    let r = pool.install(|| index_repo(repo.path(), &IndexOptions::new(repo.path())))?;
    row(
        "cold, 1 thread",
        t.elapsed().as_secs_f64(),
        r.parsed,
        r.bytes_parsed as f64 / 1e6,
    );

    // Cold, all cores.
    let repo = acms_benches::copy_tree(&src)?;
    let opts = IndexOptions::new(repo.path());
    let t = Instant::now();
    let cold = index_repo(repo.path(), &opts)?;
    let cold_secs = t.elapsed().as_secs_f64();
    row(
        "cold, all cores",
        cold_secs,
        cold.parsed,
        cold.bytes_parsed as f64 / 1e6,
    );

    // Nothing changed.
    let t = Instant::now();
    let again = index_repo(repo.path(), &opts)?;
    let secs = t.elapsed().as_secs_f64();
    row("re-index, no change", secs, again.parsed, 0.0);
    println!("\nno-change re-index / cold = {:.3}", secs / cold_secs);

    // One file changed.
    let victim = walk_first_py(repo.path()).expect("a .py file");
    let mut text = std::fs::read_to_string(&victim)?;
    text.push_str("\n\ndef bench_added():\n    return 1\n");
    std::fs::write(&victim, text)?;
    let t = Instant::now();
    let one = index_repo(repo.path(), &opts)?;
    let secs = t.elapsed().as_secs_f64();
    println!(
        "one-file re-index: {secs:.2} s, {} parsed, ratio to cold {:.3}",
        one.parsed,
        secs / cold_secs
    );
    println!(
        "\nindex: {} files, {} nodes, {} edges, {} warnings",
        cold.files,
        cold.nodes,
        cold.edges,
        cold.warnings.len()
    );
    Ok(())
}

fn walk_first_py(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&d)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() && !p.ends_with(".acms") {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "py") {
                return Some(p);
            }
        }
    }
    None
}
