//! The one tree-sitter walker behind the code analyzers. A language is a [`Table`]: which node
//! kinds are control flow, calls, imports, and either a query (`query.rs`: Java, Go, C, C++,
//! C#, Ruby, PHP, Bash, Kotlin, Swift, Scala) or hand-written hooks for definitions, names,
//! bases and imports (Python, TypeScript/JavaScript, Rust).
//!
//! The walk is iterative (a `TreeCursor` plus an explicit context stack), so 10 000 nested
//! blocks cannot overflow the stack. One pass collects nodes, refs, imports, the lines each
//! node's skeleton keeps and the lines the whole-file outline keeps; renderings are produced
//! at the end from those line sets. The walker does not resolve imports or assign ids.

use std::collections::HashSet;

use tree_sitter::Node;

use super::common::{
    Clock, LineSet, Lines, ParseFailure, block_at, bounded, chunk_file, clean_comment,
    clean_docstring, clean_name, deadline, dedent_slice, file_stem, is_closing_line, is_noise_name,
    make_node, module_node, next_code_lines, parse, render_kept, slice, timeout_warning,
};
use super::doc_sections::{DocSections, doc_sections};
use super::query::{Captures, QuerySpec};
use super::syntax::{Def, call_name, field_text, is_identifier, text};
use super::{MAX_DEF_DEPTH, ParseLimits};
use crate::model::{Language, NodeKind, ParsedFile, ParsedImport, ParsedRef, RefKind};

/// Where a language keeps its documentation.
pub(crate) enum DocStyle {
    /// Comments directly above the definition, recognized by this predicate on their text.
    Leading(fn(&str) -> bool),
    /// A string literal as the first statement of the body (Python).
    Docstring,
}

/// A doc: (cleaned text, source start byte, source end byte).
pub(crate) type DocSpan = (String, usize, usize);

/// Everything the walker needs to know about one language.
pub(crate) struct Table {
    pub language: Language,
    pub grammar: fn(Language) -> tree_sitter::Language,
    /// Separator of qualified names (`.` or `::`).
    pub sep: &'static str,
    /// Line-comment marker, for the module's one-line signature.
    pub comment_prefix: &'static str,
    /// Brace languages keep closing-brace lines in skeletons.
    pub braces: bool,
    pub doc_style: DocStyle,
    /// Kinds that wrap a definition and belong to its span and signature (Python
    /// `decorated_definition`, TS `export_statement`).
    pub wrappers: &'static [&'static str],
    /// Kinds that add their name to qualified names without being nodes (inline `mod`,
    /// `namespace`).
    pub scopes: &'static [&'static str],
    /// Sibling kinds directly above a definition that belong to its signature (attributes,
    /// decorators).
    pub attrs: &'static [&'static str],
    pub comments: &'static [&'static str],
    /// Fields holding the body of a control-flow statement, tried in order.
    pub body_fields: &'static [&'static str],
    /// Control-flow statements and clauses whose header lines skeletons keep.
    pub control: &'static [&'static str],
    /// Statements whose first line skeletons keep (`return`, `raise`, `throw`, `yield`).
    pub jumps: &'static [&'static str],
    /// Anonymous tokens whose line skeletons keep (Java's bare `else`).
    pub clause_tokens: &'static [&'static str],
    /// Kinds handed to the `import` hook.
    pub imports: &'static [&'static str],
    pub calls: &'static [&'static str],
    /// Member accesses that name a function when passed as an argument (`reduce(kls.row_join,
    /// args)`, `.map(Self::parse)`, `arr.map(this.handle)`): (node kind, field of the name).
    pub passed: &'static [(&'static str, &'static str)],
    /// Identifier kinds that always name a type (recorded as uses).
    pub type_idents: &'static [&'static str],
    /// Identifier kinds recorded as uses when they look like a type or constant (capitalized).
    pub idents: &'static [&'static str],
    /// Whether a direct member of a class-like container (`in_module` false) or of the module
    /// (`in_module` true) is a field or constant whose first line skeletons and the outline keep.
    pub field: fn(Node, bool) -> bool,
    pub classify: for<'t> fn(Node<'t>, &str, &str) -> Option<Def<'t>>,
    pub bases: fn(Node, &str) -> Vec<String>,
    /// Records the imports of a node of an `imports` kind; true when it is an import
    /// statement whose lines belong in skeletons.
    pub import: fn(Node, &str, &mut Vec<ParsedImport>) -> bool,
    /// (module qualified name, prefix of top-level qualified names) for a path.
    pub module_names: fn(&str) -> (String, String),
    /// The package a node declares (Java), which prefixes top-level qualified names.
    pub package: fn(Node, &str) -> Option<String>,
    /// The module doc: (cleaned text, source start, source end).
    pub module_doc: fn(Node, &str) -> Option<DocSpan>,
    /// A language described by a query ([`super::query`]): its captures answer what
    /// `classify`, `import`, `package`, `field`, `scopes` and the reference lists answer for
    /// the hand-written languages.
    pub query: Option<&'static QuerySpec>,
    /// The text the parser reads when it is not the source itself (C#'s `#if` lines as
    /// blanks): the same length, so every node's byte span is a span of the source.
    pub parse_view: fn(&str) -> Option<String>,
}

pub(crate) fn no_package(_: Node, _: &str) -> Option<String> {
    None
}

pub(crate) fn no_module_doc(_: Node, _: &str) -> Option<DocSpan> {
    None
}

pub(crate) fn source_as_is(_: &str) -> Option<String> {
    None
}

/// The function a member access passed as an argument names ([`Table::passed`]): the callee
/// calls it, so it is a dependency as surely as a call.
fn passed_name<'s>(table: &Table, n: Node, src: &'s str) -> Option<&'s str> {
    let &(_, field) = table.passed.iter().find(|(kind, _)| *kind == n.kind())?;
    let parent = n.parent()?;
    let argument = match parent.kind() {
        "argument_list" | "arguments" => true,
        "keyword_argument" => parent
            .child_by_field_name("value")
            .is_some_and(|v| v.id() == n.id()),
        _ => false,
    };
    let name = text(n.child_by_field_name(field)?, src);
    (argument && is_identifier(name)).then_some(name)
}

/// End byte of the last non-extra child of `owner` before `body`: the end of the header.
/// A body nested deeper than a child of `owner` (a query language's `@body`: Go's
/// `type A struct {…}` holds its fields two levels down) ends the header at the last
/// non-blank byte before it.
fn header_end(owner: Node, body: Node, src: &str) -> usize {
    let mut end = owner.start_byte();
    let mut direct = false;
    let mut c = owner.walk();
    for ch in owner.children(&mut c) {
        if ch.start_byte() >= body.start_byte() {
            direct = ch.id() == body.id();
            break;
        }
        if !ch.is_extra() {
            end = ch.end_byte();
        }
    }
    if direct {
        end
    } else {
        slice(src, 0, body.start_byte())
            .trim_end()
            .len()
            .max(owner.start_byte())
    }
}

/// Per-definition bookkeeping gathered during the walk.
#[derive(Default)]
struct DefState {
    kept: LineSet,
    /// Lines of the signature (attributes and decorators included).
    sig_lines: (usize, usize),
    closing: Option<usize>,
    /// Data types (structs, enums, interfaces, aliases) show all their lines at depth 4.
    keep_all: bool,
    /// Bodies of nested definitions, never shown by a `keep_all` parent.
    exclude: Vec<(usize, usize)>,
    body_id: Option<usize>,
}

#[derive(Clone, Copy)]
struct Ctx<'t> {
    def: usize,
    scope: usize,
    /// The outermost wrapper when the parent chain up to here is all wrappers.
    outer: Option<Node<'t>>,
    /// Index in `leads` of the outer wrapper's leading comments and attributes.
    outer_lead: usize,
    parent_kind: &'static str,
    /// The parent node is the body of the current definition (a direct member).
    member: bool,
    in_error: bool,
    /// Definitions enclosing this node (the module not counted).
    def_depth: usize,
}

/// The outcome of a walk: the file, plus what `outline` needs.
pub(crate) struct Walk {
    pub file: ParsedFile,
    pub outline: LineSet,
    pub error_bytes: usize,
    pub comment_lines: Vec<bool>,
}

fn is_container(kind: NodeKind) -> bool {
    matches!(
        kind,
        NodeKind::Class
            | NodeKind::Interface
            | NodeKind::Struct
            | NodeKind::Enum
            | NodeKind::Trait
            | NodeKind::Impl
    )
}

fn is_data(kind: NodeKind) -> bool {
    matches!(
        kind,
        NodeKind::Struct | NodeKind::Enum | NodeKind::Interface | NodeKind::TypeAlias
    )
}

/// Analyzes a file with a table-driven language; a timed-out parse becomes line chunks.
pub(crate) fn analyze(table: &Table, path: &str, source: &str, limits: &ParseLimits) -> ParsedFile {
    let (qname, _) = (table.module_names)(path);
    match walk(table, path, source, limits) {
        Ok(w) => bounded(w.file, path, source, qname, limits),
        Err(_) => {
            let mut f = chunk_file(path, source, qname, limits);
            f.warnings.push(timeout_warning(limits));
            f
        }
    }
}

/// The whole-file outline (imports, signatures, type declarations), or `None` when the
/// parse failed or recovered so little that the outline cannot be trusted.
pub(crate) fn outline(table: &Table, source: &str, limits: &ParseLimits) -> Option<String> {
    let w = walk(table, "snippet", source, limits).ok()?;
    let code_bytes = source.bytes().filter(|b| !b.is_ascii_whitespace()).count();
    if w.outline.set.is_empty() || w.error_bytes * 2 > code_bytes {
        return None;
    }
    let lines = Lines::new(source);
    let comments = w.comment_lines;
    let next = next_code_lines(&lines, &|l| comments.get(l).copied().unwrap_or(false));
    let out = render_kept(&lines, 0, source.len(), &w.outline.set, &next);
    Some(out)
}

/// Syntax nesting beyond which a file gets a warning.
const NESTING_WARNING: usize = 1000;

#[allow(clippy::too_many_lines)]
pub(crate) fn walk(
    table: &Table,
    path: &str,
    source: &str,
    limits: &ParseLimits,
) -> Result<Walk, ParseFailure> {
    let grammar = (table.grammar)(table.language);
    let deadline = deadline(limits);
    let view = (table.parse_view)(source);
    debug_assert!(view.as_ref().is_none_or(|v| v.len() == source.len()));
    let tree = parse(&grammar, view.as_deref().unwrap_or(source), deadline)?;
    let mut clock = Clock::new(deadline);
    let caps = match table.query {
        Some(q) => {
            let query = q.query(&grammar).map_err(|_| ParseFailure::Grammar)?;
            Some(Captures::collect(query, &tree, source, &mut clock)?)
        }
        None => None,
    };
    let root = tree.root_node();
    let lines = Lines::new(source);
    let src = source;

    let (module_qname, child_prefix) = (table.module_names)(path);
    let mut file = ParsedFile::default();
    file.nodes.push(module_node(
        &lines,
        path,
        module_qname.clone(),
        String::new(),
        None,
        String::new(),
        String::new(),
    ));
    let mut defs: Vec<DefState> = vec![DefState {
        body_id: Some(root.id()),
        sig_lines: (0, 0),
        ..DefState::default()
    }];
    let mut scopes: Vec<String> = vec![child_prefix];
    let mut outline = LineSet::default();
    let mut comment_lines = vec![false; lines.count()];
    let mut seen_refs: HashSet<(usize, String, RefKind)> = HashSet::new();
    let mut package: Option<String> = None;
    let mut errors = 0usize;
    let mut error_bytes = 0usize;

    let join = |prefix: &str, name: &str| {
        if prefix.is_empty() {
            name.to_string()
        } else {
            format!("{prefix}{}{name}", table.sep)
        }
    };
    let add_ref = |file: &mut ParsedFile,
                   seen: &mut HashSet<(usize, String, RefKind)>,
                   from: usize,
                   name: &str,
                   kind: RefKind| {
        if is_noise_name(name) || file.nodes[from].name == name {
            return;
        }
        if kind == RefKind::Call && seen.contains(&(from, name.to_string(), RefKind::Inherits)) {
            return;
        }
        if seen.insert((from, name.to_string(), kind)) {
            file.refs.push(ParsedRef {
                from,
                name: name.to_string(),
                kind,
            });
        }
    };

    let mut runs: Vec<Vec<Node>> = vec![Vec::new()];
    let mut leads: Vec<Vec<Node>> = vec![Vec::new()];
    let mut cursor = root.walk();
    // Deepest syntax nesting seen: pathological nesting is worth a warning (it is walked
    // iteratively, so it costs time, never the stack).
    let mut deepest = 0usize;
    let mut stack: Vec<Ctx> = vec![Ctx {
        def: 0,
        scope: 0,
        outer: None,
        outer_lead: 0,
        parent_kind: "",
        member: false,
        in_error: false,
        def_depth: 0,
    }];
    // Definitions not made nodes because they are nested deeper than `MAX_DEF_DEPTH`.
    let mut folded = 0usize;
    loop {
        if clock.expired() {
            return Err(ParseFailure::Timeout);
        }
        let node = cursor.node();
        let ctx = *stack.last().unwrap_or(&stack[0]);
        let depth = stack.len() - 1;
        // The run of comments and attributes directly before this node among its siblings,
        // tracked during the walk: `Node::prev_sibling` searches from the root and would
        // make deeply nested definitions quadratic.
        let lead_kind = node.is_named()
            && (table.comments.contains(&node.kind()) || table.attrs.contains(&node.kind()));
        let my_lead: Vec<Node> = if lead_kind {
            runs[depth].push(node);
            Vec::new()
        } else {
            std::mem::take(&mut runs[depth])
        };
        let kind = node.kind();
        let mut child = Ctx {
            outer: None,
            parent_kind: kind,
            member: defs[ctx.def].body_id == Some(node.id()),
            ..ctx
        };

        if node.is_missing() && !ctx.in_error {
            errors += 1;
        } else if node.is_error() && !ctx.in_error {
            child.in_error = true;
            // U+FFFD comes from the caller's lossy decoding, which it already reports; it
            // is not a syntax error of the file.
            let t = text(node, src);
            if !t.trim().chars().all(|c| c == '\u{FFFD}') {
                errors += 1;
                error_bytes += node.end_byte() - node.start_byte();
            }
        }

        if table.comments.contains(&kind) {
            // A comment owns the lines it covers entirely; skeletons drop them silently.
            let (a, b) = (node.start_byte(), node.end_byte());
            for (l, is_comment) in comment_lines
                .iter_mut()
                .enumerate()
                .take(lines.last_line(a, b) + 1)
                .skip(lines.line_of(a))
            {
                let lt = lines.text(l);
                let ls = lines.start(l);
                let first = ls + (lt.len() - lt.trim_start().len());
                let last = ls + lt.trim_end().len();
                if first >= a && last <= b {
                    *is_comment = true;
                }
            }
        } else if let Some(p) = match &caps {
            Some(c) => c.package(node).map(str::to_string),
            None => (table.package)(node, src),
        } {
            let l = lines.line_of(node.start_byte());
            outline.insert(l);
            defs[0].kept.insert(l);
            scopes[0] = p.clone();
            package = Some(p);
        } else if node.is_named()
            && match &caps {
                Some(c) => c.imports(node).is_some_and(|i| {
                    file.imports.extend_from_slice(i);
                    true
                }),
                None => {
                    table.imports.contains(&kind) && (table.import)(node, src, &mut file.imports)
                }
            }
        {
            let (a, b) = (node.start_byte(), node.end_byte());
            let (first, last) = (lines.line_of(a), lines.last_line(a, b));
            defs[ctx.def].kept.insert_range(first, last);
            outline.insert_range(first, last);
        }

        if table.wrappers.contains(&kind) {
            child.outer = Some(ctx.outer.unwrap_or(node));
            child.outer_lead = if ctx.outer.is_some() {
                ctx.outer_lead
            } else {
                leads.push(my_lead.clone());
                leads.len() - 1
            };
        }

        let def = if !node.is_named() {
            None
        } else if let Some(c) = &caps {
            c.def(node)
        } else {
            (table.classify)(node, src, ctx.parent_kind).map(|d| (d, None))
        };
        // Too deep: the definition's text stays part of its enclosing definition.
        let def = match def {
            Some(_) if ctx.def_depth >= MAX_DEF_DEPTH => {
                folded += 1;
                None
            }
            d => d,
        };
        let made_def = def.is_some();
        if let Some((def, owner)) = def {
            let parent = ctx.def;
            let idx = file.nodes.len();
            let outer = ctx.outer.unwrap_or(node);
            let mut kind_ = def.kind;
            if kind_ == NodeKind::Function
                && ((is_container(file.nodes[parent].kind) && parent != 0) || owner.is_some())
            {
                kind_ = NodeKind::Method;
            }
            let mut sig_start = outer.start_byte();
            let mut span_start = sig_start;
            let mut doc: Option<DocSpan> = None;
            match table.doc_style {
                DocStyle::Leading(is_doc) => {
                    let mut cur = outer.start_byte();
                    let mut doc_span: Option<(usize, usize)> = None;
                    let lead = if ctx.outer.is_some() {
                        &leads[ctx.outer_lead]
                    } else {
                        &my_lead
                    };
                    for &s in lead.iter().rev() {
                        // Only comments and attributes touching the definition belong to it.
                        if lines.line_of(cur) > lines.last_line(s.start_byte(), s.end_byte()) + 1 {
                            break;
                        }
                        if table.attrs.contains(&s.kind()) && doc_span.is_none() {
                            sig_start = s.start_byte();
                        } else if table.comments.contains(&s.kind()) && is_doc(text(s, src)) {
                            doc_span =
                                Some((s.start_byte(), doc_span.map_or(s.end_byte(), |d| d.1)));
                        } else {
                            break;
                        }
                        cur = s.start_byte();
                    }
                    span_start = sig_start;
                    if let Some((a, b)) = doc_span {
                        let cleaned = clean_comment(slice(src, a, b));
                        span_start = a;
                        if !cleaned.is_empty() {
                            doc = Some((cleaned, a, b));
                        }
                    }
                }
                DocStyle::Docstring => {
                    doc = def.body.and_then(|b| docstring(b, src));
                }
            }
            let end = outer.end_byte();
            let hdr_end = match def.body {
                Some(b) => header_end(def.body_owner, b, src).max(sig_start),
                None => end,
            };
            let signature = dedent_slice(&lines, sig_start, hdr_end);
            let sig_col = sig_start - lines.start(lines.line_of(sig_start));
            let with_doc = match (&doc, &table.doc_style) {
                (Some((_, a, b)), DocStyle::Leading(_)) => {
                    format!("{}\n{signature}", block_at(&lines, *a, *b, sig_col))
                }
                (Some((_, a, b)), DocStyle::Docstring) => {
                    format!("{signature}\n{}", block_at(&lines, *a, *b, sig_col))
                }
                (None, _) => signature.clone(),
            };

            let sig_lines = (
                lines.line_of(sig_start),
                brace_line(table, &lines, lines.last_line(sig_start, hdr_end), def.body),
            );
            let end_line = lines.last_line(span_start, end);
            let closing =
                (table.braces && end_line > sig_lines.1 && is_closing_line(lines.text(end_line)))
                    .then_some(end_line);
            let mut st = DefState {
                sig_lines,
                closing,
                keep_all: is_data(kind_),
                body_id: def.body.map(|b| b.id()),
                ..DefState::default()
            };
            st.kept.insert_range(sig_lines.0, sig_lines.1);
            st.kept.extend(closing);
            if let Some((_, a, b)) = &doc {
                st.kept
                    .insert_range(lines.line_of(*a), lines.last_line(*a, *b));
            }
            let pst = &mut defs[parent];
            pst.kept.insert_range(sig_lines.0, sig_lines.1);
            pst.kept.extend(closing);
            if pst.keep_all && end_line > sig_lines.1 + 1 {
                pst.exclude.push((sig_lines.1 + 1, end_line - 1));
            }
            defs.push(st);

            // A method written outside its type (`func (s *Server) Serve`, `void A::f()`) is
            // named as if written inside it, so both halves of a type share one prefix.
            let qualified_name = match &owner {
                Some(o) => clean_name(join(&join(&scopes[ctx.scope], o), &def.name)),
                None => clean_name(join(&scopes[ctx.scope], &def.name)),
            };
            file.nodes.push(make_node(
                &lines,
                kind_,
                def.name,
                qualified_name.clone(),
                Some(parent),
                span_start,
                end,
                signature,
                doc.map(|d| d.0),
                with_doc,
                String::new(),
            ));
            for base in (table.bases)(node, src) {
                add_ref(&mut file, &mut seen_refs, idx, &base, RefKind::Inherits);
            }
            scopes.push(qualified_name);
            child.def = idx;
            child.scope = scopes.len() - 1;
            child.member = false;
            child.def_depth = ctx.def_depth + 1;
        } else if let Some(name) = caps.as_ref().and_then(|c| c.scope(node)) {
            scopes.push(clean_name(join(&scopes[ctx.scope], name)));
            child.scope = scopes.len() - 1;
        } else if node.is_named() && table.scopes.contains(&kind) {
            if let (Some(name), Some(_)) = (
                field_text(node, "name", src),
                node.child_by_field_name("body"),
            ) {
                // `declare module "pkg" {}` is named by a string.
                let name = name.trim_matches(|c| c == '"' || c == '\'' || c == '`');
                scopes.push(clean_name(join(&scopes[ctx.scope], name)));
                child.scope = scopes.len() - 1;
            }
        } else if node.is_named() && table.control.contains(&kind) {
            let body = table
                .body_fields
                .iter()
                .find_map(|f| node.child_by_field_name(f));
            let (a, b) = (node.start_byte(), node.end_byte());
            let hdr = body.map_or(a, |body| header_end(node, body, src).max(a));
            let st = &mut defs[ctx.def];
            st.kept.insert_range(
                lines.line_of(a),
                brace_line(table, &lines, lines.last_line(a, hdr), body),
            );
            let end_line = lines.last_line(a, b);
            if table.braces && is_closing_line(lines.text(end_line)) {
                st.kept.insert(end_line);
            }
        } else if (node.is_named() && table.jumps.contains(&kind))
            || (!node.is_named() && table.clause_tokens.contains(&kind))
        {
            defs[ctx.def].kept.insert(lines.line_of(node.start_byte()));
        } else if node.is_named()
            && (ctx.def == 0 || is_container(file.nodes[ctx.def].kind))
            // A query names its fields precisely (C's inside include guards too); the hooks
            // are asked about direct members only.
            && match &caps {
                Some(c) => c.is_field(node),
                None => ctx.member && (table.field)(node, ctx.def == 0),
            }
        {
            let l = lines.line_of(node.start_byte());
            defs[ctx.def].kept.insert(l);
            outline.insert(l);
        }

        if let Some((name, kind)) = caps.as_ref().and_then(|c| c.reference(node)) {
            if is_identifier(name) {
                add_ref(&mut file, &mut seen_refs, ctx.def, name, kind);
            }
        } else if node.is_named() {
            // Node kinds the table names as uses, for a query language too: a per-node
            // pattern with a predicate (every capitalized identifier) costs more as a query.
            if table.calls.contains(&kind) {
                if let Some(name) = call_name(node, src) {
                    add_ref(&mut file, &mut seen_refs, ctx.def, &name, RefKind::Call);
                }
            } else if let Some(name) = passed_name(table, node, src) {
                add_ref(&mut file, &mut seen_refs, ctx.def, name, RefKind::Call);
            } else if table.type_idents.contains(&kind)
                || (table.idents.contains(&kind)
                    && text(node, src).starts_with(|c: char| c.is_uppercase()))
            {
                let t = text(node, src);
                if is_identifier(t) {
                    add_ref(&mut file, &mut seen_refs, ctx.def, t, RefKind::Call);
                }
            }
        }

        if cursor.goto_first_child() {
            stack.push(child);
            deepest = deepest.max(stack.len());
            // Grammars that attach a comment above a block's first statement to the block's
            // parent (Ruby's `module X` / `# doc` / `class Y`) hand it on, so the first
            // statement still finds its doc. Query languages only: the hand-written ones
            // were measured without it.
            let inherited = if caps.is_some() && !made_def && !table.wrappers.contains(&kind) {
                my_lead
            } else {
                Vec::new()
            };
            runs.push(inherited);
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                let mut walk = finish(
                    table,
                    path,
                    &lines,
                    root,
                    file,
                    defs,
                    outline,
                    comment_lines,
                    package,
                    errors,
                    error_bytes,
                    &mut clock,
                )?;
                if folded > 0 {
                    walk.file.warnings.push(folded_warning(folded));
                }
                if deepest > NESTING_WARNING {
                    walk.file.warnings.push(format!(
                        "nesting {deepest} levels deep (over {NESTING_WARNING}); indexed, but the file is probably generated"
                    ));
                }
                return Ok(walk);
            }
            stack.pop();
            runs.pop();
        }
    }
}

/// The last header line, extended by one when the body's opening brace sits alone on the
/// next line (Allman style), so skeletons keep `{` as well as `}`.
fn brace_line(table: &Table, lines: &Lines, last: usize, body: Option<Node>) -> usize {
    match body {
        Some(b)
            if table.braces
                && lines.line_of(b.start_byte()) == last + 1
                && lines.text(last + 1).trim() == "{" =>
        {
            last + 1
        }
        _ => last,
    }
}

/// A Python-style docstring: the body's first statement, when it is a lone string.
fn docstring(body: Node, src: &str) -> Option<DocSpan> {
    let mut c = body.walk();
    let first = body
        .named_children(&mut c)
        .find(|n| n.kind() != "comment")?;
    if first.kind() != "expression_statement" || first.named_child_count() != 1 {
        return None;
    }
    let s = first.named_child(0)?;
    if s.kind() != "string" {
        return None;
    }
    let cleaned = clean_docstring(text(s, src));
    (!cleaned.is_empty()).then(|| (cleaned, s.start_byte(), s.end_byte()))
}

/// The module docstring of a Python file.
pub(crate) fn python_module_doc(root: Node, src: &str) -> Option<DocSpan> {
    docstring(root, src)
}

/// The warning for a file whose definitions nest deeper than [`MAX_DEF_DEPTH`].
pub(crate) fn folded_warning(folded: usize) -> String {
    format!(
        "definitions nested deeper than {MAX_DEF_DEPTH} levels are indexed as part of their enclosing definition ({folded} folded)"
    )
}

#[allow(clippy::too_many_arguments)]
fn finish(
    table: &Table,
    path: &str,
    lines: &Lines,
    root: Node,
    mut file: ParsedFile,
    mut defs: Vec<DefState>,
    mut outline: LineSet,
    comment_lines: Vec<bool>,
    package: Option<String>,
    errors: usize,
    error_bytes: usize,
    clock: &mut Clock,
) -> Result<Walk, ParseFailure> {
    let src = lines.src;
    let neutral = next_code_lines(lines, &|l| comment_lines.get(l).copied().unwrap_or(false));

    // Module renderings: a one-line header, the module doc, and imports + top-level
    // signatures + top-level control flow.
    if let Some(p) = package {
        // A package clause is source text of any length; the name built from it is bounded.
        file.nodes[0].qualified_name = clean_name(format!("{p}.{}", file_stem(path)));
    }
    let mut doc = (table.module_doc)(root, src);
    // A doc with Markdown headings is split into sections; the module keeps the part before
    // the first heading, and the headings as an outline in its skeleton.
    let sections = match &doc {
        Some((_, a, b)) => doc_sections(
            lines,
            *a,
            *b,
            &file.nodes[0].qualified_name,
            file.nodes.len(),
        ),
        None => DocSections::default(),
    };
    if let (Some((text, a, b)), Some(l)) = (&mut doc, sections.first_line) {
        // Only comment docs have sections, so the shortened doc is cleaned as one.
        *b = lines.start(l).max(*a);
        *text = clean_comment(slice(src, *a, *b));
    }
    if let Some((_, a, b)) = &doc
        && b > a
    {
        defs[0]
            .kept
            .insert_range(lines.line_of(*a), lines.last_line(*a, *b));
    }
    defs[0].kept.extend(sections.heading_lines);
    let signature = format!("{} {path}", table.comment_prefix);
    let with_doc = match &doc {
        Some((_, a, b)) if b > a => format!("{signature}\n{}", block_at(lines, *a, *b, 0)),
        _ => signature.clone(),
    };
    let module = &mut file.nodes[0];
    module.skeleton = render_kept(lines, 0, src.len(), &defs[0].kept.set, &neutral);
    if module.skeleton.is_empty() {
        module.skeleton = signature.clone();
    }
    module.signature = signature;
    module.with_doc = with_doc;
    module.doc = doc.map(|d| d.0).filter(|d| !d.is_empty());

    for (i, st) in defs.iter_mut().enumerate().skip(1) {
        if clock.expired() {
            return Err(ParseFailure::Timeout);
        }
        let n = &file.nodes[i];
        let (first, last) = (
            lines.line_of(n.start_byte),
            lines.last_line(n.start_byte, n.end_byte),
        );
        if st.keep_all {
            // The excluded ranges (nested bodies) come in source order; sweep them once.
            st.exclude.sort_unstable();
            let mut ex = st.exclude.iter().peekable();
            for l in first..=last {
                while ex.peek().is_some_and(|(_, b)| *b < l) {
                    ex.next();
                }
                if ex.peek().is_none_or(|(a, _)| *a > l) {
                    st.kept.insert(l);
                    outline.insert(l);
                }
            }
        } else {
            outline.insert_range(st.sig_lines.0, st.sig_lines.1);
            outline.extend(st.closing);
        }
        let skeleton = render_kept(lines, n.start_byte, n.end_byte, &st.kept.set, &neutral);
        file.nodes[i].skeleton = skeleton;
    }
    file.nodes.extend(sections.nodes);
    if errors > 0 {
        file.warnings.push(format!(
            "syntax errors: {errors} error node(s); indexed what the parser recovered"
        ));
    }
    Ok(Walk {
        file,
        outline,
        error_bytes,
        comment_lines,
    })
}
