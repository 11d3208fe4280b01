//! The keyword index of acms: a tantivy BM25 index over code symbols.
//!
//! The retrieval layer builds it at index time from UKO nodes (mapped to [`KeywordDoc`]s),
//! updates it incrementally with [`KeywordIndex::apply`], and queries it with
//! [`KeywordIndex::search`] for the `simple-keyword` strategy.
//!
//! ```
//! use acms_keyword::{KeywordDoc, KeywordIndex};
//! # fn main() -> Result<(), acms_keyword::Error> {
//! # let tmp = tempfile::tempdir().unwrap();
//! let mut index = KeywordIndex::create_or_open(tmp.path().join("keyword"))?;
//! index.apply(&[], &[KeywordDoc {
//!     id: 7,
//!     path: "web/render.py".into(),
//!     name: "render_template".into(),
//!     qualified_name: "web.render.render_template".into(),
//!     signature: "def render_template(name, context)".into(),
//!     doc: "Renders a template with the given context.".into(),
//!     ..KeywordDoc::default()
//! }])?;
//! let hits = index.search("render the template", 10)?;
//! assert_eq!(hits[0].id, 7);
//! assert_eq!(hits[0].matched_terms, ["render", "template"]);
//! # Ok(()) }
//! ```
//!
//! **API Boundary:** depends on no other acms crate; ids are plain `u64`s chosen by the caller.
//! **Architecture Invariant:** no query text makes `search` fail or panic.

mod error;
mod index;
mod query;
mod schema;
mod stem;
mod terms;
mod tokenizer;

pub use error::{Error, Result};
pub use index::{KeywordDoc, KeywordHit, KeywordIndex};
pub use query::{COMMON_TERM_MIN_DOCS, COMMON_TERM_PERCENT, MAX_CANDIDATE_TERMS, MAX_QUERY_TERMS};
pub use tokenizer::{CodeTokenStream, CodeTokenizer, MAX_TERM_BYTES, code_terms, split_identifier};
