//! [`KeywordIndex`]: the persisted tantivy index, its atomic incremental updates, its
//! generation counter, and BM25 search with matched-term reasons.
//!
//! **Architecture Invariant:** every [`KeywordIndex::apply`] is one tantivy commit. tantivy
//! publishes a commit by atomically replacing `meta.json`, so a process killed during `apply`
//! leaves the previous commit (and its generation) readable; the orphaned segment files are
//! garbage-collected by the next successful commit.
//!
//! This module does not know about UKO nodes or the store: the caller maps its nodes to
//! [`KeywordDoc`]s and keeps the generation of the store and of this index in step.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tantivy::collector::TopDocs;
use tantivy::directory::MmapDirectory;
use tantivy::indexer::UserOperation;
use tantivy::schema::IndexRecordOption;
use tantivy::{
    DocAddress, DocId, DocSet, Index, IndexReader, IndexSettings, IndexWriter, ReloadPolicy,
    TantivyDocument, TantivyError, Term,
};

use crate::error::{Error, Result};
use crate::query::{
    COMMON_TERM_MIN_DOCS, Clause, MAX_COMPOUND_TERMS, MAX_QUERY_TERMS, MAX_VARIANTS,
    MAX_VARIANTS_PER_TERM, MIN_VARIANT_STEM, boolean_query, candidate_terms, clauses,
    compound_candidates, select_terms, variant_clauses,
};
use crate::schema::{Fields, register_analyzers};
use crate::stem::{stem, stemmer};

/// One searchable symbol (a UKO node, or anything else with an id).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeywordDoc {
    /// Caller-chosen id, unique within the index (acms uses `NodeId.0`).
    pub id: u64,
    /// Repository-relative path of the file the symbol is in.
    pub path: String,
    /// Fully qualified name (`pkg.module.Class.method`, `crate::mod::Type`).
    pub qualified_name: String,
    /// Short name (`method`).
    pub name: String,
    /// Kind (`function`, `class`, …). Not searched: it is kept for callers that build docs
    /// generically; filter by kind in the caller.
    pub kind: String,
    /// Declaration line(s).
    pub signature: String,
    /// Docstring or doc comment (English prose, stemmed).
    pub doc: String,
    /// Full source text.
    pub body: String,
}

/// One search result.
#[derive(Clone, Debug, PartialEq)]
pub struct KeywordHit {
    /// The [`KeywordDoc::id`] that matched.
    pub id: u64,
    /// Raw BM25 score: per query term the best boosted field's BM25 plus a fraction of the
    /// other fields' (disjunction-max), summed over the query terms.
    pub score: f32,
    /// `score` divided by the best score of this result list, so the top hit is 1.0 and the
    /// rest fall in (0, 1]. It is relative to the query: it ranks hits against each other, and
    /// says nothing about how good the best hit is (see `matched_terms` for that).
    pub relevance: f32,
    /// The query terms (lowercased, unstemmed, in query order) found in this document in any
    /// field.
    pub matched_terms: Vec<String>,
}

/// Bumped when the schema or the payload layout changes incompatibly.
const PAYLOAD_FORMAT: u32 = 1;

/// What each commit records besides the documents: the generation and the id of the store
/// it was made from (a store created again starts its generations again, so the number alone
/// could match a stale index).
#[derive(Serialize, Deserialize)]
struct Payload {
    format: u32,
    generation: u64,
    #[serde(default)]
    store: String,
}

/// The file in which tantivy lists the files it manages, and deletes when they are no longer
/// in use.
const MANAGED_FILE: &str = ".managed.json";

/// Checks tantivy's managed-file list before tantivy reads it: its cleanup deletes the files
/// listed, by path relative to the index folder, so a planted list (`../../victim`, `/home/…`)
/// would delete anything the user can write. Every entry must be a plain file name.
fn check_managed(dir: &Path) -> Result<()> {
    let path = dir.join(MANAGED_FILE);
    let text = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(Error::Damaged {
                path: dir.to_path_buf(),
                detail: format!("cannot read {MANAGED_FILE}: {e}"),
            });
        }
    };
    let names: Vec<String> = serde_json::from_slice(&text).map_err(|e| Error::Damaged {
        path: dir.to_path_buf(),
        detail: format!("{MANAGED_FILE} is not a list of file names: {e}"),
    })?;
    match names.into_iter().find(|n| !plain_file_name(n)) {
        Some(name) => Err(Error::ForeignFile {
            path: dir.to_path_buf(),
            name,
        }),
        None => Ok(()),
    }
}

/// A name that stays inside the folder it is joined to.
fn plain_file_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0'])
}

/// Writer memory per indexing thread; tantivy requires at least 15 MB.
const WRITER_BYTES_PER_THREAD: usize = 32_000_000;
/// Above this share of deleted documents, or this many segments, an `apply` merges the
/// index's segments into one.
const MAX_DELETED_PERCENT: u64 = 30;
const MAX_SEGMENTS: usize = 8;
/// Results fetched beyond `limit` so that ties at the cut are broken by id, not by segment
/// layout.
const TIE_MARGIN: usize = 16;

/// How many times `limit` documents are scored before the coordination factor re-ranks them.
const COORD_POOL: usize = 2;

/// The coordination factor (Lucene's classic `coord`): the idf-weighted share of the query's
/// terms a document matches. BM25 sums per-term scores, so one word of a short question in a
/// short name (`token` in `CodeTokenStream::token`) outscored the function whose doc matches
/// every word of it (the README's example). In a short query every word is intent; in a bug
/// report of sixty terms most are narrative and no code matches most of them, so the factor
/// counts fully up to [`COORD_TERMS`] query terms and fades as `COORD_TERMS / n` beyond.
/// Measured (docs/EVAL.md): at full strength for every query SWE-bench lost 0.06 of changed
/// lines at 16k; fading beyond 2 terms it is level on real tasks and adds 0.01 on the
/// identifier-free docstring sets. Fading beyond 4 added 0.02 there, but cost some docstring
/// sets up to 0.04 where 2 costs at most 0.03.
const COORD_TERMS: f32 = 2.0;

/// The exponent on the coordination factor for a query of `num_terms` terms.
fn coordination_exponent(num_terms: usize) -> f32 {
    (COORD_TERMS / num_terms.max(1) as f32).min(1.0)
}

/// Most dictionary names looked at per query term and segment for its variants.
const MAX_SCANNED_NAMES: usize = 256;
/// A variant must be the name of at most this many documents per thousand (in an index of at
/// least [`COMMON_TERM_MIN_DOCS`]).
const MAX_VARIANT_PERMILLE: u64 = 10;

/// The idf of each query term: of its most frequent field, so a term common anywhere counts
/// little.
fn term_idf(stats: &LiveStatistics<'_>, clauses: &[Clause], num_terms: usize) -> Vec<f32> {
    let n = stats.searcher.num_docs() as f32;
    let mut df = vec![0u64; num_terms];
    // A term's variants count too: a word whose variant is a common name (`values`, `value`)
    // credits every document with that name.
    for c in clauses {
        let d = stats.live_doc_freq(&c.term);
        for &q in &c.query_terms {
            if let Some(x) = df.get_mut(q) {
                *x = (*x).max(d);
            }
        }
    }
    df.into_iter()
        .map(|d| {
            let d = d as f32;
            (1.0 + ((n - d).max(0.0) + 0.5) / (d + 0.5)).ln()
        })
        .collect()
}

/// BM25 statistics of the live documents, as a fresh index of them would have.
///
/// tantivy's own statistics count a deleted document until a merge drops it, and an
/// incremental run deletes the documents of every changed file while the index merges only
/// past [`MAX_DELETED_PERCENT`] (a merge per edit costs more than the rest of the run): so
/// the same tree ranked differently by its index's history — hono's 60 commit tasks, indexed
/// one from the last, named a gold file less at 4k and showed a gold symbol less at 16k than
/// indexes built afresh (docs/EVAL.md). Here the document count is the live one, a term's
/// documents are its postings less the deleted documents among them (found by walking the
/// shorter of the two lists, once per term and search), and a field's token total is
/// less the deleted documents' lengths (their stored field norms).
pub(crate) struct LiveStatistics<'a> {
    searcher: &'a tantivy::Searcher,
    /// Per segment, its deleted documents in ascending order (empty when it has none).
    deleted: Vec<Vec<DocId>>,
    /// Live token totals of the fields asked for so far: tantivy asks once per term.
    tokens: RefCell<HashMap<tantivy::schema::Field, u64>>,
    /// Live document counts of the terms asked for so far: the term selection, the
    /// coordination factor and tantivy's weights each ask for every query term.
    freqs: RefCell<HashMap<Term, u64>>,
}

impl<'a> LiveStatistics<'a> {
    pub(crate) fn new(searcher: &'a tantivy::Searcher) -> Self {
        let deleted = searcher
            .segment_readers()
            .iter()
            .map(|segment| match segment.alive_bitset() {
                None => Vec::new(),
                Some(alive) => (0..segment.max_doc())
                    .filter(|&d| !alive.is_alive(d))
                    .collect(),
            })
            .collect();
        LiveStatistics {
            searcher,
            deleted,
            tokens: RefCell::new(HashMap::new()),
            freqs: RefCell::new(HashMap::new()),
        }
    }

    /// How many live documents hold `term` (0 when the index cannot be read: the search
    /// itself reports that).
    pub(crate) fn live_doc_freq(&self, term: &Term) -> u64 {
        tantivy::query::Bm25StatisticsProvider::doc_freq(self, term).unwrap_or(0)
    }
}

impl tantivy::query::Bm25StatisticsProvider for LiveStatistics<'_> {
    fn total_num_tokens(&self, field: tantivy::schema::Field) -> tantivy::Result<u64> {
        if let Some(&total) = self.tokens.borrow().get(&field) {
            return Ok(total);
        }
        let mut total = 0u64;
        for (segment, dead) in self.searcher.segment_readers().iter().zip(&self.deleted) {
            let mut tokens = segment.inverted_index(field)?.total_num_tokens();
            if let (false, Some(norms)) = (
                dead.is_empty(),
                segment.fieldnorms_readers().get_field(field)?,
            ) {
                let gone: u64 = dead.iter().map(|&d| u64::from(norms.fieldnorm(d))).sum();
                tokens = tokens.saturating_sub(gone);
            }
            total += tokens;
        }
        self.tokens.borrow_mut().insert(field, total);
        Ok(total)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.searcher.num_docs())
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        if let Some(&df) = self.freqs.borrow().get(term) {
            return Ok(df);
        }
        let mut df = 0u64;
        for (segment, dead) in self.searcher.segment_readers().iter().zip(&self.deleted) {
            let inverted = segment.inverted_index(term.field())?;
            if dead.is_empty() {
                df += u64::from(inverted.doc_freq(term)?);
                continue;
            }
            let Some(mut postings) = inverted.read_postings(term, IndexRecordOption::Basic)? else {
                continue;
            };
            // Walk whichever is shorter: the term's postings, or the deleted documents.
            if (postings.doc_freq() as usize) < dead.len() {
                let alive = segment.alive_bitset();
                let mut live = 0u64;
                while postings.doc() != tantivy::TERMINATED {
                    live += u64::from(alive.is_none_or(|a| a.is_alive(postings.doc())));
                    postings.advance();
                }
                df += live;
                continue;
            }
            let mut live = u64::from(postings.doc_freq());
            for &d in dead {
                if postings.doc() < d {
                    postings.seek(d);
                }
                if postings.doc() == tantivy::TERMINATED {
                    break;
                }
                if postings.doc() == d {
                    live -= 1;
                }
            }
            df += live;
        }
        self.freqs.borrow_mut().insert(term.clone(), df);
        Ok(df)
    }
}

/// A query has at most [`MAX_QUERY_TERMS`] terms of its text and as many emphasized ones
/// (`search_with`); each needs a bit of the `u128` matched-terms set.
const _: () = assert!(2 * MAX_QUERY_TERMS <= u128::BITS as usize);

/// The idf-weighted share of the query's terms in `bits`, in [0, 1].
fn coordination(bits: u128, idf: &[f32]) -> f32 {
    let total: f32 = idf.iter().sum();
    if total <= 0.0 {
        return 1.0;
    }
    let matched: f32 = idf
        .iter()
        .enumerate()
        .filter(|(q, _)| bits & (1u128 << q) != 0)
        .map(|(_, w)| w)
        .sum();
    matched / total
}

/// A tantivy keyword index over code symbols, persisted in one directory.
///
/// A `KeywordIndex` sees its own commits immediately; call [`KeywordIndex::reload`] to see
/// commits made by another process. Only one process at a time may `apply` (tantivy's writer
/// lock, taken on the first `apply` and held until drop); any number may search.
pub struct KeywordIndex {
    dir: PathBuf,
    index: Index,
    reader: IndexReader,
    writer: Option<IndexWriter>,
    fields: Fields,
    generation: u64,
    /// The store id the last commit recorded ("" for none).
    store: String,
}

impl std::fmt::Debug for KeywordIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeywordIndex")
            .field("dir", &self.dir)
            .field("generation", &self.generation)
            .field("writing", &self.writer.is_some())
            .finish()
    }
}

impl KeywordIndex {
    /// Opens the index in `dir`, creating the directory and an empty index (generation 0) if
    /// needed.
    pub fn create_or_open(dir: impl AsRef<Path>) -> Result<KeywordIndex> {
        let dir = dir.as_ref().to_path_buf();
        std::fs::create_dir_all(&dir).map_err(|source| Error::CreateDir {
            path: dir.clone(),
            source,
        })?;
        check_managed(&dir)?;
        let tv = |source: TantivyError| Error::Tantivy {
            path: dir.clone(),
            source,
        };
        let mmap = MmapDirectory::open(&dir).map_err(|e| tv(e.into()))?;
        let (schema, fields) = Fields::schema();
        let index = if Index::exists(&mmap).map_err(|e| tv(e.into()))? {
            let index = Index::open(mmap).map_err(tv)?;
            if index.schema() != schema {
                return Err(Error::SchemaMismatch { path: dir });
            }
            index
        } else {
            Index::create(mmap, schema, IndexSettings::default()).map_err(tv)?
        };
        register_analyzers(index.tokenizers());
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(tv)?;
        let (generation, store) = read_stamp(&dir, &index)?;
        Ok(KeywordIndex {
            dir,
            index,
            reader,
            writer: None,
            fields,
            generation,
            store,
        })
    }

    /// The directory the index lives in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The generation recorded by the last commit this index has seen (0 for a new index).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The store id recorded by the last commit this index has seen ("" for none).
    pub fn store(&self) -> &str {
        &self.store
    }

    /// Number of live documents.
    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// Removes the documents with ids in `remove_ids`, adds `add`, and bumps the generation
    /// by one, as a single atomic commit. An added id replaces any document already stored
    /// under it, so re-adding a changed node needs no explicit removal. Removing an id that
    /// is not in the index is not an error.
    pub fn apply(&mut self, remove_ids: &[u64], add: &[KeywordDoc]) -> Result<()> {
        // Count from the last commit on disk, not from when this instance was opened: another
        // process may have committed since, and generations must never go backwards.
        let (committed, _) = read_stamp(&self.dir, &self.index)?;
        let next = committed.max(self.generation).saturating_add(1);
        let store = self.store.clone();
        self.apply_with_generation(remove_ids, add, &store, next)
    }

    /// Like [`KeywordIndex::apply`], but records the caller's store id and `generation` (the
    /// store's generation this commit brings the index to) instead of incrementing.
    pub fn apply_with_generation(
        &mut self,
        remove_ids: &[u64],
        add: &[KeywordDoc],
        store: &str,
        generation: u64,
    ) -> Result<()> {
        self.apply_batches(remove_ids, [Ok::<_, Error>(add)], store, generation)
    }

    /// [`KeywordIndex::apply_with_generation`] with the documents to add in batches, staged
    /// one after another and committed once: a rebuild of a monorepo holds one batch of
    /// documents at a time, not all of them (their bodies are most of a file's text, once per
    /// nesting level). A batch that is an error stops the apply before anything is committed.
    pub fn apply_batches<B, E>(
        &mut self,
        remove_ids: &[u64],
        batches: impl IntoIterator<Item = std::result::Result<B, E>>,
        store: &str,
        generation: u64,
    ) -> std::result::Result<(), E>
    where
        B: AsRef<[KeywordDoc]>,
        E: From<Error>,
    {
        let mut added = HashSet::new();
        let replace = self.committed_docs()? > 0;
        self.stage_removals(remove_ids)?;
        for batch in batches {
            let batch = match batch {
                Ok(b) => b,
                Err(e) => {
                    if let Ok(writer) = self.writer() {
                        let _ = writer.rollback();
                    }
                    return Err(e);
                }
            };
            self.stage(remove_ids, batch.as_ref(), replace, &mut added)?;
        }
        Ok(self.commit(store, generation)?)
    }

    /// Commits what was staged, recording `store` and `generation`.
    fn commit(&mut self, store: &str, generation: u64) -> Result<()> {
        let payload = serde_json::to_string(&Payload {
            format: PAYLOAD_FORMAT,
            generation,
            store: store.to_string(),
        })
        .unwrap_or_default();
        let writer = self.writer()?;
        let committed = writer.prepare_commit().and_then(|mut prepared| {
            prepared.set_payload(&payload);
            prepared.commit()
        });
        if let Err(source) = committed {
            // Leave the writer clean for the next call; the on-disk index is still at the
            // previous commit either way.
            let _ = writer.rollback();
            return Err(self.tantivy(source));
        }
        self.generation = generation;
        self.store = store.to_string();
        self.compact_if_fragmented()?;
        self.reader.reload().map_err(|e| self.tantivy(e))
    }

    /// Merges all segments into one when deleted documents make up more than
    /// [`MAX_DELETED_PERCENT`] of them; past [`MAX_SEGMENTS`] alone, merges the small
    /// segments (under an eighth of the documents each) among themselves. Incremental runs replace a few
    /// files' documents at a time, and tantivy's background merges die with the short-lived
    /// `acms index` process, so without this the index grows with every run (seen: 16× its
    /// size after 70 runs) and every search walks the deleted documents. Folding the large
    /// segments in on the count alone rewrote the whole index every few edits (5 s on a
    /// monorepo, one refresh in four).
    fn compact_if_fragmented(&mut self) -> Result<()> {
        let metas = self
            .index
            .searchable_segment_metas()
            .map_err(|e| self.tantivy(e))?;
        let max_doc: u64 = metas.iter().map(|m| u64::from(m.max_doc())).sum();
        let deleted: u64 = metas.iter().map(|m| u64::from(m.num_deleted_docs())).sum();
        let fragmented = deleted * 100 > max_doc * MAX_DELETED_PERCENT;
        if metas.len() < 2 || !(fragmented || metas.len() > MAX_SEGMENTS) {
            return Ok(());
        }
        let small = |m: &&tantivy::SegmentMeta| u64::from(m.max_doc()) * 8 < max_doc;
        let mut ids: Vec<_> = metas.iter().filter(small).map(|m| m.id()).collect();
        if fragmented || ids.len() < 2 {
            ids = metas.iter().map(|m| m.id()).collect();
        }
        // A segment's files count as living while anything holds its meta — this list, the
        // reader's searcher — so both let go before the collection (a batched rebuild left
        // its 14 merged-away segments behind otherwise: 100 MB).
        drop(metas);
        let writer = self.writer()?;
        writer.merge(&ids).wait().map_err(|e| self.tantivy(e))?;
        self.reader.reload().map_err(|e| self.tantivy(e))?;
        let writer = self.writer()?;
        writer
            .garbage_collect_files()
            .wait()
            .map_err(|e| self.tantivy(e))?;
        Ok(())
    }

    /// Documents in the last commit.
    fn committed_docs(&self) -> Result<u64> {
        Ok(self
            .index
            .load_metas()
            .map_err(|e| self.tantivy(e))?
            .segments
            .iter()
            .map(|s| u64::from(s.num_docs()))
            .sum())
    }

    /// Queues the deletes of one apply in the writer.
    fn stage_removals(&mut self, remove_ids: &[u64]) -> Result<()> {
        let id = self.fields.id;
        let removed: HashSet<u64> = remove_ids.iter().copied().collect();
        let ops: Vec<UserOperation> = removed
            .iter()
            .map(|&r| UserOperation::Delete(Term::from_field_u64(id, r)))
            .collect();
        self.run(ops)
    }

    /// Queues one batch of adds in the writer, without committing. `added` holds the ids
    /// of the apply's earlier batches: an id added twice is an error. With `replace` (the
    /// index has committed documents) each add first deletes its id; on an empty index (the
    /// first full build) skipping those deletes keeps bulk indexing fast.
    fn stage(
        &mut self,
        remove_ids: &[u64],
        add: &[KeywordDoc],
        replace: bool,
        added: &mut HashSet<u64>,
    ) -> Result<()> {
        for doc in add {
            if !added.insert(doc.id) {
                return Err(Error::DuplicateId(doc.id));
            }
        }
        let id = self.fields.id;
        let removed: HashSet<u64> = remove_ids.iter().copied().collect();
        // One document per message: tantivy's queue to its indexing threads holds 10 000
        // messages, so a batch per message let a rebuild queue every document of a monorepo
        // (700 MB) ahead of the two threads that index them.
        for d in add {
            let mut ops = Vec::with_capacity(2);
            if replace && !removed.contains(&d.id) {
                ops.push(UserOperation::Delete(Term::from_field_u64(id, d.id)));
            }
            ops.push(UserOperation::Add(to_document(&self.fields, d)));
            self.run(ops)?;
        }
        Ok(())
    }

    /// Queues `ops` in the writer; on failure rolls back everything staged.
    fn run(&mut self, ops: Vec<UserOperation>) -> Result<()> {
        if ops.is_empty() {
            return Ok(());
        }
        let writer = self.writer()?;
        if let Err(source) = writer.run(ops) {
            let _ = writer.rollback();
            return Err(self.tantivy(source));
        }
        Ok(())
    }

    /// The writer, created (and the directory lock taken) on first use.
    fn writer(&mut self) -> Result<&mut IndexWriter> {
        if self.writer.is_none() {
            let threads = std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .clamp(1, 4);
            let writer = self
                .index
                .writer_with_num_threads(threads, threads * WRITER_BYTES_PER_THREAD)
                .map_err(|e| match e {
                    TantivyError::LockFailure(..) => Error::Locked {
                        path: self.dir.clone(),
                    },
                    source => self.tantivy(source),
                })?;
            // Merging is ours (see `compact_if_fragmented`): background merges die with a
            // short-lived process and race with an explicit merge.
            writer.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
            self.writer = Some(writer);
        }
        // Just set above when it was None.
        self.writer.as_mut().ok_or_else(|| Error::Locked {
            path: self.dir.clone(),
        })
    }

    /// Opens every part of every segment a search reads (the postings of each field, the id
    /// column), so an index whose files were deleted or cut short is found before it is
    /// updated or trusted: such an index opens, and even commits, without complaint.
    pub fn check(&self) -> Result<()> {
        let damaged = |detail: String| Error::Damaged {
            path: self.dir.clone(),
            detail,
        };
        let searcher = self.reader.searcher();
        let f = &self.fields;
        let fields = [
            f.id,
            f.name,
            f.qualified_name,
            f.signature,
            f.doc,
            f.path,
            f.identifiers,
            f.body,
        ];
        for segment in searcher.segment_readers() {
            for &field in &fields {
                segment
                    .inverted_index(field)
                    .map_err(|e| damaged(e.to_string()))?;
            }
            segment
                .fast_fields()
                .u64("id")
                .map_err(|e| damaged(e.to_string()))?;
        }
        Ok(())
    }

    /// Picks up commits made by another process (or another `KeywordIndex` on the same
    /// directory) since this one was opened or last reloaded.
    pub fn reload(&mut self) -> Result<()> {
        self.reader.reload().map_err(|e| self.tantivy(e))?;
        (self.generation, self.store) = read_stamp(&self.dir, &self.index)?;
        Ok(())
    }

    /// The query terms `search` would use for `query`: code-tokenized, stop words dropped,
    /// deduplicated, terms in most documents of a large index dropped, capped to the rarest
    /// [`crate::MAX_QUERY_TERMS`] (see the `query` module).
    pub fn query_terms(&self, query: &str) -> Vec<String> {
        let searcher = self.reader.searcher();
        self.select_query_terms(&LiveStatistics::new(&searcher), query)
    }

    /// [`KeywordIndex::query_terms`] with the statistics of the search that uses them.
    fn select_query_terms(&self, live: &LiveStatistics<'_>, query: &str) -> Vec<String> {
        let mut stemmer = stemmer();
        let fields = &self.fields;
        select_terms(candidate_terms(query), live.searcher.num_docs(), |t| {
            let df = |field, text: &str| live.live_doc_freq(&Term::from_field_text(field, text));
            let stemmed = stem(&mut stemmer, t);
            df(fields.identifiers, t)
                .max(df(fields.path, t))
                .max(df(fields.doc, &stemmed))
        })
    }

    /// The best `limit` documents for `query`, best first (ties by ascending id).
    ///
    /// Any text is a valid query: text without searchable terms (empty, punctuation, only stop
    /// words) returns no hits, and a very long query is cut to its rarest terms.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<KeywordHit>> {
        self.search_with(query, &[], limit)
    }

    /// [`KeywordIndex::search`] with `emphasis`: phrases (identifiers the task names in code,
    /// say) whose terms are always part of the query, whatever their frequency, and weigh
    /// `factor` times as much as the other terms.
    ///
    /// In six steps: the emphasis weights, the query terms, their weighted clauses, the BM25
    /// pool, the terms each pooled hit matches, and the re-rank by coordination factor.
    pub fn search_with(
        &self,
        query: &str,
        emphasis: &[(String, f32)],
        limit: usize,
    ) -> Result<Vec<KeywordHit>> {
        let searcher = self.reader.searcher();
        let limit = usize::try_from(searcher.num_docs())
            .unwrap_or(usize::MAX)
            .min(limit);
        if limit == 0 {
            return Ok(Vec::new());
        }
        let weight = emphasis_weights(emphasis);
        let stats = LiveStatistics::new(&searcher);
        let terms = self.search_terms(&stats, query, &weight);
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let variants = self.variants(&stats, &terms);
        let clauses = self.weighted_clauses(&terms, &variants, &weight);
        let pool = self.pool(&stats, &clauses, terms.len(), limit)?;
        let matched = self.matched_terms(&searcher, &clauses, &pool)?;
        let idf = term_idf(&stats, &clauses, terms.len());
        Ok(coordinated(pool, matched, &idf, &terms, limit))
    }

    /// Step 2 of a search: the query's own terms ([`KeywordIndex::select_query_terms`]),
    /// then the emphasized ones it lacks, then the identifiers that join two of its words.
    fn search_terms(
        &self,
        stats: &LiveStatistics<'_>,
        query: &str,
        weight: &HashMap<String, f32>,
    ) -> Vec<String> {
        let mut terms = self.select_query_terms(stats, query);
        let mut emphasized: Vec<String> = weight.keys().cloned().collect();
        emphasized.sort();
        for t in emphasized.into_iter().take(MAX_QUERY_TERMS) {
            if !terms.contains(&t) {
                terms.push(t);
            }
        }
        // Identifiers that join two of the task's words, where the index has them.
        let mut compounds = 0;
        for c in compound_candidates(query) {
            if compounds == MAX_COMPOUND_TERMS || terms.len() >= 2 * MAX_QUERY_TERMS {
                break;
            }
            let term = Term::from_field_text(self.fields.identifiers, &c);
            if !terms.contains(&c) && stats.live_doc_freq(&term) > 0 {
                terms.push(c);
                compounds += 1;
            }
        }
        terms
    }

    /// Step 2b of a search: names of the index that share a query term's stem and are no
    /// query term themselves — `contains` for "containment", `validate` for "validation": a
    /// report words what the code names, and names are not stemmed. Found by walking the
    /// name field's dictionary from the stem, at most [`MAX_VARIANTS_PER_TERM`] per term
    /// (the shortest) and [`MAX_VARIANTS`] per query.
    fn variants(&self, stats: &LiveStatistics<'_>, terms: &[String]) -> Vec<(usize, String)> {
        let searcher = stats.searcher;
        let is_word = |t: &str| t.bytes().all(|b| b.is_ascii_lowercase());
        // A name in many documents of a large index (`value` for a task's "values") says
        // little and crowds out the rest: such variants are left out. In a small index
        // every name is in a large share of it (the common-term rule's threshold).
        let num_docs = searcher.num_docs();
        let common = |name: &str| {
            let df = stats.live_doc_freq(&Term::from_field_text(self.fields.name, name));
            num_docs >= COMMON_TERM_MIN_DOCS
                && df.saturating_mul(1000) > num_docs.saturating_mul(MAX_VARIANT_PERMILLE)
        };
        let mut stemmer = stemmer();
        let mut out = Vec::new();
        for (qi, term) in terms.iter().enumerate() {
            if out.len() >= MAX_VARIANTS {
                break;
            }
            if !is_word(term) {
                continue;
            }
            let root = stem(&mut stemmer, term);
            if root.len() < MIN_VARIANT_STEM || !is_word(&root) {
                continue;
            }
            // The first string after every name that starts with `root`.
            let mut end = root.clone().into_bytes();
            if let Some(last) = end.last_mut() {
                *last += 1;
            }
            let mut found: Vec<String> = Vec::new();
            for segment in searcher.segment_readers() {
                let Ok(inverted) = segment.inverted_index(self.fields.name) else {
                    continue;
                };
                let Ok(mut names) = inverted.terms().range().ge(&root).lt(&end).into_stream()
                else {
                    continue;
                };
                let mut scanned = 0;
                while scanned < MAX_SCANNED_NAMES && names.advance() {
                    scanned += 1;
                    let Ok(name) = std::str::from_utf8(names.key()) else {
                        continue;
                    };
                    if is_word(name)
                        && !terms.iter().any(|t| t == name)
                        && !found.iter().any(|f| f == name)
                        && stem(&mut stemmer, name) == root
                        && !common(name)
                    {
                        found.push(name.to_owned());
                    }
                }
            }
            found.sort_by(|a, b| a.len().cmp(&b.len()).then_with(|| a.cmp(b)));
            let room = MAX_VARIANTS - out.len();
            out.extend(
                found
                    .into_iter()
                    .take(MAX_VARIANTS_PER_TERM.min(room))
                    .map(|name| (qi, name)),
            );
        }
        out
    }

    /// Step 3 of a search: the (field, term) clauses of `terms` and of their `variants`, each
    /// boosted by the largest emphasis weight among the query terms it came from.
    fn weighted_clauses(
        &self,
        terms: &[String],
        variants: &[(usize, String)],
        weight: &HashMap<String, f32>,
    ) -> Vec<Clause> {
        let searchable = self.fields.searchable();
        let mut clauses = clauses(terms, &searchable, &mut stemmer());
        clauses.extend(variant_clauses(variants, &searchable));
        for c in &mut clauses {
            let w = c
                .query_terms
                .iter()
                .filter_map(|&q| weight.get(&terms[q]))
                .fold(1.0f32, |a, &b| a.max(b));
            c.boost *= w;
        }
        clauses
    }

    /// Step 4 of a search: the BM25 hits of `clauses` with their ids, best first (ties by
    /// ascending id). Fetched beyond `limit`: the coordination factor re-ranks this pool, and
    /// a document that matches most of the query can climb from below the cut.
    fn pool(
        &self,
        stats: &LiveStatistics<'_>,
        clauses: &[Clause],
        num_terms: usize,
        limit: usize,
    ) -> Result<Vec<PoolHit>> {
        let searcher = stats.searcher;
        let query = boolean_query(clauses, num_terms);
        let fetch = limit.saturating_mul(COORD_POOL).saturating_add(TIE_MARGIN);
        let top = searcher
            .search_with_statistics_provider(
                &query,
                &TopDocs::with_limit(fetch).order_by_score(),
                stats,
            )
            .map_err(|e| self.tantivy(e))?;

        // Resolve ids through the fast field, one column per segment.
        let mut columns = HashMap::new();
        let mut hits = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let column = match columns.entry(addr.segment_ord) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => e.insert(
                    searcher
                        .segment_reader(addr.segment_ord)
                        .fast_fields()
                        .u64("id")
                        .map_err(|e| self.tantivy(e))?,
                ),
            };
            if let Some(id) = column.first(addr.doc_id) {
                hits.push(PoolHit { score, id, addr });
            }
        }
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
        Ok(hits)
    }

    /// Step 5 of a search: which query terms each hit contains, as a bit set per hit (bit `q`
    /// for query term `q`). Walks each clause's postings over the hits of each segment in doc
    /// order. At most 2 × 64 query terms (64 of the text, 64 emphasized), so a u128 bit set
    /// suffices.
    fn matched_terms(
        &self,
        searcher: &tantivy::Searcher,
        clauses: &[Clause],
        hits: &[PoolHit],
    ) -> Result<Vec<u128>> {
        let mut matched = vec![0u128; hits.len()];
        let mut by_segment: HashMap<u32, Vec<(DocId, usize)>> = HashMap::new();
        for (i, hit) in hits.iter().enumerate() {
            by_segment
                .entry(hit.addr.segment_ord)
                .or_default()
                .push((hit.addr.doc_id, i));
        }
        for (segment_ord, mut docs) in by_segment {
            docs.sort_unstable();
            let segment = searcher.segment_reader(segment_ord);
            for clause in clauses {
                let inverted = segment
                    .inverted_index(clause.field)
                    .map_err(|e| self.tantivy(e))?;
                let postings = inverted
                    .read_postings(&clause.term, IndexRecordOption::Basic)
                    .map_err(|e| self.tantivy(e.into()))?;
                let Some(mut postings) = postings else {
                    continue;
                };
                let bits = clause
                    .query_terms
                    .iter()
                    .fold(0u128, |acc, &q| acc | (1u128 << q));
                for &(doc, hit) in &docs {
                    if postings.doc() < doc {
                        postings.seek(doc);
                    }
                    if postings.doc() == doc {
                        matched[hit] |= bits;
                    }
                }
            }
        }
        Ok(matched)
    }

    fn tantivy(&self, source: TantivyError) -> Error {
        Error::Tantivy {
            path: self.dir.clone(),
            source,
        }
    }
}

/// Step 1 of a search: per emphasized term the largest factor of the phrases it is in.
fn emphasis_weights(emphasis: &[(String, f32)]) -> HashMap<String, f32> {
    let mut weight: HashMap<String, f32> = HashMap::new();
    for (phrase, factor) in emphasis {
        for t in candidate_terms(phrase) {
            let w = weight.entry(t).or_insert(1.0);
            *w = w.max(*factor);
        }
    }
    weight
}

/// One BM25 hit of a search's pool, before the coordination factor.
struct PoolHit {
    score: f32,
    id: u64,
    addr: DocAddress,
}

/// Step 6 of a search: each hit's score times its coordination factor, re-ranked (ties by
/// ascending id), cut to `limit`, with relevance and the names of its matched `terms`.
fn coordinated(
    pool: Vec<PoolHit>,
    matched: Vec<u128>,
    idf: &[f32],
    terms: &[String],
    limit: usize,
) -> Vec<KeywordHit> {
    let exponent = coordination_exponent(terms.len());
    let mut hits: Vec<(f32, u64, u128)> = pool
        .into_iter()
        .zip(matched)
        .map(|(hit, bits)| {
            (
                hit.score * coordination(bits, idf).powf(exponent),
                hit.id,
                bits,
            )
        })
        .collect();
    hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    hits.truncate(limit);
    let best = hits.first().map_or(1.0, |h| h.0).max(f32::MIN_POSITIVE);
    hits.into_iter()
        .map(|(score, id, bits)| KeywordHit {
            id,
            score,
            relevance: (score / best).clamp(0.0, 1.0),
            matched_terms: terms
                .iter()
                .enumerate()
                .filter(|(q, _)| bits & (1u128 << q) != 0)
                .map(|(_, t)| t.clone())
                .collect(),
        })
        .collect()
}

fn to_document(fields: &Fields, d: &KeywordDoc) -> TantivyDocument {
    let mut doc = TantivyDocument::new();
    doc.add_u64(fields.id, d.id);
    doc.add_text(fields.name, &d.name);
    doc.add_text(fields.qualified_name, &d.qualified_name);
    doc.add_text(fields.signature, &d.signature);
    doc.add_text(fields.doc, &d.doc);
    doc.add_text(fields.path, &d.path);
    // `identifiers` is multi-valued: the split names, signature and body, searched
    // unstemmed so that `user` finds `getUserName` wherever it occurs.
    for text in [&d.name, &d.qualified_name, &d.signature, &d.body] {
        doc.add_text(fields.identifiers, text);
    }
    doc.add_text(fields.body, &d.body);
    doc
}

/// The generation and store id the last commit recorded.
fn read_stamp(dir: &Path, index: &Index) -> Result<(u64, String)> {
    let metas = index.load_metas().map_err(|source| Error::Tantivy {
        path: dir.to_path_buf(),
        source,
    })?;
    let Some(payload) = metas.payload else {
        return Ok((0, String::new()));
    };
    match serde_json::from_str::<Payload>(&payload) {
        Ok(p) if p.format == PAYLOAD_FORMAT => Ok((p.generation, p.store)),
        _ => Err(Error::BadPayload {
            path: dir.to_path_buf(),
            payload,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(id: u64, name: &str) -> KeywordDoc {
        KeywordDoc {
            id,
            name: name.into(),
            qualified_name: format!("m.{name}"),
            ..KeywordDoc::default()
        }
    }

    fn files(dir: &Path) -> usize {
        std::fs::read_dir(dir).map_or(0, |d| d.count())
    }

    /// Simulates a process killed after its segments reached the disk but before the commit
    /// replaced `meta.json`: the staged documents must be invisible to every reader, now and
    /// after reopening, and the previous commit (with its generation) must still be served.
    #[test]
    fn uncommitted_adds_are_invisible() {
        let tmp = tempfile::tempdir().unwrap();
        let mut index = KeywordIndex::create_or_open(tmp.path()).unwrap();
        index.apply(&[], &[doc(1, "keptname")]).unwrap();
        let before = files(tmp.path());

        let staged: Vec<KeywordDoc> = (2..200).map(|i| doc(i, "ghostname")).collect();
        index.stage_removals(&[1]).unwrap();
        index
            .stage(&[1], &staged, true, &mut HashSet::new())
            .unwrap();
        // Flushes the staged segments to disk, as the first half of a commit does.
        let prepared = index.writer().unwrap().prepare_commit().unwrap();
        std::mem::drop(prepared);
        assert!(
            files(tmp.path()) > before,
            "the staged segment files are on disk"
        );

        let other = KeywordIndex::create_or_open(tmp.path()).unwrap();
        assert_eq!(other.num_docs(), 1);
        assert_eq!(other.generation(), 1);
        assert!(other.search("ghostname", 10).unwrap().is_empty());
        assert_eq!(other.search("keptname", 10).unwrap()[0].id, 1);

        // The "killed" writer goes away without committing.
        drop(index);
        let mut reopened = KeywordIndex::create_or_open(tmp.path()).unwrap();
        assert_eq!(reopened.num_docs(), 1);
        assert_eq!(reopened.generation(), 1);
        assert!(reopened.search("ghostname", 10).unwrap().is_empty());

        // The next commit works and cleans up the orphaned files eventually; it must not
        // resurrect the staged documents.
        reopened.apply(&[], &[doc(2, "nextname")]).unwrap();
        assert_eq!(reopened.num_docs(), 2);
        assert!(reopened.search("ghostname", 10).unwrap().is_empty());
    }

    /// What `query` finds, with scores.
    fn ranked(index: &KeywordIndex, query: &str) -> Vec<(u64, f32)> {
        let hits = index.search(query, 50).unwrap();
        hits.into_iter().map(|h| (h.id, h.score)).collect()
    }

    /// An index updated in place (documents replaced, one removed) ranks like one built afresh
    /// from the documents it ends with: deleted documents leave no trace in the statistics.
    #[test]
    fn an_updated_index_ranks_like_a_fresh_one() {
        let body = |i: u64, word: &str| {
            let mut d = doc(i, &format!("sym{i}"));
            d.body = format!("{word} parse value{}", i % 3);
            d
        };
        let first: Vec<KeywordDoc> = (0..40).map(|i| body(i, "render")).collect();
        let mut last: Vec<KeywordDoc> = (0..39).map(|i| body(i, "render")).collect();
        for d in last.iter_mut().take(8) {
            *d = body(d.id, "format");
        }

        let updated_dir = tempfile::tempdir().unwrap();
        let mut updated = KeywordIndex::create_or_open(updated_dir.path()).unwrap();
        updated.apply(&[], &first).unwrap();
        // Fewer than 30 % deleted: no merge.
        updated.apply(&[], &last[..8]).unwrap();
        // A removal alone: one segment with a deleted document.
        updated.apply(&[39], &[]).unwrap();

        let fresh_dir = tempfile::tempdir().unwrap();
        let mut fresh = KeywordIndex::create_or_open(fresh_dir.path()).unwrap();
        fresh.apply(&[], &last).unwrap();

        assert_eq!(updated.num_docs(), 39);
        // `sym3` and `sym20` have fewer postings than their segment has deleted documents, so
        // their live counts walk the postings; `render` and `value1` seek the deleted ones.
        for query in [
            "render value1",
            "format parse",
            "parse",
            "sym3 render",
            "sym20 value2",
        ] {
            assert_eq!(ranked(&updated, query), ranked(&fresh, query), "{query}");
        }
    }

    /// A task that writes `show fixtures` apart finds the `_showfixtures_main` it names.
    #[test]
    fn prose_words_find_the_identifier_that_joins_them() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = KeywordIndex::create_or_open(dir.path()).unwrap();
        let mut docs: Vec<KeywordDoc> = (0..6)
            .map(|i| {
                let mut d = doc(i, &format!("fixture_scope_{i}"));
                d.body = "show fixture scope".into();
                d
            })
            .collect();
        docs.push(doc(6, "_showfixtures_main"));
        index.apply(&[], &docs).unwrap();
        let hits = ranked(&index, "It would be useful to show fixtures");
        assert!(hits.iter().any(|&(id, _)| id == 6), "{hits:?}");
    }

    #[test]
    fn coordination_is_the_idf_weighted_share_of_the_query_and_fades_with_its_length() {
        let idf = [3.0, 1.0, 0.0];
        assert_eq!(coordination(0b011, &idf), 1.0);
        assert_eq!(coordination(0b001, &idf), 0.75);
        assert_eq!(coordination(0, &idf), 0.0);
        assert_eq!(coordination(0b111, &[0.0, 0.0]), 1.0);
        assert_eq!(coordination_exponent(0), 1.0);
        assert_eq!(coordination_exponent(2), 1.0);
        assert_eq!(coordination_exponent(4), 0.5);
        assert!(coordination_exponent(64) < 0.1);
    }
}
