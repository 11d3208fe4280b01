//! The model's graph as ONNX Runtime optimizes it, kept per machine so that a session does
//! not optimize it again. Every session starts by rewriting the graph (fastembed asks for
//! level 3); for the quantized MiniLM that was 100 of a one-shot query's 270 ms and most of
//! its memory. A session made from the saved result does the same arithmetic: its vectors are
//! bit-identical (tests/it/model.rs), because it runs the very graph the optimizer produced.
//!
//! A saved graph lives in `<graph cache>/<model>-<key>.onnx` (by default the user cache's
//! `graphs`), where the key hashes the model's bytes, the ONNX Runtime library and the CPU's
//! flags (level-3 rewrites may depend on the instruction set). It is written to a temporary
//! name, then linked into place unless another load saved it first, so a reader never sees
//! half of one and a loaded model's graph is never replaced. Anything wrong with it
//! (unreadable, rejected by ONNX Runtime) only costs the speed-up: the model itself is loaded.

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

/// Size, modification time and inode of a file: what tells a file replaced or rewritten.
pub(crate) type Stamp = (u64, Option<SystemTime>, u64);

pub(crate) fn stamp(path: &Path) -> std::io::Result<Stamp> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path)?;
    Ok((m.len(), m.modified().ok(), m.ino()))
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
    if let Ok(s) = stamp(runtime) {
        key.update(format!("{s:?}").as_bytes());
    }
    key.update(cpu_flags().as_bytes());
    let key = key.finalize().to_hex();
    cache.join(format!("{name}-{}.onnx", &key[..24]))
}

/// The blake3 hash of the model file at `path`, remembered in `cache` by the file's size,
/// modification time and inode: a one-shot query need not read and hash 23 MB to name its
/// model (the same trust `acms_model::check_runtime` gives a stamp). Without a cache, or when
/// the file moved, it is read and hashed.
pub(crate) fn model_hash(cache: Option<&Path>, path: &Path) -> std::io::Result<blake3::Hash> {
    let stamp = format!("{:?}", stamp(path)?);
    let kept = cache.map(|c| {
        let name = blake3::hash(path.as_os_str().as_encoded_bytes()).to_hex();
        c.join("hashes").join(&name[..24])
    });
    let remembered = kept
        .as_ref()
        .and_then(|k| std::fs::read_to_string(k).ok())
        .and_then(|text| {
            let (s, hex) = text.rsplit_once(' ')?;
            (s == stamp).then(|| blake3::Hash::from_hex(hex.trim()).ok())?
        });
    if let Some(hash) = remembered {
        return Ok(hash);
    }
    let hash = blake3::hash(&std::fs::read(path)?);
    if let Some(k) = kept {
        // Best effort: a cache that cannot be written only costs the next load a hash (and
        // loads racing to write it write the same bytes).
        let record = format!("{stamp} {}", hash.to_hex());
        if let Some(dir) = k.parent()
            && std::fs::create_dir_all(dir).is_ok()
        {
            let _ = crate::format::write_atomic(&k, record.as_bytes());
        }
    }
    Ok(hash)
}

/// A temporary name next to `path`, unique per process and call (two loads may save the
/// same graph at once).
fn temporary(path: &Path) -> PathBuf {
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let n = CALLS.fetch_add(1, Ordering::Relaxed);
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}-{n}.tmp", std::process::id()));
    path.with_file_name(name)
}

/// The CPU's feature flags as the kernel lists them (empty where there is no /proc), read up
/// to the first CPU's: the file grows with the core count.
fn cpu_flags() -> String {
    use std::io::BufRead;
    std::fs::File::open("/proc/cpuinfo")
        .ok()
        .and_then(|f| {
            std::io::BufReader::new(f)
                .lines()
                .map_while(Result::ok)
                .find(|l| l.starts_with("flags"))
        })
        .unwrap_or_default()
}

/// The saved graph at `path`, optimizing the model (bytes from `onnx`, read only then) and
/// saving the result first when there is none. The error says why no graph could be had.
pub(crate) fn optimized(
    env: &Environment,
    onnx: impl FnOnce() -> Result<Vec<u8>, String>,
    path: &Path,
) -> Result<Graph, String> {
    if !path.is_file() {
        save(env, &onnx()?, path)?;
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
    let tmp = temporary(path);
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
    // The first graph saved stays: a link fails when another load saved it meanwhile, so a
    // file a loaded model read is never replaced under it.
    let placed = made().and_then(|_session| match std::fs::hard_link(&tmp, path) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            Err(format!("{}: {e}", path.display()))
        }
        _ => Ok(()),
    });
    let _ = std::fs::remove_file(&tmp);
    placed
}

#[cfg(test)]
mod tests {
    use super::model_hash;

    /// The hash is remembered by the file's stamp and taken again when the file changes; a
    /// damaged record is recomputed, never trusted.
    #[test]
    fn a_model_hash_is_remembered_until_the_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("graphs");
        let model = dir.path().join("model.onnx");
        std::fs::write(&model, b"first").unwrap();
        assert_eq!(
            model_hash(Some(&cache), &model).unwrap(),
            blake3::hash(b"first")
        );
        let records: Vec<_> = std::fs::read_dir(cache.join("hashes"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(records.len(), 1, "{records:?}");
        assert_eq!(
            model_hash(Some(&cache), &model).unwrap(),
            blake3::hash(b"first")
        );

        // Same size, later time: hashed again.
        std::fs::write(&model, b"other").unwrap();
        let f = std::fs::File::options().write(true).open(&model).unwrap();
        f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
            .unwrap();
        drop(f);
        assert_eq!(
            model_hash(Some(&cache), &model).unwrap(),
            blake3::hash(b"other")
        );

        std::fs::write(&records[0], b"garbage").unwrap();
        assert_eq!(
            model_hash(Some(&cache), &model).unwrap(),
            blake3::hash(b"other")
        );
        assert_eq!(model_hash(None, &model).unwrap(), blake3::hash(b"other"));
    }
}
