//! Which words count as query terms, shared by the schema (its prose analyzer drops the stop
//! words) and the query builder (it drops them too, and keeps vague terms out of names).

/// The English stop words dropped from prose fields and from queries. This is tantivy's (and
/// Lucene's) short English list; the longer Snowball list would also drop words that are common
/// identifier parts in code (`all`, `any`, `some`, `other`, `up`, `down`, `over`).
pub(crate) const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
];

/// A one-character term (`x`, `e`, `f`: the variables of a pasted session, a loop index) or a
/// number of at most two digits (`0`, `2`, `10`). Code is full of both: as a name they find
/// local helpers called `f`, not the code a task is about. In a body they still count, since
/// a quoted snippet (`p == q or p == -q`) is matched by its letters too. A longer number (a
/// status code, an error number) can name something and counts everywhere.
pub(crate) fn names_nothing(term: &str) -> bool {
    let mut chars = term.chars();
    match (chars.next(), chars.next(), chars.next()) {
        (Some(_), None, _) => true,
        (Some(a), Some(b), None) => a.is_ascii_digit() && b.is_ascii_digit(),
        _ => false,
    }
}
