//! The model's graph as ONNX Runtime optimizes it, kept per machine in ONNX Runtime's own
//! format so that a session neither optimizes it again nor copies it. Every session would
//! start by rewriting the graph (level 3, as fastembed asks); for the quantized MiniLM that
//! was 100 of a one-shot query's 270 ms and most of its memory. Saved in ONNX Runtime's
//! format, the result is run from its bytes where they lie ([`crate::session`]): a session
//! starts in ~10 ms. It does the same arithmetic: its vectors are bit-identical
//! (tests/it/model.rs), because it runs the very graph the optimizer produced.
//!
//! A saved graph lives in `<graph cache>/<model>-<key>.ort` (by default the user cache's
//! `graphs`), where the key hashes the model's bytes, the ONNX Runtime library and the CPU's
//! flags (level-3 rewrites may depend on the instruction set). It is written to a temporary
//! name, then linked into place unless another load saved it first, so a reader never sees
//! half of one. Anything wrong with it (unreadable, rejected by ONNX Runtime) only costs the
//! speed-up: the model itself is loaded.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use ort::environment::Environment;
use ort::session::Session;

use crate::session::GraphBytes;

/// A saved graph: where, and its bytes (every session of the model runs from them).
pub(crate) struct Graph {
    pub path: PathBuf,
    pub bytes: GraphBytes,
}

/// Size, modification time and inode of a file: what tells a file replaced or rewritten.
type Stamp = (u64, Option<SystemTime>, u64);

fn stamp(path: &Path) -> std::io::Result<Stamp> {
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
    cache.join(format!("{name}-{}.ort", &key[..24]))
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
    Ok(Graph {
        path: path.to_path_buf(),
        bytes: Arc::new(map(path).map_err(|e| format!("{}: {e}", path.display()))?),
    })
}

/// The file at `path`, mapped read-only: a session runs from the page cache instead of a copy
/// of 58 MB read at every start (40–60 ms of a one-shot query's model start).
#[allow(unsafe_code)]
pub(crate) fn map(path: &Path) -> std::io::Result<memmap2::Mmap> {
    let file = std::fs::File::open(path)?;
    // SAFETY: a mapped file truncated or rewritten in place while mapped would change or
    // fault the bytes under the session. acms never does either to a saved graph (it is
    // written under a temporary name and linked into place; dropping one unlinks it, which
    // leaves a mapping intact), and the graph cache belongs to the user as the model
    // directory and ONNX Runtime library do, which are native code acms loads.
    unsafe { memmap2::Mmap::map(&file) }
}

/// Optimizes `onnx` as a fastembed session would and saves the result at `path`, in ONNX
/// Runtime's format.
fn save(env: &Environment, onnx: &[u8], path: &Path) -> Result<(), String> {
    let dir = path.parent().ok_or("no directory")?;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let tmp = temporary(path);
    let made = || -> Result<Session, String> {
        let text = |e: ort::Error<_>| e.to_string();
        crate::session::builder(env)?
            .with_config_entry("session.save_model_format", "ORT")
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
    if placed.is_ok() {
        prune(path);
    }
    placed
}

/// How long a graph of another runtime or CPU is kept after it was saved.
const KEEP_OTHER_GRAPHS: Duration = Duration::from_secs(24 * 60 * 60);

/// Drops the graphs of `current`'s model that are no longer current: those in the former ONNX
/// form (this build never reads them), and those of another key (another ONNX Runtime or CPU)
/// or a save's leftovers older than [`KEEP_OTHER_GRAPHS`]. Without it, a machine keeps 58 MB
/// per runtime it ever ran. A process that mapped a dropped graph keeps its mapping.
fn prune(current: &Path) {
    let (Some(dir), Some(file)) = (
        current.parent(),
        current.file_name().and_then(|n| n.to_str()),
    ) else {
        return;
    };
    let Some((model, _)) = file.rsplit_once('-') else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let stale = SystemTime::now() - KEEP_OTHER_GRAPHS;
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let Some((key, ext)) = name
            .to_str()
            .and_then(|n| n.strip_prefix(model)?.strip_prefix('-')?.split_once('.'))
        else {
            continue;
        };
        if path == current || key.len() != 24 || !key.bytes().all(|b| b.is_ascii_hexdigit()) {
            continue;
        }
        let old = || {
            entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| t < stale)
        };
        let drop = match ext {
            "onnx" => true,
            "ort" => old(),
            _ => ext.ends_with(".tmp") && old(),
        };
        if drop {
            let _ = std::fs::remove_file(&path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{KEEP_OTHER_GRAPHS, model_hash, prune};

    /// A new save drops its model's graphs of the former format and other keys' graphs and
    /// leftovers once they are a day old; nothing of another model, nothing recent.
    #[test]
    fn a_save_drops_the_graphs_no_longer_current() {
        let dir = tempfile::tempdir().unwrap();
        let key = |c: char| c.to_string().repeat(24);
        let current = dir.path().join(format!("minilm-{}.ort", key('a')));
        let files = [
            (format!("minilm-{}.ort", key('a')), false, true),
            (format!("minilm-{}.onnx", key('a')), false, false),
            (format!("minilm-{}.ort", key('b')), true, false),
            (format!("minilm-{}.ort", key('c')), false, true),
            (format!("minilm-{}.ort.12-0.tmp", key('d')), true, false),
            (format!("minilm-large-{}.ort", key('e')), true, true),
            (format!("other-{}.onnx", key('f')), true, true),
            ("minilm-notes.txt".to_string(), true, true),
        ];
        let day_ago = std::time::SystemTime::now() - KEEP_OTHER_GRAPHS * 2;
        for (name, old, _) in &files {
            let f = std::fs::File::create(dir.path().join(name)).unwrap();
            if *old {
                f.set_modified(day_ago).unwrap();
            }
        }
        prune(&current);
        for (name, _, kept) in files {
            assert_eq!(dir.path().join(&name).exists(), kept, "{name}");
        }
    }

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
