//! TypeScript task generation on a fixture corpus, line-stable stripping, sampling.

use std::path::Path;

use acms_eval::tasks::{
    Task, is_ts_source, leading_jsdoc, sample, strip_spans, typescript_tasks, write_stripped,
};
use proptest::prelude::*;

const SOURCE: &str = r#"import { x } from './x';

/**
 * Adds two numbers together and returns their sum.
 */
export function add(a: number, b: number): number {
  return a + b;
}

/** Short doc. */
export function tooShort(): void {
  x();
}

export class Cache {
  /**
   * Looks a key up in the backing store and refreshes its age.
   * @param key the key
   */
  @memo()
  get(key: string): string | undefined {
    return this.store.get(key);
  }

  /** Removes every entry that is older than the given age. */
  prune(age: number): void {}

  /**
   * Builds the cache from a snapshot written by an earlier process.
   */
  constructor(snapshot: string) {
    this.load(snapshot);
  }
}

/** Overload signatures have no body, so they never make a task. */
export function formatDuration(ms: string, cb: () => void): string;
/** Formats a duration in milliseconds as human readable text. */
export const formatDuration = (ms: number): string => {
  return `${ms} ms`;
};

function outer() {
  /** Inner helpers are closures and never make tasks at all. */
  function inner() { return 1; }
  return inner();
}
"#;

fn fixture(dir: &Path) {
    std::fs::create_dir_all(dir.join("src/__tests__")).unwrap();
    std::fs::write(dir.join("src/lib.ts"), SOURCE).unwrap();
    // Tests and declaration files never make tasks.
    std::fs::write(dir.join("src/__tests__/lib.ts"), SOURCE).unwrap();
    std::fs::write(dir.join("src/lib.d.ts"), SOURCE).unwrap();
    std::fs::write(dir.join("src/lib.spec.ts"), SOURCE).unwrap();
}

#[test]
fn typescript_tasks_follow_the_filters() {
    let tmp = tempfile::tempdir().unwrap();
    fixture(tmp.path());
    let (tasks, stats) = typescript_tasks("fx", tmp.path(), 6, 150).unwrap();
    let got: Vec<(&str, u32, &str)> = tasks
        .iter()
        .map(|t| (t.name(), t.start_line, t.query_set1.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("add", 6, "Adds two numbers together and returns their sum."),
            (
                "get",
                20,
                "Looks a key up in the backing store and refreshes its age."
            ),
            (
                "formatDuration",
                39,
                "Formats a duration in milliseconds as human readable text."
            ),
        ]
    );
    assert_eq!(stats.files, 1);
    assert_eq!(stats.rejected.get("first sentence < 5 words"), Some(&1));
    assert_eq!(stats.rejected.get("no body beyond the docstring"), Some(&2));
    assert_eq!(stats.rejected.get("constructor / keyword"), Some(&1));
    assert!(tasks.iter().all(|t| t.path == "src/lib.ts"));

    // The stripped copy keeps every line; the JSDoc text is gone; the analyzer finds each
    // target again at the task's line.
    let out = tmp.path().join("stripped");
    write_stripped(tmp.path(), &out, &tasks).unwrap();
    let stripped = std::fs::read_to_string(out.join("src/lib.ts")).unwrap();
    assert_eq!(stripped.lines().count(), SOURCE.lines().count());
    assert!(!stripped.contains("Adds two numbers"));
    assert!(
        stripped.contains("Short doc."),
        "only sampled docs are stripped"
    );
    for t in &tasks {
        let target = acms_eval::score::resolve_target(t, &out);
        assert!(target.resolved, "{}", t.id);
        assert_eq!(target.start_line, t.start_line, "{}", t.id);
    }
    let untouched = std::fs::read_to_string(out.join("src/lib.d.ts")).unwrap();
    assert_eq!(untouched, SOURCE);
}

#[test]
fn ts_source_paths() {
    fn check(path: &str, expected: bool) {
        assert_eq!(is_ts_source(path), expected, "{path}");
    }
    check("src/a.ts", true);
    check("src/a.tsx", true);
    check("src/a.d.ts", false);
    check("src/a.spec.ts", false);
    check("src/__tests__/a.ts", false);
    check("src/.hidden/a.ts", false);
    check("src/a.js", false);
}

#[test]
fn jsdoc_is_found_before_and_at_the_start() {
    fn check(src: &str, start_at: &str, expected: Option<&str>) {
        let start = src.find(start_at).unwrap();
        let got = leading_jsdoc(src, start).map(|(a, b, _)| &src[a..b]);
        assert_eq!(got, expected, "{src:?}");
    }
    check("/** A. */\nfunction f() {}", "/**", Some("/** A. */"));
    check(
        "/** A. */\nexport function f() {}",
        "function",
        Some("/** A. */"),
    );
    check(
        "/** A. */\nexport default function f() {}",
        "function",
        Some("/** A. */"),
    );
    check("/* plain */\nfunction f() {}", "function", None);
    check("/** A. */ x;\nfunction f() {}", "function", None);
    check("/**/\nfunction f() {}", "function", None);
}

fn task(id: &str) -> Task {
    Task {
        id: id.to_string(),
        corpus: "c".into(),
        path: format!("{id}.py"),
        qualified_name: id.to_string(),
        start_line: 1,
        end_line: 2,
        docstring_span: [0, 0],
        query_set1: String::new(),
        query_set2: None,
        mentioned_idents: Vec::new(),
        mentioned_idents_set2: Vec::new(),
    }
}

proptest! {
    #[test]
    fn stripping_keeps_lines_and_other_bytes(
        src in "[a-z\n/* ]{0,200}",
        spans in proptest::collection::vec((0usize..200, 0usize..40), 0..5),
    ) {
        let spans: Vec<[usize; 2]> = spans
            .into_iter()
            .map(|(s, l)| [s.min(src.len()), (s + l).min(src.len())])
            .collect();
        let out = strip_spans(&src, &spans);
        prop_assert_eq!(out.matches('\n').count(), src.matches('\n').count());
        prop_assert!(out.len() <= src.len());
        if spans.is_empty() {
            prop_assert_eq!(&out, &src);
        }
    }

    #[test]
    fn sampling_ignores_input_order(n in 0usize..40, cap in 0usize..50, seed in 0u64..1000) {
        let tasks: Vec<Task> = (0..n).map(|i| task(&format!("t{i}"))).collect();
        let mut reversed = tasks.clone();
        reversed.reverse();
        let a = sample(tasks, &seed.to_string(), cap);
        let b = sample(reversed, &seed.to_string(), cap);
        prop_assert_eq!(a.len(), n.min(cap));
        prop_assert_eq!(a, b);
    }
}
