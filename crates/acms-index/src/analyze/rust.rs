//! Rust: structs, unions, enums, traits, impl blocks, type aliases, functions, methods and
//! `macro_rules!` macros, inline `mod` blocks as name scopes, `///` / `//!` / `/** */` docs,
//! `use` trees and `mod x;` declarations, and resolution of `crate::`, `self::`, `super::`
//! paths and `mod x;` to files under the crate's `src/`.
//!
//! Definitions, bases and fields are a query (`languages/rust.scm`); `use` trees stay a hook
//! here, since flattening them joins paths. It does not expand macros, follow `#[path]` attributes or read `Cargo.toml`; other crates
//! of a workspace are found only by the `crates/<name>/src` and `<name>/src` layouts.

use tree_sitter::Node;

use super::common::{dirname, file_stem, first_existing};
use super::languages;
use super::query::QuerySpec;
use super::syntax::{field_text, named_children, text};
use super::walker::{self, DocSpan, DocStyle, Table};
use super::{Analyzer, ParseLimits};
use crate::model::{Language, ParsedFile, ParsedImport};

pub(crate) struct Rust;

fn is_doc(text: &str) -> bool {
    (text.starts_with("///") && !text.starts_with("////"))
        || (text.starts_with("/**") && !text.starts_with("/***") && text != "/**/")
}

static QUERY: QuerySpec = QuerySpec::new(include_str!("languages/rust.scm"));

pub(crate) static TABLE: Table = Table {
    language: Language::Rust,
    grammar: |_| tree_sitter_rust::LANGUAGE.into(),
    sep: "::",
    doc_style: DocStyle::Leading(is_doc),
    scopes: &["mod_item"],
    attrs: &["attribute_item"],
    comments: &["line_comment", "block_comment"],
    body_fields: &["body", "consequence", "value"],
    control: &[
        "if_expression",
        "else_clause",
        "for_expression",
        "while_expression",
        "loop_expression",
        "match_expression",
        "match_arm",
    ],
    jumps: &["return_expression"],
    imports: &["use_declaration", "mod_item", "extern_crate_declaration"],
    calls: &["call_expression", "macro_invocation"],
    passed: &[("scoped_identifier", "name")],
    type_idents: &["type_identifier"],
    idents: &["identifier"],
    import,
    module_names,
    module_doc,
    query: Some(&QUERY),
    ..languages::BASE
};

/// Collapses whitespace in a path as written (`crate :: a` → `crate::a`).
fn path_text(n: Node, src: &str) -> String {
    text(n, src).split_whitespace().collect()
}

fn join_path(prefix: &str, rest: &str) -> String {
    match (prefix.is_empty(), rest.is_empty()) {
        (true, _) => rest.to_string(),
        (_, true) => prefix.to_string(),
        _ => format!("{prefix}::{rest}"),
    }
}

/// Flattens a use tree into one import per module: `use a::{b::C, D}` gives `a` with `[D]`
/// and `a::b` with `[C]`.
fn use_tree(n: Node, prefix: &str, src: &str, out: &mut Vec<ParsedImport>) {
    match n.kind() {
        "scoped_use_list" | "use_list" => {
            let module = match n.child_by_field_name("path") {
                Some(p) => join_path(prefix, &path_text(p, src)),
                None => prefix.to_string(),
            };
            let list = if n.kind() == "use_list" {
                Some(n)
            } else {
                n.child_by_field_name("list")
            };
            let mut names = Vec::new();
            for item in list.map(named_children).unwrap_or_default() {
                match item.kind() {
                    "identifier" | "self" => names.push(text(item, src).to_string()),
                    "use_as_clause" => match item.child_by_field_name("path") {
                        Some(p) if p.kind() == "identifier" => names.push(text(p, src).to_string()),
                        Some(p) => use_tree(p, &module, src, out),
                        None => {}
                    },
                    _ => use_tree(item, &module, src, out),
                }
            }
            if !names.is_empty() {
                out.push(ParsedImport { module, names });
            }
        }
        "use_as_clause" => {
            if let Some(p) = n.child_by_field_name("path") {
                use_tree(p, prefix, src, out);
            }
        }
        "use_wildcard" => {
            let t = path_text(n, src);
            let t = t.strip_suffix("*").unwrap_or(&t).trim_end_matches(':');
            out.push(ParsedImport {
                module: join_path(prefix, t),
                names: Vec::new(),
            });
        }
        "scoped_identifier" => {
            let full = join_path(prefix, &path_text(n, src));
            match full.rsplit_once("::") {
                Some((module, name)) => out.push(ParsedImport {
                    module: module.to_string(),
                    names: vec![name.to_string()],
                }),
                None => out.push(ParsedImport {
                    module: full,
                    names: Vec::new(),
                }),
            }
        }
        "identifier" | "crate" | "self" | "super" => {
            if prefix.is_empty() {
                out.push(ParsedImport {
                    module: text(n, src).to_string(),
                    names: Vec::new(),
                });
            } else {
                out.push(ParsedImport {
                    module: prefix.to_string(),
                    names: vec![text(n, src).to_string()],
                });
            }
        }
        _ => {}
    }
}

/// How many inline `mod x { … }` blocks enclose `n` (looking a few levels up only: `use`
/// sits near the top of a module, and the walk must stay cheap on deep trees).
fn inline_mod_depth(n: Node) -> usize {
    let mut depth = 0;
    let mut cur = n.parent();
    for _ in 0..16 {
        let Some(p) = cur else { break };
        if p.kind() == "mod_item" {
            depth += 1;
        }
        cur = p.parent();
    }
    depth
}

/// Drops up to `k` leading `super` segments (`super::super::x` with k = 1 → `super::x`,
/// `super::x` → `self::x`).
fn strip_supers(path: &str, k: usize) -> String {
    let mut rest = path;
    let mut stripped = 0;
    while stripped < k {
        match rest.strip_prefix("super") {
            Some(r) if r.is_empty() || r.starts_with("::") => {
                rest = r.strip_prefix("::").unwrap_or(r);
                stripped += 1;
            }
            _ => break,
        }
    }
    if stripped == 0 {
        path.to_string()
    } else if rest.starts_with("super") {
        rest.to_string()
    } else {
        join_path("self", rest)
    }
}

fn import(n: Node, src: &str, out: &mut Vec<ParsedImport>) -> bool {
    match n.kind() {
        "use_declaration" => {
            let first = out.len();
            if let Some(arg) = n.child_by_field_name("argument") {
                use_tree(arg, "", src, out);
            }
            // Inside `mod tests { use super::*; }` the first `super` is this file's module.
            let inline = inline_mod_depth(n);
            for imp in &mut out[first..] {
                imp.module = strip_supers(&imp.module, inline);
            }
            true
        }
        // `mod x;` pulls in a file; `mod x { … }` is a scope, not an import.
        "mod_item" if n.child_by_field_name("body").is_none() => {
            if let Some(name) = field_text(n, "name", src) {
                out.push(ParsedImport {
                    module: format!("self::{name}"),
                    names: Vec::new(),
                });
            }
            true
        }
        "extern_crate_declaration" => {
            if let Some(name) = field_text(n, "name", src) {
                out.push(ParsedImport {
                    module: name.to_string(),
                    names: Vec::new(),
                });
            }
            true
        }
        _ => false,
    }
}

/// The crate's `src/` directory for a file (`crates/x/src/` for `crates/x/src/a/b.rs`), and
/// the module path of the file inside it.
fn crate_parts(path: &str) -> (String, Vec<String>) {
    let (root, rel) = if let Some(i) = path.rfind("/src/") {
        (path[..i + 5].to_string(), &path[i + 5..])
    } else if let Some(rel) = path.strip_prefix("src/") {
        ("src/".to_string(), rel)
    } else {
        // tests/, benches/, examples/, build.rs: no module path inside a crate root.
        return (String::new(), Vec::new());
    };
    let mut segs: Vec<String> = rel.split('/').map(str::to_string).collect();
    if let Some(last) = segs.pop() {
        let stem = file_stem(&last);
        // `mod.rs` names its directory; `lib.rs`/`main.rs` at the top are the crate root.
        let is_root = segs.is_empty() && matches!(stem, "lib" | "main");
        if stem != "mod" && !is_root {
            segs.push(stem.to_string());
        }
    }
    (root, segs)
}

/// `crate::a::b` for `src/a/b.rs`, `crate::a` for `src/a/mod.rs`, `crate` for `src/lib.rs`.
fn module_names(path: &str) -> (String, String) {
    let (root, segs) = crate_parts(path);
    let q = if root.is_empty() {
        super::common::strip_ext(path).replace('/', "::")
    } else {
        std::iter::once("crate".to_string())
            .chain(segs)
            .collect::<Vec<_>>()
            .join("::")
    };
    (q.clone(), q)
}

/// Leading `//!` / `/*! */` comments of the file, with the `#![doc = …]` attributes among
/// them: rustdoc joins them into one crate doc, and a crate that includes a chapter from a file
/// in the middle (`#![doc = include_str!("docs/handlers.md")]`) documents the rest below it.
fn module_doc(root: Node, src: &str) -> Option<DocSpan> {
    let mut span: Option<(usize, usize)> = None;
    for c in named_children(root) {
        let t = text(c, src);
        let inner_doc = match c.kind() {
            "line_comment" | "block_comment" => t.starts_with("//!") || t.starts_with("/*!"),
            "inner_attribute_item" => t.starts_with("#![doc"),
            _ => break,
        };
        if inner_doc {
            span = Some((span.map_or(c.start_byte(), |s| s.0), c.end_byte()));
        }
    }
    let (a, b) = span?;
    let cleaned = super::common::clean_comment(text_range(src, a, b));
    (!cleaned.is_empty()).then_some((cleaned, a, b))
}

fn text_range(src: &str, a: usize, b: usize) -> &str {
    super::common::slice(src, a, b)
}

impl Analyzer for Rust {
    fn language(&self) -> Language {
        Language::Rust
    }

    fn analyze(&self, path: &str, source: &str, limits: &ParseLimits) -> ParsedFile {
        walker::analyze(&TABLE, path, source, limits)
    }

    fn resolve_import(
        &self,
        from_path: &str,
        module: &str,
        exists: &dyn Fn(&str) -> bool,
    ) -> Option<String> {
        let (root, here) = crate_parts(from_path);
        let segs: Vec<&str> = module.split("::").filter(|s| !s.is_empty()).collect();
        let (&first, rest) = segs.split_first()?;
        // (directory the remaining segments are relative to, remaining segments)
        let (base, rest): (String, &[&str]) = match first {
            "crate" if !root.is_empty() => (root.trim_end_matches('/').to_string(), rest),
            "self" | "super" => {
                let mut dir = if root.is_empty() {
                    // A file outside src/ (tests/x.rs): its modules are siblings.
                    let d = dirname(from_path).to_string();
                    let stem = file_stem(from_path);
                    if d.is_empty() {
                        stem.to_string()
                    } else {
                        format!("{d}/{stem}")
                    }
                } else {
                    let mut d = root.trim_end_matches('/').to_string();
                    for s in &here {
                        d = format!("{d}/{s}");
                    }
                    d
                };
                let mut rest = rest;
                if first == "super" {
                    dir = dirname(&dir).to_string();
                }
                while let Some((&"super", r)) = rest.split_first() {
                    dir = dirname(&dir).to_string();
                    rest = r;
                }
                (dir, rest)
            }
            // Another crate of the workspace: `acms_core::x` → `crates/acms-core/src/x.rs`.
            name => {
                let dir = name.replace('_', "-");
                let base = [format!("crates/{dir}/src"), format!("{dir}/src")]
                    .into_iter()
                    .find(|b| exists(&format!("{b}/lib.rs")))?;
                (base, rest)
            }
        };
        let mut candidates = Vec::new();
        // The longest prefix of the path that is a file wins: `a::b::Item` is in `a/b.rs`.
        for n in (0..=rest.len()).rev() {
            let p = rest[..n].join("/");
            if p.is_empty() {
                candidates.push(format!("{base}/lib.rs"));
                candidates.push(format!("{base}/main.rs"));
                candidates.push(format!("{base}/mod.rs"));
                candidates.push(format!("{base}.rs"));
            } else {
                candidates.push(format!("{base}/{p}.rs"));
                candidates.push(format!("{base}/{p}/mod.rs"));
            }
        }
        // `mod x;` in `src/a.rs` written the pre-2018 way: a sibling `src/x.rs`.
        if first == "self" && rest.len() == 1 {
            let d = dirname(from_path);
            let sib = if d.is_empty() {
                rest[0].to_string()
            } else {
                format!("{d}/{}", rest[0])
            };
            candidates.push(format!("{sib}.rs"));
            candidates.push(format!("{sib}/mod.rs"));
        }
        candidates.retain(|c| c != from_path);
        first_existing(candidates, exists)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::tests::{check_nodes, check_render, check_resolve};
    use crate::model::{NodeKind, RefKind};

    const SRC: &str = r#"//! Storage of things.

use crate::model::{Node, edge::Edge};
use std::collections::HashMap;
mod cache;

/// A store.
#[derive(Debug)]
pub struct Store<T> {
    items: Vec<T>,
}

impl<T: Clone> fmt::Pointer for Store<T> {
    /// Formats it.
    fn fmt(&self, f: &mut Formatter) -> fmt::Result {
        for item in &self.items {
            if item.ok() {
                return write_item(f, item);
            }
        }
        match self.mode {
            Mode::A => Ok(()),
            _ => Err(Error::new()),
        }
    }
}

pub trait Load: Sized {
    fn load(path: &str) -> Self;
}

mod inner {
    use super::Store;
    pub fn helper() -> u32 { 1 }
}
"#;

    #[test]
    fn extracts_nodes() {
        check_nodes(
            Language::Rust,
            "crates/x/src/store/mod.rs",
            SRC,
            &[
                (NodeKind::Module, "crate::store", 1, 35),
                (NodeKind::Struct, "crate::store::Store", 7, 11),
                (NodeKind::Impl, "crate::store::Store", 13, 26),
                (NodeKind::Method, "crate::store::Store::fmt", 14, 25),
                (NodeKind::Trait, "crate::store::Load", 28, 30),
                (NodeKind::Method, "crate::store::Load::load", 29, 29),
                (NodeKind::Function, "crate::store::inner::helper", 34, 34),
            ],
        );
    }

    #[test]
    fn renders_depths() {
        check_render(
            Language::Rust,
            "src/store.rs",
            SRC,
            "crate::store::Store::fmt",
            "fn fmt(&self, f: &mut Formatter) -> fmt::Result",
            "/// Formats it.\nfn fmt(&self, f: &mut Formatter) -> fmt::Result",
            "/// Formats it.\nfn fmt(&self, f: &mut Formatter) -> fmt::Result {\n    for item in &self.items {\n        if item.ok() {\n            return write_item(f, item);\n        }\n    }\n    match self.mode {\n        Mode::A => Ok(()),\n        _ => Err(Error::new()),\n    }\n}",
        );
        check_render(
            Language::Rust,
            "src/store.rs",
            SRC,
            "crate::store::Store",
            "#[derive(Debug)]\npub struct Store<T>",
            "/// A store.\n#[derive(Debug)]\npub struct Store<T>",
            "/// A store.\n#[derive(Debug)]\npub struct Store<T> {\n    items: Vec<T>,\n}",
        );
    }

    #[test]
    fn the_crate_doc_runs_on_past_an_included_chapter() {
        let src = "//! # Routing\n//! See Router.\n#![doc = include_str!(\"docs/handlers.md\")]\n//! # Feature flags\n//! `json` enables Json.\n#![warn(missing_docs)]\n\nuse std::fmt;\n//! not a crate doc after an item\n";
        let f = Rust.analyze("src/lib.rs", src, &ParseLimits::default());
        // The doc is all sections: the module keeps their headings as an outline.
        assert_eq!(f.nodes[0].doc, None);
        let skeleton = &f.nodes[0].skeleton;
        assert!(skeleton.starts_with("//! # Routing\n"), "{skeleton}");
        assert!(skeleton.contains("//! # Feature flags"), "{skeleton}");
        let sections: Vec<(&str, u32, u32)> = f
            .nodes
            .iter()
            .filter(|n| n.kind == NodeKind::Section)
            .map(|n| (n.qualified_name.as_str(), n.start_line, n.end_line))
            .collect();
        assert_eq!(
            sections,
            [("crate > Routing", 1, 3), ("crate > Feature flags", 4, 5)]
        );
    }

    #[test]
    fn a_crate_doc_with_headings_is_split_into_sections() {
        let src = "//! A web framework.\n//!\n//! # Feature flags\n//!\n//! Name | Default\n//! `json` | yes\n\npub fn route() {}\n";
        let f = Rust.analyze("src/lib.rs", src, &ParseLimits::default());
        let module = &f.nodes[0];
        assert_eq!(module.doc.as_deref(), Some("A web framework."));
        assert_eq!(module.with_doc, "// src/lib.rs\n//! A web framework.\n//!");
        let flags = f
            .nodes
            .iter()
            .find(|n| n.kind == NodeKind::Section)
            .unwrap();
        assert_eq!(flags.qualified_name, "crate > Feature flags");
        assert_eq!(flags.parent, Some(0));
        assert_eq!((flags.start_line, flags.end_line), (3, 6));
        assert_eq!(flags.doc.as_deref(), Some("Name | Default\n`json` | yes"));
        assert!(f.nodes.iter().any(|n| n.name == "route"));
    }

    #[test]
    fn the_module_doc_stops_at_the_first_heading_not_at_a_fenced_line_like_it() {
        let src =
            "//! Intro:\n//! ```sh\n//! # Usage\n//! ```\n//! # Usage\n//! Text.\n\nfn f() {}\n";
        let f = Rust.analyze("src/lib.rs", src, &ParseLimits::default());
        assert_eq!(
            f.nodes[0].doc.as_deref(),
            Some("Intro:\n```sh\n# Usage\n```")
        );
    }

    #[test]
    fn refs_imports_and_docs() {
        let f = Rust.analyze("src/store.rs", SRC, &ParseLimits::default());
        let imports: Vec<(&str, Vec<&str>)> = f
            .imports
            .iter()
            .map(|i| {
                (
                    i.module.as_str(),
                    i.names.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            imports,
            vec![
                ("crate::model::edge", vec!["Edge"]),
                ("crate::model", vec!["Node"]),
                ("std::collections", vec!["HashMap"]),
                ("self::cache", vec![]),
                ("self", vec!["Store"]),
            ]
        );
        assert!(
            f.refs
                .iter()
                .any(|r| r.from == 2 && r.name == "Pointer" && r.kind == RefKind::Inherits)
        );
        assert!(f.refs.iter().any(|r| r.from == 3 && r.name == "write_item"));
        assert!(f.refs.iter().any(|r| r.from == 3 && r.name == "Mode"));
        assert_eq!(f.nodes[0].doc.as_deref(), Some("Storage of things."));
        assert_eq!(f.nodes[1].doc.as_deref(), Some("A store."));
        assert!(f.warnings.is_empty(), "{:?}", f.warnings);
    }

    #[test]
    fn supers_in_inline_modules() {
        assert_eq!(strip_supers("super", 1), "self");
        assert_eq!(strip_supers("super::x::Y", 1), "self::x::Y");
        assert_eq!(strip_supers("super::super::x", 1), "super::x");
        assert_eq!(strip_supers("super::x", 0), "super::x");
        assert_eq!(strip_supers("superb::x", 1), "superb::x");
    }

    #[test]
    fn resolves_imports() {
        let files = [
            "src/lib.rs",
            "src/model.rs",
            "src/store/mod.rs",
            "src/store/cache.rs",
            "src/a/b.rs",
            "crates/acms-core/src/lib.rs",
            "crates/acms-core/src/id.rs",
            "tests/common/mod.rs",
        ];
        check_resolve(
            Language::Rust,
            "src/lib.rs",
            "crate::model",
            &files,
            Some("src/model.rs"),
        );
        check_resolve(
            Language::Rust,
            "src/store/mod.rs",
            "crate::model::Node",
            &files,
            Some("src/model.rs"),
        );
        check_resolve(
            Language::Rust,
            "src/store/mod.rs",
            "self::cache",
            &files,
            Some("src/store/cache.rs"),
        );
        check_resolve(
            Language::Rust,
            "src/store/cache.rs",
            "super",
            &files,
            Some("src/store/mod.rs"),
        );
        check_resolve(
            Language::Rust,
            "src/store/cache.rs",
            "super::super::model",
            &files,
            Some("src/model.rs"),
        );
        check_resolve(
            Language::Rust,
            "src/a.rs",
            "self::b",
            &files,
            Some("src/a/b.rs"),
        );
        check_resolve(
            Language::Rust,
            "src/lib.rs",
            "acms_core::id::NodeId",
            &files,
            Some("crates/acms-core/src/id.rs"),
        );
        check_resolve(
            Language::Rust,
            "tests/it.rs",
            "self::common",
            &files,
            Some("tests/common/mod.rs"),
        );
        check_resolve(Language::Rust, "src/lib.rs", "std::fmt", &files, None);
    }
}
