//! Cross-language tests: the shared `check_*` helpers used by each language module, language
//! detection, robustness (syntax errors, timeouts, pathological nesting, empty and
//! comment-only files, CRLF, non-ASCII identifiers), `outline`, and the span invariants as a
//! proptest over every analyzer.

use std::time::Duration;

use proptest::prelude::*;

use super::{
    Cost, MAX_DEF_DEPTH, MAX_NAME_BYTES, ParseLimits, analyzer_for, detect_language, outline,
};
use crate::model::{Language, NodeKind, ParsedFile};

const ALL: &[Language] = &[
    Language::Python,
    Language::TypeScript,
    Language::Tsx,
    Language::JavaScript,
    Language::Rust,
    Language::Java,
    Language::Markdown,
    Language::JsonSchema,
    Language::Text,
];

fn analyze(language: Language, path: &str, src: &str) -> ParsedFile {
    let f = analyzer_for(language).analyze(path, src, &ParseLimits::default());
    check_invariants(&f, src);
    f
}

/// Asserts the exact list of (kind, qualified name, start line, end line).
pub(crate) fn check_nodes(
    language: Language,
    path: &str,
    src: &str,
    expected: &[(NodeKind, &str, u32, u32)],
) {
    let f = analyze(language, path, src);
    let got: Vec<(NodeKind, &str, u32, u32)> = f
        .nodes
        .iter()
        .map(|n| (n.kind, n.qualified_name.as_str(), n.start_line, n.end_line))
        .collect();
    assert_eq!(got, expected);
}

/// Asserts what `language`'s analyzer resolves `module`, imported from `from`, to when the
/// repository holds `files`.
pub(crate) fn check_resolve(
    language: Language,
    from: &str,
    module: &str,
    files: &[&str],
    expected: Option<&str>,
) {
    let exists = |p: &str| files.contains(&p);
    assert_eq!(
        analyzer_for(language)
            .resolve_import(from, module, &exists)
            .as_deref(),
        expected,
        "{from} {module}"
    );
}

/// Asserts the depth 0 / 2 / 4 renderings of the node with `qualified_name`.
pub(crate) fn check_render(
    language: Language,
    path: &str,
    src: &str,
    qualified_name: &str,
    signature: &str,
    with_doc: &str,
    skeleton: &str,
) {
    let f = analyze(language, path, src);
    let n = f
        .nodes
        .iter()
        .filter(|n| n.qualified_name == qualified_name)
        // Java names a file and its main class alike: prefer the class.
        .min_by_key(|n| n.kind == NodeKind::Module)
        .unwrap_or_else(|| panic!("no node {qualified_name}"));
    assert_eq!(n.signature, signature, "signature of {qualified_name}");
    assert_eq!(n.with_doc, with_doc, "with_doc of {qualified_name}");
    assert_eq!(n.skeleton, skeleton, "skeleton of {qualified_name}");
}

/// The invariants every analyzer upholds on every input.
fn check_invariants(f: &ParsedFile, src: &str) {
    assert!(!f.nodes.is_empty(), "no module node");
    assert_eq!(f.nodes[0].kind, NodeKind::Module);
    assert_eq!(f.nodes[0].parent, None);
    assert_eq!((f.nodes[0].start_byte, f.nodes[0].end_byte), (0, src.len()));
    for (i, n) in f.nodes.iter().enumerate() {
        assert!(
            n.start_byte <= n.end_byte && n.end_byte <= src.len(),
            "{n:?}"
        );
        assert!(src.is_char_boundary(n.start_byte) && src.is_char_boundary(n.end_byte));
        assert!(n.start_line >= 1 && n.start_line <= n.end_line, "{n:?}");
        if i > 0 {
            let p = n.parent.expect("only the module has no parent");
            assert!(p < i, "parent {p} does not precede node {i}");
            assert_ne!(n.kind, NodeKind::Module);
        }
    }
    for r in &f.refs {
        assert!(r.from < f.nodes.len());
    }
    let mut seen = std::collections::HashSet::new();
    for r in &f.refs {
        assert!(
            seen.insert((r.from, &r.name, r.kind)),
            "duplicate ref {r:?}"
        );
    }
    check_linear(f, src);
}

/// The linear bound of issue 9: what a file costs downstream is at most
/// `GROWTH_PER_BYTE × size + GROWTH_SLACK`, names are capped and hold no line breaks.
fn check_linear(f: &ParsedFile, src: &str) {
    let cost = Cost::of(f);
    assert!(
        cost.within(src.len()),
        "{cost:?} = {} over the limit {} for {} bytes",
        cost.total(),
        Cost::limit(src.len()),
        src.len()
    );
    for n in &f.nodes {
        for s in [&n.name, &n.qualified_name] {
            assert!(s.len() <= MAX_NAME_BYTES, "{} bytes", s.len());
            assert!(!s.contains(['\n', '\r']), "{s:?}");
        }
    }
}

fn check_detect(path: &str, src: &str, expected: Option<Language>) {
    assert_eq!(detect_language(path, src), expected, "{path}");
}

#[test]
fn detects_languages() {
    check_detect("a/b.py", "", Some(Language::Python));
    check_detect("a/b.pyi", "", Some(Language::Python));
    check_detect("src/x.ts", "", Some(Language::TypeScript));
    check_detect("src/x.d.ts", "", Some(Language::TypeScript));
    check_detect("src/x.mts", "", Some(Language::TypeScript));
    check_detect("src/x.tsx", "", Some(Language::Tsx));
    check_detect("src/x.jsx", "", Some(Language::JavaScript));
    check_detect("src/x.mjs", "", Some(Language::JavaScript));
    check_detect("src/lib.rs", "", Some(Language::Rust));
    check_detect("A.java", "", Some(Language::Java));
    check_detect("README.md", "", Some(Language::Markdown));
    check_detect("s.json", r#"{"$schema": "x"}"#, Some(Language::JsonSchema));
    check_detect("package.json", r#"{"name": "x"}"#, Some(Language::Text));
    // Extension-less scripts by their interpreter line; other extension-less files are text.
    let scripts = [
        ("#!/bin/sh\nset -e\n", Some(Language::Bash)),
        ("#!/usr/bin/env bash\n", Some(Language::Bash)),
        ("#! /bin/bash -e\n", Some(Language::Bash)),
        ("#!/usr/bin/env -S python3.12 -u\n", Some(Language::Python)),
        ("#!/usr/bin/python\n", Some(Language::Python)),
        ("#!/usr/bin/env node\n", Some(Language::JavaScript)),
        ("#!/usr/bin/env ruby\n", Some(Language::Ruby)),
        ("#!/usr/bin/env PATH=/x php\n", Some(Language::Php)),
        ("#!/usr/bin/env perl\n", Some(Language::Text)),
        ("#!/usr/bin/env\n", Some(Language::Text)),
        ("#!\n", Some(Language::Text)),
        ("all:\n\tcc a.c\n", Some(Language::Text)),
    ];
    for (src, expected) in scripts {
        check_detect("libexec/bats-exec-test", src, expected);
    }
    check_detect("run.txt", "#!/bin/sh\n", Some(Language::Text));
    check_detect(".envrc", "#!/bin/sh\n", Some(Language::Text));
    check_detect("Cargo.toml", "", Some(Language::Text));
    check_detect("ci.YML", "", Some(Language::Text));
    check_detect("main.go", "", Some(Language::Go));
    check_detect("util.c", "", Some(Language::C));
    check_detect("util.h", "int f(void);", Some(Language::C));
    check_detect(
        "shape.h",
        "namespace geo {\nclass A {};\n}",
        Some(Language::Cpp),
    );
    check_detect("shape.hpp", "", Some(Language::Cpp));
    check_detect("App.cs", "", Some(Language::CSharp));
    check_detect("cart.rb", "", Some(Language::Ruby));
    check_detect("index.php", "", Some(Language::Php));
    check_detect("install.sh", "", Some(Language::Bash));
    check_detect("Cart.kt", "", Some(Language::Kotlin));
    check_detect("Cart.swift", "", Some(Language::Swift));
    check_detect("Cart.scala", "", Some(Language::Scala));
    check_detect("init.lua", "", Some(Language::Text));
    check_detect("Makefile", "all:", Some(Language::Text));
    check_detect(".gitignore", "target", Some(Language::Text));
    check_detect("logo.png", "\u{89}PNG", None);
    check_detect("data.bin", "abc", None);
    check_detect("notes.txt", "a\0b", None);
    check_detect("script", "ok\0", None);
}

#[test]
fn syntax_errors_index_what_was_recovered() {
    let cases: &[(Language, &str, &str)] = &[
        (
            Language::Python,
            "m.py",
            "def ok(a):\n    return a\n\ndef broken(:\n    pass\n\nclass C:\n    def m(self): pass\n",
        ),
        (
            Language::TypeScript,
            "m.ts",
            "function ok() { return 1 }\nfunction broken( { \nclass C { m() {} }\n",
        ),
        (
            Language::Rust,
            "m.rs",
            "fn ok() -> u32 { 1 }\nfn broken( {\nstruct S { a: u32 }\n",
        ),
        (
            Language::Java,
            "M.java",
            "class M { void ok() {} void broken( { } }\n",
        ),
    ];
    for (lang, path, src) in cases {
        let f = analyze(*lang, path, src);
        assert_eq!(f.warnings.len(), 1, "{lang:?}: {:?}", f.warnings);
        assert!(f.warnings[0].starts_with("syntax errors"), "{lang:?}");
        assert!(
            f.nodes.iter().any(|n| n.name == "ok"),
            "{lang:?} lost the valid function: {:?}",
            f.nodes.iter().map(|n| &n.name).collect::<Vec<_>>()
        );
    }
}

#[test]
fn replacement_characters_are_not_syntax_errors() {
    // The caller decodes invalid UTF-8 lossily and warns about it itself.
    let f = analyze(
        Language::Python,
        "l.py",
        "def caf\u{FFFD}():\n    return 1\n",
    );
    assert_eq!(f.nodes[1].name, "caf");
    assert!(f.warnings.is_empty(), "{:?}", f.warnings);
}

/// A loaded machine (the analysing thread waiting for a core) does not spend a file's parse
/// budget: it counts the thread's CPU time, so the file is indexed as on an idle machine.
#[test]
fn the_parse_deadline_counts_the_threads_cpu_time() {
    let limits = ParseLimits {
        timeout: Duration::from_millis(40),
        chunk_lines: 50,
    };
    let deadline = super::common::deadline(&limits);
    std::thread::sleep(Duration::from_millis(120));
    assert!(!deadline.passed(), "waiting is not working");
    let mut spins = 0u64;
    while !deadline.passed() {
        spins = std::hint::black_box(spins.wrapping_add(1));
    }
    assert!(spins > 0);
}

#[test]
fn timeout_falls_back_to_line_chunks() {
    let limits = ParseLimits {
        timeout: Duration::from_micros(1),
        chunk_lines: 50,
    };
    let inputs: &[(Language, String)] = &[
        (
            Language::Python,
            "def f(x):\n    return [x, (x + 1)]\n".repeat(20_000),
        ),
        (
            Language::TypeScript,
            "function f(x) { return [x, (x + 1)]; }\n".repeat(20_000),
        ),
        (
            Language::Tsx,
            "const f = (x) => <div>{x}</div>;\n".repeat(20_000),
        ),
        (
            Language::JavaScript,
            "function f(x) { return [x]; }\n".repeat(20_000),
        ),
        (
            Language::Rust,
            "fn f(x: u32) -> u32 { x + 1 }\n".repeat(20_000),
        ),
        (
            Language::Java,
            format!(
                "class A {{\n{}}}\n",
                "int f(int x) { return x + 1; }\n".repeat(20_000)
            ),
        ),
        (Language::Markdown, "# T\n\ntext *a* b\n\n".repeat(20_000)),
        (
            Language::JsonSchema,
            format!(
                "{{\"properties\": {{{}\"z\": {{}}}}}}",
                "\"a\": {\"type\": \"string\"},\n".repeat(20_000)
            ),
        ),
    ];
    for (lang, src) in inputs {
        let f = analyzer_for(*lang).analyze("big.x", src, &limits);
        check_invariants(&f, src);
        assert_eq!(f.warnings.len(), 1, "{lang:?}");
        assert!(
            f.warnings[0].contains("timeout"),
            "{lang:?}: {:?}",
            f.warnings
        );
        assert!(
            f.nodes[1..].iter().all(|n| n.kind == NodeKind::Chunk),
            "{lang:?}"
        );
        assert!(f.nodes.len() > 100, "{lang:?}");
        assert_eq!(outline(*lang, src, &limits), None, "{lang:?}");
    }
}

#[test]
fn pathological_nesting_does_not_overflow() {
    const N: usize = 10_000;
    let open_close = |o: &str, c: &str| format!("{}{}", o.repeat(N), c.repeat(N));
    let inputs: Vec<(Language, String)> = vec![
        (Language::Python, format!("x = {}\n", open_close("[", "]"))),
        (
            Language::Python,
            format!("def f():\n    return {}\n", open_close("(", ")")),
        ),
        (
            Language::TypeScript,
            format!("const x = {};\n", open_close("[", "]")),
        ),
        (
            Language::TypeScript,
            format!("function f() {}\n", open_close("{", "}")),
        ),
        (
            Language::Tsx,
            format!("const x = {};\n", open_close("<a>", "</a>")),
        ),
        (
            Language::JavaScript,
            format!("f({});\n", open_close("(", ")")),
        ),
        (Language::Rust, format!("fn f() {}\n", open_close("{", "}"))),
        (
            Language::Rust,
            format!("const X: u8 = {};\n", open_close("(", ")")),
        ),
        (
            Language::Java,
            format!("class A {{ void f() {} }}\n", open_close("{", "}")),
        ),
        (Language::Markdown, format!("{}x\n", "> ".repeat(N))),
        (
            Language::Markdown,
            (0..N).map(|i| format!("{}- x\n", "  ".repeat(i))).collect(),
        ),
        (
            Language::JsonSchema,
            format!("{{\"properties\": {}}}", open_close("[", "]")),
        ),
        (
            Language::JsonSchema,
            format!("{{\"$defs\": {}1{}}}", "{\"a\": ".repeat(N), "}".repeat(N)),
        ),
        (Language::Text, open_close("(", ")")),
    ];
    let limits = ParseLimits {
        timeout: Duration::from_secs(60),
        chunk_lines: 60,
    };
    for (lang, src) in inputs {
        let f = analyzer_for(lang).analyze("deep.x", &src, &limits);
        check_invariants(&f, &src);
        let _ = outline(lang, &src, &limits);
    }
}

/// Issue 9, item 3: `function a(){` × 8000 made 8000 nested nodes whose texts overlap (33 s,
/// 1.7 GB, a 497 MB index) and a JSON Schema nested 15 000 deep took 402 s and 21.5 GB.
/// Definitions past `MAX_DEF_DEPTH` now fold into their ancestor, with a warning.
#[test]
fn nested_definitions_are_capped() {
    const N: usize = 3_000;
    let nest = |open: &str, close: &str| format!("{}{}", open.repeat(N), close.repeat(N));
    let python: String = (0..N)
        .map(|i| format!("{}def f{i}():\n", "  ".repeat(i)))
        .chain(std::iter::once(format!("{}pass\n", "  ".repeat(N))))
        .collect();
    let mut schema = String::from("{\"$schema\": \"x\", ");
    schema.push_str(&nest("\"properties\": {\"a\": {", "}}"));
    schema.push('}');
    let inputs: Vec<(Language, String)> = vec![
        (Language::JavaScript, nest("function a(){", "}")),
        (
            Language::TypeScript,
            nest("namespace n { function a(){", "} }"),
        ),
        (Language::Tsx, nest("const a = () => {", "};")),
        (Language::Rust, nest("fn a() {", "}")),
        (Language::Rust, nest("mod m { fn a() {", "} }")),
        (Language::Java, nest("class A {", "}")),
        (Language::Python, python),
        (Language::JsonSchema, schema),
    ];
    let limits = ParseLimits {
        timeout: Duration::from_secs(600),
        chunk_lines: 60,
    };
    for (lang, src) in inputs {
        let f = analyzer_for(lang).analyze("deep.x", &src, &limits);
        check_invariants(&f, &src);
        assert!(
            f.nodes.len() <= MAX_DEF_DEPTH + 1,
            "{lang:?}: {} nodes",
            f.nodes.len()
        );
        assert!(
            f.nodes.len() > MAX_DEF_DEPTH / 2,
            "{lang:?}: {:?}",
            f.warnings
        );
        assert!(
            f.warnings.iter().any(|w| w.contains("nested deeper than")),
            "{lang:?}: {:?}",
            f.warnings
        );
    }
}

/// Headers that span the same lines (an `if` whose condition holds the next `if`), a very
/// long name repeated in every qualified name, a heading per line: all stay linear.
#[test]
fn repeated_structure_stays_linear() {
    let long = "x".repeat(50_000);
    let inputs: Vec<(Language, String)> = vec![
        (
            Language::JavaScript,
            format!(
                "{}1{}",
                "if ((() => {\n".repeat(2_000),
                "})()) {}\n".repeat(2_000)
            ),
        ),
        (
            Language::Python,
            format!(
                "class {long}:\n{}",
                (0..2_000)
                    .map(|i| format!("  def m{i}(self): pass\n"))
                    .collect::<String>()
            ),
        ),
        (
            Language::Markdown,
            format!("# {long}\n{}", "## a\n\np\n\n".repeat(5_000)),
        ),
        (
            Language::Markdown,
            format!(
                "{}{}",
                "[a](b.md) ".repeat(5_000),
                "\n```\nc\n```\n".repeat(5_000)
            ),
        ),
        (
            Language::JsonSchema,
            format!(
                "{{\"properties\": {{\"{long}\": {{\"properties\": {{{}\"z\": {{}}}}}}}}}}",
                (0..2_000)
                    .map(|i| format!("\"k{i}\": {{}},"))
                    .collect::<String>()
            ),
        ),
    ];
    for (lang, src) in inputs {
        let f = analyzer_for(lang).analyze("many.x", &src, &ParseLimits::default());
        check_invariants(&f, &src);
    }
}

#[test]
fn a_function_passed_as_a_value_is_referenced() {
    // The callee calls what it is given: `hstack` depends on `row_join` as if it called it.
    let cases = [
        (
            Language::Python,
            "m.py",
            "def hstack(kls, *args):\n    return reduce(kls.row_join, args)\n\ndef keyed(xs):\n    return sorted(xs, key=self.sort_key)\n",
            ["row_join", "sort_key"],
        ),
        (
            Language::TypeScript,
            "m.ts",
            "function all(xs: string[]) {\n  return xs.map(this.parse).filter(Rules.valid)\n}\n",
            ["parse", "valid"],
        ),
        (
            Language::Rust,
            "m.rs",
            "fn all(xs: Vec<String>) -> Vec<u8> {\n    xs.iter().map(Self::parse).filter_map(Rules::valid).collect()\n}\n",
            ["parse", "valid"],
        ),
    ];
    for (language, path, src, names) in cases {
        let f = analyze(language, path, src);
        for name in names {
            assert!(
                f.refs.iter().any(|r| r.name == name),
                "{language:?}: {name} not in {:?}",
                f.refs
            );
        }
    }
    // A member read in place, not passed, is not a reference.
    let f = analyze(Language::Python, "m.py", "def f(x):\n    return x.shape\n");
    assert!(!f.refs.iter().any(|r| r.name == "shape"), "{:?}", f.refs);
}

/// A name with a line break (a JSON key) cannot forge a fragment header line.
#[test]
fn names_hold_no_line_breaks() {
    let src = "{\"properties\": {\"a\\n# forged.py:1-2 · x · depth 9\": {\"type\": \"string\"}}}";
    let f = analyze(Language::JsonSchema, "s.json", src);
    assert_eq!(f.nodes.len(), 2, "{:?}", f.nodes);
    assert_eq!(f.nodes[1].name, "a\\n# forged.py:1-2 · x · depth 9");
}

/// Inputs the fuzz targets (`fuzz/`) once failed on, named `<target>-<n>`: every analyzer
/// must take each of them within its invariants and the linear bound.
#[test]
fn fuzz_failures_stay_fixed() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("test_data/fuzz-failures");
    let mut inputs: Vec<_> = std::fs::read_dir(&dir)
        .expect("test_data/fuzz-failures")
        .map(|e| e.unwrap().path())
        .collect();
    inputs.sort();
    assert!(!inputs.is_empty());
    for path in inputs {
        let bytes = std::fs::read(&path).unwrap();
        let src = String::from_utf8_lossy(&bytes);
        for lang in ALL {
            let f = analyzer_for(*lang).analyze("fuzz/input.x", &src, &ParseLimits::default());
            check_invariants(&f, &src);
            let _ = outline(*lang, &src, &ParseLimits::default());
        }
    }
}

#[test]
fn empty_and_comment_only_files() {
    let comments: &[(Language, &str)] = &[
        (Language::Python, "# one\n# two\n"),
        (Language::TypeScript, "// one\n/* two */\n"),
        (Language::Tsx, "// one\n"),
        (Language::JavaScript, "/** one */\n"),
        (Language::Rust, "// one\n/// two\n"),
        (Language::Java, "// one\n/* two */\n"),
        (Language::Markdown, "<!-- one -->\n"),
        (Language::JsonSchema, "// one\n"),
        (Language::Text, "# one\n"),
    ];
    for (lang, src) in comments {
        for src in ["", src] {
            let f = analyze(*lang, "f.x", src);
            // Plain text has no comment syntax: its one line is a chunk.
            let expected = if *lang == Language::Text && !src.is_empty() {
                2
            } else {
                1
            };
            assert_eq!(f.nodes.len(), expected, "{lang:?} {src:?}: {:?}", f.nodes);
            assert!(f.refs.is_empty() && f.imports.is_empty(), "{lang:?}");
            assert!(!f.nodes[0].signature.is_empty(), "{lang:?}");
        }
        assert!(analyze(*lang, "f.x", "").warnings.is_empty(), "{lang:?}");
    }
}

#[test]
fn crlf_line_endings() {
    let src = "class A:\r\n    \"\"\"Doc.\"\"\"\r\n    def m(self):\r\n        return 1\r\n";
    let f = analyze(Language::Python, "a.py", src);
    let m = &f.nodes[2];
    assert_eq!((m.name.as_str(), m.start_line, m.end_line), ("m", 3, 4));
    assert_eq!(m.signature, "def m(self):");
    assert_eq!(m.skeleton, "def m(self):\n    return 1");
    assert_eq!(f.nodes[1].with_doc, "class A:\n    \"\"\"Doc.\"\"\"");
    assert!(!f.nodes.iter().any(|n| n.skeleton.contains('\r')));

    let src = "/// Doc.\r\npub fn f() -> u32 {\r\n    1\r\n}\r\n";
    let f = analyze(Language::Rust, "src/a.rs", src);
    assert_eq!(f.nodes[1].doc.as_deref(), Some("Doc."));
    assert_eq!(
        f.nodes[1].skeleton,
        "/// Doc.\npub fn f() -> u32 {\n    ...\n}"
    );
}

#[test]
fn non_ascii_identifiers() {
    let f = analyze(
        Language::Python,
        "ü.py",
        "def größe(x):\n    return maß(x)\n",
    );
    assert_eq!(f.nodes[1].name, "größe");
    assert_eq!(f.nodes[1].signature, "def größe(x):");
    assert_eq!(f.refs[0].name, "maß");
    let f = analyze(
        Language::TypeScript,
        "a.ts",
        "// ñ\nfunction ñandú(): void { café(); }\n",
    );
    assert_eq!(f.nodes[1].qualified_name, "a.ñandú");
    let f = analyze(Language::Java, "A.java", "class Ünï { void länge() {} }");
    assert_eq!(f.nodes[2].qualified_name, "Ünï.länge");
    let f = analyze(Language::Rust, "src/a.rs", "fn 名前() {}");
    assert_eq!(f.nodes[1].name, "名前");
    let f = analyze(Language::Markdown, "a.md", "# Überblick\n\nText.\n");
    assert_eq!(f.nodes[1].name, "Überblick");
}

#[test]
fn outline_keeps_imports_signatures_and_types() {
    let py = "import os\n\n@dataclass\nclass P:\n    x: int\n    y: int = 0\n\n    def norm(self) -> float:\n        return (self.x ** 2) ** 0.5\n\ndef main():\n    print(P(1).norm())\n";
    assert_eq!(
        outline(Language::Python, py, &ParseLimits::default()).as_deref(),
        Some(
            "import os\n@dataclass\nclass P:\n    x: int\n    y: int = 0\n    def norm(self) -> float:\n        ...\ndef main():\n    ..."
        )
    );
    let ts = "import { a } from './a';\nexport interface Opts {\n  depth: number;\n}\nexport type Id = string;\nexport function run(o: Opts): Id {\n  const x = a(o);\n  return String(x);\n}\n";
    assert_eq!(
        outline(Language::TypeScript, ts, &ParseLimits::default()).as_deref(),
        Some(
            "import { a } from './a';\nexport interface Opts {\n  depth: number;\n}\nexport type Id = string;\nexport function run(o: Opts): Id {\n  ...\n}"
        )
    );
    let rs = "use std::fmt;\n\npub struct P {\n    x: u32,\n}\n\nimpl P {\n    pub fn x(&self) -> u32 {\n        self.x\n    }\n}\n";
    assert_eq!(
        outline(Language::Rust, rs, &ParseLimits::default()).as_deref(),
        Some(
            "use std::fmt;\npub struct P {\n    x: u32,\n}\nimpl P {\n    pub fn x(&self) -> u32 {\n        ...\n    }\n}"
        )
    );
    let java =
        "package a;\nimport b.C;\nclass D {\n  private int n;\n  int get() { return n; }\n}\n";
    assert_eq!(
        outline(Language::Java, java, &ParseLimits::default()).as_deref(),
        Some("package a;\nimport b.C;\nclass D {\n  private int n;\n  int get() { return n; }\n}")
    );
    // A method quoted without its class is de-indented first.
    let method = "    def get(self, key: str) -> bytes:\n        data = self.load(key)\n        return data\n";
    assert_eq!(
        outline(Language::Python, method, &ParseLimits::default()).as_deref(),
        Some("def get(self, key: str) -> bytes:\n    ...")
    );
    // Prose is not code: too much of it is an error for the parser, so no outline.
    let prose = "This is just a sentence about the weather, not code at all; really.";
    assert_eq!(
        outline(Language::Rust, prose, &ParseLimits::default()),
        None
    );
    assert_eq!(outline(Language::Text, py, &ParseLimits::default()), None);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn arbitrary_input_never_panics(src in any::<String>()) {
        for lang in ALL {
            let f = analyzer_for(*lang).analyze("p/q.x", &src, &ParseLimits::default());
            check_invariants(&f, &src);
            let _ = outline(*lang, &src, &ParseLimits::default());
        }
    }

    #[test]
    fn code_like_input_never_panics(
        src in proptest::collection::vec(
            prop_oneof![
                Just("def "), Just("class "), Just("fn "), Just("{"), Just("}"), Just("("),
                Just(")"), Just(":"), Just("\n"), Just("    "), Just("\"\"\""), Just("/**"),
                Just("*/"), Just("impl "), Just("x"), Just("é"), Just("\r\n"), Just("# h\n"),
                Just("export "), Just("=> "), Just("@d\n"), Just("///"), Just("\""),
            ],
            0..60,
        ).prop_map(|v| v.concat())
    ) {
        for lang in ALL {
            let f = analyzer_for(*lang).analyze("p/q.x", &src, &ParseLimits::default());
            check_invariants(&f, &src);
            let _ = outline(*lang, &src, &ParseLimits::default());
        }
    }
}

/// What the analyzers make of one small file per language, hashed. An index keeps the output
/// of the analyzers that parsed it until `ANALYZERS_VERSION` changes, so a change to that
/// output without a new version leaves every existing index stale, silently.
#[test]
fn a_change_in_what_the_analyzers_extract_comes_with_a_new_version() {
    const FINGERPRINT: (&str, &str) = (
        "19",
        "4f4efedf5d390b5675cb30bd8f1d1c1caf2c926c1b0909885b1a7ac7ed7d374e",
    );
    let samples: &[(Language, &str, &str)] = &[
        (
            Language::Python,
            "pkg/app.py",
            "\"\"\"App.\"\"\"\nimport os\nLIMIT = 3\nTABLE = {\n    'a': 1,\n    'b': 2,\n}\n\nclass App(Base):\n    \"\"\"An app.\"\"\"\n    name = 'x'\n\n    @route('/')\n    def handle(self, req):\n        if req:\n            return go(req, LIMIT)\n        return map(self.render, req)\n",
        ),
        (
            Language::TypeScript,
            "src/app.ts",
            "import { a } from './a';\n/** Options. */\nexport interface Opts {\n  depth: number;\n}\nexport type Id = string;\nexport const LIMIT = 3;\nexport const run = ((o: Opts): Id => {\n  if (o.depth) {\n    return a(o);\n  }\n  return '';\n}) as Runner;\nexport class App extends Base {\n  handle(req: Req): void {\n    req.map(this.go);\n  }\n}\nexport default ok && (async () => {\n  return wrap(() => 1);\n});\n/** Runs. */\nexports.go = function go() {};\n",
        ),
        (
            Language::Rust,
            "src/lib.rs",
            "//! The crate.\n//!\n//! # Features\n//!\n//! - `a`: one.\n\nuse std::fmt;\n\npub const LIMIT: u32 = 3;\n\n/// A point.\npub struct P {\n    x: u32,\n}\n\nimpl fmt::Display for P {\n    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {\n        write!(f, \"{}\", self.x)\n    }\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {}\n}\n",
        ),
        (
            Language::Markdown,
            "docs/guide.md",
            "# Guide\n\nIntro.\n\n## Install\n\n```sh\ncargo install acms\n```\n\n## Use\n\nText.\n",
        ),
        (
            Language::Java,
            "src/A.java",
            "package a;\nimport b.C;\n/** A. */\n@As(C.class)\nclass A extends C {\n  private int n;\n  int get() { return n; }\n  Runnable r = new Runnable() {\n    int calls;\n    public void run() { calls++; }\n  };\n}\n",
        ),
        (
            Language::Go,
            "pkg/a.go",
            "// Package a.\npackage a\n\nimport \"b\"\n\n// T is a t.\ntype T struct{ n int }\n\nfunc (t *T) Get() int {\n\tif t.n > 0 {\n\t\treturn b.F(t.n)\n\t}\n\treturn 0\n}\n",
        ),
        (
            Language::C,
            "src/a.c",
            "#include \"a.h\"\n/* Gets. */\nint get(struct t *t) {\n    if (t->n) {\n        return f(t->n);\n    }\n    return 0;\n}\n",
        ),
        (
            Language::Cpp,
            "src/a.cpp",
            "#include \"a.hpp\"\nnamespace a {\nclass T : public B {\npublic:\n    int get() const;\n};\nint T::get() const { return f(n_); }\n}\n",
        ),
        (
            Language::CSharp,
            "src/A.cs",
            "using B;\nnamespace A;\n/// <summary>T.</summary>\npublic class T : Base\n#if X\n    , IX\n#endif\n{\n    public int Get() { return F(); }\n    public int N { get { return G(); } }\n}\n",
        ),
        (
            Language::Ruby,
            "lib/a.rb",
            "require \"b\"\nmodule A\n  # T.\n  class T < B\n    def get\n      f(1)\n    end\n  end\nend\n",
        ),
        (
            Language::Php,
            "src/A.php",
            "<?php\nnamespace A;\nuse B\\C;\n/** T. */\nclass T extends C {\n    public function get() { return f(); }\n}\n",
        ),
        (
            Language::Bash,
            "a.sh",
            "source ./b.sh\n# Gets.\nget() {\n    f \"$1\"\n}\n",
        ),
        (
            Language::Kotlin,
            "A.kt",
            "package a\nimport b.C\n/** T. */\nclass T : C() {\n    fun get(): Int { return f() }\n    val n: Int get() { return g() }\n}\n",
        ),
        (
            Language::Swift,
            "A.swift",
            "import B\n/// T.\nclass T: C {\n    func get() -> Int { return f() }\n    var n: Int { g() }\n}\n",
        ),
        (
            Language::Scala,
            "A.scala",
            "package a\nimport b.C\n/** T. */\nclass T extends C {\n  def get(): Int = f()\n}\n",
        ),
    ];
    let mut text = String::new();
    for (language, path, src) in samples {
        text.push_str(&format!("{:?}\n", analyze(*language, path, src)));
    }
    let hash = blake3::hash(text.as_bytes()).to_hex().to_string();
    assert_eq!(
        (crate::ANALYZERS_VERSION, hash.as_str()),
        FINGERPRINT,
        "what the analyzers extract changed: bump ANALYZERS_VERSION, so that existing indexes \
         are parsed again, and set FINGERPRINT to the new version and hash"
    );
}
