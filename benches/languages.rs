//! Symbol-pass speed per language on real repositories: for every directory given, each file
//! is analysed (tree-sitter parse, query or hooks, four renderings) on one thread, and the
//! whole directory is indexed cold (the symbol pass: walk, analysis, exact token counts,
//! edges, one store transaction; no vectors).
//!
//! `cargo bench -p acms-benches --bench languages -- DIR...` — checkouts of the repositories
//! `scripts/mine-languages.sh` names work (`git --git-dir MIRROR worktree add DIR HEAD`).
//! Prints a markdown table: per language, files, MB, analysis MB/s, symbols; then per
//! directory, the cold index MB/s.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use acms::index::{IndexOptions, Language, ParseLimits, analyzer_for, detect_language, index_repo};

#[derive(Default)]
struct Row {
    files: usize,
    bytes: usize,
    seconds: f64,
    symbols: usize,
}

fn files_of(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        match e.file_type() {
            Ok(t) if t.is_dir() => files_of(&p, out),
            Ok(t) if t.is_file() => out.push(p),
            _ => {}
        }
    }
}

fn main() -> anyhow::Result<()> {
    let dirs: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    anyhow::ensure!(!dirs.is_empty(), "usage: languages DIR...");
    let limits = ParseLimits::default();
    let mut rows: BTreeMap<&'static str, Row> = BTreeMap::new();
    let mut index_rows = Vec::new();
    for dir in &dirs {
        let mut files = Vec::new();
        files_of(Path::new(dir), &mut files);
        files.sort();
        for f in files {
            let Ok(bytes) = std::fs::read(&f) else {
                continue;
            };
            if bytes.len() > 1 << 20 {
                continue;
            }
            let text = String::from_utf8_lossy(&bytes);
            let rel = f
                .strip_prefix(dir)
                .unwrap_or(&f)
                .to_string_lossy()
                .into_owned();
            let Some(lang) = detect_language(&rel, &text) else {
                continue;
            };
            if matches!(
                lang,
                Language::Text | Language::Markdown | Language::JsonSchema
            ) {
                continue;
            }
            let t = Instant::now();
            let parsed = analyzer_for(lang).analyze(&rel, &text, &limits);
            let secs = t.elapsed().as_secs_f64();
            let row = rows.entry(lang.name()).or_default();
            row.files += 1;
            row.bytes += text.len();
            row.seconds += secs;
            row.symbols += parsed.nodes.len();
        }
        // The index goes to a scratch folder: the checkout stays as fetched.
        let scratch = tempfile::tempdir()?;
        let mut opts = IndexOptions::new(Path::new(dir));
        opts.index_dir = scratch.path().join("index");
        let t = Instant::now();
        let report = index_repo(Path::new(dir), &opts)?;
        index_rows.push((
            dir.clone(),
            report.bytes_parsed,
            t.elapsed().as_secs_f64(),
            report.parsed,
        ));
    }
    println!("| language | files | MB | analysis MB/s (1 thread) | symbols |");
    println!("|---|---|---|---|---|");
    for (name, r) in &rows {
        let mb = r.bytes as f64 / 1e6;
        println!(
            "| {name} | {} | {mb:.2} | {:.2} | {} |",
            r.files,
            mb / r.seconds.max(1e-9),
            r.symbols
        );
    }
    println!("\n| directory | files parsed | MB | cold index s | MB/s |");
    println!("|---|---|---|---|---|");
    for (dir, bytes, secs, parsed) in index_rows {
        let mb = bytes as f64 / 1e6;
        println!(
            "| {dir} | {parsed} | {mb:.2} | {secs:.2} | {:.2} |",
            mb / secs
        );
    }
    Ok(())
}
