//! What a long-lived process (the MCP server, a `Workspace`) keeps in memory between an
//! index refresh and the engine opened after it: the vectors of an index directory and the
//! loaded embedder. Without this, every refresh after one edited file loaded the whole vector
//! index twice (the embedding run, then the engine) and the engine loaded the model again.
//!
//! A kept index is handed out only while its directory still holds exactly what it last
//! loaded or saved (`VectorIndex::is_saved_in`: sizes and times of its files), so another
//! process's write or a damaged file is seen as by a fresh load. At most `KEPT` directories
//! are kept; this module decides nothing about what the vectors or embedder are used for.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};

use acms_core::SemanticConfig;
use acms_vector::{Embedder, IndexParams, LoadedEmbedder, VectorIndex};

/// Vectors shared by the embedding run that updates them and the engines that search them.
pub type SharedVectors = Arc<RwLock<VectorIndex>>;

/// Index directories whose vectors stay in memory (the most recently used first).
const KEPT: usize = 2;

fn vectors_cache() -> &'static Mutex<Vec<(PathBuf, SharedVectors)>> {
    static CACHE: OnceLock<Mutex<Vec<(PathBuf, SharedVectors)>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(Vec::new()))
}

/// The vectors saved in `dir`: the kept copy when `dir` still holds it, else loaded (and
/// kept). Errors are those of `VectorIndex::load`.
pub fn shared_vectors(dir: &Path, params: IndexParams) -> acms_vector::Result<SharedVectors> {
    let mut cache = vectors_cache()
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(at) = cache.iter().position(|(d, _)| d == dir) {
        let kept = Arc::clone(&cache[at].1);
        let usable = {
            let v = kept.read().unwrap_or_else(PoisonError::into_inner);
            v.params() == params && v.is_saved_in(dir)
        };
        cache.remove(at);
        if usable {
            cache.insert(0, (dir.to_path_buf(), Arc::clone(&kept)));
            return Ok(kept);
        }
    }
    let loaded = Arc::new(RwLock::new(VectorIndex::load(dir, params)?));
    cache.insert(0, (dir.to_path_buf(), Arc::clone(&loaded)));
    cache.truncate(KEPT);
    Ok(loaded)
}

/// Keeps `vectors`, just saved into `dir`, as that directory's vectors.
pub(crate) fn keep_vectors(dir: &Path, vectors: SharedVectors) {
    let mut cache = vectors_cache()
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    cache.retain(|(d, _)| d != dir);
    cache.insert(0, (dir.to_path_buf(), vectors));
    cache.truncate(KEPT);
}

/// An embedder loaded for one configuration, with the line describing it.
#[derive(Clone)]
pub(crate) struct KeptEmbedder {
    pub embedder: Arc<dyn Embedder>,
    pub description: String,
}

/// The embedder `config` asks for, loaded once per configuration and process (a model load
/// costs hundreds of milliseconds). Failures are not kept: a model installed meanwhile is
/// found by the next call.
pub(crate) fn embedder(config: &SemanticConfig) -> acms_vector::Result<KeptEmbedder> {
    static KEPT_EMBEDDER: OnceLock<Mutex<Option<(SemanticConfig, KeptEmbedder)>>> = OnceLock::new();
    let mut kept = KEPT_EMBEDDER
        .get_or_init(|| Mutex::new(None))
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some((c, e)) = kept.as_ref()
        && c == config
    {
        return Ok(e.clone());
    }
    let LoadedEmbedder {
        embedder,
        description,
        ..
    } = acms_vector::load_embedder(config)?;
    let e = KeptEmbedder {
        embedder: Arc::from(embedder),
        description,
    };
    *kept = Some((config.clone(), e.clone()));
    Ok(e)
}
