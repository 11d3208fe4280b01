//! The model's graph as ONNX Runtime optimizes it, kept per machine so that a session does
//! not optimize it again. Every session starts by rewriting the graph (fastembed asks for
//! level 3); for the quantized MiniLM that was 100 of a one-shot query's 270 ms and most of
//! its memory. A session made from the saved result does the same arithmetic: its vectors are
//! bit-identical (tests/it/model.rs), because it runs the very graph the optimizer produced.
//!
//! A saved graph lives in `<graph cache>/<model>-<key>.onnx` (by default the user cache's
//! `graphs`), where the key hashes the
//! model's bytes, the ONNX Runtime library and the CPU's flags (level-3 rewrites may depend
//! on the instruction set). It is written once, to a temporary name then renamed, so a reader
//! never sees half of one. Anything wrong with it (unreadable, rejected by ONNX Runtime) only
//! costs the speed-up: the caller loads the original model instead.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use ort::environment::Environment;
use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;

/// A saved graph: where, its bytes, and what its file looked like when read (a further
/// session reads it again and must find the same file).
pub(crate) struct Graph {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
    pub stamp: Stamp,
}

/// Size and modification time of a file.
pub(crate) type Stamp = (u64, Option<SystemTime>);

pub(crate) fn stamp(path: &Path) -> std::io::Result<Stamp> {
    let m = std::fs::metadata(path)?;
    Ok((m.len(), m.modified().ok()))
}

/// Where in `cache` the optimized graph of the model `name` with bytes hashing to
/// `onnx_hash`, run by the library `runtime`, is kept.
pub(crate) fn graph_path(
    cache: &Path,
    name: &str,
    onnx_hash: &blake3::Hash,
    runtime: &Path,
) -> PathBuf {
    let mut key = blake3::Hasher::new();
    key.update(onnx_hash.as_bytes());
    key.update(runtime.as_os_str().as_encoded_bytes());
    if let Ok((len, modified)) = stamp(runtime) {
        key.update(&len.to_le_bytes());
        key.update(format!("{modified:?}").as_bytes());
    }
    key.update(cpu_flags().as_bytes());
    let key = key.finalize().to_hex();
    cache.join(format!("{name}-{}.onnx", &key[..24]))
}

/// The CPU's feature flags as the kernel lists them (empty where there is no /proc).
fn cpu_flags() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("flags"))
                .map(str::to_string)
        })
        .unwrap_or_default()
}

/// The saved graph at `path`, optimizing `onnx` and saving the result first when there is
/// none. The error says why no graph could be had.
pub(crate) fn optimized(env: &Environment, onnx: &[u8], path: &Path) -> Result<Graph, String> {
    if !path.is_file() {
        save(env, onnx, path)?;
    }
    let stamp = stamp(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Graph {
        path: path.to_path_buf(),
        bytes,
        stamp,
    })
}

/// Optimizes `onnx` as a fastembed session would and saves the result at `path`.
fn save(env: &Environment, onnx: &[u8], path: &Path) -> Result<(), String> {
    let dir = path.parent().ok_or("no directory")?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // Unique per process and call: two loads may save the same graph at once.
    static SAVES: AtomicU64 = AtomicU64::new(0);
    let n = SAVES.fetch_add(1, Ordering::Relaxed);
    let tmp = path.with_extension(format!("onnx.{}-{n}.tmp", std::process::id()));
    let made = || -> Result<Session, String> {
        let text = |e: ort::Error<_>| e.to_string();
        Session::builder(env)
            .map_err(|e| e.to_string())?
            .with_optimization_level(GraphOptimizationLevel::Level3)
            .map_err(text)?
            .with_intra_threads(1)
            .map_err(text)?
            .with_optimized_model_path(&tmp)
            .map_err(text)?
            .commit_from_memory(onnx)
            .map_err(|e| e.to_string())
    };
    let renamed = made().and_then(|_session| {
        std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
    });
    if renamed.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    renamed
}
