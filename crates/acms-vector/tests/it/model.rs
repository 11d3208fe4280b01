//! The real model end to end, where it is found, and the errors of a missing or broken one.
//!
//! The model directory is the per-user cache's default model, which scripts/test.sh installs
//! first (`scripts/fetch-model.sh`: `acms model fetch`), so these tests run the real model in
//! CI without any manual step and without the network.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use acms_core::{EmbedderKind, SemanticConfig};
use acms_vector::{
    Embedder, Error, FastEmbedder, MANIFEST_FILE, MODEL_FILES, ModelOptions, ModelSource, cosine,
    load_embedder, locate_model, locate_onnxruntime,
};

fn model_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = acms_vector::cached_model_dir(acms_core::DEFAULT_MODEL).expect("a user cache");
        let model = acms_model::model(acms_core::DEFAULT_MODEL).unwrap();
        let places = acms_model::Places::in_cache(dir.clone()).unwrap();
        assert!(
            acms_model::installed(model, &places),
            "the default model is not installed in {}: run `scripts/fetch-model.sh` (or `acms \
             model fetch`; scripts/test.sh does)",
            dir.display()
        );
        dir
    })
}

fn config_for(dir: &Path) -> SemanticConfig {
    SemanticConfig {
        model_dir: Some(dir.to_string_lossy().into_owned()),
        ..SemanticConfig::default()
    }
}

/// (query, related code, unrelated code): code-search style pairs.
const PAIRS: [(&str, &str, &str); 4] = [
    (
        "read the configuration from a toml file",
        "fn load_config(path: &Path) -> Result<Config> { let text = fs::read_to_string(path)?; toml::from_str(&text) }",
        "fn draw_circle(canvas: &mut Canvas, radius: f32) { canvas.arc(0.0, 0.0, radius) }",
    ),
    (
        "count tokens in a string",
        "def count_tokens(text): \"\"\"Return the number of tokens in text.\"\"\" return len(tokenizer.encode(text))",
        "def send_email(recipient, subject, body): smtp.sendmail(recipient, subject, body)",
    ),
    (
        "retry an http request after a failure",
        "async function fetchWithRetry(url, attempts) { for (let i = 0; i < attempts; i++) { try { return await fetch(url) } catch (e) {} } }",
        "class Matrix { transpose() { return this.rows.map((_, i) => this.rows.map(r => r[i])) } }",
    ),
    (
        "sort users by age",
        "users.sort_by_key(|user| user.age)",
        "let socket = UdpSocket::bind(\"0.0.0.0:9000\")?;",
    ),
];

#[test]
fn the_default_model_is_installed_in_the_user_cache() {
    let dir = model_dir();
    // The script installs where the binary looks by default (no environment variable).
    let (found, source) = locate_model(&SemanticConfig::default()).unwrap();
    if std::env::var_os("ACMS_MODEL_DIR").is_none() {
        assert_eq!((found.as_path(), source), (dir, ModelSource::Cache));
        assert!(dir.ends_with(format!("acms/models/{}", acms_core::DEFAULT_MODEL)));
    }
    for f in MODEL_FILES {
        assert!(dir.join(f).is_file(), "{f} missing in {}", dir.display());
    }
    assert!(locate_onnxruntime(dir).is_some());
}

#[test]
fn the_real_model_ranks_related_code_first() {
    let dir = model_dir();
    let loaded = load_embedder(&config_for(dir)).unwrap();
    assert!(
        loaded.description.contains(&dir.display().to_string()),
        "{}",
        loaded.description
    );
    let embedder = loaded.embedder;
    assert_eq!(embedder.dim(), 384);
    assert!(embedder.id().starts_with("fastembed-"));
    let mut texts = Vec::new();
    for (q, r, u) in PAIRS {
        texts.extend([q, r, u]);
    }
    let vectors = embedder.embed(&texts).unwrap();
    assert_eq!(vectors.len(), texts.len());
    for v in &vectors {
        assert_eq!(v.len(), 384);
        assert!((acms_vector::dot(v, v) - 1.0).abs() < 1e-4);
    }
    let (unrelated_scale, related_scale) = embedder.calibration();
    assert!(unrelated_scale < related_scale);
    for (i, (q, _, _)) in PAIRS.iter().enumerate() {
        let (vq, vr, vu) = (&vectors[3 * i], &vectors[3 * i + 1], &vectors[3 * i + 2]);
        let (related, unrelated) = (cosine(vq, vr), cosine(vq, vu));
        assert!(
            related > unrelated + 0.2,
            "{q}: related {related:.3} vs unrelated {unrelated:.3}"
        );
    }
    // Neither batching (padding is masked out of the mean) nor spreading the texts over
    // parallel sessions changes a text's vector or its place in the answer.
    for (i, text) in texts.iter().enumerate() {
        let alone = embedder.embed(&[text]).unwrap();
        assert!(cosine(&alone[0], &vectors[i]) > 0.999, "text {i} moved");
    }
}

#[test]
fn the_model_is_deterministic_and_handles_odd_input() {
    let options = ModelOptions {
        batch_size: 8,
        threads: Some(2),
        ..ModelOptions::default()
    };
    let embedder = FastEmbedder::with_options(model_dir(), options).unwrap();
    let long = "x".repeat(100_000);
    let odd = ["", "!!!", "日本語のテキスト", long.as_str()];
    let a = embedder.embed(&odd).unwrap();
    let b = embedder.embed(&odd).unwrap();
    assert_eq!(a.len(), 4);
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x.len(), 384);
        assert!(cosine(x, y) > 0.9999);
    }
    assert!(embedder.embed(&[]).unwrap().is_empty());
}

#[test]
fn the_token_limit_is_part_of_the_embedder_identity() {
    let short = FastEmbedder::with_options(
        model_dir(),
        ModelOptions {
            max_tokens: 32,
            ..ModelOptions::default()
        },
    )
    .unwrap();
    let default = FastEmbedder::new(model_dir()).unwrap();
    assert_ne!(
        short.id(),
        default.id(),
        "vectors of one are not the other's"
    );
}

/// Two workers, the graph kept in `graphs` (or none).
fn two_workers(dir: &Path, graphs: Option<&Path>) -> FastEmbedder {
    let options = ModelOptions {
        threads: Some(2),
        graph_cache: graphs.map(Path::to_path_buf),
        ..ModelOptions::default()
    };
    FastEmbedder::with_options(dir, options).unwrap()
}

/// Sessions start on first use; a later one reads the model again and refuses a file that
/// changed since the load (its vectors would not be the ones the id names).
#[test]
fn later_sessions_start_on_demand_from_the_same_model() {
    let dir = tempfile::tempdir().unwrap();
    copy_model(dir.path());
    let model = two_workers(dir.path(), None);
    let texts = [
        "parse the config file",
        "draw a circle",
        "sort users by age",
    ];
    let alone: Vec<Vec<f32>> = texts
        .iter()
        .map(|t| model.embed(&[t]).unwrap().remove(0))
        .collect();
    // Two workers: the second session starts now, from the file, and agrees with the first.
    assert_eq!(model.embed(&texts).unwrap(), alone);

    let fresh = two_workers(dir.path(), None);
    let onnx = dir.path().join("model.onnx");
    let mut bytes = std::fs::read(&onnx).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x5a;
    std::fs::write(&onnx, bytes).unwrap();
    let err = fresh.embed(&texts).unwrap_err().to_string();
    assert!(err.contains("changed since the model was loaded"), "{err}");
    // The session that was loaded still answers.
    assert_eq!(fresh.embed(&texts[..1]).unwrap()[0], alone[0]);
}

/// The files in a graph cache (its `hashes/` records aside).
fn saved_graphs(cache: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect()
}

/// A session made from the saved optimized graph computes the very vectors of one that
/// optimized the model itself, so vectors stored before the cache existed stay valid. A saved
/// graph that ONNX Runtime rejects costs only the speed-up; one replaced under a loaded model
/// costs nothing (its sessions run from the file it mapped at the start).
#[test]
fn a_saved_optimized_graph_gives_the_same_vectors() {
    let graphs = tempfile::tempdir().unwrap();
    let texts: Vec<&str> = PAIRS.iter().flat_map(|(q, a, b)| [*q, *a, *b]).collect();
    let own = two_workers(model_dir(), None).embed(&texts).unwrap();

    let saving = two_workers(model_dir(), Some(graphs.path()));
    let saved = saved_graphs(graphs.path());
    assert_eq!(saved.len(), 1, "one graph, no temporary left: {saved:?}");
    assert_eq!(saving.embed(&texts).unwrap(), own);
    let reading = two_workers(model_dir(), Some(graphs.path()));
    assert_eq!(reading.embed(&texts).unwrap(), own);

    // Replaced, never rewritten in place: loaded models run from their mapping of it.
    replace(&saved[0], b"not a graph");
    let past_damage = two_workers(model_dir(), Some(graphs.path()));
    assert_eq!(past_damage.embed(&texts).unwrap(), own);
    assert!(!saved[0].exists(), "the rejected graph is dropped");
    // The next load saves it again.
    let loaded = two_workers(model_dir(), Some(graphs.path()));
    assert!(saved[0].is_file());

    // Only one session started so far; the second runs from the graph the first mapped,
    // though the file was replaced since: the same vectors.
    replace(&saved[0], b"not a graph");
    assert_eq!(loaded.embed(&texts).unwrap(), own);
}

/// Puts `bytes` at `path` as a new file, as acms replaces a graph.
fn replace(path: &Path, bytes: &[u8]) {
    std::fs::remove_file(path).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// A model started in the background embeds exactly as one started at load; a model that
/// cannot start loads, then says why on use (naming the file), and dropping an embedder whose
/// start still runs waits for it.
/// Loads racing on an empty graph cache (tests, agents started together) all load, and the
/// first graph saved is the one that stays: a loaded model's later sessions never find it
/// replaced.
#[test]
fn loads_racing_on_an_empty_graph_cache_agree() {
    let graphs = tempfile::tempdir().unwrap();
    let texts: Vec<&str> = PAIRS.iter().flat_map(|(q, a, b)| [*q, *a, *b]).collect();
    let models: Vec<FastEmbedder> = std::thread::scope(|s| {
        let loads: Vec<_> = (0..3)
            .map(|_| s.spawn(|| two_workers(model_dir(), Some(graphs.path()))))
            .collect();
        loads.into_iter().map(|l| l.join().unwrap()).collect()
    });
    let graph = saved_graphs(graphs.path());
    assert_eq!(graph.len(), 1, "{graph:?}");
    let first = std::fs::metadata(&graph[0]).unwrap().modified().unwrap();
    let vectors: Vec<_> = models.iter().map(|m| m.embed(&texts).unwrap()).collect();
    assert!(vectors.windows(2).all(|w| w[0] == w[1]));
    assert_eq!(
        std::fs::metadata(&graph[0]).unwrap().modified().unwrap(),
        first
    );
}

#[test]
fn a_model_started_in_the_background_is_the_same_model() {
    let in_background = |dir: &Path| {
        let options = ModelOptions {
            start_in_background: true,
            ..ModelOptions::default()
        };
        FastEmbedder::with_options(dir, options)
    };
    let texts: Vec<&str> = PAIRS.iter().flat_map(|(q, a, b)| [*q, *a, *b]).collect();
    let at_load = FastEmbedder::new(model_dir()).unwrap();
    let started = in_background(model_dir()).unwrap();
    assert_eq!(started.id(), at_load.id(), "known before the start ends");
    assert!(started.starting());
    assert_eq!(
        started.embed(&texts).unwrap(),
        at_load.embed(&texts).unwrap()
    );
    assert!(!started.starting() && !started.failed());
    assert_eq!(started.dim(), at_load.dim());
    drop(in_background(model_dir()).unwrap());

    let tmp = tempfile::tempdir().unwrap();
    copy_model(tmp.path());
    std::fs::write(tmp.path().join("model.onnx"), b"not an onnx model").unwrap();
    let broken = in_background(tmp.path()).unwrap();
    let err = broken.embed(&texts[..1]).unwrap_err().to_string();
    assert!(
        err.contains("did not start") && err.contains("model.onnx"),
        "{err}"
    );
    assert!(broken.failed());
    assert_eq!(broken.dim(), 0);
}

/// A copy of the real model directory to break.
fn copy_model(to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for f in MODEL_FILES {
        std::fs::copy(model_dir().join(f), to.join(f)).unwrap();
    }
}

fn load_err(dir: &Path) -> String {
    match load_embedder(&config_for(dir)) {
        Ok(l) => panic!("{} loaded: {}", dir.display(), l.description),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_runtime_library_that_is_not_the_pinned_build_is_not_loaded() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    copy_model(&dir);
    // The model directory's library comes before the cache's: a copy with one byte changed
    // (same name, same size) is refused before anything loads it.
    let real = locate_onnxruntime(model_dir()).unwrap();
    let mut bytes = std::fs::read(&real).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 1;
    let fake = dir.join(real.file_name().unwrap());
    std::fs::write(&fake, &bytes).unwrap();
    let e = load_err(&dir);
    assert!(
        e.contains("not the pinned ONNX Runtime") && e.contains(&fake.display().to_string()),
        "{e}"
    );
    assert!(e.contains(acms_model::RUNTIME.sha256), "{e}");
    // The real one, put there instead, loads.
    std::fs::copy(&real, &fake).unwrap();
    assert!(load_embedder(&config_for(&dir)).is_ok());
}

#[test]
fn a_missing_model_is_one_clear_error_with_the_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let e = load_err(&tmp.path().join("nope"));
    assert!(
        e.contains("no embedding model") && e.contains("acms model fetch"),
        "{e}"
    );
    assert!(e.contains("keyword and graph retrieval work"), "{e}");
}

#[test]
fn a_model_dir_missing_a_file_names_the_file_and_the_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    copy_model(&dir);
    std::fs::remove_file(dir.join("tokenizer.json")).unwrap();
    let e = load_err(&dir);
    assert!(e.contains("missing tokenizer.json"), "{e}");
    assert!(e.contains("run `acms model fetch`"), "{e}");
}

#[test]
fn a_corrupt_model_file_names_the_file_and_the_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("m");
    copy_model(&dir);
    for (file, garbage) in [
        ("model.onnx", &b"not an onnx model"[..]),
        ("tokenizer.json", b"{"),
        ("config.json", b"{"),
        ("special_tokens_map.json", b"nope"),
        ("tokenizer_config.json", b"{}"),
        (MANIFEST_FILE, b"[]"),
    ] {
        let good = std::fs::read(dir.join(file)).unwrap();
        std::fs::write(dir.join(file), garbage).unwrap();
        let e = load_err(&dir);
        let named = dir.join(file).display().to_string();
        assert!(e.contains(&named), "{file}: {e}");
        assert!(e.contains("run `acms model fetch`"), "{file}: {e}");
        std::fs::write(dir.join(file), good).unwrap();
    }
    // Restored, it loads again.
    assert!(load_embedder(&config_for(&dir)).is_ok());
}

#[test]
fn a_relative_model_dir_is_refused_not_resolved_against_the_current_directory() {
    let config = SemanticConfig {
        model_dir: Some("models/m".into()),
        ..SemanticConfig::default()
    };
    let e = load_embedder(&config).unwrap_err();
    assert!(
        matches!(e, Error::Config(_)) && e.to_string().contains("relative"),
        "{e}"
    );
}

#[test]
fn the_hashing_embedder_only_when_chosen() {
    let config = SemanticConfig {
        embedder: EmbedderKind::Hash,
        ..SemanticConfig::default()
    };
    let loaded = load_embedder(&config).unwrap();
    assert!(loaded.embedder.id().starts_with("acms-hash"));
    assert!(loaded.description.contains("chosen by configuration"));
}
