//! The derived indexes kept next to the store: the tantivy keyword index
//! (`<index>/keyword/`) and the vectors (`<index>/vectors/`). Both are refreshed
//! incrementally after every index run from the run's [`NodeChanges`], and rebuilt from the
//! store when they are out of step with it (a run killed between the store commit and theirs).

use std::collections::HashSet;
use std::path::Path;
use std::time::Instant;

use acms_core::{ContextConfig, Depth, NodeId};
use acms_index::{NodeChanges, NodeKind, NodeRecord, Store};
use acms_keyword::{KeywordDoc, KeywordIndex};
use acms_vector::Embedder;
use serde::{Deserialize, Serialize};

use crate::dirs::keyword_dir;
use crate::embedding::{VectorOptions, VectorReport, update_vectors};
use crate::{Error, Result};

/// Files whose keyword documents a rebuild stages at a time.
const KEYWORD_BATCH_FILES: usize = 256;

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
    /// Whether every node has its vector (false after an interrupted or skipped run: the
    /// next run resumes where this one stopped).
    pub vectors_complete: bool,
    /// Why the vectors were rebuilt, or why embedding stopped (one line), if anything notable.
    pub vectors_note: Option<String>,
    /// The embedder the vectors were built with.
    pub embedder: Option<String>,
    pub keyword_seconds: f64,
    pub embed_seconds: f64,
}

/// The keyword document of a node: containers contribute their skeleton as body, so a file's
/// text is not indexed once per nesting level. A module's signature there also holds its
/// imports (one module per line, as written): a task that names a library ("update to
/// kotlinx-datetime") finds the files that use it as it finds a function by its parameters. A
/// field of their own would weigh them by the average of every symbol, most of which import
/// nothing: a module with ten imports would count as a very long document.
fn keyword_doc(n: &NodeRecord, texts: &[String; 4], imports: &str) -> KeywordDoc {
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
        signature: match n.kind {
            NodeKind::Module if !imports.is_empty() => format!("{}\n{imports}", n.signature),
            _ => n.signature.clone(),
        },
        doc: n.doc.clone().unwrap_or_default(),
        body: body.clone(),
    }
}

/// The keyword documents of the nodes of `paths` (one read of each file), those of `ids`
/// only when given.
fn keyword_docs<'p>(
    store: &Store,
    paths: impl IntoIterator<Item = &'p str>,
    ids: Option<&HashSet<NodeId>>,
) -> Result<Vec<KeywordDoc>> {
    let mut docs = Vec::new();
    for path in paths {
        let imports = store.imports_of(path)?.join("\n");
        for (n, texts) in store.file_renderings(path)? {
            if ids.is_none_or(|ids| ids.contains(&n.id)) {
                docs.push(keyword_doc(&n, &texts, &imports));
            }
        }
    }
    Ok(docs)
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
    let meta = store.meta()?;
    let (generation, store_id) = (meta.generation, meta.store_id.as_str());
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
    // A store created again (a rebuild) starts its generations again: only the same store's
    // generations say anything about the keyword index.
    let current = |k: &KeywordIndex| k.store() == store_id && k.generation() == generation;
    let in_step = keyword.store() == store_id && keyword.generation() + 1 == generation;
    // When most documents change (a rebuild, an analyzer upgrade) a fresh index is cheaper
    // than deleting and adding each one.
    let most = changes.upserted.len() as u64 * 2 > keyword.num_docs();
    if !current(&keyword) {
        if in_step && !most {
            let mut remove: Vec<u64> = changes.removed.iter().map(|id| id.0).collect();
            remove.extend(changes.upserted.iter().map(|id| id.0));
            // Only the changed symbols are read from the store, a batch of files at a time.
            let mut paths: Vec<String> = store
                .nodes_by_id(&changes.upserted)?
                .into_iter()
                .map(|n| n.path)
                .collect();
            paths.sort_unstable();
            paths.dedup();
            let ids: HashSet<NodeId> = changes.upserted.iter().copied().collect();
            let mut count = 0;
            let batches = paths.chunks(KEYWORD_BATCH_FILES).map(|batch| {
                let docs = keyword_docs(&store, batch.iter().map(String::as_str), Some(&ids))?;
                count += docs.len();
                Ok::<_, Error>(docs)
            });
            let applied = keyword.apply_batches(&remove, batches, store_id, generation);
            report.keyword_docs = count;
            if applied.is_err() {
                // Damaged in a way `check` cannot see: rebuild it below, in this same run.
                drop(keyword);
                keyword = fresh_keyword_index(&kdir)?;
            }
        }
        if !current(&keyword) {
            report.keyword_rebuilt = true;
            if keyword.num_docs() > 0 {
                // Documents of another store may have ids this one no longer has.
                drop(keyword);
                keyword = fresh_keyword_index(&kdir)?;
            }
            // A batch of files at a time, read file by file: the documents of a whole
            // monorepo (bodies, once per nesting level) held at once were a gigabyte more
            // than the index run itself.
            let files = store.files()?;
            let mut count = 0;
            let batches = files.chunks(KEYWORD_BATCH_FILES).map(|batch| {
                let docs = keyword_docs(&store, batch.iter().map(|f| f.path.as_str()), None)?;
                count += docs.len();
                Ok::<_, Error>(docs)
            });
            keyword.apply_batches(&[], batches, store_id, generation)?;
            report.keyword_docs = count;
        }
    }
    report.keyword_seconds = t.elapsed().as_secs_f64();

    if let Some(embedder) = embedder {
        let v = update_vectors(
            index_dir,
            changes,
            config,
            embedder,
            &VectorOptions::default(),
        )?;
        report.record_vectors(v);
    }
    Ok(report)
}

impl DerivedReport {
    /// Takes in what an embedding run (`update_vectors`) did.
    pub fn record_vectors(&mut self, v: VectorReport) {
        self.embedded = v.embedded;
        self.vectors = v.vectors;
        self.vectors_rebuilt = v.rebuilt;
        self.vectors_complete = v.complete;
        self.vectors_note = v.note;
        self.embedder = v.embedder;
        self.embed_seconds = v.seconds;
    }
}
