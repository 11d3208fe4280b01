//! The generated section replaces itself and keeps the hand-written text around it.

use acms_eval::report::{BEGIN, END, splice};

#[test]
fn splice_replaces_or_appends() {
    fn check(doc: &str, section: &str, expected: &str) {
        assert_eq!(splice(doc, section), expected, "{doc:?}");
    }
    let new = format!("{BEGIN}\nnew\n{END}\n");
    check("", &new, &new);
    check(
        "# Eval\n\nanalysis\n",
        &new,
        &format!("# Eval\n\nanalysis\n\n{new}"),
    );
    let old = format!("# Eval\n\n{BEGIN}\nold\n{END}\n\nfooter\n");
    check(&old, &new, &format!("# Eval\n\n{new}\nfooter\n"));
    // Re-splicing is idempotent.
    let once = splice(&old, &new);
    assert_eq!(splice(&once, &new), once);
}
