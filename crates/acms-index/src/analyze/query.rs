//! Languages as data: a tree-sitter query names what a language defines, imports and
//! references, and the walker reads its captures (a table's hooks answer only what a query
//! cannot say: `walker::Table`). Adding a
//! language is a grammar crate, a query file (`languages/<name>.scm`), a [`Table`] row in
//! `languages.rs` and fixtures.
//!
//! Capture names (the convention of tree-sitter's `tags.scm`, extended):
//! - `@definition.<kind>` on a definition node, with `@name` (its simple name; `@name.head`:
//!   the name a type expression is written with, `Foo` for `impl Display for a::Foo<T>`), optionally
//!   `@body` (default: the node's `body` field) and `@owner` (the type a method belongs to when
//!   it is written outside it: a Go receiver, C++ `void A::f()`, Ruby `def self.f`).
//!   Kinds: `class interface struct enum trait impl type constant function method`.
//!   `@inner` marks the node a definition wraps (a Python decorated definition's `def`, a
//!   constant's assignment): its header ends the signature, and it is no definition of its own.
//! - `@import` on an import statement (kept in skeletons even when it names no module, as
//!   Python's `from __future__ import …`), with `@import.module` (quotes and angle brackets are
//!   dropped) and `@import.name` (each name it brings in; matches of one statement and module
//!   join their names); or `@import.statement` alone, whose
//!   text after its keyword is the path (for grammars that split a path into pieces).
//! - `@reference.call` / `@reference.type` (a use) and `@reference.inherit` (a base) on a
//!   name node; `@reference.inherit.head` on a base's type expression (its head name).
//! - `@field` on a member declaration whose first line skeletons and outlines keep.
//! - `@scope` with `@name`: a namespace that prefixes qualified names without being a node.
//! - `@package` with `@name`: a package declaration that prefixes every top-level name.
//!
//! The walk runs the query ([`Matcher`]) at each node a pattern starts at, before visiting it,
//! under the parse's deadline: every top-level pattern opens with a named node kind.

use std::sync::OnceLock;

// Keyed by node ids (pointers) and looked up for every node the walker visits: a fast hash.
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use streaming_iterator::StreamingIterator;
use tree_sitter::{Node, Query, QueryCursor, QueryCursorOptions, QueryMatch};

use super::common::{Clock, ParseFailure};
use super::syntax::{Def, head_name, text};
use crate::model::{NodeKind, ParsedImport, RefKind};

/// A language's query source and, once compiled, the query.
pub(crate) struct QuerySpec {
    pub source: &'static str,
    pub compiled: OnceLock<Result<Compiled, String>>,
}

/// A compiled query and the node kinds its patterns start at.
pub(crate) struct Compiled {
    query: Query,
    /// By kind id, whether some pattern starts at a node of that kind.
    roots: Vec<bool>,
}

impl QuerySpec {
    pub const fn new(source: &'static str) -> QuerySpec {
        QuerySpec {
            source,
            compiled: OnceLock::new(),
        }
    }

    /// The compiled query; an error names the query's fault, such as a pattern that does not
    /// open with a named node kind (a test compiles every language's query, so this is never
    /// expected at run time).
    pub fn compiled(&self, grammar: &tree_sitter::Language) -> Result<&Compiled, &str> {
        self.compiled
            .get_or_init(|| {
                let query = Query::new(grammar, self.source).map_err(|e| e.to_string())?;
                let roots = pattern_roots(&query, self.source, grammar)?;
                Ok(Compiled { query, roots })
            })
            .as_ref()
            .map_err(String::as_str)
    }
}

/// The node kinds the patterns of `query` start at, by kind id: each top-level pattern must
/// open with `(kind` naming a named kind (not `(_ …)` or an alternation), so the walk knows
/// where to run it.
fn pattern_roots(
    query: &Query,
    source: &str,
    grammar: &tree_sitter::Language,
) -> Result<Vec<bool>, String> {
    let mut roots = vec![false; grammar.node_kind_count()];
    for i in 0..query.pattern_count() {
        let start = query.start_byte_for_pattern(i);
        let unrooted = || format!("pattern at byte {start} does not open with a named node kind");
        let rest = source
            .get(start..)
            .and_then(|r| r.strip_prefix('('))
            .ok_or_else(unrooted)?;
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let kind = &rest[..end];
        let mut found = false;
        for (id, root) in roots.iter_mut().enumerate() {
            let id = id as u16;
            if grammar.node_kind_is_named(id) && grammar.node_kind_for_id(id) == Some(kind) {
                *root = true;
                found = true;
            }
        }
        if !found {
            return Err(unrooted());
        }
    }
    Ok(roots)
}

/// Runs a language's query during the walk: at each node a pattern starts at, for the
/// patterns starting there only (a cursor limited to start depth 0), so the query looks at
/// the few nodes its patterns name instead of walking the whole tree a second time (which
/// cost a fifth of the analysis).
pub(crate) struct Matcher<'q> {
    compiled: &'q Compiled,
    cursor: QueryCursor,
}

impl<'q> Matcher<'q> {
    pub fn new(compiled: &'q Compiled) -> Matcher<'q> {
        let mut cursor = QueryCursor::new();
        cursor.set_max_start_depth(Some(0));
        Matcher { compiled, cursor }
    }

    /// Adds to `caps` what the patterns starting at `node` capture.
    pub fn run_at<'t>(
        &mut self,
        node: Node<'t>,
        src: &str,
        caps: &mut Captures<'t>,
        clock: &mut Clock,
    ) -> Result<(), ParseFailure> {
        let roots = &self.compiled.roots;
        if !roots.get(node.kind_id() as usize).copied().unwrap_or(false) {
            return Ok(());
        }
        let query = &self.compiled.query;
        let names = query.capture_names();
        let mut expired = false;
        let mut progress = |_: &tree_sitter::QueryCursorState| {
            expired = clock.expired();
            expired
        };
        let mut matches = self.cursor.matches_with_options(
            query,
            node,
            src.as_bytes(),
            QueryCursorOptions::new().progress_callback(&mut progress),
        );
        while let Some(m) = matches.next() {
            caps.add(m, names, src);
        }
        drop(matches);
        if expired {
            return Err(ParseFailure::Timeout);
        }
        Ok(())
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
    inner: Option<Node<'t>>,
}

/// What a language's query found in one file, keyed by node id.
#[derive(Default)]
pub(crate) struct Captures<'t> {
    defs: HashMap<usize, Found<'t>>,
    imports: HashMap<usize, Vec<ParsedImport>>,
    refs: HashMap<usize, (String, RefKind)>,
    fields: HashSet<usize>,
    /// Nodes a definition wraps (`@inner`): never definitions of their own.
    inner: HashSet<usize>,
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

/// A module path as written, without quotes, angle brackets or space (Python's `from . x`).
fn unquote(s: &str) -> String {
    s.trim()
        .trim_matches(|c| matches!(c, '"' | '\'' | '`' | '<' | '>'))
        .split_whitespace()
        .collect()
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
    /// Records one match.
    fn add(&mut self, m: &QueryMatch<'_, 't>, names: &[&str], src: &str) {
        if m.captures.is_empty() {
            return;
        }
        let mut def: Option<(NodeKind, Node<'t>)> = None;
        let mut name = None;
        let mut owner = None;
        let mut body = None;
        let mut inner = None;
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
                "name.head" => name = head_name(node, src),
                "owner" => owner = Some(one_line(text(node, src))),
                "body" => body = Some(node),
                "inner" => inner = Some(node),
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
                    self.fields.insert(node.id());
                }
                "reference.call"
                | "reference.type"
                | "reference.inherit"
                | "reference.inherit.head" => {
                    let kind = if cap == "reference.call" || cap == "reference.type" {
                        RefKind::Call
                    } else {
                        RefKind::Inherits
                    };
                    let referenced = if cap.ends_with(".head") {
                        match head_name(node, src) {
                            Some(n) => n,
                            None => continue,
                        }
                    } else {
                        text(node, src).to_string()
                    };
                    let e = self.refs.entry(node.id()).or_insert((referenced, kind));
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
        if let Some(n) = inner
            && self.inner.insert(n.id())
        {
            self.defs.remove(&n.id());
        }
        if let (Some((kind, node)), Some(name)) = (def, name.clone())
            && !self.inner.contains(&node.id())
        {
            let found = Found {
                pattern: m.pattern_index,
                kind,
                name,
                owner: owner.filter(|o| !o.is_empty()),
                body: body.or_else(|| inner.unwrap_or(node).child_by_field_name("body")),
                inner,
            };
            match self.defs.get_mut(&node.id()) {
                Some(f) if f.pattern <= found.pattern => {}
                Some(f) => *f = found,
                None => {
                    self.defs.insert(node.id(), found);
                }
            }
        }
        if let Some(node) = import {
            let statement = self.imports.entry(node.id()).or_default();
            match (module.filter(|m| !m.is_empty()), statement.last_mut()) {
                // One match per name (`from m import a, b`), and one for the module alone
                // (TypeScript's `import "m"` pattern matches `import a from "m"` too): the
                // names join one entry.
                (Some(m), Some(last)) if last.module == m => last.names.extend(imported),
                (Some(module), _) => statement.push(ParsedImport {
                    module,
                    names: imported,
                }),
                (None, _) => {}
            }
        }
        if let (Some(node), Some(name)) = (scope, name.clone()) {
            self.scopes.insert(node.id(), unquote(&name));
        }
        if let (Some(node), Some(name)) = (package, name) {
            self.packages.insert(node.id(), name);
        }
    }

    /// The definition `node` is, if any, and the owner it names outside itself.
    pub fn def(&self, node: Node<'t>) -> Option<(Def<'t>, Option<String>)> {
        let f = self.defs.get(&node.id())?;
        let def = Def {
            kind: f.kind,
            name: f.name.clone(),
            body_owner: f.inner.unwrap_or(node),
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
