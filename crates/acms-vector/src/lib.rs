//! Embeddings and the vector store behind the `semantic-embedding` retrieval strategy.
//!
//! - `Embedder` is the seam: `FastEmbedder` runs a real local ONNX sentence model (ONNX
//!   Runtime sessions from a saved optimized graph, fastembed's tokenizer setup and pooling:
//!   `session`), `HashEmbedder` is a deterministic built-in for tests and explicit opt-in, and
//!   `load_embedder` builds the one the configuration asks for, or says why it cannot (no
//!   model installed, or which file of it is broken and how to fix it).
//! - `VectorIndex` stores (u64 id, vector) pairs of one embedder and answers top-k cosine
//!   queries: exact scan below a size threshold, an `hnsw_rs` graph above it. It persists to a
//!   directory atomically and reloads the graph without rebuilding it.
//! - `EmbeddingCache` keys vectors by the content hash of their text so a re-index embeds only
//!   what changed.
//!
//! **Architecture Invariant:** this crate depends on `acms-core` only; it knows nothing of UKO
//! nodes (ids are opaque `u64`s), never downloads anything, and never loads a model from a
//! directory the user did not name (configuration, flag, `$ACMS_MODEL_DIR` or their cache).

mod cache;
mod delta;
mod embed;
mod error;
mod fast;
mod format;
mod graph;
mod index;
mod lock;
mod quant;
mod session;

pub use cache::{CACHE_FILE, CacheLoad, EmbeddingCache};
pub use delta::DELTA_FILE;
pub use embed::{Embedder, HashEmbedder, cosine, dot, normalize};
pub use error::{Error, Result};
pub use fast::{
    DEFAULT_BATCH_SIZE, FastEmbedder, LoadedEmbedder, MANIFEST_FILE, MODEL_DIR_ENV, MODEL_FILES,
    ModelManifest, ModelOptions, ModelSource, cached_model_dir, find_onnxruntime, load_embedder,
    load_embedder_in_background, locate_model, locate_onnxruntime, missing_model_files,
    user_cache_dir,
};
pub use index::{CosineDistance, Hit, IndexParams, VECTORS_FILE, VectorIndex};
pub use lock::{LOCK_FILE, VectorLock};
