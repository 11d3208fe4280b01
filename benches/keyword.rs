//! Keyword index benchmark: indexing throughput and query latency of `acms-keyword` on real
//! Rust code.
//!
//! Corpus: the functions of the crates in the local cargo registry (`$CARGO_HOME/registry/src`,
//! which holds this workspace's own dependencies after a build; generated FFI binding crates such
//! as `windows-*` and `libc` are skipped), one document per `fn`, with
//! its `///` doc comment, signature line, module path and up to 60 lines of body. Files are
//! read in sorted order and every k-th function is kept so the sample spans all crates. If the
//! registry has too few functions, synthetic functions fill the rest.
//!
//! `cargo bench -p acms-benches --bench keyword` prints build docs/s, incremental apply time,
//! p50/p95 query latency over a fixed query mix, then runs criterion on the same operations.
//! `ACMS_KEYWORD_BENCH_DOCS` sets the corpus size (default 50 000). Under `cargo test` (no
//! `--bench` argument) a 2 000-document corpus is used so the target stays quick to check.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use acms_keyword::{KeywordDoc, KeywordIndex};
use criterion::Criterion;

const BODY_LINES: usize = 60;

/// Natural-language and identifier queries of the kind an agent's task text contains.
const QUERIES: &[&str] = &[
    "parse the configuration file",
    "serialize a json value to a string",
    "http request timeout",
    "read file to string",
    "insert an entry into the hash map",
    "tokenizer lowercase filter",
    "segment merge policy",
    "getUserName",
    "HTTPServer2",
    "make_response",
    "utf8 decode error",
    "spawn a thread pool",
    "compress block lz4",
    "binary search in a sorted slice",
    "peek at the next item of the iterator",
    "impl Display for the error type",
    "fn from_str(s: &str) -> Result<Self, Self::Err>",
    "error: unexpected end of file while parsing",
    "open a memory mapped directory",
    "atomic compare and exchange",
    "where is the retry with exponential backoff?",
    "convert bytes to hex",
    "BM25 score of a term",
    "walk the directory recursively ignoring hidden files",
];

fn registry_roots() -> Vec<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    let Some(src) = home.map(|h| h.join("registry").join("src")) else {
        return Vec::new();
    };
    let mut roots: Vec<PathBuf> = std::fs::read_dir(src)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    roots.sort();
    roots
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The function name declared on `line`, if it declares one.
fn fn_name(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    for prefix in [
        "pub(crate) ",
        "pub(super) ",
        "pub ",
        "const ",
        "async ",
        "unsafe ",
        "extern \"C\" ",
    ] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    let rest = rest.strip_prefix("fn ")?;
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// `toml-0.9.12+spec-1.1.0` → `toml`: the name ends before the first `-` followed by a digit.
fn crate_name(dir: &str) -> &str {
    let bytes = dir.as_bytes();
    (1..bytes.len())
        .find(|&i| bytes[i - 1] == b'-' && bytes[i].is_ascii_digit())
        .map_or(dir, |i| &dir[..i - 1])
}

/// Machine-generated FFI bindings: hundreds of thousands of near-identical functions that
/// no one searches by task text, so they would dominate and distort the sample.
fn is_generated_bindings(crate_name: &str) -> bool {
    [
        "windows",
        "winapi",
        "web-sys",
        "js-sys",
        "libc",
        "linux-raw-sys",
    ]
    .iter()
    .any(|p| crate_name.starts_with(p))
}

/// `tantivy-0.27.0/src/query/term_query.rs` → `tantivy::query::term_query`.
fn module_path(relative: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    for (i, component) in relative.components().enumerate() {
        let s = component.as_os_str().to_string_lossy();
        if i == 0 {
            parts.push(crate_name(&s).replace('-', "_"));
        } else if s != "src" {
            parts.push(s.trim_end_matches(".rs").to_string());
        }
    }
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts.join("::")
}

fn docs_of_file(root: &Path, path: &Path, out: &mut Vec<KeywordDoc>) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    let relative = path.strip_prefix(root).unwrap_or(path);
    let module = module_path(relative);
    let lines: Vec<&str> = text.lines().collect();
    let mut doc_lines: Vec<&str> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if let Some(doc) = trimmed.strip_prefix("///") {
            doc_lines.push(doc.trim());
            continue;
        }
        if trimmed.starts_with("#[") {
            continue;
        }
        if let Some(name) = fn_name(line) {
            let end = lines[i + 1..]
                .iter()
                .position(|l| fn_name(l).is_some())
                .map_or(lines.len(), |p| i + 1 + p)
                .min(i + BODY_LINES);
            let signature = trimmed.split('{').next().unwrap_or(trimmed).trim();
            out.push(KeywordDoc {
                id: 0,
                path: relative.to_string_lossy().into_owned(),
                qualified_name: format!("{module}::{name}"),
                name: name.to_string(),
                kind: "function".into(),
                signature: signature.to_string(),
                doc: doc_lines.join("\n"),
                body: lines[i..end].join("\n"),
            });
        }
        doc_lines.clear();
    }
}

/// Synthetic functions for machines without a populated registry.
fn synthetic(n: usize, start: usize) -> Vec<KeywordDoc> {
    const VERBS: &[&str] = &[
        "get", "set", "parse", "load", "render", "build", "send", "read",
    ];
    const NOUNS: &[&str] = &[
        "user", "config", "template", "request", "file", "token", "cache",
    ];
    (start..start + n)
        .map(|i| {
            let verb = VERBS[i % VERBS.len()];
            let noun = NOUNS[(i / VERBS.len()) % NOUNS.len()];
            let name = format!("{verb}_{noun}_{i}");
            KeywordDoc {
                id: 0,
                path: format!("src/{noun}/{verb}.rs"),
                qualified_name: format!("{noun}::{verb}::{name}"),
                signature: format!("pub fn {name}(input: &{noun}) -> Result<{noun}>"),
                doc: format!("Does {verb} on the {noun} and returns the result."),
                body: format!("let x = {noun}.{verb}()?;\nOk(x)"),
                name,
                kind: "function".into(),
            }
        })
        .collect()
}

fn corpus(n: usize) -> Vec<KeywordDoc> {
    let mut all = Vec::new();
    for root in registry_roots() {
        let mut files = Vec::new();
        let mut crates: Vec<PathBuf> = std::fs::read_dir(&root)
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        crates.sort();
        for krate in crates {
            let name = krate.file_name().map(|n| n.to_string_lossy().into_owned());
            if name.is_some_and(|n| !is_generated_bindings(crate_name(&n))) {
                rust_files(&krate, &mut files);
            }
        }
        for file in files {
            docs_of_file(&root, &file, &mut all);
        }
    }
    let found = all.len();
    let stride = (found / n.max(1)).max(1);
    let mut docs: Vec<KeywordDoc> = all.into_iter().step_by(stride).take(n).collect();
    if docs.len() < n {
        let have = docs.len();
        docs.extend(synthetic(n - have, have));
    }
    for (i, d) in docs.iter_mut().enumerate() {
        d.id = i as u64;
    }
    println!(
        "corpus: {} docs ({found} registry functions seen, every {stride}th kept), {:.1} MB of text",
        docs.len(),
        docs.iter()
            .map(|d| d.body.len() + d.doc.len() + d.signature.len())
            .sum::<usize>() as f64
            / 1e6
    );
    docs
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok()?.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

fn long_query() -> String {
    let mut q = String::from("parse configuration ");
    let mut i = 0usize;
    while q.len() < 100_000 {
        q.push_str(&format!("word{i} "));
        i += 1;
    }
    q
}

fn main() -> anyhow::Result<()> {
    let benching = std::env::args().any(|a| a == "--bench");
    let n = if benching {
        std::env::var("ACMS_KEYWORD_BENCH_DOCS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(50_000)
    } else {
        2_000
    };
    let docs = corpus(n);
    let tmp = tempfile::tempdir()?;
    let mut index = KeywordIndex::create_or_open(tmp.path())?;

    let start = Instant::now();
    index.apply(&[], &docs)?;
    let build = start.elapsed();
    println!(
        "build: {} docs in {:.2} s = {:.0} docs/s (one commit); index size {:.1} MB",
        docs.len(),
        build.as_secs_f64(),
        docs.len() as f64 / build.as_secs_f64(),
        dir_size(tmp.path()) as f64 / 1e6
    );

    // Incremental: 100 changed documents (delete + re-add) in one commit.
    let changed: Vec<KeywordDoc> = docs
        .iter()
        .step_by((docs.len() / 100).max(1))
        .take(100)
        .map(|d| KeywordDoc {
            body: format!("{}\n// edited", d.body),
            ..d.clone()
        })
        .collect();
    let start = Instant::now();
    index.apply(&[], &changed)?;
    println!(
        "incremental: 100 changed docs in {:.1} ms",
        start.elapsed().as_secs_f64() * 1e3
    );

    // Query mix: fixed queries plus names of sampled corpus symbols.
    let mut queries: Vec<String> = QUERIES.iter().map(|q| (*q).to_string()).collect();
    queries.extend(
        docs.iter()
            .step_by((docs.len() / 26).max(1))
            .take(26)
            .map(|d| d.name.clone()),
    );
    let reps = if benching { 20 } else { 2 };
    let mut samples = Vec::new();
    let mut per_query: Vec<(Duration, &str)> = Vec::new();
    for q in &queries {
        index.search(q, 20)?; // warm
        let mut mine = Vec::with_capacity(reps);
        for _ in 0..reps {
            let t = Instant::now();
            let hits = index.search(q, 20)?;
            mine.push(t.elapsed());
            std::hint::black_box(hits);
        }
        mine.sort();
        per_query.push((percentile(&mine, 0.5), q.as_str()));
        samples.extend(mine);
    }
    samples.sort();
    per_query.sort_by_key(|&(d, _)| std::cmp::Reverse(d));
    println!(
        "search (limit 20): {} queries x {reps}: p50 {:.2} ms, p95 {:.2} ms, max {:.2} ms",
        queries.len(),
        percentile(&samples, 0.5).as_secs_f64() * 1e3,
        percentile(&samples, 0.95).as_secs_f64() * 1e3,
        samples.last().map_or(0.0, |d| d.as_secs_f64() * 1e3)
    );
    let slowest: Vec<String> = per_query
        .iter()
        .take(5)
        .map(|(d, q)| format!("{q:?} {:.2} ms", d.as_secs_f64() * 1e3))
        .collect();
    println!("  slowest queries (median): {}", slowest.join(", "));
    let long = long_query();
    let mut long_samples: Vec<Duration> = (0..reps.max(3))
        .map(|_| {
            let t = Instant::now();
            let hits = index.search(&long, 20);
            let elapsed = t.elapsed();
            std::hint::black_box(hits.ok());
            elapsed
        })
        .collect();
    long_samples.sort();
    println!(
        "search 100 000-char query: p50 {:.2} ms",
        percentile(&long_samples, 0.5).as_secs_f64() * 1e3
    );
    for q in [
        "parse the configuration file",
        "getUserName",
        "segment merge policy",
    ] {
        let hits = index.search(q, 3)?;
        let shown: Vec<String> = hits
            .iter()
            .map(|h| {
                format!(
                    "{} ({:.2}, {:?})",
                    docs[h.id as usize].qualified_name, h.relevance, h.matched_terms
                )
            })
            .collect();
        println!("  {q:?} -> {}", shown.join("; "));
    }

    let mut c = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .configure_from_args();
    let mut group = c.benchmark_group("keyword");
    let mut next = 0usize;
    group.bench_function("search_mix_limit20", |b| {
        b.iter(|| {
            next = (next + 1) % queries.len();
            index.search(&queries[next], 20).map(|h| h.len()).ok()
        })
    });
    group.bench_function("search_100k_chars", |b| {
        b.iter(|| index.search(&long, 20).map(|h| h.len()).ok())
    });
    group.finish();
    c.final_summary();
    Ok(())
}
