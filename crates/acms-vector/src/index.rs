//! `VectorIndex`: (u64 id, vector) pairs for one embedder, top-k search by cosine, and its
//! persistence in a directory.
//!
//! Below `IndexParams::exact_scan_below` vectors (default `acms_core::EXACT_SCAN_BELOW`,
//! 200 000) a search is an exact scan: milliseconds, perfect recall, nothing to build or load.
//! At or above it an HNSW graph (`hnsw_rs`) answers instead; HNSW candidates are re-scored with the exact cosine from the
//! stored vectors, so scores never depend on which path answered. The graph is dumped next to
//! the vectors and reloaded as is, never rebuilt on load.
//!
//! Every vector carries a `tag` (a hash of the text it was embedded from), so a caller can tell
//! which stored vectors are still current without re-embedding anything: that is what makes an
//! interrupted embedding run resumable.
//!
//! hnsw_rs cannot delete or update a point, so changes after a build do not touch the graph:
//! the point of a replaced or removed id becomes a tombstone (filtered from graph hits), and
//! ids added or replaced since the build are searched exactly next to the graph. The graph is
//! rebuilt only when these changes pass an eighth of the index.
//!
//! Vectors are kept as int8 with one norm each (`quant`): a quarter of f32's bytes in memory
//! and on disk, scored against the f32 query.
//!
//! On disk (`save`/`load`): `vectors.bin` is the commit point of a full save. It holds a header
//! (format version, embedder id, dim, count, the graph's file names and their checksums), the
//! ids, their tags, the int8 vectors, their norms and a blake3 checksum, and is replaced
//! atomically (version 2, with f32 vectors, is still read). Graph files
//! get a fresh name per save and are written before `vectors.bin`, so a save killed at any
//! point leaves the previous `vectors.bin` and the graph files it names intact. A save of a
//! few changes appends them to `vectors.delta` instead (see `delta`), which `load` replays;
//! the next full save folds the log into `vectors.bin` and removes it.
//!
//! This module does not embed text (see `embed`/`fast`) and does not know what the ids mean.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use hnsw_rs::prelude::{AnnT, Distance, Hnsw, HnswIo};
use rayon::prelude::*;

use crate::delta::{self, Change, DELTA_FILE};
use crate::embed::{Embedder, dot, normalize};
use crate::error::{Error, Result};
use crate::format::{self, Reader, Writer};
use crate::quant;

/// File holding ids, vectors and the header; replacing it commits a save.
pub const VECTORS_FILE: &str = "vectors.bin";
const MAGIC: &[u8; 8] = b"ACMSVEC\n";
/// Version 2 added the per-vector tags, version 3 stores int8 vectors and their norms.
const FORMAT_VERSION: u32 = 3;
/// The f32 layout, read and quantized on load.
const F32_VERSION: u32 = 2;
const GRAPH_PREFIX: &str = "hnsw-";
/// hnsw_rs never creates more layers than this (its `NB_LAYER_MAX`).
const MAX_LAYERS: usize = 16;
/// Above this many vectors an exact scan is split across rayon's threads.
const PARALLEL_SCAN: usize = 8192;
/// Changes since the graph was built (or since `vectors.bin` was written) are kept aside
/// until they pass `1 / FOLD_DIVISOR` of the index; then a save rebuilds and rewrites it all.
const FOLD_DIVISOR: usize = 8;
/// ... but a small index may take this many changes before a full save.
const FOLD_MIN: usize = 64;

fn fold_limit(n: usize) -> usize {
    (n / FOLD_DIVISOR).max(FOLD_MIN)
}

/// Search and graph parameters. Only `max_connections` and `ef_construction` shape a graph;
/// the others apply at query time and may differ between the run that saved and the one that
/// loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexParams {
    /// Below this many vectors searches scan exactly and no graph is built or loaded
    /// (`context.strategies.semantic-embedding.exact-scan-below`).
    pub exact_scan_below: usize,
    /// HNSW neighbours per node (`M`), at most 256.
    pub max_connections: usize,
    /// HNSW candidate list size while building.
    pub ef_construction: usize,
    /// HNSW candidate list size while searching (raised to k when k is larger).
    pub ef_search: usize,
}

impl Default for IndexParams {
    /// Chosen from measurements on 384-dim vectors (docs/BENCHMARKS.md): with M = 16,
    /// ef_construction = 100 and ef_search = 128, recall@10 is 1.0 on clustered vectors (shaped
    /// like real embeddings). Uniform random 384-dim vectors, which have no neighbourhood
    /// structure, are the worst case (recall@10 0.85 at 5k, 0.49 at 20k) — one more reason the
    /// exact scan serves everything below `acms_core::EXACT_SCAN_BELOW`.
    fn default() -> IndexParams {
        IndexParams {
            exact_scan_below: acms_core::EXACT_SCAN_BELOW,
            max_connections: 16,
            ef_construction: 100,
            ef_search: 128,
        }
    }
}

impl IndexParams {
    /// The defaults with the threshold from `context.strategies.semantic-embedding`.
    pub fn from_config(config: &acms_core::SemanticConfig) -> IndexParams {
        IndexParams {
            exact_scan_below: config.exact_scan_below,
            ..IndexParams::default()
        }
    }

    fn validate(&self) -> Result<()> {
        // hnsw_rs exits the process on more than 256 connections; refuse before it sees them.
        if !(2..=256).contains(&self.max_connections) {
            return Err(Error::Config(format!(
                "max_connections {} must be in 2..=256",
                self.max_connections
            )));
        }
        if self.ef_construction == 0 || self.ef_search == 0 {
            return Err(Error::Config(
                "ef_construction and ef_search must be positive".into(),
            ));
        }
        Ok(())
    }
}

/// One search result: the caller's id and the cosine similarity to the query in [-1, 1].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub id: u64,
    pub score: f32,
}

/// `1 - cos` for unit vectors, clamped at 0. hnsw_rs's own `DistDot` asserts `dot <= 1.000002`
/// and would panic on a rounding error; this one cannot.
#[derive(Debug, Default, Clone, Copy)]
pub struct CosineDistance;

impl Distance<f32> for CosineDistance {
    fn eval(&self, va: &[f32], vb: &[f32]) -> f32 {
        (1.0 - dot(va, vb)).max(0.0)
    }
}

type Graph = Hnsw<'static, f32, CosineDistance>;

/// An HNSW graph and how the index has moved on since it was built.
struct GraphState {
    hnsw: Graph,
    /// The id each point was built for (point `p` held slot `p`'s vector at build time).
    ids: Vec<u64>,
    point_of: HashMap<u64, usize>,
    /// Points whose id was replaced or removed since the build: filtered from hits.
    stale: Vec<bool>,
    stale_count: usize,
    /// Ids whose current vector is not a live point (added or replaced since the build):
    /// every search scores them exactly.
    extra: BTreeSet<u64>,
}

impl GraphState {
    fn new(hnsw: Graph, ids: Vec<u64>) -> GraphState {
        let point_of = ids.iter().enumerate().map(|(p, &id)| (id, p)).collect();
        GraphState {
            hnsw,
            stale: vec![false; ids.len()],
            ids,
            point_of,
            stale_count: 0,
            extra: BTreeSet::new(),
        }
    }

    /// Marks the point of `id` (if any) as no longer current.
    fn retire(&mut self, id: u64) {
        if let Some(&p) = self.point_of.get(&id)
            && !self.stale[p]
        {
            self.stale[p] = true;
            self.stale_count += 1;
        }
    }

    /// Changes since the build: tombstones plus exactly searched ids.
    fn drift(&self) -> usize {
        self.stale_count + self.extra.len()
    }
}

/// What the directory an index was loaded from or last saved to holds, so the next save can
/// append to its log instead of rewriting it.
#[derive(Debug, Clone)]
struct Persisted {
    dir: PathBuf,
    /// The checksum sealing `vectors.bin` (the log's base).
    base_sum: [u8; 32],
    base_len: usize,
    /// The graph generation `vectors.bin` names, if any.
    graph_name: Option<String>,
    /// Valid bytes of the log (0: no log for this base yet) and the records in it.
    delta_len: u64,
    delta_records: usize,
    /// Size and mtime of every file of the save, as this index left or found them.
    stamp: Stamp,
    /// `vectors.bin` is in an older format: the next save rewrites it instead of appending.
    outdated: bool,
}

/// A vector as the log holds it: its tag and the unit vector its int8 components stand for.
type Logged = (u64, Vec<f32>);

/// (size, mtime) of `vectors.bin`, the log and the graph files: a cheap way to tell that no
/// one else wrote or damaged the directory since.
type Stamp = Vec<Option<(u64, std::time::SystemTime)>>;

fn stamp(dir: &Path, graph_name: Option<&str>) -> Stamp {
    let mut paths = vec![dir.join(VECTORS_FILE), dir.join(DELTA_FILE)];
    if let Some(name) = graph_name {
        let (g, d) = graph_paths(dir, name);
        paths.extend([g, d]);
    }
    paths
        .iter()
        .map(|p| {
            let m = std::fs::metadata(p).ok()?;
            Some((m.len(), m.modified().ok()?))
        })
        .collect()
}

/// Vectors of one embedder, searchable by cosine. See the module doc for the two search paths
/// and the on-disk layout.
pub struct VectorIndex {
    embedder_id: String,
    dim: usize,
    params: IndexParams,
    /// Caller id of each slot; slot `i` owns `data[i * dim..(i + 1) * dim]`.
    ids: Vec<u64>,
    /// The caller's tag of each slot (the hash of the embedded text; 0 when untagged).
    tags: Vec<u64>,
    slots: HashMap<u64, usize>,
    /// Unit vectors as int8 (`quant`), contiguous so the exact scan streams through memory.
    data: Vec<i8>,
    /// The norm of each slot's int8 components.
    norms: Vec<f32>,
    /// The HNSW graph, data id = the slot at build time (see `GraphState`).
    graph: Option<GraphState>,
    persisted: Option<Persisted>,
    /// Ids upserted or removed since the state in `persisted`.
    dirty: BTreeSet<u64>,
}

impl fmt::Debug for VectorIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VectorIndex")
            .field("embedder_id", &self.embedder_id)
            .field("dim", &self.dim)
            .field("len", &self.ids.len())
            .field("params", &self.params)
            .field(
                "graph",
                &self.graph.as_ref().map(|g| (g.ids.len(), g.drift())),
            )
            .finish()
    }
}

impl VectorIndex {
    /// An empty index for vectors of `embedder_id`, each of length `dim`.
    pub fn new(embedder_id: impl Into<String>, dim: usize, params: IndexParams) -> Result<Self> {
        params.validate()?;
        if dim == 0 {
            return Err(Error::Config("dimension must be positive".into()));
        }
        Ok(VectorIndex {
            embedder_id: embedder_id.into(),
            dim,
            params,
            ids: Vec::new(),
            tags: Vec::new(),
            slots: HashMap::new(),
            data: Vec::new(),
            norms: Vec::new(),
            graph: None,
            persisted: None,
            dirty: BTreeSet::new(),
        })
    }

    /// An empty index matching `embedder`'s id and dimension.
    pub fn for_embedder(embedder: &dyn Embedder, params: IndexParams) -> Result<Self> {
        VectorIndex::new(embedder.id(), embedder.dim(), params)
    }

    pub fn embedder_id(&self) -> &str {
        &self.embedder_id
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    pub fn params(&self) -> IndexParams {
        self.params
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    pub fn contains(&self, id: u64) -> bool {
        self.slots.contains_key(&id)
    }

    /// The stored unit vector of `id`, as its int8 components stand for it.
    pub fn get(&self, id: u64) -> Option<Vec<f32>> {
        self.slots
            .get(&id)
            .map(|&s| quant::dequantize(self.slot(s), self.norms[s]))
    }

    /// Ids in slot order (insertion order, disturbed by removals).
    pub fn ids(&self) -> &[u64] {
        &self.ids
    }

    /// The tag `id` was stored with (see `upsert_tagged`).
    pub fn tag(&self, id: u64) -> Option<u64> {
        self.slots.get(&id).map(|&s| self.tags[s])
    }

    /// True when searches go through the HNSW graph rather than an exact scan.
    pub fn uses_graph(&self) -> bool {
        self.graph.is_some() && self.ids.len() >= self.params.exact_scan_below
    }

    /// Whether `dir` holds exactly what this index last loaded from or saved into it (no
    /// other writer, no damage since, judged by file sizes and times), so a long-lived
    /// process may keep using it instead of loading it again.
    pub fn is_saved_in(&self, dir: &Path) -> bool {
        self.persisted
            .as_ref()
            .is_some_and(|p| p.dir == dir && p.stamp == stamp(dir, p.graph_name.as_deref()))
    }

    /// Whether the directory it was loaded from holds an older file format, which the next
    /// save rewrites (an index run with nothing to embed saves it for that alone).
    pub fn is_outdated(&self) -> bool {
        self.persisted.as_ref().is_some_and(|p| p.outdated)
    }

    /// Vectors changed since the graph was built (replaced or removed points plus ids searched
    /// exactly beside it); 0 without a graph.
    pub fn graph_drift(&self) -> usize {
        self.graph.as_ref().map_or(0, GraphState::drift)
    }

    fn slot(&self, s: usize) -> &[i8] {
        &self.data[s * self.dim..(s + 1) * self.dim]
    }

    /// The cosine of the unit query `q` and slot `s`.
    fn score(&self, q: &[f32], s: usize) -> f32 {
        quant::score(q, self.slot(s), self.norms[s])
    }

    fn check(&self, id: u64, v: &[f32]) -> Result<Vec<f32>> {
        if v.len() != self.dim {
            return Err(Error::Dimension {
                expected: self.dim,
                found: v.len(),
            });
        }
        if v.iter().any(|x| !x.is_finite()) {
            return Err(Error::InvalidVector {
                id,
                reason: "NaN or infinite component",
            });
        }
        let mut v = v.to_vec();
        if !normalize(&mut v) {
            return Err(Error::InvalidVector {
                id,
                reason: "zero vector has no direction",
            });
        }
        Ok(v)
    }

    /// Adds `vector` under `id`, replacing any previous vector of `id`. The vector is stored
    /// normalized. An existing graph is kept: the new vector is searched exactly beside it
    /// until a rebuild (see the module doc).
    pub fn upsert(&mut self, id: u64, vector: &[f32]) -> Result<()> {
        self.upsert_tagged(id, 0, vector)
    }

    /// `upsert` that also records `tag` for `id` (the caller's hash of the embedded text).
    pub fn upsert_tagged(&mut self, id: u64, tag: u64, vector: &[f32]) -> Result<()> {
        let v = self.check(id, vector)?;
        self.put(id, tag, &v);
        Ok(())
    }

    /// Stores the unit vector `v` (already checked) under `id`.
    fn put(&mut self, id: u64, tag: u64, v: &[f32]) {
        self.dirty.insert(id);
        if let Some(g) = &mut self.graph {
            g.retire(id);
            g.extra.insert(id);
        }
        let s = match self.slots.get(&id) {
            Some(&s) => s,
            None => {
                let s = self.ids.len();
                self.ids.push(id);
                self.tags.push(0);
                self.norms.push(0.0);
                self.slots.insert(id, s);
                self.data.resize(self.data.len() + self.dim, 0);
                s
            }
        };
        self.tags[s] = tag;
        self.norms[s] = quant::quantize(v, &mut self.data[s * self.dim..(s + 1) * self.dim]);
    }

    /// Removes `id`; returns whether it was present. Its graph point becomes a tombstone.
    pub fn remove(&mut self, id: u64) -> bool {
        let Some(s) = self.slots.remove(&id) else {
            return false;
        };
        self.dirty.insert(id);
        if let Some(g) = &mut self.graph {
            g.retire(id);
            g.extra.remove(&id);
        }
        let last = self.ids.len() - 1;
        if s != last {
            let moved = self.ids[last];
            self.ids[s] = moved;
            self.tags[s] = self.tags[last];
            self.norms[s] = self.norms[last];
            self.slots.insert(moved, s);
            let (head, tail) = self.data.split_at_mut(last * self.dim);
            head[s * self.dim..(s + 1) * self.dim].copy_from_slice(&tail[..self.dim]);
        }
        self.ids.pop();
        self.tags.pop();
        self.norms.pop();
        self.data.truncate(last * self.dim);
        true
    }

    /// Keeps only the ids for which `keep` is true (for re-indexing: drop vectors of nodes that
    /// no longer exist).
    pub fn retain(&mut self, mut keep: impl FnMut(u64) -> bool) {
        let gone: Vec<u64> = self.ids.iter().copied().filter(|&id| !keep(id)).collect();
        for id in gone {
            self.remove(id);
        }
    }

    /// Builds the HNSW graph when the index is at or above the exact-scan threshold and has
    /// none, or one that no longer matches every vector; drops it below the threshold. Uses
    /// all cores.
    pub fn build_graph(&mut self) {
        let n = self.ids.len();
        if n < self.params.exact_scan_below {
            self.graph = None;
            return;
        }
        // No tombstone and nothing beside the graph: no slot moved since the build either
        // (moving one takes a removal), so point p is still slot p.
        if self.graph.as_ref().is_some_and(|g| g.drift() == 0) {
            return;
        }
        let mut g = Graph::new(
            self.params.max_connections,
            n,
            MAX_LAYERS,
            self.params.ef_construction,
            CosineDistance,
        );
        // The graph keeps its own f32 copy of each point.
        let vectors: Vec<Vec<f32>> = (0..n)
            .map(|s| quant::dequantize(self.slot(s), self.norms[s]))
            .collect();
        let points: Vec<(&[f32], usize)> = vectors.iter().map(|v| v.as_slice()).zip(0..n).collect();
        g.parallel_insert_slice(&points);
        g.set_searching_mode(true);
        self.graph = Some(GraphState::new(g, self.ids.clone()));
    }

    /// The `k` ids most similar to `query` by cosine, best first; ties broken by id so the
    /// order is deterministic. A zero query matches nothing.
    pub fn search(&self, query: &[f32], k: usize) -> Result<Vec<Hit>> {
        if query.len() != self.dim {
            return Err(Error::Dimension {
                expected: self.dim,
                found: query.len(),
            });
        }
        let mut q = query.to_vec();
        if k == 0 || self.ids.is_empty() || !normalize(&mut q) {
            return Ok(Vec::new());
        }
        let scored: Vec<(f32, u64)> = match &self.graph {
            Some(g) if self.uses_graph() => {
                // Ask for a few more neighbours than wanted to make up for tombstones.
                let want = k + g.stale_count.min(k.max(16));
                let ef = self.params.ef_search.max(want);
                let score = |id: u64| self.slots.get(&id).map(|&s| (self.score(&q, s), id));
                let mut scored: Vec<(f32, u64)> = g
                    .hnsw
                    .search(&q, want, ef)
                    .into_iter()
                    .filter(|n| n.d_id < g.ids.len() && !g.stale[n.d_id])
                    .filter_map(|n| score(g.ids[n.d_id]))
                    .collect();
                scored.extend(g.extra.iter().filter_map(|&id| score(id)));
                scored
            }
            _ => self.scan(&q),
        };
        Ok(top_k(scored, k))
    }

    /// The exact search: every stored vector against `q`, in parallel for large indexes.
    pub fn search_exact(&self, query: &[f32], k: usize) -> Result<Vec<Hit>> {
        if query.len() != self.dim {
            return Err(Error::Dimension {
                expected: self.dim,
                found: query.len(),
            });
        }
        let mut q = query.to_vec();
        if k == 0 || !normalize(&mut q) {
            return Ok(Vec::new());
        }
        Ok(top_k(self.scan(&q), k))
    }

    fn scan(&self, q: &[f32]) -> Vec<(f32, u64)> {
        let score = |(s, v): (usize, &[i8])| (quant::score(q, v, self.norms[s]), self.ids[s]);
        if self.ids.len() >= PARALLEL_SCAN {
            self.data
                .par_chunks_exact(self.dim)
                .enumerate()
                .map(score)
                .collect()
        } else {
            self.data
                .chunks_exact(self.dim)
                .enumerate()
                .map(score)
                .collect()
        }
    }

    /// Writes the index into `dir` (created if needed), building the graph first when the
    /// size calls for one. When `dir` holds this index as loaded or last saved and few vectors
    /// changed since, the changes are appended to its log instead and the graph is left as it
    /// is (see the module doc). A killed save loses nothing that was saved before.
    pub fn save(&mut self, dir: &Path) -> Result<()> {
        if self.can_append(dir, true) {
            return self.append_delta(dir);
        }
        self.build_graph();
        self.write(dir, true)
    }

    /// [`VectorIndex::save`] without the log: every vector and the graph written afresh. For
    /// the end of a run that embedded the index from scratch, whose last checkpoints would
    /// otherwise leave up to an eighth of it as f32 records in the log for every load to replay.
    pub fn save_whole(&mut self, dir: &Path) -> Result<()> {
        self.build_graph();
        self.write(dir, true)
    }

    /// Writes the vectors into `dir` without building a graph: a cheap checkpoint while
    /// vectors are still being added (searches of the saved index scan exactly until a `save`
    /// writes the graph). Few changes to a saved index are appended to its log, as by `save`.
    pub fn save_checkpoint(&mut self, dir: &Path) -> Result<()> {
        if self.can_append(dir, false) {
            return self.append_delta(dir);
        }
        self.write(dir, false)
    }

    /// Whether saving into `dir` may append the changes since the last save to the log: `dir`
    /// still holds that save, the log stays small and, when a graph is owed (`with_graph`),
    /// the saved graph stays close enough to the vectors.
    fn can_append(&self, dir: &Path, with_graph: bool) -> bool {
        let Some(p) = &self.persisted else {
            return false;
        };
        if p.outdated
            || p.dir != dir
            || format::read_seal(&dir.join(VECTORS_FILE)).ok() != Some(p.base_sum)
        {
            return false;
        }
        if with_graph && self.ids.len() >= self.params.exact_scan_below {
            let graph_ok = p.graph_name.is_some()
                && self
                    .graph
                    .as_ref()
                    .is_some_and(|g| g.drift() <= fold_limit(self.ids.len()));
            if !graph_ok {
                return false;
            }
        }
        p.delta_records + self.dirty.len() <= fold_limit(p.base_len)
    }

    /// Appends the changes since the last save to the log of `dir` as one batch.
    fn append_delta(&mut self, dir: &Path) -> Result<()> {
        let Some(p) = self.persisted.as_mut() else {
            return Err(Error::Config("no saved index to append to".into()));
        };
        if !self.dirty.is_empty() {
            let dim = self.dim;
            // Logged as the unit vectors the int8 stand for: replayed, they quantize back to
            // the same bytes.
            let changes: Vec<(u64, Option<Logged>)> = self
                .dirty
                .iter()
                .map(|&id| {
                    let put = self.slots.get(&id).map(|&s| {
                        let x = &self.data[s * dim..(s + 1) * dim];
                        (self.tags[s], quant::dequantize(x, self.norms[s]))
                    });
                    (id, put)
                })
                .collect();
            let batch = delta::encode(
                changes
                    .iter()
                    .map(|(id, put)| (*id, put.as_ref().map(|(t, v)| (*t, v.as_slice())))),
                dim,
            );
            p.delta_len = delta::append(&dir.join(DELTA_FILE), p.delta_len, &p.base_sum, &batch)?;
            p.delta_records += self.dirty.len();
            p.stamp = stamp(dir, p.graph_name.as_deref());
            self.dirty.clear();
        }
        remove_stale_graphs(dir, p.graph_name.as_deref());
        Ok(())
    }

    fn write(&mut self, dir: &Path, with_graph: bool) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        // Only a graph whose point p is slot p may be dumped next to these vectors.
        let graph = match &self.graph {
            Some(g) if with_graph && g.drift() == 0 && self.uses_graph() => {
                Some(dump_graph(&g.hnsw, dir)?)
            }
            _ => None,
        };
        let mut w = Writer::new(MAGIC, FORMAT_VERSION);
        w.reserve(self.data.len() + self.ids.len() * 20 + 256);
        w.str(&self.embedder_id);
        w.u32(u32::try_from(self.dim).map_err(|_| Error::Config("dimension too large".into()))?);
        w.u32(self.params.max_connections as u32);
        w.u32(self.params.ef_construction as u32);
        match &graph {
            Some((name, graph_sum, data_sum)) => {
                w.str(name);
                w.bytes(graph_sum);
                w.bytes(data_sum);
            }
            None => {
                w.str("");
                w.bytes(&[0; 32]);
                w.bytes(&[0; 32]);
            }
        }
        w.u64(self.ids.len() as u64);
        for &id in &self.ids {
            w.u64(id);
        }
        for &tag in &self.tags {
            w.u64(tag);
        }
        w.u64(self.data.len() as u64);
        w.bytes(&self.data.iter().map(|&c| c as u8).collect::<Vec<u8>>());
        w.f32s(&self.norms);
        let sealed = w.seal();
        format::write_atomic(&dir.join(VECTORS_FILE), &sealed)?;
        // The log applied to the previous vectors.bin; its base no longer matches, so even a
        // log that survives this (a kill right here) is ignored.
        delta::discard(&dir.join(DELTA_FILE));
        // Only now are older graph generations unreferenced. Failing to delete one wastes disk
        // space but loses nothing, so it is not an error.
        let keep = graph.as_ref().map(|(n, _, _)| n.as_str());
        remove_stale_graphs(dir, keep);
        self.persisted = Some(Persisted {
            dir: dir.to_path_buf(),
            base_sum: format::seal_of(&sealed),
            base_len: self.ids.len(),
            graph_name: keep.map(str::to_string),
            delta_len: 0,
            delta_records: 0,
            stamp: stamp(dir, keep),
            outdated: false,
        });
        self.dirty.clear();
        Ok(())
    }

    /// Reads an index saved by `save`, replaying its log. The HNSW graph is reloaded from its
    /// dump (not rebuilt) when the saved index is at or above `params.exact_scan_below`.
    /// Every file is checksummed before it is parsed: damage is an `Error::Corrupt` naming the
    /// file.
    pub fn load(dir: &Path, params: IndexParams) -> Result<VectorIndex> {
        params.validate()?;
        let path = dir.join(VECTORS_FILE);
        // Taken before reading: a writer that changes a file meanwhile makes the stamp stale,
        // never the other way round.
        let before = stamp(dir, None);
        let mut bytes = format::read(&path)?;
        let (mut r, version) =
            Reader::open_versions(&path, &bytes, MAGIC, &[FORMAT_VERSION, F32_VERSION])?;
        let embedder_id = r.str()?;
        let dim = r.u32()? as usize;
        let max_connections = r.u32()? as usize;
        let ef_construction = r.u32()? as usize;
        let graph_name = r.str()?;
        let graph_sum = r.array32()?;
        let data_sum = r.array32()?;
        let n = r.len(16)?;
        let ids: Vec<u64> = (0..n).map(|_| r.u64()).collect::<Result<_>>()?;
        let tags: Vec<u64> = (0..n).map(|_| r.u64()).collect::<Result<_>>()?;
        let (vectors, norms) = read_vectors(&mut r, &path, version, n, dim)?;
        r.finish()?;
        let mut slots = HashMap::with_capacity(n);
        for (s, &id) in ids.iter().enumerate() {
            if slots.insert(id, s).is_some() {
                return Err(Error::corrupt(&path, format!("id {id} appears twice")));
            }
        }
        let base_sum = format::seal_of(&bytes);
        let data = match vectors {
            Vectors::Quantized(data) => data,
            // The components become the index's own memory in place: a one-shot query holds
            // the file once, not twice.
            Vectors::At { start, len } => {
                bytes.truncate(start + len);
                bytes.drain(..start);
                bytes.into_iter().map(|b| b as i8).collect()
            }
        };
        let mut index = VectorIndex {
            embedder_id,
            dim,
            params,
            ids,
            tags,
            slots,
            data,
            norms,
            graph: None,
            persisted: None,
            dirty: BTreeSet::new(),
        };
        // A graph built with other shape parameters is still a valid graph for these vectors;
        // reusing it beats a rebuild, the new parameters apply at the next rebuild.
        let _ = (max_connections, ef_construction);
        if !graph_name.is_empty() && n >= params.exact_scan_below {
            let g = load_graph(dir, &graph_name, &graph_sum, &data_sum, n)?;
            index.graph = Some(GraphState::new(g, index.ids.clone()));
        }
        let log = delta::read(&dir.join(DELTA_FILE), &base_sum, dim)?.unwrap_or_default();
        let delta_records = log.changes.len();
        for change in log.changes {
            match change {
                Change::Put { id, tag, vector } => {
                    // Stored unit vectors are taken as they are (re-normalizing could change
                    // their last bits), but never trusted to be finite.
                    if vector.iter().any(|x| !x.is_finite()) {
                        return Err(Error::corrupt(
                            dir.join(DELTA_FILE),
                            format!("vector of id {id} is not finite"),
                        ));
                    }
                    index.put(id, tag, &vector);
                }
                Change::Remove(id) => {
                    index.remove(id);
                }
            }
        }
        index.dirty.clear();
        let graph_name = (!graph_name.is_empty()).then_some(graph_name);
        let mut now = stamp(dir, graph_name.as_deref());
        if now[..2] != before[..] {
            now.clear(); // written while loading: never taken for the saved state
        }
        index.persisted = Some(Persisted {
            dir: dir.to_path_buf(),
            base_sum,
            base_len: n,
            graph_name,
            delta_len: if delta_records == 0 { 0 } else { log.valid_len },
            delta_records,
            stamp: now,
            outdated: version != FORMAT_VERSION,
        });
        Ok(index)
    }
}

/// Where the int8 components of a `vectors.bin` are.
enum Vectors {
    /// In the file, `len` bytes from `start`.
    At { start: usize, len: usize },
    /// Made here from an older file's f32 vectors.
    Quantized(Vec<i8>),
}

/// The `n` vectors of dimension `dim` of a `vectors.bin` body and their norms: int8 in the
/// file (the current version), or f32 unit vectors quantized here (version 2).
fn read_vectors(
    r: &mut Reader<'_>,
    path: &Path,
    version: u32,
    n: usize,
    dim: usize,
) -> Result<(Vectors, Vec<f32>)> {
    let elem = if version == F32_VERSION { 4 } else { 1 };
    let values = r.len(elem)?;
    if dim == 0 || values != n * dim {
        return Err(Error::corrupt(
            path,
            format!("{values} components for {n} vectors of dimension {dim}"),
        ));
    }
    if version == F32_VERSION {
        let mut data = vec![0i8; values];
        let floats = r.f32s(values)?;
        let mut norms = Vec::with_capacity(n);
        for (v, out) in floats.chunks_exact(dim).zip(data.chunks_exact_mut(dim)) {
            if v.iter().any(|x| !x.is_finite()) || v.iter().all(|x| *x == 0.0) {
                return Err(Error::corrupt(path, "a vector is not finite or is zero"));
            }
            norms.push(quant::quantize(v, out));
        }
        return Ok((Vectors::Quantized(data), norms));
    }
    let start = r.skip(values)?;
    let norms = r.f32s(n)?;
    // A wrong but positive norm only mis-scores its own vector, as wrong components would.
    if norms.iter().any(|x| !x.is_finite() || *x <= 0.0) {
        return Err(Error::corrupt(
            path,
            "a vector's norm is not a positive number",
        ));
    }
    Ok((Vectors::At { start, len: values }, norms))
}

/// Top `k` by score (descending), ties by id (ascending).
fn top_k(mut scored: Vec<(f32, u64)>, k: usize) -> Vec<Hit> {
    let order = |a: &(f32, u64), b: &(f32, u64)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    if scored.len() > k {
        scored.select_nth_unstable_by(k - 1, order);
        scored.truncate(k);
    }
    scored.sort_unstable_by(order);
    scored
        .into_iter()
        .map(|(score, id)| Hit { id, score })
        .collect()
}

fn graph_paths(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    (
        dir.join(format!("{name}.hnsw.graph")),
        dir.join(format!("{name}.hnsw.data")),
    )
}

/// Dumps `g` under a fresh name in `dir`, fsyncs both files and returns (name, graph checksum,
/// data checksum).
fn dump_graph(g: &Graph, dir: &Path) -> Result<(String, [u8; 32], [u8; 32])> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let seed = format!("{nanos}-{}-{}", std::process::id(), g.get_nb_point());
    let name = format!(
        "{GRAPH_PREFIX}{}",
        &blake3::hash(seed.as_bytes()).to_hex()[..16]
    );
    let graph_err = |message: String| Error::Graph {
        path: dir.join(&name),
        message,
    };
    // hnsw_rs panics when it cannot create its files; turn that into an error.
    let written = catch_unwind(AssertUnwindSafe(|| g.file_dump(dir, &name)))
        .map_err(|_| graph_err("cannot create the graph files".into()))?
        .map_err(|e| graph_err(e.to_string()))?;
    let (graph_path, data_path) = graph_paths(dir, &written);
    let mut sums = [[0u8; 32]; 2];
    for (i, p) in [&graph_path, &data_path].into_iter().enumerate() {
        let f = std::fs::File::open(p).map_err(|e| Error::io(p, e))?;
        f.sync_all().map_err(|e| Error::io(p, e))?;
        sums[i] = format::hash_file(p)?;
    }
    format::sync_dir(dir)?;
    Ok((written, sums[0], sums[1]))
}

fn load_graph(
    dir: &Path,
    name: &str,
    graph_sum: &[u8; 32],
    data_sum: &[u8; 32],
    n: usize,
) -> Result<Graph> {
    let (graph_path, data_path) = graph_paths(dir, name);
    // hnsw_rs asserts (panics) on malformed dumps, so it only ever sees files whose checksum
    // matches what `save` recorded.
    for (p, sum) in [(&graph_path, graph_sum), (&data_path, data_sum)] {
        if &format::hash_file(p)? != sum {
            return Err(Error::corrupt(
                p,
                "checksum mismatch: the graph file was truncated or modified",
            ));
        }
    }
    // `load_hnsw` ties the graph's lifetime to the loader even though, without mmap, the graph
    // owns all its data. Leaking the loader (a path and a few words, once per load) is the safe
    // way to get a graph that can live in the index.
    let io: &'static HnswIo = Box::leak(Box::new(HnswIo::new(dir, name)));
    let graph: Graph = catch_unwind(AssertUnwindSafe(|| {
        io.load_hnsw_with_dist::<f32, CosineDistance>(CosineDistance)
    }))
    .map_err(|_| Error::Graph {
        path: graph_path.clone(),
        message: "hnsw_rs panicked while reloading".into(),
    })?
    .map_err(|e| Error::Graph {
        path: graph_path.clone(),
        message: e.to_string(),
    })?;
    if graph.get_nb_point() != n {
        return Err(Error::corrupt(
            &graph_path,
            format!("graph has {} points, vectors.bin {n}", graph.get_nb_point()),
        ));
    }
    Ok(graph)
}

fn remove_stale_graphs(dir: &Path, keep: Option<&str>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(base) = name
            .strip_suffix(".hnsw.graph")
            .or_else(|| name.strip_suffix(".hnsw.data"))
        else {
            continue;
        };
        if base.starts_with(GRAPH_PREFIX) && Some(base) != keep {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(params: IndexParams) -> VectorIndex {
        VectorIndex::new("test", 3, params).unwrap()
    }

    fn check(idx: &VectorIndex, query: [f32; 3], expected: &[u64]) {
        let got: Vec<u64> = idx
            .search(&query, expected.len().max(1))
            .unwrap()
            .iter()
            .map(|h| h.id)
            .collect();
        assert_eq!(got, expected, "query {query:?}");
    }

    #[test]
    fn exact_search_orders_by_cosine_then_id() {
        let mut idx = index(IndexParams::default());
        idx.upsert(1, &[1.0, 0.0, 0.0]).unwrap();
        idx.upsert(2, &[0.0, 1.0, 0.0]).unwrap();
        idx.upsert(3, &[1.0, 1.0, 0.0]).unwrap();
        idx.upsert(4, &[2.0, 0.0, 0.0]).unwrap(); // same direction as 1: tie, lower id first
        check(&idx, [1.0, 0.1, 0.0], &[1, 4, 3, 2]);
        check(&idx, [0.0, 1.0, 0.0], &[2, 3]);
        check(&idx, [0.0, 0.0, 0.0], &[]);
        idx.upsert(2, &[-1.0, 0.0, 0.0]).unwrap();
        check(&idx, [1.0, 0.0, 0.0], &[1, 4, 3, 2]);
        assert!(idx.remove(1));
        assert!(!idx.remove(1));
        check(&idx, [1.0, 0.0, 0.0], &[4, 3, 2]);
        idx.retain(|id| id != 3);
        check(&idx, [1.0, 0.0, 0.0], &[4, 2]);
        assert_eq!(idx.len(), 2);
    }

    #[test]
    fn bad_vectors_are_errors_not_panics() {
        let mut idx = index(IndexParams::default());
        let msg = |r: Result<()>| r.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(msg(idx.upsert(1, &[1.0])).contains("dimension 1 where 3"));
        assert!(msg(idx.upsert(1, &[f32::NAN, 0.0, 0.0])).contains("NaN"));
        assert!(msg(idx.upsert(1, &[0.0; 3])).contains("zero vector"));
        assert!(idx.search(&[1.0], 3).is_err());
        let bad = IndexParams {
            max_connections: 300,
            ..IndexParams::default()
        };
        assert!(VectorIndex::new("x", 3, bad).is_err());
        assert!(idx.is_empty());
    }

    #[test]
    fn graph_follows_the_threshold_and_mutations() {
        let params = IndexParams {
            exact_scan_below: 4,
            ..IndexParams::default()
        };
        let mut idx = index(params);
        for i in 0..3u64 {
            idx.upsert(i, &[1.0, i as f32, 0.5]).unwrap();
        }
        idx.build_graph();
        assert!(!idx.uses_graph());
        idx.upsert(3, &[0.0, 0.0, 1.0]).unwrap();
        idx.build_graph();
        assert!(idx.uses_graph());
        idx.upsert(4, &[0.0, 1.0, 1.0]).unwrap(); // searched exactly beside the graph
        assert!(idx.uses_graph());
        assert_eq!(idx.graph_drift(), 1);
        check(&idx, [0.0, 0.0, 1.0], &[3, 4]);
        idx.upsert(3, &[1.0, 0.0, 0.0]).unwrap(); // replaced: its point is a tombstone
        assert!(idx.uses_graph());
        assert_eq!(idx.graph_drift(), 3);
        check(&idx, [0.0, 0.0, 1.0], &[4, 0]);
        check(&idx, [1.0, 0.0, 0.0], &[3]);
        assert!(idx.remove(3));
        check(&idx, [1.0, 0.0, 0.0], &[0]);
        idx.build_graph(); // rebuilt: nothing beside the graph any more
        assert_eq!(idx.graph_drift(), 0);
        check(&idx, [0.0, 0.0, 1.0], &[4, 0]);
    }

    /// The header of a `vectors.bin` of `version` for dimension 3, without a graph: what
    /// comes before the count of ids.
    fn header(version: u32) -> Writer {
        let mut w = Writer::new(MAGIC, version);
        w.str("test");
        w.u32(3);
        w.u32(16);
        w.u32(200);
        w.str("");
        w.bytes(&[0; 64]);
        w
    }

    /// An index saved before vectors were int8 (version 2, f32) still loads, searches as
    /// before, and its next save rewrites it in the current format.
    #[test]
    fn an_f32_index_of_version_2_is_read_and_upgraded() {
        let dir = tempfile::tempdir().unwrap();
        let vectors: [[f32; 3]; 3] = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.6, 0.8, 0.0]];
        let mut w = header(F32_VERSION);
        w.u64(3);
        for id in [10u64, 20, 30] {
            w.u64(id);
        }
        for tag in [1u64, 2, 3] {
            w.u64(tag);
        }
        w.u64(9);
        w.f32s(vectors.as_flattened());
        std::fs::write(dir.path().join(VECTORS_FILE), w.seal()).unwrap();

        let mut idx = VectorIndex::load(dir.path(), IndexParams::default()).unwrap();
        assert_eq!((idx.len(), idx.tag(30)), (3, Some(3)));
        check(&idx, [0.0, 1.0, 0.0], &[20, 30, 10]);
        let hits = idx.search(&[0.6, 0.8, 0.0], 1).unwrap();
        assert_eq!(hits[0].id, 30);
        assert!((hits[0].score - 1.0).abs() < 1e-3, "{}", hits[0].score);

        idx.upsert(40, &[0.0, 0.0, 1.0]).unwrap();
        idx.save(dir.path()).unwrap();
        let bytes = std::fs::read(dir.path().join(VECTORS_FILE)).unwrap();
        assert_eq!(
            bytes[8..12],
            FORMAT_VERSION.to_le_bytes(),
            "rewritten, not appended to"
        );
        assert!(!dir.path().join(DELTA_FILE).exists());
        let again = VectorIndex::load(dir.path(), IndexParams::default()).unwrap();
        check(&again, [0.0, 0.0, 1.0], &[40]);
        assert_eq!(again.get(20), idx.get(20));
    }

    /// A sealed (so not merely damaged) file with norms that are not positive numbers, or
    /// fewer components than its count says, is refused, never searched.
    #[test]
    fn hostile_norms_and_counts_are_refused() {
        let file = |norm: f32, components: usize| {
            let mut w = header(FORMAT_VERSION);
            w.u64(1);
            w.u64(10);
            w.u64(0);
            w.u64(components as u64);
            w.bytes(&vec![127; components]);
            w.f32s(&[norm]);
            w.seal()
        };
        for (norm, components, why) in [
            (f32::NAN, 3, "norm"),
            (0.0, 3, "norm"),
            (-1.0, 3, "norm"),
            (f32::INFINITY, 3, "norm"),
            (1.0, 2, "components"),
        ] {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join(VECTORS_FILE), file(norm, components)).unwrap();
            let err = VectorIndex::load(dir.path(), IndexParams::default()).unwrap_err();
            assert!(err.to_string().contains(why), "{norm} {components}: {err}");
        }
    }

    #[test]
    fn params_follow_the_config() {
        let config = acms_core::SemanticConfig::default();
        assert_eq!(IndexParams::from_config(&config), IndexParams::default());
    }

    fn _assert_send_sync() {
        fn is<T: Send + Sync>() {}
        is::<VectorIndex>();
    }
}
