//! `EmbeddingCache`: vectors keyed by the content hash of the text they embed, so a re-index
//! embeds only texts that changed. Persisted as one sealed file (`embeddings.bin`) next to the
//! vector index.
//!
//! A cache belongs to one embedder id: loading a cache written by another embedder (or a
//! damaged one) yields an empty cache, since a cache miss only costs time. This module does not
//! decide which texts to embed; the caller passes them.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use acms_core::ContentHash;

use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::format::{self, Reader, Writer};

/// The cache file inside an index directory.
pub const CACHE_FILE: &str = "embeddings.bin";
const MAGIC: &[u8; 8] = b"ACMSEMB\n";
const FORMAT_VERSION: u32 = 1;

/// Text vectors keyed by `ContentHash` of the text, for one embedder.
#[derive(Debug, Clone)]
pub struct EmbeddingCache {
    embedder_id: String,
    dim: usize,
    map: HashMap<ContentHash, Vec<f32>>,
}

/// What `EmbeddingCache::load` found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheLoad {
    /// The cache was read.
    Loaded,
    /// No cache file: a first index run.
    Missing,
    /// The file belongs to another embedder (the model changed): every text is re-embedded.
    OtherEmbedder { found: String },
    /// The file was damaged; the message names it. Worth a warning, not a failure.
    Damaged(String),
}

impl EmbeddingCache {
    /// An empty cache for `embedder`.
    pub fn new(embedder: &dyn Embedder) -> EmbeddingCache {
        EmbeddingCache {
            embedder_id: embedder.id().to_string(),
            dim: embedder.dim(),
            map: HashMap::new(),
        }
    }

    pub fn embedder_id(&self) -> &str {
        &self.embedder_id
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn get(&self, hash: &ContentHash) -> Option<&[f32]> {
        self.map.get(hash).map(Vec::as_slice)
    }

    /// Stores `vector` for `hash`; a vector of the wrong length is refused.
    pub fn insert(&mut self, hash: ContentHash, vector: Vec<f32>) -> Result<()> {
        if vector.len() != self.dim {
            return Err(Error::Dimension {
                expected: self.dim,
                found: vector.len(),
            });
        }
        self.map.insert(hash, vector);
        Ok(())
    }

    /// Keeps only entries whose hash satisfies `keep` (drop texts that no longer exist).
    pub fn retain(&mut self, mut keep: impl FnMut(&ContentHash) -> bool) {
        self.map.retain(|h, _| keep(h));
    }

    /// Vectors for `texts` in order: cached ones are reused, the rest are embedded in one
    /// batch by `embedder` and added to the cache. Returns the vectors and how many texts were
    /// actually embedded.
    pub fn embed(
        &mut self,
        embedder: &dyn Embedder,
        texts: &[&str],
    ) -> Result<(Vec<Vec<f32>>, usize)> {
        if embedder.id() != self.embedder_id || embedder.dim() != self.dim {
            // A cache of another model would hand out vectors from the wrong space.
            self.embedder_id = embedder.id().to_string();
            self.dim = embedder.dim();
            self.map.clear();
        }
        let hashes: Vec<ContentHash> = texts
            .iter()
            .map(|t| ContentHash::of(t.as_bytes()))
            .collect();
        let mut todo: Vec<usize> = Vec::new();
        let mut queued: HashSet<&ContentHash> = HashSet::new();
        for (i, h) in hashes.iter().enumerate() {
            // The same text twice in one call is embedded once.
            if !self.map.contains_key(h) && queued.insert(h) {
                todo.push(i);
            }
        }
        if !todo.is_empty() {
            let batch: Vec<&str> = todo.iter().map(|&i| texts[i]).collect();
            let vectors = embedder.embed(&batch)?;
            if vectors.len() != batch.len() {
                return Err(Error::Embed(format!(
                    "embedder returned {} vectors for {} texts",
                    vectors.len(),
                    batch.len()
                )));
            }
            for (&i, v) in todo.iter().zip(vectors) {
                self.insert(hashes[i].clone(), v)?;
            }
        }
        let out = hashes
            .iter()
            .map(|h| self.map.get(h).cloned().unwrap_or_default())
            .collect();
        Ok((out, todo.len()))
    }

    /// Writes the cache to `dir/embeddings.bin` atomically (entries sorted by hash, so the same
    /// cache always gives the same bytes).
    pub fn save(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let mut entries: Vec<(&ContentHash, &Vec<f32>)> = self.map.iter().collect();
        entries.sort_by(|a, b| a.0.cmp(b.0));
        let mut w = Writer::new(MAGIC, FORMAT_VERSION);
        w.reserve(entries.len() * (self.dim * 4 + 72) + 64);
        w.str(&self.embedder_id);
        w.u32(self.dim as u32);
        w.u64(entries.len() as u64);
        for (h, v) in entries {
            w.str(&h.0);
            w.f32s(v);
        }
        format::write_atomic(&dir.join(CACHE_FILE), &w.seal())
    }

    /// The cache in `dir` for `embedder`, or an empty one (with the reason) when there is none,
    /// it belongs to another embedder, or it is damaged. Never fails: the cache is an
    /// optimization.
    pub fn load(dir: &Path, embedder: &dyn Embedder) -> (EmbeddingCache, CacheLoad) {
        let empty = EmbeddingCache::new(embedder);
        let path = dir.join(CACHE_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return (empty, CacheLoad::Missing);
            }
            Err(e) => return (empty, CacheLoad::Damaged(Error::io(&path, e).to_string())),
        };
        match parse(&path, &bytes, embedder) {
            Ok(Ok(cache)) => (cache, CacheLoad::Loaded),
            Ok(Err(found)) => (empty, CacheLoad::OtherEmbedder { found }),
            Err(e) => (empty, CacheLoad::Damaged(e.to_string())),
        }
    }
}

/// `Ok(Err(id))` when the file is intact but belongs to embedder `id`.
fn parse(
    path: &Path,
    bytes: &[u8],
    embedder: &dyn Embedder,
) -> Result<std::result::Result<EmbeddingCache, String>> {
    let mut r = Reader::open(path, bytes, MAGIC, FORMAT_VERSION)?;
    let id = r.str()?;
    let dim = r.u32()? as usize;
    if id != embedder.id() || dim != embedder.dim() {
        return Ok(Err(id));
    }
    let n = r.len(dim * 4 + 4)?;
    let mut map = HashMap::with_capacity(n);
    for _ in 0..n {
        let h = ContentHash(r.str()?);
        map.insert(h, r.f32s(dim)?);
    }
    r.finish()?;
    Ok(Ok(EmbeddingCache {
        embedder_id: id,
        dim,
        map,
    }))
}
