//! Embeddings and the vector store behind the `semantic-embedding` retrieval strategy.
//!
//! - `Embedder` is the seam: `FastEmbedder` runs a real local ONNX sentence model through
//!   fastembed, `HashEmbedder` is a deterministic built-in that needs no download, and
//!   `load_embedder` picks one and says which.
//! - `VectorIndex` stores (u64 id, vector) pairs of one embedder and answers top-k cosine
//!   queries: exact scan below a size threshold, an `hnsw_rs` graph above it. It persists to a
//!   directory atomically and reloads the graph without rebuilding it.
//! - `EmbeddingCache` keys vectors by the content hash of their text so a re-index embeds only
//!   what changed.
//!
//! **Architecture Invariant:** this crate depends on `acms-core` only; it knows nothing of UKO
//! nodes (ids are opaque `u64`s) and never downloads anything.

mod cache;
mod embed;
mod error;
mod fast;
mod format;
mod index;

pub use cache::{CACHE_FILE, CacheLoad, EmbeddingCache};
pub use embed::{Embedder, HashEmbedder, cosine, dot, normalize};
pub use error::{Error, Result};
pub use fast::{
    DEFAULT_BATCH_SIZE, EmbedderChoice, FastEmbedder, MODEL_DIR_ENV, MODEL_FILES, find_onnxruntime,
    load_embedder, missing_model_files,
};
pub use index::{CosineDistance, Hit, IndexParams, VECTORS_FILE, VectorIndex};
