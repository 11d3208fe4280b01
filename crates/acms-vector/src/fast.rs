//! The real sentence-embedding model (`FastEmbedder`: fastembed over ONNX Runtime, loaded from
//! a local directory) and `load_embedder`, which picks it or falls back to the `HashEmbedder`.
//!
//! The model directory is the flat one `scripts/fetch-model.sh` produces: `model.onnx`
//! (paraphrase-MiniLM-L3-v2), the four tokenizer files and `libonnxruntime.so.<version>`.
//! Nothing here downloads anything: a missing or broken directory means the built-in embedder,
//! reported through `EmbedderChoice` so the caller can log one line.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use fastembed::{
    InitOptionsUserDefined, OutputKey, Pooling, TextEmbedding, TokenizerFiles,
    UserDefinedEmbeddingModel,
};

use crate::embed::{Embedder, HashEmbedder};
use crate::error::{Error, Result};

/// Files a model directory must hold besides `libonnxruntime.so.*`.
pub const MODEL_FILES: [&str; 5] = [
    "model.onnx",
    "tokenizer.json",
    "config.json",
    "special_tokens_map.json",
    "tokenizer_config.json",
];

/// Environment variable naming the model directory when the caller passes none.
pub const MODEL_DIR_ENV: &str = "ACMS_MODEL_DIR";

/// The ONNX output holding per-token embeddings in the paraphrase-MiniLM-L3-v2 export. Its
/// other output, `output`, is not the sentence embedding; `461` mean-pooled over the attention
/// mask is (verified against sentence-transformers on this model).
const TOKEN_EMBEDDINGS_OUTPUT: &str = "461";

/// Texts per ONNX Runtime run. Larger batches amortize the per-run overhead but pad every text
/// to the longest one in the batch and work on bigger activations; 16 was the fastest of
/// 16/32/64/128/256 on short code snippets (docs/BENCHMARKS.md), 256 (fastembed's default)
/// the slowest.
pub const DEFAULT_BATCH_SIZE: usize = 16;

/// Token limit per text: MiniLM was trained on 128-token inputs; longer inputs cost quadratic
/// attention time for little gain on signature + doc renderings.
const MAX_TOKENS: usize = 256;

/// fastembed running a local ONNX sentence-embedding model.
pub struct FastEmbedder {
    // `TextEmbedding::embed` takes `&mut self`; ONNX Runtime already spreads one run over all
    // cores (intra-op threads), so one session behind a mutex uses the machine fully.
    model: Mutex<TextEmbedding>,
    id: String,
    dim: usize,
    batch_size: usize,
}

impl fmt::Debug for FastEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FastEmbedder")
            .field("id", &self.id)
            .field("dim", &self.dim)
            .field("batch_size", &self.batch_size)
            .finish()
    }
}

fn model_err(dir: &Path, message: impl Into<String>) -> Error {
    Error::Model {
        dir: dir.to_path_buf(),
        message: message.into(),
    }
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

/// Why `dir` is not a complete model directory, or `None` when it is.
pub fn missing_model_files(dir: &Path) -> Option<String> {
    if !dir.is_dir() {
        return Some("directory does not exist".into());
    }
    let mut missing: Vec<&str> = MODEL_FILES
        .iter()
        .copied()
        .filter(|f| !dir.join(f).is_file())
        .collect();
    if find_onnxruntime(dir).is_none() && std::env::var_os("ORT_DYLIB_PATH").is_none() {
        missing.push("libonnxruntime.so.*");
    }
    (!missing.is_empty()).then(|| format!("missing {}", missing.join(", ")))
}

impl FastEmbedder {
    /// Loads the model in `dir` with all cores and the default batch size.
    ///
    /// ONNX Runtime is loaded from `ORT_DYLIB_PATH` when set, else from the
    /// `libonnxruntime.so.*` in `dir`. A process loads ONNX Runtime once: later calls reuse the
    /// library the first one loaded.
    pub fn new(dir: &Path) -> Result<FastEmbedder> {
        FastEmbedder::with_options(dir, DEFAULT_BATCH_SIZE, None)
    }

    /// Like `new`, with an explicit batch size and ONNX Runtime thread count (`None`: one per
    /// core).
    pub fn with_options(
        dir: &Path,
        batch_size: usize,
        threads: Option<usize>,
    ) -> Result<FastEmbedder> {
        if let Some(why) = missing_model_files(dir) {
            return Err(model_err(dir, why));
        }
        let lib = std::env::var_os("ORT_DYLIB_PATH")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .or_else(|| find_onnxruntime(dir))
            .ok_or_else(|| model_err(dir, "no libonnxruntime.so.*"))?;
        // Without this call `ort` would look for the library on its own and panic when it is
        // absent; `init_from` reports the failure instead. The returned environment builder is
        // not needed: sessions use the default environment.
        let _env = ort::init_from(&lib)
            .map_err(|e| model_err(dir, format!("cannot load ONNX Runtime: {e}")))?;

        let read = |name: &str| -> Result<Vec<u8>> {
            let p = dir.join(name);
            std::fs::read(&p).map_err(|e| Error::io(p, e))
        };
        let onnx = read("model.onnx")?;
        // The id names the model by content, so replacing model.onnx invalidates stored
        // vectors even when the file name stays the same.
        let id = format!(
            "fastembed-onnx-mean-{}",
            &blake3::hash(&onnx).to_hex()[..16]
        );
        let tokenizer_files = TokenizerFiles {
            tokenizer_file: read("tokenizer.json")?,
            config_file: read("config.json")?,
            special_tokens_map_file: read("special_tokens_map.json")?,
            tokenizer_config_file: read("tokenizer_config.json")?,
        };
        let model = UserDefinedEmbeddingModel::new(onnx, tokenizer_files)
            .with_pooling(Pooling::Mean)
            .output_key_name(TOKEN_EMBEDDINGS_OUTPUT);
        let mut options = InitOptionsUserDefined::new().with_max_length(MAX_TOKENS);
        if let Some(t) = threads {
            options = options.with_intra_threads(t.max(1));
        }
        let mut model = TextEmbedding::try_new_from_user_defined(model, options)
            .map_err(|e| model_err(dir, format!("cannot load model: {e}")))?;
        // The dimension is whatever the model produces; probing once also proves the output
        // name and pooling work before anyone relies on this embedder.
        let probe = model
            .embed(["probe"], None)
            .map_err(|e| model_err(dir, format!("model does not run: {e}")))?;
        let dim = probe.first().map_or(0, Vec::len);
        if dim == 0 {
            return Err(model_err(dir, "model produced an empty embedding"));
        }
        Ok(FastEmbedder {
            model: Mutex::new(model),
            id,
            dim,
            batch_size: batch_size.max(1),
        })
    }
}

/// `UserDefinedEmbeddingModel` has no builder method for the output key; this keeps the
/// construction above a single expression.
trait OutputKeyExt {
    fn output_key_name(self, name: &'static str) -> Self;
}

impl OutputKeyExt for UserDefinedEmbeddingModel {
    fn output_key_name(mut self, name: &'static str) -> Self {
        self.output_key = Some(OutputKey::ByName(name));
        self
    }
}

impl Embedder for FastEmbedder {
    fn id(&self) -> &str {
        &self.id
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        // A panic inside another embed call poisons the mutex but leaves the session usable:
        // ONNX Runtime runs are independent.
        let mut model = self.model.lock().unwrap_or_else(|p| p.into_inner());
        let out = model
            .embed(texts, Some(self.batch_size))
            .map_err(|e| Error::Embed(e.to_string()))?;
        if out.len() != texts.len() || out.iter().any(|v| v.len() != self.dim) {
            return Err(Error::Embed(format!(
                "model returned {} vectors for {} texts",
                out.len(),
                texts.len()
            )));
        }
        Ok(out)
    }
}

/// Which embedder `load_embedder` chose, and why; `Display` is the one log line.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EmbedderChoice {
    /// The real model from this directory.
    Model { dir: PathBuf, id: String },
    /// The built-in embedder because no model directory was configured.
    BuiltinNoModel,
    /// The built-in embedder because the configured directory is incomplete or failed to load;
    /// `reason` says which (a warning worth showing).
    BuiltinFallback { dir: PathBuf, reason: String },
}

impl EmbedderChoice {
    /// True when the choice deserves a warning (a model was configured but is unusable).
    pub fn is_warning(&self) -> bool {
        matches!(self, EmbedderChoice::BuiltinFallback { .. })
    }
}

impl fmt::Display for EmbedderChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmbedderChoice::Model { dir, id } => {
                write!(f, "embeddings: model {id} from {}", dir.display())
            }
            EmbedderChoice::BuiltinNoModel => write!(
                f,
                "embeddings: built-in hashing embedder (no model configured: set {MODEL_DIR_ENV} \
                 or run scripts/fetch-model.sh for semantic vectors)"
            ),
            EmbedderChoice::BuiltinFallback { dir, reason } => write!(
                f,
                "warning: embeddings: built-in hashing embedder, model in {} unusable: {reason}",
                dir.display()
            ),
        }
    }
}

/// The embedder to use: the fastembed model in `model_dir` (or, when `None`, in
/// `$ACMS_MODEL_DIR`) when that directory is complete and loads, else the `HashEmbedder`.
/// Never fails and never panics: a broken model directory becomes a `BuiltinFallback`.
pub fn load_embedder(model_dir: Option<&Path>) -> (Box<dyn Embedder>, EmbedderChoice) {
    let dir = match model_dir {
        Some(d) => d.to_path_buf(),
        None => match std::env::var_os(MODEL_DIR_ENV).filter(|v| !v.is_empty()) {
            Some(d) => PathBuf::from(d),
            None => {
                return (
                    Box::new(HashEmbedder::default()),
                    EmbedderChoice::BuiltinNoModel,
                );
            }
        },
    };
    let fallback = |reason: String| -> (Box<dyn Embedder>, EmbedderChoice) {
        (
            Box::new(HashEmbedder::default()),
            EmbedderChoice::BuiltinFallback {
                dir: dir.clone(),
                reason,
            },
        )
    };
    if let Some(why) = missing_model_files(&dir) {
        return fallback(why);
    }
    // ONNX Runtime and the tokenizer are foreign code fed with files we did not write; a panic
    // in there must not take the indexer down with it.
    match catch_unwind(AssertUnwindSafe(|| FastEmbedder::new(&dir))) {
        Ok(Ok(model)) => {
            let choice = EmbedderChoice::Model {
                dir: dir.clone(),
                id: model.id().to_string(),
            };
            (Box::new(model), choice)
        }
        Ok(Err(e)) => fallback(e.to_string()),
        Err(_) => fallback("the model loader panicked".into()),
    }
}
