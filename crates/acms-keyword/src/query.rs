//! Turning arbitrary user text into a tantivy query without ever failing.
//!
//! The query is built programmatically from the code tokenizer's terms (tantivy's
//! `QueryParser` is not used: its syntax rejects unbalanced quotes, stray colons and the like,
//! which are normal in task text and pasted code). Stop words are dropped, terms are
//! deduplicated, terms found in most documents of a large index are dropped (see
//! [`select_terms`]), and at most [`MAX_QUERY_TERMS`] are kept — the rarest in the index among
//! the first [`MAX_CANDIDATE_TERMS`] — so a 100 000-character query costs about as much as a
//! short one. Each kept term becomes a disjunction-max of one boosted `TermQuery` per field,
//! and the terms are OR-ed together.
//!
//! This module does not run the query or score anything; `index` does.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use tantivy::Term;
use tantivy::query::{BooleanQuery, BoostQuery, DisjunctionMaxQuery, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::tokenizer::{TextAnalyzer, TokenStream, Tokenizer};

use crate::schema::{Analysis, SearchField};
use crate::stem::stem;
use crate::terms::{STOP_WORDS, names_nothing};
use crate::tokenizer::CodeTokenizer;

/// Most distinct terms one query uses.
pub const MAX_QUERY_TERMS: usize = 64;
/// Most distinct terms considered (in order of first occurrence) before rarity selection.
pub const MAX_CANDIDATE_TERMS: usize = 1024;

/// Distinct non-stop-word terms of `query`, in order of first occurrence, at most
/// [`MAX_CANDIDATE_TERMS`].
pub(crate) fn candidate_terms(query: &str) -> Vec<String> {
    let mut tokenizer = CodeTokenizer;
    let mut stream = tokenizer.token_stream(query);
    let mut seen = std::collections::HashSet::new();
    let mut terms = Vec::new();
    while terms.len() < MAX_CANDIDATE_TERMS && stream.advance() {
        let text = &stream.token().text;
        if STOP_WORDS.contains(&text.as_str()) || seen.contains(text) {
            continue;
        }
        seen.insert(text.clone());
        terms.push(text.clone());
    }
    terms
}

/// Most distinct word pairs [`compound_candidates`] proposes.
const MAX_COMPOUND_PAIRS: usize = 256;
/// Most joined identifiers one query adds to its terms.
pub(crate) const MAX_COMPOUND_TERMS: usize = 8;

/// Identifiers that may join two words the task writes apart, for `show fixtures` a
/// `showfixtures`: each pair of neighbouring prose words (stop words skipped) of at least three
/// letters, joined, also with the second word's plural `s` added or removed — a task says
/// `show fixture scopes` of `pytest --fixtures` and the code has `_showfixtures_main`. A word
/// is lowercase letters, or capitalized at most; an identifier (`test_path`, `MatrixSymbol`,
/// `x2`) breaks the pairing, since its parts are not words the task wrote apart. The caller
/// keeps the joins the index holds.
pub(crate) fn compound_candidates(query: &str) -> Vec<String> {
    let word = |t: &str| {
        let mut chars = t.chars();
        t.len() >= 3
            && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_lowercase())
    };
    let mut previous: Option<String> = None;
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for token in query.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        if seen.len() == MAX_COMPOUND_PAIRS {
            break;
        }
        if token.is_empty() {
            continue;
        }
        let text = token.to_ascii_lowercase();
        if STOP_WORDS.contains(&text.as_str()) {
            continue;
        }
        if !word(token) {
            previous = None;
            continue;
        }
        if let Some(a) = previous.replace(text.clone())
            && a != text
            && seen.insert((a.clone(), text.clone()))
        {
            let joined = format!("{a}{text}");
            let other = match text.strip_suffix('s') {
                Some(singular) => format!("{a}{singular}"),
                None => format!("{joined}s"),
            };
            out.push(joined);
            out.push(other);
        }
    }
    out
}

/// Below this many documents no term is dropped for being common: in a small index, document
/// frequencies are too noisy to call a term uninformative.
pub const COMMON_TERM_MIN_DOCS: u64 = 1000;
/// A term found in more than this percentage of the documents is dropped when the query has
/// other terms that match something. Such terms (`fn`, `self`, `return` in pasted code) add
/// almost nothing to BM25 (idf below ln 2) but their posting lists are the longest to walk.
pub const COMMON_TERM_PERCENT: u64 = 50;

/// Chooses the query terms among `candidates` (in query order) given the index size and each
/// term's document frequency `df` (the largest over the fields that matter):
///
/// 1. in an index of at least [`COMMON_TERM_MIN_DOCS`] documents, terms in more than
///    [`COMMON_TERM_PERCENT`] % of them are dropped, unless no other term matches anything;
/// 2. if more than [`MAX_QUERY_TERMS`] remain, the rarest matching ones are kept (rare terms
///    discriminate; a term in no document cannot match), ties and zero-frequency terms by
///    first occurrence.
///
/// The kept terms stay in query order. `df` is not called when neither step can apply.
pub(crate) fn select_terms(
    candidates: Vec<String>,
    num_docs: u64,
    mut df: impl FnMut(&str) -> u64,
) -> Vec<String> {
    let drop_common = num_docs >= COMMON_TERM_MIN_DOCS;
    if candidates.len() <= MAX_QUERY_TERMS && !drop_common {
        return candidates;
    }
    let dfs: Vec<u64> = candidates.iter().map(|t| df(t)).collect();
    let mut keep: Vec<usize> = (0..candidates.len()).collect();
    if drop_common {
        let is_common =
            |f: u64| f.saturating_mul(100) > num_docs.saturating_mul(COMMON_TERM_PERCENT);
        let informative: Vec<usize> = keep
            .iter()
            .copied()
            .filter(|&i| dfs[i] > 0 && !is_common(dfs[i]))
            .collect();
        if !informative.is_empty() {
            keep = informative;
        }
    }
    if keep.len() > MAX_QUERY_TERMS {
        keep.sort_unstable_by_key(|&i| (dfs[i] == 0, dfs[i], i));
        keep.truncate(MAX_QUERY_TERMS);
        keep.sort_unstable();
    }
    let mut candidates: Vec<Option<String>> = candidates.into_iter().map(Some).collect();
    keep.into_iter()
        .filter_map(|i| candidates[i].take())
        .collect()
}

/// One (field, term) pair of the query and the query terms (indices) it came from; two query
/// terms share a pair when they stem alike (`render`, `rendering`).
#[derive(Clone, Debug)]
pub(crate) struct Clause {
    pub field: Field,
    pub term: Term,
    pub boost: f32,
    pub query_terms: Vec<usize>,
}

/// Most names of the index one query term adds as its variants, and most per query.
pub(crate) const MAX_VARIANTS_PER_TERM: usize = 4;
pub(crate) const MAX_VARIANTS: usize = 32;
/// Shortest stem whose variants are looked up: shorter stems (`use`, `get`) prefix too many
/// unrelated names.
pub(crate) const MIN_VARIANT_STEM: usize = 4;
/// A variant's boost relative to the query term's own in the same field: a report says
/// "containment" where the code says `contains`, but the exact word is the stronger sign.
/// Measured at 0.5 and 0.3 (docs/notes/2026-12-06-properties-and-stem-variants.md): 0.5 cost
/// SWE-bench one task's gold file; 0.3 leaves every SWE task's figures as they were.
pub(crate) const VARIANT_BOOST: f32 = 0.3;

/// Clauses being collected: one per (field, text), listing every query term that led to it.
#[derive(Default)]
struct ClauseSet {
    out: Vec<Clause>,
    index: HashMap<(Field, String), usize>,
}

impl ClauseSet {
    fn add(&mut self, field: Field, text: &str, boost: f32, query_term: usize) {
        match self.index.entry((field, text.to_owned())) {
            Entry::Occupied(e) => self.out[*e.get()].query_terms.push(query_term),
            Entry::Vacant(e) => {
                e.insert(self.out.len());
                self.out.push(Clause {
                    field,
                    term: Term::from_field_text(field, text),
                    boost,
                    query_terms: vec![query_term],
                });
            }
        }
    }
}

/// The (field, term) clauses for `terms` over `fields`.
pub(crate) fn clauses(
    terms: &[String],
    fields: &[SearchField],
    stemmer: &mut TextAnalyzer,
) -> Vec<Clause> {
    let stems: Vec<String> = terms.iter().map(|t| stem(stemmer, t)).collect();
    let mut set = ClauseSet::default();
    for f in fields {
        for (qi, term) in terms.iter().enumerate() {
            if !f.vague_terms && names_nothing(term) {
                continue;
            }
            let text = match f.analysis {
                Analysis::Code => term,
                Analysis::Stemmed => &stems[qi],
            };
            set.add(f.field, text, f.boost, qi);
        }
    }
    set.out
}

/// Clauses for `variants` (a query term's index and a name of the index with the same stem),
/// on the unstemmed fields only: the stemmed ones (doc, body) match variants already.
pub(crate) fn variant_clauses(variants: &[(usize, String)], fields: &[SearchField]) -> Vec<Clause> {
    let mut set = ClauseSet::default();
    for f in fields.iter().filter(|f| f.analysis == Analysis::Code) {
        for (qi, name) in variants {
            set.add(f.field, name, f.boost * VARIANT_BOOST, *qi);
        }
    }
    set.out
}

/// How much the fields other than a term's best field add to its score, as a fraction.
///
/// A symbol's own name term occurs in five fields at once (name, qualified name, signature,
/// identifiers, body); summing all of them would let one name term outweigh a document that
/// matches several query terms. Per query term the best field counts fully and the others
/// only by this fraction (Lucene's `best_fields` with a tie breaker).
pub(crate) const TIE_BREAKER: f32 = 0.3;

/// For each query term a disjunction-max over its boosted field clauses; the terms are OR-ed
/// and their scores summed.
pub(crate) fn boolean_query(clauses: &[Clause], num_terms: usize) -> BooleanQuery {
    let mut per_term: Vec<Vec<Box<dyn Query>>> = (0..num_terms).map(|_| Vec::new()).collect();
    for c in clauses {
        for &q in &c.query_terms {
            let tq = TermQuery::new(c.term.clone(), IndexRecordOption::WithFreqs);
            if let Some(disjuncts) = per_term.get_mut(q) {
                disjuncts.push(Box::new(BoostQuery::new(Box::new(tq), c.boost)));
            }
        }
    }
    let subqueries: Vec<(Occur, Box<dyn Query>)> = per_term
        .into_iter()
        .filter(|d| !d.is_empty())
        .map(|disjuncts| {
            let q: Box<dyn Query> = Box::new(DisjunctionMaxQuery::with_tie_breaker(
                disjuncts,
                TIE_BREAKER,
            ));
            (Occur::Should, q)
        })
        .collect();
    BooleanQuery::new(subqueries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(query: &str, expected: &[&str]) {
        assert_eq!(candidate_terms(query), expected, "terms of {query:?}");
    }

    #[test]
    fn compounds_join_neighbouring_prose_words_not_an_identifiers_parts() {
        assert_eq!(
            compound_candidates("Display fixture scopes with `pytest --fixtures`"),
            [
                "displayfixture",
                "displayfixtures",
                "fixturescopes",
                "fixturescope",
                "scopespytest",
                "scopespytests",
                "pytestfixtures",
                "pytestfixture",
            ]
        );
        // Identifiers break the pairing; stop words are skipped; a pair is proposed once.
        assert_eq!(
            compound_candidates("test_path MatrixSymbol x2 the code of the printer; code printer"),
            ["codeprinter", "codeprinters", "printercode", "printercodes"]
        );
        assert!(compound_candidates("").is_empty());
    }

    #[test]
    fn candidates() {
        check(
            "render the response template",
            &["render", "response", "template"],
        );
        check("getUserName", &["getusername", "get", "user", "name"]);
        check("user user USER", &["user"]);
        check("", &[]);
        check("?!:(){}[]\"'", &[]);
        check("the of and", &[]);
        check("to_string", &["to_string", "string"]);
    }

    #[test]
    fn candidates_are_capped() {
        let query: String = (0..5000).map(|i| format!("w{i}x ")).collect();
        assert_eq!(candidate_terms(&query).len(), MAX_CANDIDATE_TERMS);
    }

    #[test]
    fn selection_keeps_rarest_in_query_order() {
        let few = vec!["b".to_string(), "a".to_string()];
        assert_eq!(select_terms(few.clone(), 10, |_| 1), few);

        // 100 terms t0..t99; df = 100 - i, except every tenth term matches nothing.
        let many: Vec<String> = (0..100).map(|i| format!("t{i}")).collect();
        let df = |t: &str| {
            let i: u64 = t[1..].parse().unwrap_or(0);
            if i.is_multiple_of(10) { 0 } else { 100 - i }
        };
        let kept = select_terms(many, 100, df);
        assert_eq!(kept.len(), MAX_QUERY_TERMS);
        // The 90 matching terms are ranked by rarity: the 64 with the highest index survive.
        let expected: Vec<String> = (0..100)
            .filter(|i: &u64| !i.is_multiple_of(10))
            .skip(90 - MAX_QUERY_TERMS)
            .map(|i| format!("t{i}"))
            .collect();
        assert_eq!(kept, expected);
    }

    #[test]
    fn common_terms_are_dropped_in_large_indexes() {
        let terms = |v: &[&str]| v.iter().map(|t| (*t).to_string()).collect::<Vec<_>>();
        // df: fn 900, self 600, parse 40, frobnicate 0 (matches nothing).
        let df = |t: &str| match t {
            "fn" => 900,
            "self" => 600,
            "parse" => 40,
            _ => 0,
        };
        let check = |query: &[&str], num_docs: u64, expected: &[&str]| {
            assert_eq!(
                select_terms(terms(query), num_docs, df),
                terms(expected),
                "{query:?} in {num_docs} docs"
            );
        };
        check(&["fn", "parse", "self"], 1000, &["parse"]);
        // Only common terms, or common terms and terms that match nothing: keep them all.
        check(&["fn", "self"], 1000, &["fn", "self"]);
        check(&["fn", "frobnicate"], 1000, &["fn", "frobnicate"]);
        // Exactly half is not "more than half"; small indexes drop nothing.
        check(&["self", "parse"], 1200, &["self", "parse"]);
        check(&["fn", "parse", "self"], 999, &["fn", "parse", "self"]);
    }

    #[test]
    fn stemmed_clauses_are_shared() {
        let (_, fields) = crate::schema::Fields::schema();
        let searchable = fields.searchable();
        let terms = vec!["render".to_string(), "rendering".to_string()];
        let mut stemmer = crate::stem::stemmer();
        let clauses = clauses(&terms, &searchable, &mut stemmer);
        let doc: Vec<&Clause> = clauses.iter().filter(|c| c.field == fields.doc).collect();
        assert_eq!(doc.len(), 1);
        assert_eq!(doc[0].query_terms, vec![0, 1]);
        let name: Vec<&Clause> = clauses.iter().filter(|c| c.field == fields.name).collect();
        assert_eq!(name.len(), 2);
    }

    #[test]
    fn letters_and_small_numbers_are_matched_in_bodies_only() {
        let (_, fields) = crate::schema::Fields::schema();
        let terms: Vec<String> = ["f", "10", "404", "subs"].map(String::from).into();
        let clauses = clauses(&terms, &fields.searchable(), &mut crate::stem::stemmer());
        let fields_of = |qi: usize| {
            clauses
                .iter()
                .filter(|c| c.query_terms.contains(&qi))
                .map(|c| c.field)
                .collect::<Vec<_>>()
        };
        assert_eq!(fields_of(0), vec![fields.body]);
        assert_eq!(fields_of(1), vec![fields.body]);
        assert_eq!(fields_of(2).len(), 7, "a longer number can name a constant");
        assert_eq!(fields_of(3).len(), 7);
        assert!(names_nothing("é") && names_nothing("07") && !names_nothing("ab"));
    }
}
