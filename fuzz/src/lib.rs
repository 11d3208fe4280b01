//! What every analyzer fuzz target checks: analysis of arbitrary text never panics, stays
//! within the linear bound of `acms_index::Cost` (issue 9: work and output linear in the file
//! size), keeps its span invariants, stores no line break in a name, and the outline of the
//! same text does not panic either.

use acms_index::{Cost, Language, MAX_NAME_BYTES, NodeKind, ParseLimits, analyzer_for};

/// Runs `language`'s analyzer (and its outline) on `data` as UTF-8 text, decoded lossily as
/// the indexer decodes files, and asserts the invariants.
pub fn check_analyzer(language: Language, data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let limits = ParseLimits::default();
    let file = analyzer_for(language).analyze("fuzz/input.x", &text, &limits);
    let cost = Cost::of(&file);
    assert!(
        cost.within(text.len()),
        "{language:?}: {cost:?} = {} bytes over the limit {} for {} bytes",
        cost.total(),
        Cost::limit(text.len()),
        text.len()
    );
    assert!(!file.nodes.is_empty(), "no module node");
    assert_eq!(file.nodes[0].kind, NodeKind::Module);
    for (i, n) in file.nodes.iter().enumerate() {
        assert!(
            n.start_byte <= n.end_byte && n.end_byte <= text.len(),
            "{n:?}"
        );
        assert!(text.is_char_boundary(n.start_byte) && text.is_char_boundary(n.end_byte));
        assert!(n.start_line >= 1 && n.start_line <= n.end_line, "{n:?}");
        if i > 0 {
            assert!(n.parent.is_some_and(|p| p < i), "{n:?}");
        }
        for s in [&n.name, &n.qualified_name] {
            assert!(s.len() <= MAX_NAME_BYTES, "{} bytes", s.len());
            assert!(!s.contains(['\n', '\r']), "{s:?}");
        }
    }
    for r in &file.refs {
        assert!(r.from < file.nodes.len());
    }
    let _ = acms_index::analyze::outline(language, &text, &limits);
}
