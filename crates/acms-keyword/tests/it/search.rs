//! Expected top hits on the fixture set.

use crate::fixture::{doc, ids, index, index_of};

/// `query`'s best hits start with `expected_top`, in that order.
fn check(query: &str, expected_top: &[u64]) {
    let (_tmp, index) = index();
    let got = ids(&index, query, 10);
    assert!(
        got.starts_with(expected_top),
        "query {query:?}: expected top {expected_top:?}, got {got:?}"
    );
}

#[test]
fn expected_top_hits() {
    check("render the response template", &[1]);
    check("render_template", &[1, 9]);
    check("getUserName", &[3, 4]);
    check("get_user_name", &[4, 3]);
    check("user name", &[3, 4]);
    check("HTTPServer2", &[6]);
    check("http server", &[6]);
    check("config parser", &[7]);
    check("parses configuration files", &[7]);
    check("mailer.py", &[10]);
    check("notifications", &[10]);
    check("send an email", &[10]);
    check("template cache", &[8]);
    check("UserRepository findByEmail", &[5]);
    check("Größe", &[11]);
    check("user email address", &[12]);
}

#[test]
fn stemming_applies_to_doc_text() {
    // "caching" and "compiled" only occur as "Caches" / "compiled" in the doc comment.
    check("caching compiled", &[8]);
}

#[test]
fn matched_terms_name_the_query_terms_found() {
    let (_tmp, index) = index();
    let hits = index.search("render the response template", 3).unwrap();
    assert_eq!(hits[0].id, 1);
    assert_eq!(hits[0].matched_terms, ["render", "response", "template"]);

    let hits = index.search("getUserName", 2).unwrap();
    assert_eq!(hits[0].id, 3);
    assert_eq!(
        hits[0].matched_terms,
        ["getusername", "get", "user", "name"]
    );
    assert_eq!(hits[1].id, 4);
    assert_eq!(hits[1].matched_terms, ["get", "user", "name"]);
}

#[test]
fn scores_and_relevance() {
    let (_tmp, index) = index();
    let hits = index.search("user", 20).unwrap();
    assert!(hits.len() >= 4, "{hits:?}");
    assert_eq!(hits[0].relevance, 1.0);
    for pair in hits.windows(2) {
        assert!(pair[0].score >= pair[1].score, "{hits:?}");
        assert!(pair[0].relevance >= pair[1].relevance, "{hits:?}");
    }
    for hit in &hits {
        assert!(hit.score > 0.0);
        assert!(hit.relevance > 0.0 && hit.relevance <= 1.0);
        assert!(hit.matched_terms == ["user"], "{hit:?}");
    }
}

#[test]
fn limit_is_respected() {
    let (_tmp, index) = index();
    assert_eq!(ids(&index, "user", 2).len(), 2);
    assert_eq!(ids(&index, "user", 0), Vec::<u64>::new());
    // A limit beyond the number of documents is fine.
    assert!(ids(&index, "user", usize::MAX).len() <= 12);
}

#[test]
fn search_is_deterministic() {
    let (_tmp, a) = index();
    let (_tmp2, b) = index();
    for query in ["user", "template", "get", "server http config email"] {
        assert_eq!(a.search(query, 10).unwrap(), b.search(query, 10).unwrap());
    }
}

#[test]
fn results_do_not_depend_on_insertion_order() {
    use acms_keyword::KeywordIndex;
    let (_tmp, forward) = index();
    let tmp = tempfile::tempdir().unwrap();
    let mut reversed = KeywordIndex::create_or_open(tmp.path()).unwrap();
    let mut docs = crate::fixture::docs();
    docs.reverse();
    // Two commits, so the documents also end up in a different segment layout.
    let (first, second) = docs.split_at(5);
    reversed.apply(&[], first).unwrap();
    reversed.apply(&[], second).unwrap();
    for query in [
        "user",
        "template",
        "get",
        "server http config email",
        "getUserName",
    ] {
        assert_eq!(
            forward.search(query, 10).unwrap(),
            reversed.search(query, 10).unwrap(),
            "{query}"
        );
    }
}

#[test]
fn a_document_that_matches_the_whole_question_beats_one_word_in_a_short_name() {
    // The README's question: `token` alone is a short name, and BM25 summed over terms gave
    // its one match more than a doc that matches every word of the question.
    let docs = vec![
        doc(
            1,
            "src/lexer.rs",
            "crate::lexer::Lexer::token",
            "method",
            "pub fn token(&self) -> &Token",
            "The current token.",
            "    &self.token",
        ),
        doc(
            2,
            "src/lexer.rs",
            "crate::lexer::Token",
            "struct",
            "pub struct Token",
            "One token of the input.",
            "    pub text: String,",
        ),
        doc(
            3,
            "src/budget.rs",
            "crate::budget::Budget",
            "struct",
            "pub struct Budget",
            "A budget of tokens.",
            "    pub tokens: usize,",
        ),
        doc(
            4,
            "src/verify.rs",
            "crate::verify::verify_and_trim",
            "function",
            "pub fn verify_and_trim(items: &[Item], budget: u32) -> Outcome",
            "Renders the items, counts the tokens of the text exactly and, while it is over \
             the budget, drops the item worth least per token, then verifies the rendering \
             again; it returns what was kept and how it ended, with the counts of each step.",
            "    let mut text = render(items);\n    while count(&text) > budget {\n        \
             items.pop();\n        text = render(items);\n    }",
        ),
    ];
    let (_tmp, index) = index_of(&docs);
    let hits = index
        .search("how is the token budget verified after rendering?", 4)
        .expect("search");
    assert_eq!(hits[0].id, 4, "{hits:?}");
}

#[test]
fn a_name_that_shares_a_query_words_stem_is_found_by_it() {
    // jq's "Limit the containment check depth": the code says `jv_contains`, and names are
    // not stemmed; the index's own names with the word's stem join the query at a third of its weight.
    let docs = vec![
        doc(
            1,
            "src/jv.c",
            "src/jv::jv_contains",
            "function",
            "int jv_contains(jv a, jv b)",
            "",
            "  int r = jv_equal(a, b);\n  jv_free(a);\n  jv_free(b);\n  return r;",
        ),
        doc(
            2,
            "src/builtin.c",
            "src/builtin::f_has",
            "function",
            "static jv f_has(jq_state *jq, jv obj, jv key)",
            "",
            "  return jv_bool(jv_contains(obj, key));",
        ),
        doc(
            3,
            "src/parse.c",
            "src/parse::check_done",
            "function",
            "static int check_done(struct parser *p)",
            "",
            "  return p->done;",
        ),
    ];
    let (_tmp, index) = index_of(&docs);
    // Without variants both match only by their (stemmed) bodies, alike; the name decides.
    let hits = index.search("containment", 10).expect("search");
    let score = |id: u64| hits.iter().find(|h| h.id == id).map_or(0.0, |h| h.score);
    assert_eq!(hits[0].id, 1);
    assert!(score(1) > 2.0 * score(2), "{hits:?}");
    assert_eq!(hits[0].matched_terms, ["containment"]);
    // The exact word still outweighs its variant.
    let exact = index.search("contains", 10).expect("search");
    assert!(exact[0].id == 1 && exact[0].score > score(1), "{exact:?}");
}
