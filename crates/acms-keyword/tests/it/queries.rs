//! Bad and hostile query text: never an error, never a panic.

use std::sync::OnceLock;

use acms_keyword::{KeywordIndex, MAX_QUERY_TERMS};
use tempfile::TempDir;

use crate::fixture::{ids, index, index_of};

fn shared() -> &'static KeywordIndex {
    static INDEX: OnceLock<(TempDir, KeywordIndex)> = OnceLock::new();
    &INDEX.get_or_init(index).1
}

/// `query` returns exactly `expected` (ids, best first).
fn check(query: &str, expected: &[u64]) {
    assert_eq!(ids(shared(), query, 10), expected, "query {query:?}");
}

#[test]
fn queries_without_searchable_terms_return_nothing() {
    check("", &[]);
    check("   \n\t ", &[]);
    check("?!@#$%^&*()[]{}<>|\\/~`'\";:,.", &[]);
    check("the of and to is", &[]);
    check("\0\0\u{feff}", &[]);
    check("日本語のテキスト", &[]);
    check("Привет мир", &[]);
}

#[test]
fn query_syntax_is_not_interpreted() {
    // tantivy's QueryParser would reject or reinterpret these; here they are just words.
    let starts = |query: &str, expected: &[u64]| {
        let got = ids(shared(), query, 10);
        assert!(got.starts_with(expected), "query {query:?}: got {got:?}");
    };
    starts("name:\"unbalanced (", &[3, 4]);
    starts("+email -smtplib AND OR NOT", &[10]);
    starts("render_template*~2^3", &[1, 9]);
}

#[test]
fn very_long_query_is_capped_and_still_finds_matches() {
    // 100 000 characters: a real term, then distinct junk words that match nothing. Only the
    // first 1024 distinct terms are candidates, and of those the ones that match something
    // are preferred, so the real term survives the cap.
    let mut query = String::from("smtplib ");
    let mut i: usize = 0;
    while query.len() < 100_000 {
        // Letters only: digits would be terms of their own and match version numbers.
        let word: String = format!("{i:o}")
            .bytes()
            .map(|b| char::from(b'g' + (b - b'0')))
            .collect();
        query.push_str(&format!("zq{word} "));
        i += 1;
    }
    assert!(query.len() >= 100_000);
    let index = shared();
    let terms = index.query_terms(&query);
    assert_eq!(terms.len(), MAX_QUERY_TERMS);
    assert_eq!(terms[0], "smtplib");
    assert_eq!(ids(index, &query, 10), vec![10]);

    // A long query made of one repeated word is one term.
    let repeated = "template ".repeat(12_000);
    assert_eq!(index.query_terms(&repeated), ["template"]);
    let top = ids(index, &repeated, 2);
    assert!(top.contains(&1) && top.contains(&8), "{top:?}");
}

#[test]
fn rare_terms_win_the_cap() {
    // More than 64 distinct real terms: the rarest survive, the most common ("user", in five
    // documents) is dropped first.
    let common = "user ".to_string();
    let mut query = common.clone();
    for i in 0..100 {
        query.push_str(&format!("nomatch{i} "));
    }
    query.push_str("smtplib");
    let terms = shared().query_terms(&query);
    assert_eq!(terms.len(), MAX_QUERY_TERMS);
    assert!(terms.contains(&"smtplib".to_string()), "{terms:?}");
    assert!(terms.contains(&"user".to_string()), "{terms:?}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    #[test]
    fn any_text_is_a_valid_query(query in "\\PC{0,300}", limit in 0usize..20) {
        let index = shared();
        let hits = index.search(&query, limit).expect("search never fails");
        let terms = index.query_terms(&query);
        proptest::prop_assert!(hits.len() <= limit);
        for pair in hits.windows(2) {
            proptest::prop_assert!(pair[0].score >= pair[1].score);
        }
        for hit in &hits {
            proptest::prop_assert!(hit.relevance > 0.0 && hit.relevance <= 1.0);
            proptest::prop_assert!(!hit.matched_terms.is_empty());
            for t in &hit.matched_terms {
                proptest::prop_assert!(terms.contains(t));
            }
        }
    }

    #[test]
    fn code_like_text_is_a_valid_query(query in "[a-zA-Z_:. (){}<>\"'-]{0,200}") {
        let hits = shared().search(&query, 5).expect("search never fails");
        proptest::prop_assert!(hits.len() <= 5);
    }
}

#[test]
fn terms_in_most_documents_are_dropped_from_large_indexes() {
    use acms_keyword::{COMMON_TERM_MIN_DOCS, KeywordDoc};
    let docs: Vec<KeywordDoc> = (0..COMMON_TERM_MIN_DOCS)
        .map(|i| KeywordDoc {
            id: i,
            name: format!("item{i}"),
            signature: format!("fn item{i}(&self) -> u32"),
            body: if i == 7 {
                "frobnicate(self)".into()
            } else {
                "self.count".into()
            },
            ..KeywordDoc::default()
        })
        .collect();
    let (_tmp, index) = index_of(&docs);
    let query = "fn frobnicate(&self)";
    assert_eq!(index.query_terms(query), ["frobnicate"]);
    let hits = index.search(query, 5).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].id, 7);
    // A query of common terms only keeps them: it still finds something.
    assert_eq!(index.query_terms("fn self"), ["fn", "self"]);
    assert_eq!(ids(&index, "fn self", 3).len(), 3);
}

#[test]
fn many_emphasized_identifiers_beside_a_long_query_are_not_a_panic() {
    // 64 terms of the text plus 64 emphasized identifiers: 128 query terms, each with its
    // bit in the matched-terms set (a 64-bit set overflowed here).
    let mut query = String::from("smtplib ");
    for i in 0..100 {
        query.push_str(&format!("nomatch{i} "));
    }
    // Letters only (digits would be terms of their own); "email" sorts first and is the
    // 65th term.
    let emphasis: Vec<(String, f32)> = (0..63u8)
        .map(|i| {
            (
                format!(
                    "zz{}{}",
                    char::from(b'a' + i / 26),
                    char::from(b'a' + i % 26)
                ),
                2.0,
            )
        })
        .chain([("email".to_string(), 2.0)])
        .collect();
    let hits = shared()
        .search_with(&query, &emphasis, 10)
        .expect("search never fails");
    assert_eq!(hits[0].id, 10, "{hits:?}");
    assert!(
        hits[0].matched_terms.contains(&"email".to_string()),
        "{:?}",
        hits[0].matched_terms
    );
}

#[test]
fn a_variant_that_names_many_documents_of_a_large_index_is_left_out() {
    use acms_keyword::{COMMON_TERM_MIN_DOCS, KeywordDoc};
    // 50 of 1 000 documents are named `value` (5 %); one is named `contains`.
    let docs: Vec<KeywordDoc> = (0..COMMON_TERM_MIN_DOCS)
        .map(|i| KeywordDoc {
            id: i,
            name: match i {
                0..50 => "value".into(),
                500 => "contains".into(),
                _ => format!("item{i}"),
            },
            ..KeywordDoc::default()
        })
        .collect();
    let (_tmp, index) = index_of(&docs);
    let hits = index.search("values containment", 100).unwrap();
    let ids: Vec<u64> = hits.iter().map(|h| h.id).collect();
    assert_eq!(ids, [500], "{hits:?}");
    assert_eq!(hits[0].matched_terms, ["containment"]);
}
