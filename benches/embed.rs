//! Embedding benchmark: what the first `acms index` of a real repository costs with each
//! embedding model, and what a query's embedding costs.
//!
//! `cargo bench -p acms-benches --bench embed [-- MODEL...]` — one row per model (default: every
//! catalog model (`acms model list`) installed in the user cache). Each model runs in
//! its own child process, so the peak resident memory (VmHWM) is that model's alone. The corpus
//! is docutils (`scripts/fetch-corpus.sh`), or `ACMS_BENCH_REPO=/path` for any directory (e.g.
//! sympy); `ACMS_BENCH_MAX_TOKENS` overrides `max-tokens`.
//!
//! `ACMS_BENCH_ALL_PLACES=1` embeds tests, examples, vendored and generated code too (the
//! default leaves them to keyword and graph).
//!
//! Columns: symbols in the index and of them embedded, the symbol pass (walk, parse, store,
//! keyword index: queries work from here on), embedding seconds, embedded symbols per second
//! and indexed symbols per embedding second, query embedding p50/p95 (one query text embedded
//! alone, as `acms query` does), peak RSS of the whole run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use acms::index::IndexOptions;
use acms::{ContextConfig, EmbeddingOptions};

const QUERIES: [&str; 12] = [
    "parse the command line options",
    "read a configuration file",
    "convert a table to html",
    "escape special characters in text",
    "find the title of the document",
    "resolve a relative reference to an absolute url",
    "report an error with the line number",
    "split a paragraph into sentences",
    "encode the output with the requested character set",
    "check whether a node is a list item",
    "write the document to a file",
    "normalize whitespace in a name",
];

fn repo() -> anyhow::Result<PathBuf> {
    Ok(match std::env::var_os("ACMS_BENCH_REPO") {
        Some(p) => PathBuf::from(p),
        None => acms_benches::fetch_corpus("docutils")?,
    })
}

fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// One model, in this process: prints one table row.
fn run_one(model: &str) -> anyhow::Result<()> {
    let src = repo()?;
    let copy = acms_benches::copy_tree(&src)?;
    let mut config = ContextConfig::default();
    config.strategies.semantic_embedding.model = model.to_string();
    if let Some(t) = std::env::var("ACMS_BENCH_MAX_TOKENS")
        .ok()
        .and_then(|t| t.parse().ok())
    {
        config.strategies.semantic_embedding.max_tokens = t;
    }
    config.strategies.semantic_embedding.all_places =
        std::env::var_os("ACMS_BENCH_ALL_PLACES").is_some_and(|v| v == "1");
    let mut opts = IndexOptions::new(copy.path());
    opts.config = config.clone();
    let started = Instant::now();
    let searchable = std::cell::Cell::new(0.0);
    let mark = || searchable.set(started.elapsed().as_secs_f64());
    let embedding = EmbeddingOptions {
        enabled: true,
        on_searchable: Some(&mark),
        ..EmbeddingOptions::default()
    };
    let report = acms::index_repository_with(copy.path(), &opts, &embedding)?;
    if let Some(why) = &report.semantic_unavailable {
        anyhow::bail!("{model}: {why}");
    }
    let d = &report.derived;
    let loaded = acms::vector::load_embedder(&config.strategies.semantic_embedding)?;
    loaded.embedder.embed(&["warm up"])?;
    let mut ms: Vec<f64> = QUERIES
        .iter()
        .cycle()
        .take(60)
        .map(|q| {
            let t = Instant::now();
            loaded.embedder.embed(&[q]).expect("query embeds");
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    let (p50, p95) = acms_benches::p50_p95(&mut ms);
    let (unrelated, related) = calibration(&opts.index_dir, loaded.embedder.as_ref())?;
    println!(
        "| {model} | {} | {} | {} | {} | {:.1} | {:.1} | {:.0} | {:.0} | {p50:.1} / {p95:.1} | {:.0} | {unrelated:.2} / {related:.2} |",
        config.strategies.semantic_embedding.max_tokens,
        if config.strategies.semantic_embedding.all_places {
            "all"
        } else {
            "source"
        },
        report.index.nodes,
        d.embedded,
        searchable.get(),
        d.embed_seconds,
        d.embedded as f64 / d.embed_seconds.max(1e-9),
        report.index.nodes as f64 / d.embed_seconds.max(1e-9),
        peak_rss_mb()
    );
    Ok(())
}

/// The cosine scale of an embedder on this corpus: median cosine between the first sentence of
/// a function's docstring and the compact text of that function with its doc removed
/// (related, like an evaluation task), and of another function (unrelated). These medians are
/// the `cosine_unrelated` / `cosine_related` of the model's manifest.
fn calibration(
    index_dir: &Path,
    embedder: &dyn acms::vector::Embedder,
) -> anyhow::Result<(f32, f32)> {
    use acms::index::{NodeKind, Store};
    let store = Store::open(index_dir)?;
    let nodes: Vec<_> = store
        .nodes()?
        .into_iter()
        .filter(|n| {
            matches!(n.kind, NodeKind::Function | NodeKind::Method)
                && n.doc
                    .as_deref()
                    .is_some_and(|d| d.split_whitespace().count() >= 5)
        })
        .take(300)
        .collect();
    anyhow::ensure!(
        nodes.len() > 10,
        "too few documented functions to calibrate"
    );
    let mut queries = Vec::new();
    let mut texts = Vec::new();
    for n in &nodes {
        let doc = n.doc.clone().unwrap_or_default();
        queries.push(doc.split(". ").next().unwrap_or(&doc).to_string());
        let full = store
            .file_renderings(&n.path)?
            .into_iter()
            .find(|(r, _)| r.id == n.id)
            .map(|(_, t)| t[3].clone())
            .unwrap_or_default();
        let mut bare = n.clone();
        bare.doc = None;
        texts.push(acms::retrieve::embedding_text(
            &bare,
            &full.replace(&doc, ""),
        ));
    }
    let q = embedder.embed(&queries.iter().map(String::as_str).collect::<Vec<_>>())?;
    let t = embedder.embed(&texts.iter().map(String::as_str).collect::<Vec<_>>())?;
    let n = nodes.len();
    let mut related: Vec<f32> = (0..n).map(|i| acms::vector::cosine(&q[i], &t[i])).collect();
    let mut unrelated: Vec<f32> = (0..n)
        .map(|i| acms::vector::cosine(&q[i], &t[(i + n / 2) % n]))
        .collect();
    let median = |v: &mut Vec<f32>| {
        v.sort_by(f32::total_cmp);
        v[v.len() / 2]
    };
    Ok((median(&mut unrelated), median(&mut related)))
}

/// Catalog models (`acms model list`) that are installed.
fn installed_models() -> anyhow::Result<Vec<String>> {
    Ok(acms::model::MODELS
        .iter()
        .map(|m| m.name)
        .filter(|name| {
            acms::vector::cached_model_dir(name)
                .is_some_and(|d| d.join(acms::vector::MANIFEST_FILE).is_file())
        })
        .map(str::to_string)
        .collect())
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if let Ok(model) = std::env::var("ACMS_BENCH_ONE_MODEL") {
        return run_one(&model);
    }
    let models = if args.is_empty() {
        installed_models()?
    } else {
        args
    };
    anyhow::ensure!(
        !models.is_empty(),
        "no model installed: run `acms model fetch [NAME]`"
    );
    let src = repo()?;
    let (bytes, lines) = acms_benches::source_size(&src);
    println!(
        "corpus {}: {lines} lines, {:.1} MB; {} cores\n",
        src.display(),
        bytes as f64 / 1e6,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!(
        "| model | max tokens | places | symbols indexed | symbols embedded | searchable after (s) | embedding (s) | embedded/s | indexed/s | query embedding p50 / p95 (ms) | peak RSS (MB) | cosine unrelated / related (median) |"
    );
    println!("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let me = std::env::current_exe()?;
    for model in models {
        let status = Command::new(&me)
            .env("ACMS_BENCH_ONE_MODEL", &model)
            .status()?;
        anyhow::ensure!(status.success(), "{model} failed");
    }
    Ok(())
}
