//! The vector half of the derived indexes (`<index>/vectors/`): which nodes need a vector, the
//! compact text each is embedded from, and the embedding run itself.
//!
//! An embedding run is **resumable**: every stored vector carries a hash of the text it was
//! embedded from, so a run compares the store's nodes against the stored vectors and embeds
//! only what is missing or changed. It embeds in batches sorted by text length (little
//! padding), saves a checkpoint every few seconds, and marks the vectors complete (the
//! `generation` file = the store's generation) only at the end. A run killed at any point
//! leaves the last checkpoint, and the next run continues from there; meanwhile queries use
//! the vectors that exist and say the semantic strategy is incomplete.
//!
//! One process embeds into an index at a time (`VectorLock`); a second one skips embedding and
//! says so. A changed embedder (another model, another dimension, another token limit) means
//! every vector is recomputed, and the report says why. The keyword index is not touched here.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use acms_core::{ContextConfig, Depth, NodeId, SemanticConfig};
use acms_index::{NodeChanges, NodeKind, NodeRecord, Store};
use acms_vector::{Embedder, IndexParams, VectorIndex, VectorLock};
use serde::{Deserialize, Serialize};

use crate::dirs::vector_dir;
use crate::shared::SharedVectors;
use crate::{Error, Place, Result};

/// The file in the vectors directory holding the store generation the vectors are complete
/// for.
const VECTOR_GENERATION: &str = "generation";

/// Texts handed to the embedder per call (it batches further inside); progress is reported
/// after each call.
const EMBED_CHUNK: usize = 128;

/// How an embedding run reports progress and how often it checkpoints.
pub struct VectorOptions<'a> {
    /// Called with (texts embedded so far, texts to embed in this run) after every batch.
    pub progress: Option<&'a (dyn Fn(usize, usize) + Sync)>,
    /// A checkpoint is saved when this long has passed since the last one.
    pub checkpoint_every: Duration,
    /// Set by the caller to stop the run between two calls to the embedder (a server that
    /// closes must not exit with ONNX Runtime running on another thread): the run saves what
    /// it embedded and ends with [`Error::Stopped`].
    pub stop: Option<&'a AtomicBool>,
}

impl Default for VectorOptions<'_> {
    fn default() -> Self {
        VectorOptions {
            progress: None,
            checkpoint_every: Duration::from_secs(10),
            stop: None,
        }
    }
}

/// What an embedding run did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VectorReport {
    /// Texts embedded in this run.
    pub embedded: usize,
    /// Texts this run had to embed (equal to `embedded` when it completed).
    pub pending: usize,
    /// Vectors stored after the run.
    pub vectors: Option<usize>,
    /// Whether the run started again from no vectors (first run, another embedder, damage).
    pub rebuilt: bool,
    /// Whether every node has its vector now.
    pub complete: bool,
    /// Why the vectors were rebuilt, or why the run embedded nothing (one line).
    pub note: Option<String>,
    /// The embedder's id.
    pub embedder: Option<String>,
    pub seconds: f64,
}

/// Whether `n` gets a vector: source and docs always; tests (a Rust unit test inside its
/// source file's test module too), examples, vendored and generated code only with
/// `all-places` (see [`acms_core::SemanticConfig::all_places`]). A constant never: it is
/// data, whose words (a shell template, a table's keys) match a task's meaning by chance, and
/// each embedded one raises the bar the semantic hits are normalised against — click's
/// completion templates pushed `ShellComplete.func_name` out of the candidates. A constant is
/// found by its name (keyword, mention) and through the functions that read it (graph).
pub fn embeds(n: &NodeRecord, config: &SemanticConfig) -> bool {
    n.kind != NodeKind::Constant
        && (config.all_places
            || matches!(
                crate::place::node_place(crate::place(&n.path), &n.qualified_name),
                Place::Source | Place::Docs
            ))
}

/// The version of [`embedding_text`]'s recipe. Vectors made from another recipe are not
/// complete: the next run compares every node's text tag and re-embeds what changed. 2 put
/// the doc first; 3 is the signature first again, with the body found after the signature.
const EMBEDDING_TEXT_VERSION: u32 = 3;

/// What the `generation` file says besides the number: which nodes the vectors cover (no
/// word for every place, ` source3` without tests, examples, vendored and generated code,
/// the place rules of every language included; ` source2` knew fewer test places, ` source`
/// embedded Rust unit tests), ` code` for no constants (without it,
/// constants were embedded), and the recipe of their texts. A marker of another scope is not
/// complete: the next run drops the vectors of nodes no longer covered and re-embeds only
/// texts whose tag changed.
fn scope(config: &SemanticConfig) -> String {
    let places = if config.all_places { "" } else { " source3" };
    format!("{places} code text{EMBEDDING_TEXT_VERSION}")
}

/// Characters of a doc comment / docstring kept in an embedding text.
const EMBED_DOC_CHARS: usize = 500;
/// Characters of the body (after the signature, without the doc) kept in an embedding text.
const EMBED_BODY_CHARS: usize = 500;

/// The compact text a node is embedded from: qualified name, signature, the head of its doc
/// and the head of its body (blank lines, indentation and the doc's own lines dropped). The
/// model truncates it further to `max-tokens`; bounding it here keeps tokenizing cheap for a
/// module or class whose full text is a whole file. (The doc before the signature was tried:
/// with the model it cost SWE 0.04 of changed lines at 16k and the docstring sets up to 0.04.)
pub fn embedding_text(n: &NodeRecord, full: &str) -> String {
    let mut text = String::with_capacity(EMBED_DOC_CHARS + EMBED_BODY_CHARS + 200);
    text.push_str(&n.qualified_name);
    text.push('\n');
    text.push_str(n.signature.trim());
    text.push('\n');
    let doc = n.doc.as_deref().unwrap_or("").trim();
    push_bounded(&mut text, doc, EMBED_DOC_CHARS);
    if !doc.is_empty() {
        text.push('\n');
    }
    // The body starts after the signature; what precedes it (doc comments, attributes,
    // decorators) is not body. A signature not found verbatim is skipped by its line count.
    let signature = n.signature.trim();
    let rest = match full.find(signature).filter(|_| !signature.is_empty()) {
        Some(at) => &full[at + signature.len()..],
        None => {
            let skip = signature.lines().count().max(1);
            full.splitn(skip + 1, '\n').nth(skip).unwrap_or("")
        }
    };
    let mut body = 0;
    for line in rest.lines() {
        let line = line.trim();
        // A line of the docstring itself (or its quotes) adds nothing the doc did not.
        if line.len() < 2 || (!doc.is_empty() && (doc.contains(line) || is_quote(line))) {
            continue;
        }
        if body >= EMBED_BODY_CHARS {
            break;
        }
        if body > 0 {
            text.push(' ');
        }
        body += push_bounded(&mut text, line, EMBED_BODY_CHARS - body);
    }
    text
}

fn is_quote(line: &str) -> bool {
    matches!(line, "\"\"\"" | "\'\'\'" | "/**" | "*/" | "*")
}

/// Appends at most `max` characters of `s` (cut at a char boundary); returns how many bytes.
fn push_bounded(out: &mut String, s: &str, max: usize) -> usize {
    let cut = s.char_indices().nth(max).map_or(s.len(), |(i, _)| i);
    out.push_str(&s[..cut]);
    cut
}

/// The tag stored with a vector: a hash of the text it was embedded from.
fn text_tag(text: &str) -> u64 {
    let h = blake3::hash(text.as_bytes());
    u64::from_le_bytes(h.as_bytes()[..8].try_into().expect("8 bytes"))
}

/// One node to embed.
struct Todo {
    id: u64,
    tag: u64,
    text: String,
}

/// Brings the vectors of `index_dir` up to date with its store using `embedder`: see the
/// module documentation. A second process embedding into the same index meanwhile makes this
/// run return at once with `complete == false` and a note saying so.
pub fn update_vectors(
    index_dir: &Path,
    changes: &NodeChanges,
    config: &ContextConfig,
    embedder: &dyn Embedder,
    options: &VectorOptions<'_>,
) -> Result<VectorReport> {
    let started = Instant::now();
    let vdir = vector_dir(index_dir);
    let params = IndexParams::from_config(&config.strategies.semantic_embedding);
    let mut report = VectorReport {
        embedder: Some(embedder.id().to_string()),
        ..VectorReport::default()
    };
    let Some(_lock) = VectorLock::try_acquire(index_dir)? else {
        report.note = Some(
            "another acms process is embedding into this index: it finishes the vectors (if it \
             was stopped, the next `acms index` resumes them)"
                .into(),
        );
        report.vectors = VectorIndex::load(&vdir, params).ok().map(|v| v.len());
        return Ok(report);
    };
    let store = Store::open(index_dir)?;
    let meta = store.meta()?;
    let generation = meta.generation;
    let semantic = &config.strategies.semantic_embedding;
    let stored_generation = vector_generation(index_dir, semantic, &meta.store_id);

    // A run with little to do (the vectors were complete for this or the previous generation)
    // updates the vectors this process keeps in memory, in place; a long run works on its
    // own copy, so searches meanwhile are not held up, and leaves it to the process at the end.
    let small = stored_generation.is_some_and(|g| g == generation || g + 1 == generation);
    let opened = if small {
        crate::shared::shared_vectors(&vdir, params).map(Held::Shared)
    } else {
        VectorIndex::load(&vdir, params).map(|v| Held::Own(Box::new(v)))
    };
    let fresh = || VectorIndex::for_embedder(embedder, params).map(|v| Held::Own(Box::new(v)));
    let (mut held, reused) = match opened {
        Ok(held) => {
            let note = held.with(|v| {
                if v.embedder_id() == embedder.id() && v.dim() == embedder.dim() {
                    None
                } else if v.dim() == embedder.dim() {
                    Some(format!(
                        "the embedder changed from {} to {}: re-embedding every symbol",
                        v.embedder_id(),
                        embedder.id()
                    ))
                } else {
                    Some(format!(
                        "the embedder changed from {} (dimension {}) to {} (dimension {}): \
                         re-embedding every symbol",
                        v.embedder_id(),
                        v.dim(),
                        embedder.id(),
                        embedder.dim()
                    ))
                }
            });
            match note {
                None => (held, true),
                Some(note) => {
                    report.note = Some(note);
                    (fresh()?, false)
                }
            }
        }
        Err(acms_vector::Error::Io { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            (fresh()?, false)
        }
        Err(e) => {
            report.note = Some(format!("{e}: re-embedding every symbol"));
            (fresh()?, false)
        }
    };
    report.rebuilt = !reused;
    let run = Run {
        semantic,
        vdir: &vdir,
        store: &store,
        store_id: &meta.store_id,
        generation,
        stored_generation,
        reused,
        changes,
        embedder,
        options,
    };
    let result = match &mut held {
        Held::Own(v) => run.embed_into(v, &mut report),
        Held::Shared(s) => {
            let mut v = s.write().unwrap_or_else(std::sync::PoisonError::into_inner);
            run.embed_into(&mut v, &mut report)
        }
    };
    result?;
    if let Held::Own(v) = held {
        crate::shared::keep_vectors(&vdir, Arc::new(RwLock::new(*v)));
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// The vectors an embedding run works on: the process's shared copy or its own.
enum Held {
    Own(Box<VectorIndex>),
    Shared(SharedVectors),
}

impl Held {
    fn with<T>(&self, f: impl FnOnce(&VectorIndex) -> T) -> T {
        match self {
            Held::Own(v) => f(v),
            Held::Shared(s) => f(&s.read().unwrap_or_else(std::sync::PoisonError::into_inner)),
        }
    }
}

/// What an embedding run needs besides the vectors.
struct Run<'a> {
    semantic: &'a SemanticConfig,
    vdir: &'a Path,
    store: &'a Store,
    store_id: &'a str,
    generation: u64,
    stored_generation: Option<u64>,
    reused: bool,
    changes: &'a NodeChanges,
    embedder: &'a dyn Embedder,
    options: &'a VectorOptions<'a>,
}

impl Run<'_> {
    /// Embeds what `vectors` lack and saves them (see `update_vectors`).
    fn embed_into(&self, vectors: &mut VectorIndex, report: &mut VectorReport) -> Result<()> {
        if vectors.is_outdated() {
            // Rewritten in the current format (int8) once, whatever else this run does.
            vectors.save(self.vdir)?;
        }
        if self.reused && self.stored_generation == Some(self.generation) {
            report.completed(vectors);
            return Ok(());
        }
        if !self.reused {
            // New vectors must never sit next to an old "complete" mark, whenever this run stops.
            remove_generation(self.vdir)?;
        }
        // In step: the vectors were complete for the previous run, so only its changes matter.
        let in_step = self.reused
            && self
                .stored_generation
                .is_some_and(|g| g + 1 == self.generation);
        let unchanged =
            in_step && self.changes.removed.is_empty() && self.changes.upserted.is_empty();
        if !unchanged {
            let nodes = self.embeddable(in_step)?;
            self.drop_stale(vectors, &nodes, in_step);
            let todo = self.todo(vectors, &nodes, in_step)?;
            drop(nodes);
            report.pending = todo.len();
            self.embed(vectors, &todo, report)?;
            if in_step {
                vectors.save(self.vdir)?;
            } else {
                vectors.save_whole(self.vdir)?;
            }
        }
        write_generation(self.vdir, self.store_id, self.generation, self.semantic)?;
        report.completed(vectors);
        Ok(())
    }

    /// The nodes that get a vector; in step, only the changed ones are read.
    fn embeddable(&self, in_step: bool) -> Result<HashMap<NodeId, NodeRecord>> {
        let nodes = if in_step {
            self.store.nodes_by_id(&self.changes.upserted)?
        } else {
            self.store.nodes()?
        };
        Ok(nodes
            .into_iter()
            .filter(|n| embeds(n, self.semantic))
            .map(|n| (n.id, n))
            .collect())
    }

    /// Removes the vectors of nodes that no longer get one: in step, only removed nodes can
    /// be stale.
    fn drop_stale(
        &self,
        vectors: &mut VectorIndex,
        nodes: &HashMap<NodeId, NodeRecord>,
        in_step: bool,
    ) {
        if in_step {
            for id in &self.changes.removed {
                if !nodes.contains_key(id) {
                    vectors.remove(id.0);
                }
            }
        } else {
            vectors.retain(|id| nodes.contains_key(&NodeId(id)));
        }
    }

    /// The texts of `nodes` (in step, of the changed ones) whose vector is missing or was
    /// made from another text, shortest first.
    fn todo(
        &self,
        vectors: &VectorIndex,
        nodes: &HashMap<NodeId, NodeRecord>,
        in_step: bool,
    ) -> Result<Vec<Todo>> {
        let upserted: HashSet<NodeId> = self.changes.upserted.iter().copied().collect();
        let mut paths: Vec<&str> = nodes
            .values()
            .filter(|n| !in_step || upserted.contains(&n.id))
            .map(|n| n.path.as_str())
            .collect();
        paths.sort_unstable();
        paths.dedup();
        // Only the compact texts of nodes that need a vector are kept: a file's renderings are
        // dropped as soon as its texts are made, so memory stays small on large repositories.
        let mut todo = Vec::new();
        for path in paths {
            for (n, texts) in self.store.file_renderings(path)? {
                let id = n.id;
                if !nodes.contains_key(&id) || (in_step && !upserted.contains(&id)) {
                    continue;
                }
                let text = embedding_text(&n, &texts[Depth::Full.index()]);
                let tag = text_tag(&text);
                if vectors.tag(id.0) != Some(tag) {
                    todo.push(Todo {
                        id: id.0,
                        tag,
                        text,
                    });
                }
            }
        }
        // Similar lengths in a batch mean little padding; ties by id keep batches deterministic.
        todo.sort_unstable_by(|a, b| a.text.len().cmp(&b.text.len()).then(a.id.cmp(&b.id)));
        Ok(todo)
    }

    /// Embeds `todo` into `vectors` a chunk at a time, saving a checkpoint now and then and
    /// when the embedder fails, so the next run resumes after what was done.
    fn embed(
        &self,
        vectors: &mut VectorIndex,
        todo: &[Todo],
        report: &mut VectorReport,
    ) -> Result<()> {
        let mut last_checkpoint = Instant::now();
        for chunk in todo.chunks(EMBED_CHUNK) {
            if self.options.stop.is_some_and(|s| s.load(Ordering::SeqCst)) {
                vectors.save_checkpoint(self.vdir)?;
                return Err(Error::Stopped);
            }
            let texts: Vec<&str> = chunk.iter().map(|t| t.text.as_str()).collect();
            let embedded = match self.embedder.embed(&texts) {
                Ok(v) => v,
                Err(e) => {
                    vectors.save_checkpoint(self.vdir)?;
                    return Err(e.into());
                }
            };
            for (t, v) in chunk.iter().zip(&embedded) {
                match vectors.upsert_tagged(t.id, t.tag, v) {
                    Ok(()) => {}
                    // A text without any feature (the hashing embedder's zero vector) has no
                    // direction to search by; it simply gets no vector.
                    Err(acms_vector::Error::InvalidVector { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            report.embedded += chunk.len();
            if let Some(progress) = self.options.progress {
                progress(report.embedded, report.pending);
            }
            if last_checkpoint.elapsed() >= self.options.checkpoint_every {
                vectors.save_checkpoint(self.vdir)?;
                last_checkpoint = Instant::now();
            }
        }
        Ok(())
    }
}

impl VectorReport {
    /// Records that the run left `vectors` complete.
    fn completed(&mut self, vectors: &VectorIndex) {
        self.complete = true;
        self.vectors = Some(vectors.len());
    }
}

/// Records that the vectors are complete for `generation` of the store `store_id`: `<store
/// id>:<generation><scope>`. A store created again starts its generations again, so the number
/// alone could claim a stale set complete.
fn write_generation(
    dir: &Path,
    store_id: &str,
    generation: u64,
    config: &SemanticConfig,
) -> Result<()> {
    let tmp = dir.join(format!("{VECTOR_GENERATION}.tmp"));
    let path = dir.join(VECTOR_GENERATION);
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&tmp, format!("{store_id}:{generation}{}", scope(config))))
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| Error::Derived {
            path,
            message: e.to_string(),
        })
}

fn remove_generation(dir: &Path) -> Result<()> {
    let path = dir.join(VECTOR_GENERATION);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::Derived {
            path,
            message: e.to_string(),
        }),
    }
}

/// The generation of the store `store_id` the vectors in `index_dir` are complete for, if
/// any, with the nodes `config` wants embedded (vectors made for other places, or for another
/// store, are not complete for these).
pub fn vector_generation(index_dir: &Path, config: &SemanticConfig, store_id: &str) -> Option<u64> {
    let marker = std::fs::read_to_string(vector_dir(index_dir).join(VECTOR_GENERATION)).ok()?;
    let marker = marker.trim_end();
    let number = marker
        .strip_suffix(scope(config).as_str())?
        .strip_prefix(store_id)?
        .strip_prefix(':')?;
    number.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_starts_after_the_signature_and_does_not_repeat_the_doc() {
        let signature =
            "pub fn verify_and_trim(\n    items: Vec<PackItem>,\n    budget: u32,\n) -> Verified";
        let doc = "Renders the items, counts the text exactly and trims it to the budget.";
        let full = format!("/// {doc}\n{signature} {{\n    let text = render(&items);\n}}");
        let n = NodeRecord {
            id: NodeId(1),
            path: "src/verify.rs".into(),
            kind: NodeKind::Function,
            name: "verify_and_trim".into(),
            qualified_name: "crate::verify::verify_and_trim".into(),
            parent: None,
            start_line: 1,
            end_line: 5,
            start_byte: 0,
            end_byte: full.len(),
            signature: signature.into(),
            doc: Some(doc.into()),
            tokens: [10, 20, 30, 40],
        };
        let text = embedding_text(&n, &full);
        assert_eq!(
            text,
            format!(
                "crate::verify::verify_and_trim\n{signature}\n{doc}\nlet text = render(&items);"
            )
        );
    }

    #[test]
    fn constants_get_no_vector_and_code_does() {
        let node = |kind, path: &str| NodeRecord {
            id: NodeId(1),
            path: path.into(),
            kind,
            name: "NAME".into(),
            qualified_name: "pkg.NAME".into(),
            parent: None,
            start_line: 1,
            end_line: 1,
            start_byte: 0,
            end_byte: 10,
            signature: "NAME = 1".into(),
            doc: None,
            tokens: [4, 4, 4, 4],
        };
        let source = SemanticConfig::default();
        let everywhere = SemanticConfig {
            all_places: true,
            ..SemanticConfig::default()
        };
        let constant = node(NodeKind::Constant, "pkg/settings.py");
        let function = node(NodeKind::Function, "pkg/settings.py");
        let test = node(NodeKind::Function, "tests/test_settings.py");
        for config in [&source, &everywhere] {
            assert!(!embeds(&constant, config));
            assert!(embeds(&function, config));
        }
        assert!(!embeds(&test, &source));
        assert!(embeds(&test, &everywhere));
    }
}
