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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock, Weak};

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

/// How the process keeps its embedder: only weakly while its model may still be starting in
/// the background, so that the engine holding it waits for the start when it is dropped (a
/// process leaving with the start running on another thread would crash in ONNX Runtime's
/// teardown).
enum Kept {
    Started(KeptEmbedder),
    Starting(Weak<dyn Embedder>, String),
}

impl Kept {
    fn new(e: &KeptEmbedder) -> Kept {
        if e.embedder.starting() {
            Kept::Starting(Arc::downgrade(&e.embedder), e.description.clone())
        } else {
            Kept::Started(e.clone())
        }
    }

    fn get(&self) -> Option<KeptEmbedder> {
        match self {
            Kept::Started(e) => Some(e.clone()),
            Kept::Starting(weak, description) => weak.upgrade().map(|embedder| KeptEmbedder {
                embedder,
                description: description.clone(),
            }),
        }
    }
}

static START_IN_BACKGROUND: AtomicBool = AtomicBool::new(false);

/// Start models loaded from now on in the background ([`acms_vector::ModelOptions`]'s
/// `start_in_background`): a query then opens its index and walks the repository while the
/// model starts. Only for a process that drops its engines before it exits (the CLI): one
/// that exits with a start running crashes in ONNX Runtime's teardown.
pub fn start_models_in_background() {
    START_IN_BACKGROUND.store(true, Ordering::Relaxed);
}

/// The embedder `config` asks for, loaded once per configuration and process (a model load
/// costs hundreds of milliseconds), started in the background when the process asked for
/// that. Failures are not kept, neither to load nor to start: a model installed meanwhile
/// is found by the next call.
pub(crate) fn embedder(config: &SemanticConfig) -> acms_vector::Result<KeptEmbedder> {
    static KEPT_EMBEDDER: OnceLock<Mutex<Option<(SemanticConfig, Kept)>>> = OnceLock::new();
    let mut kept = KEPT_EMBEDDER
        .get_or_init(|| Mutex::new(None))
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some((c, k)) = kept.as_mut()
        && c == config
        && let Some(e) = k.get()
        && !e.embedder.failed()
    {
        *k = Kept::new(&e);
        return Ok(e);
    }
    let LoadedEmbedder {
        embedder,
        description,
        ..
    } = if START_IN_BACKGROUND.load(Ordering::Relaxed) {
        acms_vector::load_embedder_in_background(config)?
    } else {
        acms_vector::load_embedder(config)?
    };
    let e = KeptEmbedder {
        embedder: Arc::from(embedder),
        description,
    };
    *kept = Some((config.clone(), Kept::new(&e)));
    Ok(e)
}
