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

#[test]
fn each_real_issue_set_is_shown_at_the_budgets_it_was_measured_at() {
    use acms_eval::issues::{IssueMetrics, IssueRow, SetReport};
    let set = |name: &str, budgets: &[usize]| SetReport {
        set: name.into(),
        language: "Python".into(),
        tasks: 1,
        repos: vec![],
        symbols_unresolved: 0,
        embedder: "none".into(),
        index_seconds: 0.0,
        rows: vec![IssueRow {
            system: "acms".into(),
            budgets: budgets
                .iter()
                .map(|&b| (b, IssueMetrics::default()))
                .collect(),
            note: None,
        }],
        provenance: None,
    };
    let section = acms_eval::report::issues_section(&[
        set("swe", &[4000, 16000, 32000]),
        set("hono", &[4000, 16000]),
    ]);
    let (swe, hono) = section.split_once("### hono").unwrap();
    assert!(swe.contains("32k changed"), "{swe}");
    assert!(!hono.contains("32k"), "{hono}");
    assert!(hono.contains("| system | 4k files |"), "{hono}");
    assert!(hono.contains("|---|---:|"), "{hono}");
}
