//! The tantivy schema of the keyword index: which fields exist, how each is analyzed, and how
//! much each counts at query time.
//!
//! Nothing is stored: a hit only needs its node id (a fast field), and the caller's store holds
//! the text. Text fields keep term frequencies but no positions, because queries are bags of
//! terms (no phrases), which keeps the index small.

use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::{StopWordFilter, TextAnalyzer, TokenizerManager};

use crate::stem::MemoStemmer;
use crate::terms::STOP_WORDS;
use crate::tokenizer::CodeTokenizer;

/// Tokenizer name for identifier-bearing fields: code split, lowercase, no stemming.
pub(crate) const CODE_ANALYZER: &str = "acms_code";
/// Tokenizer name for prose-bearing fields: code split, English stop words, English stemming.
pub(crate) const TEXT_ANALYZER: &str = "acms_text";

/// How a field's terms are derived from a query term.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Analysis {
    /// The query term is used as is.
    Code,
    /// The query term is stemmed first.
    Stemmed,
}

/// One searchable field with its query-time boost.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SearchField {
    pub field: Field,
    pub boost: f32,
    pub analysis: Analysis,
    /// Whether a term that names nothing on its own (`crate::terms::names_nothing`) is
    /// matched here: only in bodies, where it adds to a quoted snippet's match; in a name it
    /// would find every local helper called `f`.
    pub vague_terms: bool,
}

/// The fields of the index.
#[derive(Clone, Debug)]
pub(crate) struct Fields {
    pub id: Field,
    pub name: Field,
    pub qualified_name: Field,
    pub signature: Field,
    pub doc: Field,
    pub path: Field,
    pub identifiers: Field,
    pub body: Field,
}

/// Field boosts, highest first. Names are what a developer types when they know what they
/// want; body text matches almost anything, so it only breaks ties between better signals.
pub(crate) const NAME_BOOST: f32 = 5.0;
pub(crate) const QUALIFIED_NAME_BOOST: f32 = 4.0;
pub(crate) const SIGNATURE_BOOST: f32 = 2.5;
pub(crate) const DOC_BOOST: f32 = 2.0;
pub(crate) const PATH_BOOST: f32 = 1.5;
pub(crate) const IDENTIFIERS_BOOST: f32 = 1.0;
pub(crate) const BODY_BOOST: f32 = 0.5;

fn text(analyzer: &str) -> TextOptions {
    TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(analyzer)
            .set_index_option(IndexRecordOption::WithFreqs),
    )
}

impl Fields {
    /// Builds the schema and returns it with its fields.
    pub(crate) fn schema() -> (Schema, Fields) {
        let mut b = Schema::builder();
        let fields = Fields {
            id: b.add_u64_field("id", INDEXED | FAST),
            name: b.add_text_field("name", text(CODE_ANALYZER)),
            qualified_name: b.add_text_field("qualified_name", text(CODE_ANALYZER)),
            signature: b.add_text_field("signature", text(CODE_ANALYZER)),
            doc: b.add_text_field("doc", text(TEXT_ANALYZER)),
            path: b.add_text_field("path", text(CODE_ANALYZER)),
            identifiers: b.add_text_field("identifiers", text(CODE_ANALYZER)),
            body: b.add_text_field("body", text(TEXT_ANALYZER)),
        };
        (b.build(), fields)
    }

    /// The searchable fields with their boosts and analysis, highest boost first.
    pub(crate) fn searchable(&self) -> [SearchField; 7] {
        let f = |field, boost, analysis| SearchField {
            field,
            boost,
            analysis,
            vague_terms: false,
        };
        [
            f(self.name, NAME_BOOST, Analysis::Code),
            f(self.qualified_name, QUALIFIED_NAME_BOOST, Analysis::Code),
            f(self.signature, SIGNATURE_BOOST, Analysis::Code),
            f(self.doc, DOC_BOOST, Analysis::Stemmed),
            f(self.path, PATH_BOOST, Analysis::Code),
            f(self.identifiers, IDENTIFIERS_BOOST, Analysis::Code),
            SearchField {
                vague_terms: true,
                ..f(self.body, BODY_BOOST, Analysis::Stemmed)
            },
        ]
    }
}

fn stop_words() -> StopWordFilter {
    StopWordFilter::remove(STOP_WORDS.iter().map(|w| (*w).to_owned()))
}

/// Registers the analyzers the schema names.
pub(crate) fn register_analyzers(manager: &TokenizerManager) {
    manager.register(CODE_ANALYZER, TextAnalyzer::builder(CodeTokenizer).build());
    manager.register(
        TEXT_ANALYZER,
        TextAnalyzer::builder(CodeTokenizer)
            .filter(stop_words())
            .filter(MemoStemmer)
            .build(),
    );
}
