//! Shared helpers for the benchmarks: where the real corpora live once
//! `scripts/fetch-corpus.sh` has fetched them.

use std::path::PathBuf;

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("benches/ sits in the workspace root")
        .to_path_buf()
}

/// Directory the corpus `name` is fetched into (`ACMS_CORPUS_DIR`, else `<root>/.cache/corpora`).
pub fn corpus_dir(name: &str) -> PathBuf {
    std::env::var_os("ACMS_CORPUS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".cache/corpora"))
        .join(name)
}

/// Fetches `name` with `scripts/fetch-corpus.sh` when it is not there yet, and returns its
/// directory.
pub fn fetch_corpus(name: &str) -> anyhow::Result<PathBuf> {
    let dir = corpus_dir(name);
    if !dir.join(".acms-corpus").exists() {
        let status = std::process::Command::new(workspace_root().join("scripts/fetch-corpus.sh"))
            .arg(name)
            .status()?;
        anyhow::ensure!(status.success(), "scripts/fetch-corpus.sh {name} failed");
    }
    Ok(dir)
}

/// A copy of `src` in a fresh temporary directory (benchmarks edit files and write indexes).
pub fn copy_tree(src: &std::path::Path) -> anyhow::Result<tempfile::TempDir> {
    let tmp = tempfile::tempdir()?;
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", src.display()))
        .arg(tmp.path())
        .status()?;
    anyhow::ensure!(status.success(), "cp -a {} failed", src.display());
    Ok(tmp)
}

/// Source bytes and lines of the files `acms` indexes under `dir` (by extension).
pub fn source_size(dir: &std::path::Path) -> (u64, u64) {
    fn walk(dir: &std::path::Path, acc: &mut (u64, u64)) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            {
                continue;
            }
            if p.is_dir() {
                walk(&p, acc);
            } else if let Ok(text) = std::fs::read_to_string(&p) {
                acc.0 += text.len() as u64;
                acc.1 += text.lines().count() as u64;
            }
        }
    }
    let mut acc = (0, 0);
    walk(dir, &mut acc);
    acc
}

/// Median and 95th percentile of `samples` (milliseconds).
pub fn p50_p95(samples: &mut [f64]) -> (f64, f64) {
    if samples.is_empty() {
        return (0.0, 0.0);
    }
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.95))
}
