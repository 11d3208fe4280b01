//! The derived indexes kept next to the store: the tantivy keyword index
//! (`<index>/keyword/`) and the vectors (`<index>/vectors/`). Both are refreshed
//! incrementally after every index run from the run's [`NodeChanges`], and rebuilt from the
//! store when they are out of step with it (a run killed between the store commit and theirs).

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use acms_core::{ContextConfig, Depth, NodeId};
use acms_index::{NodeChanges, NodeKind, NodeRecord, Store};
use acms_keyword::{KeywordDoc, KeywordIndex, code_terms};
use acms_vector::{Embedder, IndexParams, VectorIndex};
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// Where the keyword index lives inside an index directory.
pub fn keyword_dir(index_dir: &Path) -> PathBuf {
    index_dir.join("keyword")
}

/// Where the vectors live inside an index directory.
pub fn vector_dir(index_dir: &Path) -> PathBuf {
    index_dir.join("vectors")
}

const VECTOR_GENERATION: &str = "generation";

/// What refreshing the derived indexes did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DerivedReport {
    /// Keyword documents written (0 when nothing changed).
    pub keyword_docs: usize,
    /// Whether the keyword index was rebuilt from scratch.
    pub keyword_rebuilt: bool,
    /// Texts embedded in this run.
    pub embedded: usize,
    /// Vectors in the index after the run (`None` when vectors are disabled).
    pub vectors: Option<usize>,
    pub vectors_rebuilt: bool,
    /// The embedder the vectors were built with.
    pub embedder: Option<String>,
    pub keyword_seconds: f64,
    pub embed_seconds: f64,
}

/// The keyword document of a node: containers contribute their skeleton as body, so a file's
/// text is not indexed once per nesting level.
fn keyword_doc(n: &NodeRecord, texts: &[String; 4]) -> KeywordDoc {
    let body = match n.kind {
        NodeKind::Module
        | NodeKind::Class
        | NodeKind::Impl
        | NodeKind::Trait
        | NodeKind::Interface => &texts[Depth::Skeleton.index()],
        _ => &texts[Depth::Full.index()],
    };
    KeywordDoc {
        id: n.id.0,
        path: n.path.clone(),
        qualified_name: n.qualified_name.clone(),
        name: n.name.clone(),
        kind: n.kind.name().to_string(),
        signature: n.signature.clone(),
        doc: n.doc.clone().unwrap_or_default(),
        body: body.clone(),
    }
}

/// The compact rendering a node is embedded from: kind, qualified name, signature, doc and
/// the distinct identifiers of its body (capped), so code without a docstring still carries
/// its vocabulary.
pub fn embedding_text(n: &NodeRecord, full: &str) -> String {
    let mut seen = HashSet::new();
    let idents: Vec<String> = code_terms(full)
        .into_iter()
        .filter(|t| t.len() > 2 && seen.insert(t.clone()))
        .take(64)
        .collect();
    let mut text = format!("{} {}\n{}\n", n.kind.name(), n.qualified_name, n.signature);
    if let Some(doc) = &n.doc {
        text.push_str(doc);
        text.push('\n');
    }
    text.push_str(&idents.join(" "));
    text
}

/// Nodes of `ids` grouped by file, with their renderings (one file read per file).
fn rendered(
    store: &Store,
    nodes: &BTreeMap<NodeId, NodeRecord>,
    ids: &[NodeId],
) -> Result<Vec<(NodeRecord, [String; 4])>> {
    let wanted: HashSet<NodeId> = ids.iter().copied().collect();
    let mut paths: Vec<&str> = ids
        .iter()
        .filter_map(|id| nodes.get(id).map(|n| n.path.as_str()))
        .collect();
    paths.sort();
    paths.dedup();
    let mut out = Vec::with_capacity(ids.len());
    for path in paths {
        for (id, texts) in store.file_renderings(path)? {
            if let Some(n) = nodes.get(&id).filter(|_| wanted.contains(&id)) {
                out.push((n.clone(), texts));
            }
        }
    }
    Ok(out)
}

/// The keyword documents of `ids`.
fn keyword_docs(
    store: &Store,
    nodes: &BTreeMap<NodeId, NodeRecord>,
    ids: &[NodeId],
) -> Result<Vec<KeywordDoc>> {
    Ok(rendered(store, nodes, ids)?
        .iter()
        .map(|(n, texts)| keyword_doc(n, texts))
        .collect())
}

/// An empty keyword index in `kdir`, replacing what was there. Only a directory that holds a
/// tantivy index (or nothing) is removed: `--index` may point at a directory with other data.
fn fresh_keyword_index(kdir: &Path) -> Result<KeywordIndex> {
    let ours = kdir.join(".managed.json").exists() || kdir.join("meta.json").exists();
    let empty = std::fs::read_dir(kdir).map_or(true, |mut d| d.next().is_none());
    if !ours && !empty {
        return Err(Error::Derived {
            path: kdir.to_path_buf(),
            message: "not a keyword index written by acms: acms will not delete it; move it away"
                .into(),
        });
    }
    let _ = std::fs::remove_dir_all(kdir);
    Ok(KeywordIndex::create_or_open(kdir)?)
}

/// Refreshes the keyword index and (with `embedder`) the vectors after an index run.
pub fn update_derived(
    index_dir: &Path,
    changes: &NodeChanges,
    config: &ContextConfig,
    embedder: Option<&dyn Embedder>,
) -> Result<DerivedReport> {
    let store = Store::open(index_dir)?;
    let generation = store.meta()?.generation;
    let nodes: BTreeMap<NodeId, NodeRecord> =
        store.nodes()?.into_iter().map(|n| (n.id, n)).collect();
    let all_ids: Vec<NodeId> = nodes.keys().copied().collect();
    let mut report = DerivedReport::default();

    // Keyword index.
    let t = Instant::now();
    let kdir = keyword_dir(index_dir);
    // A keyword index whose files were deleted or damaged still opens (and would even take
    // an incremental commit): check it, and start an unusable one again — it is derived data.
    let opened = KeywordIndex::create_or_open(&kdir).and_then(|k| {
        k.check()?;
        Ok(k)
    });
    let mut keyword = match opened {
        Ok(k) => k,
        Err(_) => fresh_keyword_index(&kdir)?,
    };
    let in_step = keyword.generation() + 1 == generation;
    if keyword.generation() != generation {
        if in_step {
            let mut remove: Vec<u64> = changes.removed.iter().map(|id| id.0).collect();
            remove.extend(changes.upserted.iter().map(|id| id.0));
            let docs = keyword_docs(&store, &nodes, &changes.upserted)?;
            report.keyword_docs = docs.len();
            if keyword
                .apply_with_generation(&remove, &docs, generation)
                .is_err()
            {
                // Damaged in a way `check` cannot see: rebuild it below, in this same run.
                drop(keyword);
                keyword = fresh_keyword_index(&kdir)?;
            }
        }
        if keyword.generation() != generation {
            report.keyword_rebuilt = true;
            let docs = keyword_docs(&store, &nodes, &all_ids)?;
            report.keyword_docs = docs.len();
            keyword.apply_with_generation(&[], &docs, generation)?;
        }
    }
    report.keyword_seconds = t.elapsed().as_secs_f64();

    // Vectors.
    let Some(embedder) = embedder else {
        return Ok(report);
    };
    let t = Instant::now();
    let vdir = vector_dir(index_dir);
    let params = IndexParams::from_config(&config.strategies.semantic_embedding);
    let stored_gen = std::fs::read_to_string(vdir.join(VECTOR_GENERATION))
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok());
    let existing = VectorIndex::load(&vdir, params)
        .ok()
        .filter(|v| v.embedder_id() == embedder.id() && v.dim() == embedder.dim());
    let (mut vectors, todo): (VectorIndex, Vec<NodeId>) = match existing {
        Some(v) if stored_gen == Some(generation) => {
            report.vectors = Some(v.len());
            report.embedder = Some(embedder.id().to_string());
            return Ok(report);
        }
        // Nothing changed: the vectors are current, only their generation moves on (a
        // no-change re-index must not rewrite every vector).
        Some(v)
            if stored_gen.is_some_and(|g| g + 1 == generation)
                && changes.removed.is_empty()
                && changes.upserted.is_empty() =>
        {
            write_generation(&vdir, generation)?;
            report.vectors = Some(v.len());
            report.embedder = Some(embedder.id().to_string());
            return Ok(report);
        }
        Some(mut v) if stored_gen.is_some_and(|g| g + 1 == generation) => {
            for id in changes.removed.iter().chain(&changes.upserted) {
                v.remove(id.0);
            }
            (v, changes.upserted.clone())
        }
        _ => {
            report.vectors_rebuilt = true;
            (
                VectorIndex::for_embedder(embedder, params)?,
                all_ids.clone(),
            )
        }
    };
    let items = rendered(&store, &nodes, &todo)?;
    let texts: Vec<String> = items
        .iter()
        .map(|(n, t)| embedding_text(n, &t[Depth::Full.index()]))
        .collect();
    for (chunk_items, chunk_texts) in items.chunks(256).zip(texts.chunks(256)) {
        let refs: Vec<&str> = chunk_texts.iter().map(String::as_str).collect();
        let vecs = embedder.embed(&refs)?;
        for ((n, _), v) in chunk_items.iter().zip(vecs) {
            vectors.upsert(n.id.0, &v)?;
        }
    }
    report.embedded = texts.len();
    vectors.save(&vdir)?;
    write_generation(&vdir, generation)?;
    report.vectors = Some(vectors.len());
    report.embedder = Some(embedder.id().to_string());
    report.embed_seconds = t.elapsed().as_secs_f64();
    Ok(report)
}

fn write_generation(dir: &Path, generation: u64) -> Result<()> {
    let tmp = dir.join(format!("{VECTOR_GENERATION}.tmp"));
    let path = dir.join(VECTOR_GENERATION);
    std::fs::write(&tmp, generation.to_string())
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| Error::Derived {
            path,
            message: e.to_string(),
        })
}

/// The generation the vectors in `index_dir` were built for, if any.
pub fn vector_generation(index_dir: &Path) -> Option<u64> {
    std::fs::read_to_string(vector_dir(index_dir).join(VECTOR_GENERATION))
        .ok()
        .and_then(|s| s.trim().parse().ok())
}
