//! Languages as data: a tree-sitter query names what a language defines, imports and
//! references, and the walker reads its captures instead of hand-written hooks. Adding a
//! language is a grammar crate, a query file (`languages/<name>.scm`), a [`Table`] row in
//! `languages.rs` and fixtures.
//!
//! Capture names (the convention of tree-sitter's `tags.scm`, extended):
//! - `@definition.<kind>` on a definition node, with `@name` (its simple name), optionally
//!   `@body` (default: the node's `body` field) and `@owner` (the type a method belongs to when
//!   it is written outside it: a Go receiver, C++ `void A::f()`, Ruby `def self.f`).
//!   Kinds: `class interface struct enum trait impl type constant function method`.
//! - `@import` on an import statement, with `@import.module` (quotes and angle brackets are
//!   dropped) and `@import.name` (each name it brings in); or `@import.statement` alone, whose
//!   text after its keyword is the path (for grammars that split a path into pieces).
//! - `@reference.call` / `@reference.type` (a use) and `@reference.inherit` (a base) on a
//!   name node.
//! - `@field` on a member declaration whose first line skeletons and outlines keep.
//! - `@scope` with `@name`: a namespace that prefixes qualified names without being a node.
//! - `@package` with `@name`: a package declaration that prefixes every top-level name.
//!
//! The query runs once per file, before the walk, under the parse's deadline.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use streaming_iterator::StreamingIterator;
use tree_sitter::{Node, Query, QueryCursor, QueryCursorOptions, Tree};

use super::common::{Clock, ParseFailure};
use super::syntax::{Def, text};
use crate::model::{NodeKind, ParsedImport, RefKind};

/// A language's query source and, once compiled, the query.
pub(crate) struct QuerySpec {
    pub source: &'static str,
    pub compiled: OnceLock<Result<Query, String>>,
}

impl QuerySpec {
    pub const fn new(source: &'static str) -> QuerySpec {
        QuerySpec {
            source,
            compiled: OnceLock::new(),
        }
    }

    /// The compiled query; an error names the query's fault (a test compiles every
    /// language's query, so this is never expected at run time).
    pub fn query(&self, grammar: &tree_sitter::Language) -> Result<&Query, &str> {
        self.compiled
            .get_or_init(|| Query::new(grammar, self.source).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(String::as_str)
    }
}

/// A definition found by the query.
struct Found<'t> {
    /// The query pattern that found it: when two match one node, the earlier pattern wins.
    pattern: usize,
    kind: NodeKind,
    name: String,
    owner: Option<String>,
    body: Option<Node<'t>>,
}

/// What a language's query found in one file, keyed by node id.
#[derive(Default)]
pub(crate) struct Captures<'t> {
    defs: HashMap<usize, Found<'t>>,
    imports: HashMap<usize, Vec<ParsedImport>>,
    refs: HashMap<usize, (String, RefKind)>,
    fields: HashSet<usize>,
    scopes: HashMap<usize, String>,
    packages: HashMap<usize, String>,
}

fn kind_of(name: &str) -> Option<NodeKind> {
    Some(match name {
        "class" => NodeKind::Class,
        "interface" => NodeKind::Interface,
        "struct" => NodeKind::Struct,
        "enum" => NodeKind::Enum,
        "trait" => NodeKind::Trait,
        "impl" => NodeKind::Impl,
        "type" => NodeKind::TypeAlias,
        "constant" => NodeKind::Constant,
        "function" => NodeKind::Function,
        "method" => NodeKind::Method,
        _ => return None,
    })
}

/// A module path as written, without quotes, angle brackets or surrounding space.
fn unquote(s: &str) -> String {
    s.trim()
        .trim_matches(|c| matches!(c, '"' | '\'' | '`' | '<' | '>'))
        .trim()
        .to_string()
}

/// The path an import statement names, when the grammar splits it into pieces (Scala's
/// `import a.b.{C, D}` → `a.b`): the text after the keyword, without spaces, up to a
/// selector group or wildcard.
fn statement_path(s: &str) -> String {
    let s = s.trim();
    let rest = s.split_once(char::is_whitespace).map_or("", |(_, r)| r);
    let path: String = rest.chars().filter(|c| !c.is_whitespace()).collect();
    let end = path.find(['{', '*', '_', ',']).unwrap_or(path.len());
    path[..end].trim_end_matches('.').to_string()
}

/// A name as written, on one line (a C++ `operator ()` or a recovered node may span lines).
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl<'t> Captures<'t> {
    /// Runs `query` over `tree`; gives up with [`ParseFailure::Timeout`] once `clock` expires.
    pub fn collect(
        query: &Query,
        tree: &'t Tree,
        src: &str,
        clock: &mut Clock,
    ) -> Result<Captures<'t>, ParseFailure> {
        let names = query.capture_names();
        let mut out = Captures::default();
        let mut cursor = QueryCursor::new();
        let mut expired = false;
        let mut progress = |_: &tree_sitter::QueryCursorState| {
            expired = clock.expired();
            expired
        };
        let mut matches = cursor.matches_with_options(
            query,
            tree.root_node(),
            src.as_bytes(),
            QueryCursorOptions::new().progress_callback(&mut progress),
        );
        while let Some(m) = matches.next() {
            if m.captures.is_empty() {
                continue;
            }
            let mut def: Option<(NodeKind, Node<'t>)> = None;
            let mut name = None;
            let mut owner = None;
            let mut body = None;
            let mut import = None;
            let mut module = None;
            let mut imported = Vec::new();
            let mut scope = None;
            let mut package = None;
            for c in m.captures {
                let node = c.node;
                let cap = names[c.index as usize];
                match cap {
                    "name" => name = Some(one_line(text(node, src))),
                    "owner" => owner = Some(one_line(text(node, src))),
                    "body" => body = Some(node),
                    "import" => import = Some(node),
                    "import.module" => module = Some(unquote(text(node, src))),
                    "import.statement" => {
                        import = Some(node);
                        module = Some(statement_path(text(node, src)));
                    }
                    "import.name" => imported.push(one_line(text(node, src))),
                    "scope" => scope = Some(node),
                    "package" => package = Some(node),
                    "field" => {
                        out.fields.insert(node.id());
                    }
                    "reference.call" | "reference.type" | "reference.inherit" => {
                        let kind = if cap == "reference.inherit" {
                            RefKind::Inherits
                        } else {
                            RefKind::Call
                        };
                        let e = out
                            .refs
                            .entry(node.id())
                            .or_insert((text(node, src).to_string(), kind));
                        if kind == RefKind::Inherits {
                            e.1 = kind;
                        }
                    }
                    other => {
                        if let Some(k) = other.strip_prefix("definition.").and_then(kind_of) {
                            def = Some((k, node));
                        }
                    }
                }
            }
            if let (Some((kind, node)), Some(name)) = (def, name.clone()) {
                let found = Found {
                    pattern: m.pattern_index,
                    kind,
                    name,
                    owner: owner.filter(|o| !o.is_empty()),
                    body: body.or_else(|| node.child_by_field_name("body")),
                };
                match out.defs.get_mut(&node.id()) {
                    Some(f) if f.pattern <= found.pattern => {}
                    Some(f) => *f = found,
                    None => {
                        out.defs.insert(node.id(), found);
                    }
                }
            }
            if let (Some(node), Some(module)) = (import, module)
                && !module.is_empty()
            {
                out.imports
                    .entry(node.id())
                    .or_default()
                    .push(ParsedImport {
                        module,
                        names: imported,
                    });
            }
            if let (Some(node), Some(name)) = (scope, name.clone()) {
                out.scopes.insert(node.id(), unquote(&name));
            }
            if let (Some(node), Some(name)) = (package, name) {
                out.packages.insert(node.id(), name);
            }
        }
        drop(matches);
        if expired {
            return Err(ParseFailure::Timeout);
        }
        Ok(out)
    }

    /// The definition `node` is, if any, and the owner it names outside itself.
    pub fn def(&self, node: Node<'t>) -> Option<(Def<'t>, Option<String>)> {
        let f = self.defs.get(&node.id())?;
        let def = Def {
            kind: f.kind,
            name: f.name.clone(),
            body_owner: node,
            body: f.body,
        };
        Some((def, f.owner.clone()))
    }

    /// The imports `node` states, if it is an import statement.
    pub fn imports(&self, node: Node) -> Option<&[ParsedImport]> {
        self.imports.get(&node.id()).map(Vec::as_slice)
    }

    /// The reference `node` is (a name and whether it is a base or a use).
    pub fn reference(&self, node: Node) -> Option<(&str, RefKind)> {
        self.refs.get(&node.id()).map(|(n, k)| (n.as_str(), *k))
    }

    pub fn is_field(&self, node: Node) -> bool {
        self.fields.contains(&node.id())
    }

    pub fn scope(&self, node: Node) -> Option<&str> {
        self.scopes.get(&node.id()).map(String::as_str)
    }

    pub fn package(&self, node: Node) -> Option<&str> {
        self.packages.get(&node.id()).map(String::as_str)
    }
}
