//! The real sentence-embedding model (`FastEmbedder`: ONNX Runtime sessions with fastembed's
//! tokenizer setup and pooling, loaded from a local directory), where that directory is
//! found, and `load_embedder`, which builds the embedder the configuration asks for or says
//! precisely why it cannot.
//!
//! A model directory is what `acms model fetch NAME` installs (`acms-model`): `model.onnx`, the
//! four tokenizer files and `acms-model.json` (which ONNX output to pool, how, and the model's
//! typical cosines). ONNX Runtime itself is `libonnxruntime.so.*`, found through
//! `ORT_DYLIB_PATH`, else in the model directory, else in the per-user runtime directory the
//! fetch fills. Only a library the user names in `ORT_DYLIB_PATH` is loaded as it is; any
//! other is loaded only after its sha256 matched the pinned one (`acms_model::check_runtime`:
//! a `stat` and a stamp read when nothing changed since the last check).
//!
//! **Where a model comes from** (first that applies): the configuration's `model-dir` (only a
//! user's own config file or a command-line flag can set it: see `acms_core::Config::load`),
//! `$ACMS_MODEL_DIR`, else the per-user cache `$XDG_CACHE_HOME/acms/models/<model>` (default
//! `~/.cache/acms/models/<model>`). Never the indexed repository, never a path relative to the
//! current directory: the directory holds native code that acms loads.
//!
//! Nothing here downloads anything (`acms-model` does, called by the facade), and nothing falls
//! back to the hashing embedder: a missing model is `Error::NoModel`, a broken one
//! `Error::Model` naming the file and the fix.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, TryLockError};
use std::thread::JoinHandle;

use acms_core::{EmbedderKind, SemanticConfig};
use fastembed::{OutputKey, Pooling, TokenizerFiles};
use ort::environment::Environment;
use tokenizers::Tokenizer;

use crate::embed::{Embedder, HashEmbedder};
use crate::error::{Error, Result};
use crate::graph;
use crate::session::{GraphBytes, GraphSource, ModelSession, Output};

/// The model's description, written last by `acms model fetch`.
pub use acms_model::MANIFEST_FILE;

/// Files a model directory must hold (ONNX Runtime is looked up separately).
pub const MODEL_FILES: [&str; 6] = [
    "model.onnx",
    "tokenizer.json",
    "config.json",
    "special_tokens_map.json",
    "tokenizer_config.json",
    MANIFEST_FILE,
];

/// Environment variable naming a model directory (absolute) when the configuration names none.
pub const MODEL_DIR_ENV: &str = "ACMS_MODEL_DIR";

/// Texts per ONNX Runtime run. The caller sorts texts by length, so a batch pads little; larger
/// batches then amortize the per-run overhead (docs/BENCHMARKS.md, "Embedding throughput").
pub const DEFAULT_BATCH_SIZE: usize = 32;

pub use acms_core::user_cache_dir;
/// Where the model cache keeps model `name`: `<user cache>/models/<name>`.
pub use acms_model::cached_model_dir;

/// Why a model directory was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelSource {
    /// `context.strategies.semantic-embedding.model-dir` (user config or flag).
    Config,
    /// `$ACMS_MODEL_DIR`.
    Environment,
    /// The per-user model cache.
    Cache,
}

/// The model directory the configuration resolves to, and why; an error when no absolute
/// directory can be named at all.
pub fn locate_model(config: &SemanticConfig) -> Result<(PathBuf, ModelSource)> {
    let absolute = |p: PathBuf, origin: &str| {
        if p.is_absolute() {
            Ok(p)
        } else {
            Err(Error::Config(format!(
                "{origin} `{}` is relative: give an absolute path (a relative one would \
                 depend on the current directory)",
                p.display()
            )))
        }
    };
    if let Some(dir) = config.model_dir.as_deref().filter(|d| !d.is_empty()) {
        let dir = absolute(
            PathBuf::from(dir),
            "context.strategies.semantic-embedding.model-dir",
        )?;
        return Ok((dir, ModelSource::Config));
    }
    if let Some(dir) = std::env::var_os(MODEL_DIR_ENV).filter(|d| !d.is_empty()) {
        return Ok((
            absolute(PathBuf::from(dir), MODEL_DIR_ENV)?,
            ModelSource::Environment,
        ));
    }
    if !acms_core::valid_model_name(&config.model) {
        return Err(Error::Config(format!(
            "`{}` is not a model name",
            config.model
        )));
    }
    cached_model_dir(&config.model)
        .map(|d| (d, ModelSource::Cache))
        .ok_or_else(|| {
            Error::Config(
                "no model directory: neither XDG_CACHE_HOME nor HOME is set; set \
                 ACMS_MODEL_DIR or context.strategies.semantic-embedding.model-dir"
                    .into(),
            )
        })
}

/// The `libonnxruntime.so.*` inside `dir`, if any (highest name wins when several exist).
pub fn find_onnxruntime(dir: &Path) -> Option<PathBuf> {
    let mut libs: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libonnxruntime.so"))
        })
        .collect();
    libs.sort();
    libs.pop()
}

/// The ONNX Runtime library for a model in `dir`: `$ORT_DYLIB_PATH`, else one in `dir`, else
/// one in `<user cache>/runtime`.
pub fn locate_onnxruntime(dir: &Path) -> Option<PathBuf> {
    runtime_for(dir).map(|(lib, _)| lib)
}

/// [`locate_onnxruntime`], and whether the user named the library (`ORT_DYLIB_PATH`).
fn runtime_for(dir: &Path) -> Option<(PathBuf, bool)> {
    if let Some(p) = std::env::var_os("ORT_DYLIB_PATH").filter(|p| !p.is_empty()) {
        return Some((PathBuf::from(p), true));
    }
    find_onnxruntime(dir)
        .or_else(|| acms_model::runtime_dir().and_then(|d| find_onnxruntime(&d)))
        .map(|lib| (lib, false))
}

/// The files `dir` lacks to be a model directory (empty when complete).
pub fn missing_model_files(dir: &Path) -> Vec<&'static str> {
    let mut missing: Vec<&'static str> = MODEL_FILES
        .iter()
        .copied()
        .filter(|f| !dir.join(f).is_file())
        .collect();
    if locate_onnxruntime(dir).is_none() {
        missing.push("libonnxruntime.so.*");
    }
    missing
}

/// `acms-model.json`: what acms needs to know about a model beyond its ONNX graph.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelManifest {
    /// The model's name (its directory name in the cache).
    pub name: String,
    /// The ONNX output holding per-token embeddings.
    pub output: String,
    /// `mean` (over the attention mask) or `cls`.
    pub pooling: String,
    /// Typical cosine of an unrelated and of a clearly related (query, code) pair: relevance
    /// maps this range onto [0, 1].
    pub cosine_unrelated: f32,
    pub cosine_related: f32,
    /// The graph quantizes activations per run (DynamicQuantizeLinear): a text's vector would
    /// depend on the other texts of its batch, so each text is run alone.
    #[serde(default)]
    pub dynamic_quantization: bool,
}

impl ModelManifest {
    fn read(dir: &Path) -> Result<ModelManifest> {
        let path = dir.join(MANIFEST_FILE);
        let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        let m: ModelManifest = serde_json::from_slice(&bytes)
            .map_err(|e| model_err(dir, Some(&path), format!("not a model manifest: {e}")))?;
        if !matches!(m.pooling.as_str(), "mean" | "cls") {
            return Err(model_err(
                dir,
                Some(&path),
                format!("pooling `{}` is not mean or cls", m.pooling),
            ));
        }
        // Written so that NaN is rejected too.
        let ordered = m.cosine_unrelated < m.cosine_related;
        if !ordered {
            return Err(model_err(
                dir,
                Some(&path),
                "cosine_unrelated must be below cosine_related",
            ));
        }
        Ok(m)
    }
}

fn model_err(dir: &Path, file: Option<&Path>, message: impl Into<String>) -> Error {
    Error::Model {
        dir: dir.to_path_buf(),
        file: file.map(Path::to_path_buf),
        message: message.into(),
    }
}

/// A local ONNX sentence-embedding model ([`crate::session`]).
pub struct FastEmbedder {
    // One single-threaded session per worker, texts spread over them. One session with an
    // intra-op thread per core spends most of its CPU synchronising (and spinning) on the
    // small matrices of one text: two single-threaded sessions embed 2.3x the texts per
    // CPU-second on 2 cores (docs/BENCHMARKS.md, "Embedding models").
    // Created on first use: a one-shot query embeds one text and needs one session. All
    // sessions run from one mapping of the saved graph, but each has its own working memory.
    sessions: Vec<OnceLock<Mutex<ModelSession>>>,
    /// The first session's start once it finished (the error as text: it is reported again
    /// by every call).
    started: OnceLock<std::result::Result<Started, String>>,
    /// The start while it runs on a thread of its own ([`ModelOptions::start_in_background`]);
    /// dropping the embedder waits for it (a process must not exit with ONNX Runtime busy
    /// on another thread: its teardown would pull the library from under it).
    starting: Mutex<Option<JoinHandle<Result<FirstSession>>>>,
    output: Output,
    id: String,
    batch_size: usize,
    calibration: (f32, f32),
    name: String,
}

/// The first session and what its start established for the others.
type FirstSession = (ModelSession, Started);

/// What starting the first session established for the others.
struct Started {
    dim: usize,
    source: Source,
    env: Environment,
    tokenizer: Arc<Tokenizer>,
}

/// What a session's graph comes from.
enum Source {
    /// The optimized graph saved for the model ([`graph`]), held in memory: every session runs
    /// from these bytes.
    Graph(GraphBytes),
    /// The model's own `model.onnx`, read for each session; it must still hash to what the
    /// first session read.
    Model { path: PathBuf, hash: blake3::Hash },
}

impl Source {
    /// A new session of the model: from the graph in memory, else from `model.onnx` (an error
    /// when it changed since the model was loaded).
    fn session(
        &self,
        env: &Environment,
        tokenizer: &Arc<Tokenizer>,
        output: &Output,
    ) -> std::result::Result<ModelSession, String> {
        let new = |graph| ModelSession::new(env, graph, Arc::clone(tokenizer), output.clone());
        match self {
            Source::Graph(bytes) => new(GraphSource::Ort(bytes)),
            Source::Model { path, hash } => new(GraphSource::Onnx(&read_model(path, hash)?)),
        }
    }
}

/// The bytes of `model.onnx` at `path`; an error when they no longer hash to `hash`.
fn read_model(path: &Path, hash: &blake3::Hash) -> std::result::Result<Vec<u8>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if blake3::hash(&bytes) != *hash {
        return Err(format!(
            "{} changed since the model was loaded",
            path.display()
        ));
    }
    Ok(bytes)
}

impl Drop for FastEmbedder {
    fn drop(&mut self) {
        let handle = self
            .starting
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(h) = handle {
            let _ = h.join();
        }
    }
}

impl fmt::Debug for FastEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FastEmbedder")
            .field("id", &self.id)
            .field("batch_size", &self.batch_size)
            .finish()
    }
}

/// How to run a model: token limit, batch size, parallel sessions and where optimized graphs
/// are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelOptions {
    /// Tokens per text; longer texts are truncated.
    pub max_tokens: usize,
    pub batch_size: usize,
    /// Single-threaded ONNX Runtime sessions embedding side by side (`None`: one per core).
    pub threads: Option<usize>,
    /// Directory of saved optimized graphs (`None`: every session optimizes the model
    /// itself). Default: `<user cache>/graphs`.
    pub graph_cache: Option<PathBuf>,
    /// Start ONNX Runtime and the first session on a thread of their own, so the caller
    /// works meanwhile (a one-shot query opens its index and walks the repository while the
    /// model starts): a failure to start is then reported by `embed`, not by the load.
    pub start_in_background: bool,
}

impl Default for ModelOptions {
    fn default() -> ModelOptions {
        ModelOptions {
            max_tokens: SemanticConfig::default().max_tokens,
            batch_size: DEFAULT_BATCH_SIZE,
            threads: None,
            graph_cache: user_cache_dir().map(|c| c.join("graphs")),
            start_in_background: false,
        }
    }
}

impl FastEmbedder {
    /// Loads the model in `dir` with the default options.
    pub fn new(dir: &Path) -> Result<FastEmbedder> {
        FastEmbedder::with_options(dir, ModelOptions::default())
    }

    /// Loads the model in `dir`. Every failure is an `Error::Model` naming the file at fault
    /// (or `Error::NoModel` when `dir` does not exist). A process loads ONNX Runtime once:
    /// later calls reuse the library the first one loaded.
    pub fn with_options(dir: &Path, options: ModelOptions) -> Result<FastEmbedder> {
        check_model_dir(dir)?;
        let manifest = ModelManifest::read(dir)?;
        let tokenizer_files = read_tokenizer_files(dir)?;
        let onnx_path = dir.join("model.onnx");
        let onnx_hash = graph::model_hash(options.graph_cache.as_deref(), &onnx_path)
            .map_err(|e| Error::io(&onnx_path, e))?;
        // The id names the model by content and the token limit, so replacing model.onnx or
        // changing max-tokens invalidates stored vectors even when the name stays the same.
        let id = format!(
            "fastembed-{}-{}-t{}",
            manifest.name,
            &onnx_hash.to_hex()[..16],
            options.max_tokens
        );
        let output = Output {
            key: OutputKey::ByName(leak(&manifest.output)),
            pooling: if manifest.pooling == "cls" {
                Pooling::Cls
            } else {
                Pooling::Mean
            },
        };
        let workers = options
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .max(1);
        let sessions: Vec<OnceLock<Mutex<ModelSession>>> =
            (0..workers).map(|_| OnceLock::new()).collect();
        let (started, starting) = (OnceLock::new(), Mutex::new(None));
        let start = {
            let (dir, output, name) = (dir.to_path_buf(), output.clone(), manifest.name.clone());
            let options = options.clone();
            move || start(&dir, tokenizer_files, &output, &name, onnx_hash, &options)
        };
        if options.start_in_background {
            let handle = std::thread::Builder::new()
                .name("acms-model-start".into())
                .spawn(start)
                .map_err(|e| Error::Embed(format!("cannot start the model: {e}")))?;
            *starting.lock().unwrap_or_else(PoisonError::into_inner) = Some(handle);
        } else {
            let (session, first) = start()?;
            let _ = sessions[0].set(Mutex::new(session));
            let _ = started.set(Ok(first));
        }
        Ok(FastEmbedder {
            sessions,
            started,
            starting,
            output,
            id,
            // Alone, a text's vector never depends on which texts it was embedded with (the
            // index stays the same whether built at once or incrementally).
            batch_size: if manifest.dynamic_quantization {
                1
            } else {
                options.batch_size.max(1)
            },
            calibration: (manifest.cosine_unrelated, manifest.cosine_related),
            name: manifest.name,
        })
    }

    /// The first session's start, waiting for it when it runs in the background.
    fn started(&self) -> Result<&Started> {
        let done = self.started.get_or_init(|| {
            let handle = self
                .starting
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            match handle.map(JoinHandle::join) {
                Some(Ok(Ok((session, first)))) => {
                    let _ = self.sessions[0].set(Mutex::new(session));
                    Ok(first)
                }
                Some(Ok(Err(e))) => Err(e.to_string()),
                Some(Err(_)) => Err("the model loader panicked".into()),
                None => Err("the model was never started".into()),
            }
        });
        done.as_ref()
            .map_err(|e| Error::Embed(format!("the model did not start: {e}")))
    }

    /// The model's name (from its manifest).
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Starts ONNX Runtime and the first session of the model `name` in `dir` (whose
/// `model.onnx` hashes to `onnx_hash`): from its saved optimized graph when there is one or it
/// can be made, else from the model itself (also when ONNX Runtime rejects the saved graph,
/// which is then dropped).
fn start(
    dir: &Path,
    tokenizer_files: TokenizerFiles,
    output: &Output,
    name: &str,
    onnx_hash: blake3::Hash,
    options: &ModelOptions,
) -> Result<FirstSession> {
    let onnx_path = dir.join("model.onnx");
    // The tokenizer (~20 ms of JSON) is set up while ONNX Runtime loads and the graph maps.
    let (tokenizer, loaded) = std::thread::scope(|scope| {
        let tokenizer = scope.spawn(|| {
            crate::session::tokenizer(&tokenizer_files, options.max_tokens)
                .map_err(|e| model_err(dir, Some(&dir.join(e.file)), e.message))
        });
        let loaded = load_runtime(dir).map(|(env, runtime)| {
            let saved = options
                .graph_cache
                .as_deref()
                .ok_or_else(|| "no graph cache".to_string())
                .and_then(|cache| {
                    let path = graph::graph_path(cache, name, &onnx_hash, &runtime);
                    graph::optimized(&env, || read_model(&onnx_path, &onnx_hash), &path)
                });
            (env, saved)
        });
        let tokenizer = tokenizer
            .join()
            .unwrap_or_else(|_| Err(model_err(dir, None, "the tokenizer setup panicked")));
        (tokenizer, loaded)
    });
    let (env, saved) = loaded?;
    let tokenizer = Arc::new(tokenizer?);
    let started = |source: Source| {
        let first = first_session(dir, &source, &env, &tokenizer, output)?;
        Ok::<_, Error>((first, source))
    };
    let model = Source::Model {
        path: onnx_path,
        hash: onnx_hash,
    };
    let ((session, dim), source) = match saved {
        Ok(g) => match started(Source::Graph(g.bytes)) {
            Ok(made) => made,
            Err(_) => {
                let _ = std::fs::remove_file(&g.path);
                started(model)?
            }
        },
        Err(_) => started(model)?,
    };
    Ok((
        session,
        Started {
            dim,
            source,
            env,
            tokenizer,
        },
    ))
}

/// `dir` exists and holds every model file ([`missing_model_files`]).
fn check_model_dir(dir: &Path) -> Result<()> {
    if !dir.is_dir() {
        return Err(Error::NoModel {
            dir: dir.to_path_buf(),
        });
    }
    let missing = missing_model_files(dir);
    if !missing.is_empty() {
        return Err(model_err(
            dir,
            None,
            format!("missing {}", missing.join(", ")),
        ));
    }
    Ok(())
}

/// The bytes of the model directory's file `name`.
fn read_model_file(dir: &Path, name: &str) -> Result<Vec<u8>> {
    let p = dir.join(name);
    std::fs::read(&p).map_err(|e| Error::io(p, e))
}

const TOKENIZER_FILES: [&str; 4] = [
    "tokenizer.json",
    "config.json",
    "special_tokens_map.json",
    "tokenizer_config.json",
];

/// The four tokenizer files.
fn read_tokenizer_files(dir: &Path) -> Result<TokenizerFiles> {
    let [
        tokenizer_file,
        config_file,
        special_tokens_map_file,
        tokenizer_config_file,
    ] = TOKENIZER_FILES;
    Ok(TokenizerFiles {
        tokenizer_file: read_model_file(dir, tokenizer_file)?,
        config_file: read_model_file(dir, config_file)?,
        special_tokens_map_file: read_model_file(dir, special_tokens_map_file)?,
        tokenizer_config_file: read_model_file(dir, tokenizer_config_file)?,
    })
}

/// Loads the ONNX Runtime library for the model in `dir` into the process (once: later calls
/// check their library and reuse the first), and the one environment every session runs in.
fn load_runtime(dir: &Path) -> Result<(Environment, PathBuf)> {
    static ENVIRONMENT: Mutex<Option<Environment>> = Mutex::new(None);
    let Some((lib, named_by_user)) = runtime_for(dir) else {
        return Err(model_err(dir, None, "missing libonnxruntime.so.*"));
    };
    // Native code: loaded only when it is the pinned build (the user's own
    // ORT_DYLIB_PATH excepted).
    if !named_by_user && let Err(e) = acms_model::check_runtime(&lib) {
        return Err(model_err(
            dir,
            Some(&lib),
            format!(
                "not the pinned ONNX Runtime {} ({e}): run `acms model fetch` to \
                 install it, or name another build in ORT_DYLIB_PATH",
                acms_model::catalog::ORT_VERSION
            ),
        ));
    }
    // Without this call `ort` would look for the library on its own and panic when it is
    // absent; `init_from` reports the failure instead.
    let cannot = |e: String| model_err(dir, Some(&lib), format!("cannot load ONNX Runtime: {e}"));
    let builder = ort::init_from(&lib).map_err(|e| cannot(e.to_string()))?;
    let mut kept = ENVIRONMENT.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(env) = kept.as_ref() {
        return Ok((env.clone(), lib));
    }
    let env = builder.build().map_err(|e| cannot(e.to_string()))?;
    Ok((kept.insert(env).clone(), lib))
}

/// The first session, from `source`, and the dimension of its vectors. The dimension is
/// whatever the model produces; probing once also proves the output name and pooling work
/// before anyone relies on this embedder.
fn first_session(
    dir: &Path,
    source: &Source,
    env: &Environment,
    tokenizer: &Arc<Tokenizer>,
    output: &Output,
) -> Result<(ModelSession, usize)> {
    let onnx_path = dir.join("model.onnx");
    let mut session = source.session(env, tokenizer, output).map_err(|e| {
        model_err(
            dir,
            Some(&onnx_path),
            format!("ONNX Runtime cannot load it: {e}"),
        )
    })?;
    let probe = session.embed(&["probe"]).map_err(|e| {
        model_err(
            dir,
            Some(&onnx_path),
            format!("the model does not run: {e}"),
        )
    })?;
    let dim = probe.first().map_or(0, Vec::len);
    if dim == 0 {
        return Err(model_err(
            dir,
            Some(&onnx_path),
            "the model produced an empty embedding",
        ));
    }
    Ok((session, dim))
}

impl FastEmbedder {
    /// Session `k`, created on first use.
    fn session(&self, k: usize) -> Result<&Mutex<ModelSession>> {
        let started = self.started()?;
        let cell = &self.sessions[k];
        if let Some(s) = cell.get() {
            return Ok(s);
        }
        let made = started
            .source
            .session(&started.env, &started.tokenizer, &self.output)
            .map_err(|e| Error::Embed(format!("cannot start another model session: {e}")))?;
        // Two callers may race to make it: one session wins, the other is dropped.
        Ok(cell.get_or_init(|| Mutex::new(made)))
    }

    /// Embeds `texts` on session `k`, waiting for it if another call holds it.
    fn embed_on(&self, k: usize, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        // A panic inside another embed call poisons the mutex but leaves the session usable:
        // ONNX Runtime runs are independent.
        let mut model = self.session(k)?.lock().unwrap_or_else(|p| p.into_inner());
        self.run(&mut model, texts)
    }

    /// Embeds `texts` on the first session no other call holds, starting another one when
    /// every started session is busy (up to one per core): concurrent queries need not queue
    /// on one session, and a lone query never starts a second.
    fn embed_on_free(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let free = self
            .sessions
            .iter()
            .filter_map(OnceLock::get)
            .find_map(|s| match s.try_lock() {
                Ok(model) => Some(model),
                Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
                Err(TryLockError::WouldBlock) => None,
            });
        if let Some(mut model) = free {
            return self.run(&mut model, texts);
        }
        match self.sessions.iter().position(|s| s.get().is_none()) {
            Some(k) => self.embed_on(k, texts),
            None => self.embed_on(0, texts),
        }
    }

    fn run(&self, model: &mut ModelSession, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(self.batch_size) {
            out.extend(model.embed(batch).map_err(Error::Embed)?);
        }
        Ok(out)
    }
}

/// fastembed's pooling wants the output name as `&'static str`. Models are loaded a handful of times per
/// process, and the names are a few bytes.
fn leak(s: &str) -> &'static str {
    Box::leak(s.to_string().into_boxed_str())
}

impl Embedder for FastEmbedder {
    fn id(&self) -> &str {
        &self.id
    }

    /// Waits for a start in the background; 0 when the model did not start.
    fn dim(&self) -> usize {
        self.started().map_or(0, |s| s.dim)
    }

    fn calibration(&self) -> (f32, f32) {
        self.calibration
    }

    fn failed(&self) -> bool {
        matches!(self.started.get(), Some(Err(_)))
    }

    fn starting(&self) -> bool {
        self.started.get().is_none()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let workers = self
            .sessions
            .len()
            .min(texts.len().div_ceil(self.batch_size));
        let out = if workers <= 1 {
            self.embed_on_free(texts)?
        } else {
            // Worker k takes texts k, k + n, k + 2n, …: callers sort texts by length, so
            // every worker gets an even share of long and short ones.
            let shares: Vec<Vec<&str>> = (0..workers)
                .map(|k| texts.iter().skip(k).step_by(workers).copied().collect())
                .collect();
            let results: Vec<Result<Vec<Vec<f32>>>> = std::thread::scope(|scope| {
                let handles: Vec<_> = shares
                    .iter()
                    .enumerate()
                    .map(|(k, share)| scope.spawn(move || self.embed_on(k, share)))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join().unwrap_or_else(|_| {
                            Err(Error::Embed("an embedding worker panicked".into()))
                        })
                    })
                    .collect()
            });
            let mut per_worker = Vec::with_capacity(workers);
            for r in results {
                per_worker.push(r?.into_iter());
            }
            let mut out = Vec::with_capacity(texts.len());
            for i in 0..texts.len() {
                out.extend(per_worker[i % workers].next());
            }
            out
        };
        let dim = self.started()?.dim;
        if out.len() != texts.len() || out.iter().any(|v| v.len() != dim) {
            return Err(Error::Embed(format!(
                "model returned {} vectors for {} texts",
                out.len(),
                texts.len()
            )));
        }
        Ok(out)
    }
}

/// An embedder ready to use, and the one line that says which it is.
pub struct LoadedEmbedder {
    pub embedder: Box<dyn Embedder>,
    pub description: String,
}

impl fmt::Debug for LoadedEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.description)
    }
}

/// The embedder `config` asks for: the built-in `HashEmbedder` when `embedder = "hash"`, else
/// the fastembed model located by [`locate_model`]. Never panics (a panic in the foreign model
/// code becomes an error); never falls back to the hashing embedder.
pub fn load_embedder(config: &SemanticConfig) -> Result<LoadedEmbedder> {
    load(config, false)
}

/// [`load_embedder`], with the model's session started on a thread of its own
/// ([`ModelOptions::start_in_background`]): what a query uses, so that its model starts
/// while the index opens and the repository is walked.
pub fn load_embedder_in_background(config: &SemanticConfig) -> Result<LoadedEmbedder> {
    load(config, true)
}

fn load(config: &SemanticConfig, start_in_background: bool) -> Result<LoadedEmbedder> {
    if config.embedder == EmbedderKind::Hash {
        let e = HashEmbedder::default();
        return Ok(LoadedEmbedder {
            description: format!(
                "embeddings: built-in hashing embedder {} (chosen by configuration; lexical \
                 overlap only)",
                e.id()
            ),
            embedder: Box::new(e),
        });
    }
    let (dir, source) = locate_model(config)?;
    let options = ModelOptions {
        max_tokens: config.max_tokens,
        start_in_background,
        ..ModelOptions::default()
    };
    // ONNX Runtime and the tokenizer are foreign code fed with files we did not write; a panic
    // in there must not take the caller down with it.
    let model = catch_unwind(AssertUnwindSafe(|| {
        FastEmbedder::with_options(&dir, options)
    }))
    .map_err(|_| model_err(&dir, None, "the model loader panicked"))??;
    let why = match source {
        ModelSource::Config => "configured model-dir",
        ModelSource::Environment => MODEL_DIR_ENV,
        ModelSource::Cache => "user model cache",
    };
    Ok(LoadedEmbedder {
        description: format!(
            "embeddings: model {} ({}) from {} ({why})",
            model.name(),
            model.id(),
            dir.display()
        ),
        embedder: Box::new(model),
    })
}

#[cfg(test)]
mod tests {
    use fastembed::{InitOptionsUserDefined, TextEmbedding, UserDefinedEmbeddingModel};

    use super::*;

    /// The vectors fastembed's own session computes from `model.onnx`: what every index built
    /// before the sessions were ours holds.
    fn fastembeds(dir: &Path, texts: &[&str], batch: usize) -> Vec<Vec<f32>> {
        let (env, _) = load_runtime(dir).unwrap();
        let manifest = ModelManifest::read(dir).unwrap();
        let mut model = UserDefinedEmbeddingModel::new(
            std::fs::read(dir.join("model.onnx")).unwrap(),
            read_tokenizer_files(dir).unwrap(),
        )
        .with_pooling(Pooling::Mean);
        model.output_key = Some(OutputKey::ByName(leak(&manifest.output)));
        let options = InitOptionsUserDefined::new()
            .with_max_length(SemanticConfig::default().max_tokens)
            .with_intra_threads(1)
            .with_environment(env);
        let mut session = TextEmbedding::try_new_from_user_defined(model, options).unwrap();
        session.embed(texts, Some(batch)).unwrap()
    }

    /// Sessions from the saved graph in ONNX Runtime's format, and from `model.onnx`, give
    /// fastembed's vectors bit for bit: alone and in padded batches, for texts past the token
    /// limit, empty, non-Latin, or spelling special tokens. So stored vectors stay valid.
    #[test]
    fn the_vectors_are_the_ones_fastembed_computes() {
        let dir = cached_model_dir(acms_core::DEFAULT_MODEL).unwrap();
        if !dir.join(MANIFEST_FILE).is_file() {
            panic!(
                "the default model is not installed in {}: run `scripts/fetch-model.sh`",
                dir.display()
            );
        }
        let long = "word ".repeat(400);
        let texts = [
            "read the configuration from a toml file",
            "fn load_config(path: &Path) -> Result<Config> { toml::from_str(&text) }",
            long.as_str(),
            "",
            "[CLS] [SEP] [PAD] [MASK] [UNK] <s> 日本語のテキスト émoji 🎉",
            "def count_tokens(text): return len(tokenizer.encode(text))",
        ];
        let want_alone = fastembeds(&dir, &texts, 1);
        let want_batched = fastembeds(&dir, &texts, 4);
        let graphs = tempfile::tempdir().unwrap();
        for cache in [Some(graphs.path().to_path_buf()), None] {
            let options = ModelOptions {
                graph_cache: cache.clone(),
                ..ModelOptions::default()
            };
            let model = FastEmbedder::with_options(&dir, options).unwrap();
            let alone: Vec<Vec<f32>> = texts
                .iter()
                .map(|t| model.embed(&[t]).unwrap().remove(0))
                .collect();
            assert!(alone == want_alone, "graph cache {cache:?}");
        }
        let saved: Vec<_> = std::fs::read_dir(graphs.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "ort"))
            .collect();
        // Batches (this model runs texts alone: see `dynamic_quantization`), on sessions of
        // either graph.
        let (env, _) = load_runtime(&dir).unwrap();
        let files = read_tokenizer_files(&dir).unwrap();
        let tokenizer = Arc::new(crate::session::tokenizer(&files, 64).ok().unwrap());
        let output = Output {
            key: OutputKey::ByName("last_hidden_state"),
            pooling: Pooling::Mean,
        };
        let onnx = dir.join("model.onnx");
        let sources = [
            Source::Graph(Arc::new(graph::map(&saved[0]).unwrap())),
            Source::Model {
                hash: blake3::hash(&std::fs::read(&onnx).unwrap()),
                path: onnx,
            },
        ];
        for source in sources {
            let mut session = source.session(&env, &tokenizer, &output).unwrap();
            let batched: Vec<Vec<f32>> = texts
                .chunks(4)
                .flat_map(|batch| session.embed(batch).unwrap())
                .collect();
            assert!(batched == want_batched);
        }
        assert_eq!(saved.len(), 1, "{saved:?}");
    }
}
