//! The hit rules on hand-written contexts and maps.

use std::collections::HashSet;

use acms::{Depth, ManifestEntry, NodeId};
use acms_eval::Hit;
use acms_eval::score::{Target, lines_in_order, score_acms, score_peer};

fn target() -> Target {
    Target {
        path: "pkg/sessions.py".into(),
        name: "merge".into(),
        start_line: 10,
        end_line: 13,
        def_line: "def merge(a, b):".into(),
        body: vec![
            "def merge(a, b):".into(),
            "x = a".into(),
            "return x + b".into(),
        ],
        resolved: true,
    }
}

fn entry(path: &str, start: u32, end: u32, name: &str, depth: Depth) -> ManifestEntry {
    ManifestEntry {
        node: NodeId(0),
        path: path.into(),
        start_line: start,
        end_line: end,
        name: name.into(),
        kind: "function".into(),
        depth,
        tokens: 10,
        score: 0.5,
        strategies: Vec::new(),
        reasons: Vec::new(),
    }
}

fn hit(symbol: bool, code: bool) -> Hit {
    Hit { symbol, code }
}

#[test]
fn acms_hits() {
    let t = target();
    fn check(t: &Target, manifest: &[ManifestEntry], text: &str, expected: Hit) {
        assert_eq!(
            score_acms(t, manifest, text),
            expected,
            "{manifest:?} {text:?}"
        );
    }
    let p = "pkg/sessions.py";
    check(&t, &[], "", hit(false, false));
    check(
        &t,
        &[entry(p, 10, 13, "pkg.sessions.merge", Depth::Signature)],
        "",
        hit(true, false),
    );
    check(
        &t,
        &[entry(p, 10, 13, "pkg.sessions.merge", Depth::Full)],
        "",
        hit(true, true),
    );
    // An ancestor at depth 9 shows the code; the target's own signature comes from the text.
    check(
        &t,
        &[entry(p, 1, 40, "pkg.sessions", Depth::Full)],
        "  def merge(a, b):",
        hit(true, true),
    );
    // Another file's node with the same lines is not the target.
    check(
        &t,
        &[entry(
            "pkg/other.py",
            10,
            13,
            "pkg.other.merge",
            Depth::Full,
        )],
        "",
        hit(false, false),
    );
    // Text fallback: body lines in order, blank and other lines in between.
    let text = "# header\ndef merge(a, b):\n\n    x = a\n    y = 2\n    return x + b\n";
    check(&t, &[], text, hit(true, true));
    let shuffled = "def merge(a, b):\n    return x + b\n    x = a\n";
    check(&t, &[], shuffled, hit(true, false));
}

#[test]
fn peer_hits_need_the_target_file_block() {
    let t = target();
    let files: HashSet<String> = ["pkg/sessions.py", "pkg/other.py"].map(String::from).into();
    fn check(t: &Target, files: &HashSet<String>, map: &str, expected: Hit) {
        assert_eq!(score_peer(t, map, files), expected, "{map:?}");
    }
    let aider = "pkg/sessions.py:\n⋮\n│def merge(a, b):\n⋮\n";
    check(&t, &files, aider, hit(true, false));
    let full = "pkg/sessions.py:\ndef merge(a, b):\n    x = a\n    return x + b\n";
    check(&t, &files, full, hit(true, true));
    let wrong_file = "pkg/other.py:\ndef merge(a, b):\n    x = a\n    return x + b\n";
    check(&t, &files, wrong_file, hit(false, false));
    let unnamed = "def merge(a, b):\n    x = a\n    return x + b\n";
    check(&t, &files, unnamed, hit(false, false));
}

#[test]
fn subsequence_of_lines() {
    fn check(needles: &[&str], hay: &str, expected: bool) {
        let n: Vec<String> = needles.iter().map(|s| s.to_string()).collect();
        assert_eq!(
            lines_in_order(&n, hay.lines()),
            expected,
            "{needles:?} in {hay:?}"
        );
    }
    check(&[], "", true);
    check(&["a"], "", false);
    check(&["a", "b"], "a\nx\n  b  ", true);
    check(&["a", "b"], "b\na", false);
    check(&["a", "a"], "a", false);
    check(&["a"], "│a", true);
}
