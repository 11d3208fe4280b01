//! `VectorIndex`: (u64 id, vector) pairs for one embedder, top-k search by cosine, and its
//! persistence in a directory.
//!
//! Below `IndexParams::exact_scan_below` vectors (default 20 000) a search is an exact scan:
//! a few milliseconds, perfect recall, nothing to build. At or above it an HNSW graph
//! (`hnsw_rs`) answers instead; HNSW candidates are re-scored with the exact cosine from the
//! stored vectors, so scores never depend on which path answered. The graph is dumped next to
//! the vectors and reloaded as is, never rebuilt on load.
//!
//! Every vector carries a `tag` (a hash of the text it was embedded from), so a caller can tell
//! which stored vectors are still current without re-embedding anything: that is what makes an
//! interrupted embedding run resumable.
//!
//! On disk (`save`/`load`): `vectors.bin` is the commit point. It holds a header (format
//! version, embedder id, dim, count, the graph's file names and their checksums), the ids, their
//! tags, the vectors and a blake3 checksum, and is replaced atomically. Graph files get a fresh name per
//! save and are written before `vectors.bin`, so a save killed at any point leaves the previous
//! `vectors.bin` and the graph files it names intact.
//!
//! This module does not embed text (see `embed`/`fast`) and does not know what the ids mean.

use std::collections::HashMap;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use hnsw_rs::prelude::{AnnT, Distance, Hnsw, HnswIo};
use rayon::prelude::*;

use crate::embed::{Embedder, dot, normalize};
use crate::error::{Error, Result};
use crate::format::{self, Reader, Writer};

/// File holding ids, vectors and the header; replacing it commits a save.
pub const VECTORS_FILE: &str = "vectors.bin";
const MAGIC: &[u8; 8] = b"ACMSVEC\n";
/// Version 2 added the per-vector tags.
const FORMAT_VERSION: u32 = 2;
const GRAPH_PREFIX: &str = "hnsw-";
/// hnsw_rs never creates more layers than this (its `NB_LAYER_MAX`).
const MAX_LAYERS: usize = 16;
/// Above this many vectors an exact scan is split across rayon's threads.
const PARALLEL_SCAN: usize = 8192;

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
    /// exact scan serves everything below 20k.
    fn default() -> IndexParams {
        IndexParams {
            exact_scan_below: 20_000,
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
    /// Unit vectors, contiguous so the exact scan streams through memory.
    data: Vec<f32>,
    /// The HNSW graph over slots `0..graph.get_nb_point()`, data id = slot. Dropped whenever a
    /// slot's vector changes or moves, since hnsw_rs cannot delete or update points.
    graph: Option<Graph>,
}

impl fmt::Debug for VectorIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VectorIndex")
            .field("embedder_id", &self.embedder_id)
            .field("dim", &self.dim)
            .field("len", &self.ids.len())
            .field("params", &self.params)
            .field("graph", &self.graph.as_ref().map(|g| g.get_nb_point()))
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
            graph: None,
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

    /// The stored (unit) vector of `id`.
    pub fn get(&self, id: u64) -> Option<&[f32]> {
        self.slots.get(&id).map(|&s| self.slot(s))
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
        self.graph
            .as_ref()
            .is_some_and(|g| g.get_nb_point() == self.ids.len())
            && self.ids.len() >= self.params.exact_scan_below
    }

    fn slot(&self, s: usize) -> &[f32] {
        &self.data[s * self.dim..(s + 1) * self.dim]
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
    /// normalized. New ids extend an existing graph in place; replacing a vector drops the
    /// graph (call `build_graph` or `save` to rebuild it).
    pub fn upsert(&mut self, id: u64, vector: &[f32]) -> Result<()> {
        self.upsert_tagged(id, 0, vector)
    }

    /// `upsert` that also records `tag` for `id` (the caller's hash of the embedded text).
    pub fn upsert_tagged(&mut self, id: u64, tag: u64, vector: &[f32]) -> Result<()> {
        let v = self.check(id, vector)?;
        if let Some(&s) = self.slots.get(&id) {
            self.data[s * self.dim..(s + 1) * self.dim].copy_from_slice(&v);
            self.tags[s] = tag;
            self.graph = None;
            return Ok(());
        }
        let s = self.ids.len();
        self.ids.push(id);
        self.tags.push(tag);
        self.slots.insert(id, s);
        self.data.extend_from_slice(&v);
        if let Some(g) = &self.graph {
            if g.get_nb_point() == s {
                g.insert_slice((&self.data[s * self.dim..], s));
            } else {
                self.graph = None;
            }
        }
        Ok(())
    }

    /// Removes `id`; returns whether it was present. Drops the graph.
    pub fn remove(&mut self, id: u64) -> bool {
        let Some(s) = self.slots.remove(&id) else {
            return false;
        };
        let last = self.ids.len() - 1;
        if s != last {
            let moved = self.ids[last];
            self.ids[s] = moved;
            self.tags[s] = self.tags[last];
            self.slots.insert(moved, s);
            let (head, tail) = self.data.split_at_mut(last * self.dim);
            head[s * self.dim..(s + 1) * self.dim].copy_from_slice(&tail[..self.dim]);
        }
        self.ids.pop();
        self.tags.pop();
        self.data.truncate(last * self.dim);
        self.graph = None;
        true
    }

    /// Keeps only the ids for which `keep` is true (for re-indexing: drop vectors of nodes that
    /// no longer exist). Drops the graph when anything was removed.
    pub fn retain(&mut self, mut keep: impl FnMut(u64) -> bool) {
        let gone: Vec<u64> = self.ids.iter().copied().filter(|&id| !keep(id)).collect();
        for id in gone {
            self.remove(id);
        }
    }

    /// Builds the HNSW graph when the index is at or above the exact-scan threshold and has
    /// none (or a stale one); drops it below the threshold. Uses all cores.
    pub fn build_graph(&mut self) {
        let n = self.ids.len();
        if n < self.params.exact_scan_below {
            self.graph = None;
            return;
        }
        if self.graph.as_ref().is_some_and(|g| g.get_nb_point() == n) {
            return;
        }
        let mut g = Graph::new(
            self.params.max_connections,
            n,
            MAX_LAYERS,
            self.params.ef_construction,
            CosineDistance,
        );
        let points: Vec<(&[f32], usize)> = (0..n).map(|s| (self.slot(s), s)).collect();
        g.parallel_insert_slice(&points);
        g.set_searching_mode(true);
        self.graph = Some(g);
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
                let ef = self.params.ef_search.max(k);
                g.search(&q, k, ef)
                    .into_iter()
                    .filter(|n| n.d_id < self.ids.len())
                    .map(|n| (dot(&q, self.slot(n.d_id)), self.ids[n.d_id]))
                    .collect()
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
        let score = |(s, v): (usize, &[f32])| (dot(q, v), self.ids[s]);
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
    /// size calls for one. See the module doc for why a killed save loses nothing.
    pub fn save(&mut self, dir: &Path) -> Result<()> {
        self.build_graph();
        self.write(dir, true)
    }

    /// Writes the vectors into `dir` without building or writing a graph: a cheap checkpoint
    /// while vectors are still being added (searches of the saved index scan exactly until a
    /// `save` writes the graph).
    pub fn save_checkpoint(&self, dir: &Path) -> Result<()> {
        self.write(dir, false)
    }

    fn write(&self, dir: &Path, with_graph: bool) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let graph = match &self.graph {
            Some(_) if !with_graph => None,
            Some(g) if self.uses_graph() => Some(dump_graph(g, dir)?),
            _ => None,
        };
        let mut w = Writer::new(MAGIC, FORMAT_VERSION);
        w.reserve(self.data.len() * 4 + self.ids.len() * 16 + 256);
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
        w.f32s(&self.data);
        format::write_atomic(&dir.join(VECTORS_FILE), &w.seal())?;
        // Only now are older graph generations unreferenced. Failing to delete one wastes disk
        // space but loses nothing, so it is not an error.
        let keep = graph.as_ref().map(|(n, _, _)| n.as_str());
        remove_stale_graphs(dir, keep);
        Ok(())
    }

    /// Reads an index saved by `save`. The HNSW graph is reloaded from its dump (not rebuilt)
    /// when the index is at or above `params.exact_scan_below`. Every file is checksummed
    /// before it is parsed: damage is an `Error::Corrupt` naming the file.
    pub fn load(dir: &Path, params: IndexParams) -> Result<VectorIndex> {
        params.validate()?;
        let path = dir.join(VECTORS_FILE);
        let bytes = format::read(&path)?;
        let mut r = Reader::open(&path, &bytes, MAGIC, FORMAT_VERSION)?;
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
        let floats = r.len(4)?;
        if dim == 0 || floats != n * dim {
            return Err(Error::corrupt(
                &path,
                format!("{floats} floats for {n} vectors of dimension {dim}"),
            ));
        }
        let data = r.f32s(floats)?;
        r.finish()?;
        let mut slots = HashMap::with_capacity(n);
        for (s, &id) in ids.iter().enumerate() {
            if slots.insert(id, s).is_some() {
                return Err(Error::corrupt(&path, format!("id {id} appears twice")));
            }
        }
        let mut index = VectorIndex {
            embedder_id,
            dim,
            params,
            ids,
            tags,
            slots,
            data,
            graph: None,
        };
        // A graph built with other shape parameters is still a valid graph for these vectors;
        // reusing it beats a rebuild, the new parameters apply at the next rebuild.
        let _ = (max_connections, ef_construction);
        if !graph_name.is_empty() && n >= params.exact_scan_below {
            index.graph = Some(load_graph(dir, &graph_name, &graph_sum, &data_sum, n)?);
        }
        Ok(index)
    }
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
        idx.upsert(4, &[0.0, 1.0, 1.0]).unwrap(); // appended into the graph in place
        assert!(idx.uses_graph());
        check(&idx, [0.0, 0.0, 1.0], &[3, 4]);
        idx.upsert(4, &[1.0, 1.0, 1.0]).unwrap(); // replaced: graph dropped, exact scan
        assert!(!idx.uses_graph());
        check(&idx, [0.0, 0.0, 1.0], &[3, 4]);
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
