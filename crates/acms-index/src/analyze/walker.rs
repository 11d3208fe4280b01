//! The one tree-sitter walker behind the code analyzers. A language is a [`Table`]: which node
//! kinds are control flow, calls, imports, and a query (`query.rs`; run at the nodes its
//! patterns start at as the walk reaches them) with hand-written hooks for what it cannot say
//! (Rust's `use` trees; TypeScript/JavaScript's functions behind wrappers, test blocks,
//! overloads and `require()`).
//!
//! The walk is iterative (a `TreeCursor` plus an explicit context stack), so 10 000 nested
//! blocks cannot overflow the stack. One pass collects nodes, refs, imports, the lines each
//! node's skeleton keeps and the lines the whole-file outline keeps; renderings are produced
//! at the end from those line sets. A [`Walker`] holds that state; it visits each node with one
//! method per construct (syntax errors, comments, packages, imports, wrappers, definitions,
//! scopes, control flow, fields, references). The walker does not resolve imports or assign
//! ids.

use std::collections::HashSet;

use tree_sitter::Node;

use super::common::{
    Clock, LineSet, Lines, ParseFailure, add_top_level_chunks, block_at, bounded, chunk_file,
    clean_comment, clean_docstring, clean_name, deadline, dedent_slice, file_stem, is_closing_line,
    is_noise_name, make_node, module_node, next_code_lines, parse, render_kept, slice,
    timeout_warning,
};
use super::doc_sections::{DocSections, doc_sections};
use super::query::{Captures, Matcher, QuerySpec};
use super::syntax::{Def, call_name, field_text, is_identifier, text};
use super::{MAX_DEF_DEPTH, ParseLimits};
use crate::model::{Language, NodeKind, ParsedFile, ParsedImport, ParsedNode, ParsedRef, RefKind};

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
    /// The definition a node is (given its parent's kind), for what the query cannot say.
    pub classify: for<'t> fn(Node<'t>, &str, &str) -> Option<Def<'t>>,
    /// Records the imports of a node of an `imports` kind, for what the query cannot say;
    /// true when it is an import statement whose lines belong in skeletons.
    pub import: fn(Node, &str, &mut Vec<ParsedImport>) -> bool,
    /// (module qualified name, prefix of top-level qualified names) for a path.
    pub module_names: fn(&str) -> (String, String),
    /// The module doc: (cleaned text, source start, source end).
    pub module_doc: fn(Node, &str) -> Option<DocSpan>,
    /// The query describing the language ([`super::query`]): definitions, imports, packages,
    /// fields, scopes and references; the hooks above answer only what it does not. (`None`
    /// only in the template row.)
    pub query: Option<&'static QuerySpec>,
    /// The text the parser reads when it is not the source itself (C#'s `#if` lines as
    /// blanks): the same length, so every node's byte span is a span of the source.
    pub parse_view: fn(&str) -> Option<String>,
    /// The code outside top-level definitions is the program (shell): it is also indexed as
    /// line chunks, so a change to it is found without the whole file.
    pub script: bool,
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
}

impl DefState {
    /// Keeps every line `first..=last` of a data type but its nested definitions' bodies, in
    /// its skeleton and in the file's outline.
    fn keep_all_lines(&mut self, first: usize, last: usize, outline: &mut LineSet) {
        // The excluded ranges (nested bodies) come in source order; sweep them once.
        self.exclude.sort_unstable();
        let mut ex = self.exclude.iter().peekable();
        for l in first..=last {
            while ex.peek().is_some_and(|(_, b)| *b < l) {
                ex.next();
            }
            if ex.peek().is_none_or(|(a, _)| *a > l) {
                self.kept.insert(l);
                outline.insert(l);
            }
        }
    }
}

/// Where the walk stands when it reaches a node: what encloses it.
#[derive(Clone, Copy)]
struct Ctx<'t> {
    /// Index of the innermost enclosing definition in the file's nodes (0: the module).
    def: usize,
    /// Index of the qualified-name prefix in [`Walker::scopes`].
    scope: usize,
    /// The outermost wrapper when the parent chain up to here is all wrappers.
    outer: Option<Node<'t>>,
    /// Index in `leads` of the outer wrapper's leading comments and attributes.
    outer_lead: usize,
    parent_kind: &'static str,
    in_error: bool,
    /// Definitions enclosing this node (the module not counted).
    def_depth: usize,
}

impl Ctx<'_> {
    /// The context of the root node: inside the module, nothing else.
    fn root() -> Self {
        Ctx {
            def: 0,
            scope: 0,
            outer: None,
            outer_lead: 0,
            parent_kind: "",
            in_error: false,
            def_depth: 0,
        }
    }
}

/// Where the parts of a definition lie in the source (byte offsets).
struct Head {
    /// The signature's start: the first attribute or decorator, or the definition itself.
    sig_start: usize,
    /// The signature's end: the end of the header, before the body.
    sig_end: usize,
    /// The node's start: its doc comment when one leads it, else `sig_start`.
    span_start: usize,
    doc: Option<DocSpan>,
}

/// The outcome of a walk: the file, plus what `outline` needs.
struct Walk {
    file: ParsedFile,
    outline: LineSet,
    error_bytes: usize,
    comment_lines: Vec<bool>,
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
        Ok(mut w) => {
            if table.script {
                add_top_level_chunks(&mut w.file, source, limits);
            }
            bounded(w.file, path, source, qname, limits)
        }
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

/// The most lines a constant's signature shows whole (Python's `KNOWN = {…}` over more is
/// signed by its first line).
const SHORT_VALUE_LINES: usize = 3;

/// Syntax nesting beyond which a file gets a warning.
const NESTING_WARNING: usize = 1000;

/// Parses `source` and walks its tree once (see the module doc).
fn walk(
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
    let matcher = match table.query {
        Some(q) => Some(Matcher::new(
            q.compiled(&grammar).map_err(|_| ParseFailure::Grammar)?,
        )),
        None => None,
    };
    let root = tree.root_node();
    let lines = Lines::new(source);
    let mut walker = Walker::new(table, path, &lines, matcher);
    walker.run(root, &mut clock)?;
    walker.finish(root, &mut clock)
}

/// The state of one walk: what it has collected so far, and what one construct leaves for
/// others (the enclosing definitions' line sets, name scopes, leading comments).
struct Walker<'a, 't> {
    table: &'a Table,
    path: &'a str,
    src: &'a str,
    lines: &'a Lines<'a>,
    /// A language described by a query: the query, run at the nodes its patterns start at
    /// as the walk reaches them, and what it has captured so far.
    matcher: Option<Matcher<'a>>,
    captured: Captures<'t>,
    file: ParsedFile,
    /// One per definition in `file.nodes`, at the same index (0: the module).
    defs: Vec<DefState>,
    /// Qualified-name prefixes: the module's children's, then one per definition or scope.
    scopes: Vec<String>,
    /// Lines of the whole-file outline.
    outline: LineSet,
    /// Lines a comment covers entirely: skeletons drop them silently.
    comment_lines: Vec<bool>,
    seen_refs: HashSet<(usize, String, RefKind)>,
    package: Option<String>,
    errors: usize,
    error_bytes: usize,
    /// Per depth of the walk, the run of comments and attributes since the last other sibling.
    runs: Vec<Vec<Node<'t>>>,
    /// The leading comments and attributes of outer wrappers ([`Ctx::outer_lead`]).
    leads: Vec<Vec<Node<'t>>>,
    /// Definitions not made nodes because they are nested deeper than `MAX_DEF_DEPTH`.
    folded: usize,
    /// Deepest syntax nesting seen: pathological nesting is worth a warning (it is walked
    /// iteratively, so it costs time, never the stack).
    deepest: usize,
}

impl<'a, 't> Walker<'a, 't> {
    fn new(
        table: &'a Table,
        path: &'a str,
        lines: &'a Lines<'a>,
        matcher: Option<Matcher<'a>>,
    ) -> Self {
        let (module_qname, child_prefix) = (table.module_names)(path);
        let mut file = ParsedFile::default();
        file.nodes.push(module_node(
            lines,
            path,
            module_qname,
            String::new(),
            None,
            String::new(),
            String::new(),
        ));
        Walker {
            table,
            path,
            src: lines.src,
            lines,
            matcher,
            captured: Captures::default(),
            file,
            defs: vec![DefState {
                sig_lines: (0, 0),
                ..DefState::default()
            }],
            scopes: vec![child_prefix],
            outline: LineSet::default(),
            comment_lines: vec![false; lines.count()],
            seen_refs: HashSet::new(),
            package: None,
            errors: 0,
            error_bytes: 0,
            runs: vec![Vec::new()],
            leads: vec![Vec::new()],
            folded: 0,
            deepest: 0,
        }
    }

    /// Visits every node in document order, iteratively: a `TreeCursor` and a stack of the
    /// contexts of the nodes above the current one.
    fn run(&mut self, root: Node<'t>, clock: &mut Clock) -> Result<(), ParseFailure> {
        let mut cursor = root.walk();
        let mut stack: Vec<Ctx> = vec![Ctx::root()];
        loop {
            if clock.expired() {
                return Err(ParseFailure::Timeout);
            }
            let ctx = stack.last().copied().unwrap_or_else(Ctx::root);
            let node = cursor.node();
            if let Some(m) = self.matcher.as_mut() {
                m.run_at(node, self.src, &mut self.captured, clock)?;
            }
            let (child, inherited) = self.visit(node, ctx, stack.len() - 1);
            if cursor.goto_first_child() {
                stack.push(child);
                self.deepest = self.deepest.max(stack.len());
                self.runs.push(inherited);
                continue;
            }
            loop {
                if cursor.goto_next_sibling() {
                    break;
                }
                if !cursor.goto_parent() {
                    return Ok(());
                }
                stack.pop();
                self.runs.pop();
            }
        }
    }

    /// What the language's query has captured, for a language described by one.
    fn caps(&self) -> Option<&Captures<'t>> {
        self.matcher.as_ref().map(|_| &self.captured)
    }

    /// Records what `node` is, one construct after another. Returns the context of its
    /// children and the leading comments handed down to its first child.
    fn visit(&mut self, node: Node<'t>, ctx: Ctx<'t>, depth: usize) -> (Ctx<'t>, Vec<Node<'t>>) {
        let lead = self.leading_run(node, depth);
        let kind = node.kind();
        let mut child = Ctx {
            outer: None,
            parent_kind: kind,
            ..ctx
        };
        self.syntax_error(node, ctx, &mut child);
        if self.table.comments.contains(&kind) {
            self.comment(node);
        } else if let Some(p) = self.package_name(node) {
            self.package(node, p);
        } else if node.is_named() && self.imports(node) {
            self.keep_import(node, ctx.def);
        }
        if self.table.wrappers.contains(&kind) {
            self.wrapper(node, ctx, &mut child, &lead);
        }
        let made_def = self.structure(node, ctx, &mut child, &lead);
        self.references(node, ctx.def);
        // Grammars that attach a comment above a block's first statement to the block's
        // parent (Ruby's `module X` / `# doc` / `class Y`) hand it on, so the first statement
        // still finds its doc, as does a JSDoc above a CommonJS assignment or a test block
        // (the statement's first child is the definition).
        let inherited = if !made_def && !self.table.wrappers.contains(&kind) {
            lead
        } else {
            Vec::new()
        };
        (child, inherited)
    }

    /// The run of comments and attributes directly before `node` among its siblings, tracked
    /// during the walk: `Node::prev_sibling` searches from the root and would make deeply
    /// nested definitions quadratic. Empty when `node` itself extends the run.
    fn leading_run(&mut self, node: Node<'t>, depth: usize) -> Vec<Node<'t>> {
        let lead_kind = node.is_named()
            && (self.table.comments.contains(&node.kind())
                || self.table.attrs.contains(&node.kind()));
        if lead_kind {
            self.runs[depth].push(node);
            Vec::new()
        } else {
            std::mem::take(&mut self.runs[depth])
        }
    }

    /// Counts a missing or erroneous node outside an error already counted.
    fn syntax_error(&mut self, node: Node, ctx: Ctx, child: &mut Ctx) {
        if ctx.in_error {
            return;
        }
        if node.is_missing() {
            self.errors += 1;
        } else if node.is_error() {
            child.in_error = true;
            // U+FFFD comes from the caller's lossy decoding, which it already reports; it
            // is not a syntax error of the file.
            let t = text(node, self.src);
            if !t.trim().chars().all(|c| c == '\u{FFFD}') {
                self.errors += 1;
                self.error_bytes += node.end_byte() - node.start_byte();
            }
        }
    }

    /// A comment owns the lines it covers entirely; skeletons drop them silently.
    fn comment(&mut self, node: Node) {
        let lines = self.lines;
        let (a, b) = (node.start_byte(), node.end_byte());
        for (l, is_comment) in self
            .comment_lines
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
    }

    /// The package `node` declares, if it is a package declaration.
    fn package_name(&self, node: Node) -> Option<String> {
        self.caps()?.package(node).map(str::to_string)
    }

    /// A package declaration prefixes every top-level name; the module and outline keep it.
    fn package(&mut self, node: Node, name: String) {
        let l = self.lines.line_of(node.start_byte());
        self.outline.insert(l);
        self.defs[0].kept.insert(l);
        self.scopes[0] = name.clone();
        self.package = Some(name);
    }

    /// Records the imports `node` states (a query's, or the `import` hook's for the kinds the
    /// table hands it: Rust's `use` trees, which a query cannot flatten); true when it is an
    /// import statement.
    fn imports(&mut self, node: Node) -> bool {
        if let Some(i) = self.matcher.as_ref().and(self.captured.imports(node)) {
            self.file.imports.extend_from_slice(i);
            return true;
        }
        self.table.imports.contains(&node.kind())
            && (self.table.import)(node, self.src, &mut self.file.imports)
    }

    /// An import statement's lines belong to the enclosing skeleton and the outline.
    fn keep_import(&mut self, node: Node, def: usize) {
        let (a, b) = (node.start_byte(), node.end_byte());
        let (first, last) = (self.lines.line_of(a), self.lines.last_line(a, b));
        self.defs[def].kept.insert_range(first, last);
        self.outline.insert_range(first, last);
    }

    /// A wrapper (`export`, a decorated definition) belongs to the definition inside it: the
    /// outermost one gives that definition its start and its leading comments.
    fn wrapper(&mut self, node: Node<'t>, ctx: Ctx<'t>, child: &mut Ctx<'t>, lead: &[Node<'t>]) {
        child.outer = Some(ctx.outer.unwrap_or(node));
        child.outer_lead = if ctx.outer.is_some() {
            ctx.outer_lead
        } else {
            self.leads.push(lead.to_vec());
            self.leads.len() - 1
        };
    }

    /// What `node` is to skeletons and the outline: a definition, a scope, control flow, a
    /// jump or a field. Returns whether it became a definition.
    fn structure(
        &mut self,
        node: Node<'t>,
        ctx: Ctx<'t>,
        child: &mut Ctx<'t>,
        lead: &[Node<'t>],
    ) -> bool {
        let kind = node.kind();
        let named = node.is_named();
        if let Some((def, owner)) = self.definition(node, ctx) {
            self.define(node, ctx, child, def, owner, lead);
            return true;
        }
        if let Some(name) = self.caps().and_then(|c| c.scope(node)) {
            let scope = clean_name(self.join(&self.scopes[ctx.scope], name));
            self.enter_scope(child, scope);
        } else if named && self.table.scopes.contains(&kind) {
            self.hook_scope(node, ctx, child);
        } else if named && self.table.control.contains(&kind) {
            self.control(node, ctx.def);
        } else if (named && self.table.jumps.contains(&kind))
            || (!named && self.table.clause_tokens.contains(&kind))
        {
            self.defs[ctx.def]
                .kept
                .insert(self.lines.line_of(node.start_byte()));
        } else if named && self.is_field(node, ctx) {
            let l = self.lines.line_of(node.start_byte());
            self.defs[ctx.def].kept.insert(l);
            self.outline.insert(l);
        }
        false
    }

    /// The definition `node` is, by the query or the `classify` hook, and the owner it names
    /// outside itself; `None` too when it is nested too deep (counted as folded).
    fn definition(&mut self, node: Node<'t>, ctx: Ctx) -> Option<(Def<'t>, Option<String>)> {
        // The query first, then the `classify` hook for what a query cannot say (TypeScript's
        // functions behind wrappers, test blocks, overloads).
        let mut def = if !node.is_named() {
            None
        } else {
            self.caps().and_then(|c| c.def(node)).or_else(|| {
                (self.table.classify)(node, self.src, ctx.parent_kind).map(|d| (d, None))
            })
        };
        // A short value is its constant's (or type alias's) whole signature; a long table is
        // signed by its first line and elided as a body.
        if let Some((d, _)) = def.as_mut()
            && matches!(d.kind, NodeKind::Constant | NodeKind::TypeAlias)
            && node.end_position().row < node.start_position().row + SHORT_VALUE_LINES
        {
            d.body = None;
        }
        // Too deep: the definition's text stays part of its enclosing definition.
        if def.is_some() && ctx.def_depth >= MAX_DEF_DEPTH {
            self.folded += 1;
            return None;
        }
        def
    }

    /// Makes a node of a definition: its head, renderings and kept lines, its bases as
    /// references, and the scope its children are named in.
    fn define(
        &mut self,
        node: Node<'t>,
        ctx: Ctx<'t>,
        child: &mut Ctx<'t>,
        def: Def<'t>,
        owner: Option<String>,
        lead: &[Node<'t>],
    ) {
        let parent = ctx.def;
        let idx = self.file.nodes.len();
        let outer = ctx.outer.unwrap_or(node);
        let kind = if def.kind == NodeKind::Function
            && ((is_container(self.file.nodes[parent].kind) && parent != 0) || owner.is_some())
        {
            NodeKind::Method
        } else {
            def.kind
        };
        let lead = if ctx.outer.is_some() {
            &self.leads[ctx.outer_lead]
        } else {
            lead
        };
        let head = self.head(outer, &def, lead);
        let (signature, with_doc) = self.renderings(&head);
        let end = outer.end_byte();
        self.keep_def_lines(parent, kind, &head, def.body, end);

        // A method written outside its type (`func (s *Server) Serve`, `void A::f()`) is
        // named as if written inside it, so both halves of a type share one prefix.
        let prefix = &self.scopes[ctx.scope];
        let qualified_name = match &owner {
            Some(o) => clean_name(self.join(&self.join(prefix, o), &def.name)),
            None => clean_name(self.join(prefix, &def.name)),
        };
        self.file.nodes.push(make_node(
            self.lines,
            kind,
            def.name,
            qualified_name.clone(),
            Some(parent),
            head.span_start,
            end,
            signature,
            head.doc.map(|d| d.0),
            with_doc,
            String::new(),
        ));
        self.enter_scope(child, qualified_name);
        child.def = idx;
        child.def_depth = ctx.def_depth + 1;
    }

    /// Where the signature, the span and the doc of a definition lie; `outer` is its
    /// outermost node, `lead` the comments and attributes directly above it.
    fn head(&self, outer: Node, def: &Def, lead: &[Node]) -> Head {
        let (sig_start, span_start, doc) = match self.table.doc_style {
            DocStyle::Leading(is_doc) => self.leading_doc(outer, lead, is_doc),
            DocStyle::Docstring => {
                let start = outer.start_byte();
                (start, start, def.body.and_then(|b| docstring(b, self.src)))
            }
        };
        let sig_end = match def.body {
            Some(b) => header_end(def.body_owner, b, self.src).max(sig_start),
            None => outer.end_byte(),
        };
        Head {
            sig_start,
            sig_end,
            span_start,
            doc,
        }
    }

    /// Reads the run of comments and attributes above a definition, nearest first: attributes
    /// below the doc start the signature, doc comments make the doc. Returns the signature's
    /// start, the span's start and the doc.
    fn leading_doc(
        &self,
        outer: Node,
        lead: &[Node],
        is_doc: fn(&str) -> bool,
    ) -> (usize, usize, Option<DocSpan>) {
        let lines = self.lines;
        let mut sig_start = outer.start_byte();
        let mut cur = outer.start_byte();
        let mut doc_span: Option<(usize, usize)> = None;
        for &s in lead.iter().rev() {
            // Only comments and attributes touching the definition belong to it.
            if lines.line_of(cur) > lines.last_line(s.start_byte(), s.end_byte()) + 1 {
                break;
            }
            if self.table.attrs.contains(&s.kind()) && doc_span.is_none() {
                sig_start = s.start_byte();
            } else if self.table.comments.contains(&s.kind()) && is_doc(text(s, self.src)) {
                doc_span = Some((s.start_byte(), doc_span.map_or(s.end_byte(), |d| d.1)));
            } else {
                break;
            }
            cur = s.start_byte();
        }
        let Some((a, b)) = doc_span else {
            return (sig_start, sig_start, None);
        };
        let cleaned = clean_comment(slice(self.src, a, b));
        (
            sig_start,
            a,
            (!cleaned.is_empty()).then_some((cleaned, a, b)),
        )
    }

    /// A definition's signature (depth 0) and its signature with the doc (depth 2).
    fn renderings(&self, head: &Head) -> (String, String) {
        let lines = self.lines;
        let signature = dedent_slice(lines, head.sig_start, head.sig_end);
        let sig_col = head.sig_start - lines.start(lines.line_of(head.sig_start));
        let with_doc = match (&head.doc, &self.table.doc_style) {
            (Some((_, a, b)), DocStyle::Leading(_)) => {
                format!("{}\n{signature}", block_at(lines, *a, *b, sig_col))
            }
            (Some((_, a, b)), DocStyle::Docstring) => {
                format!("{signature}\n{}", block_at(lines, *a, *b, sig_col))
            }
            (None, _) => signature.clone(),
        };
        (signature, with_doc)
    }

    /// Starts the line set of a new definition (its signature, closing line and doc), and
    /// keeps its signature and closing line in its parent's.
    fn keep_def_lines(
        &mut self,
        parent: usize,
        kind: NodeKind,
        head: &Head,
        body: Option<Node>,
        end: usize,
    ) {
        let (table, lines) = (self.table, self.lines);
        let sig_lines = (
            lines.line_of(head.sig_start),
            brace_line(
                table,
                lines,
                lines.last_line(head.sig_start, head.sig_end),
                body,
            ),
        );
        let end_line = lines.last_line(head.span_start, end);
        let closing =
            (table.braces && end_line > sig_lines.1 && is_closing_line(lines.text(end_line)))
                .then_some(end_line);
        let mut st = DefState {
            sig_lines,
            closing,
            keep_all: is_data(kind),
            ..DefState::default()
        };
        st.kept.insert_range(sig_lines.0, sig_lines.1);
        st.kept.extend(closing);
        if let Some((_, a, b)) = &head.doc {
            st.kept
                .insert_range(lines.line_of(*a), lines.last_line(*a, *b));
        }
        let pst = &mut self.defs[parent];
        pst.kept.insert_range(sig_lines.0, sig_lines.1);
        pst.kept.extend(closing);
        if pst.keep_all && end_line > sig_lines.1 + 1 {
            pst.exclude.push((sig_lines.1 + 1, end_line - 1));
        }
        self.defs.push(st);
    }

    /// `name` under the qualified-name prefix `prefix`.
    fn join(&self, prefix: &str, name: &str) -> String {
        if prefix.is_empty() {
            name.to_string()
        } else {
            format!("{prefix}{}{name}", self.table.sep)
        }
    }

    /// Names the children of the current node under `qualified_name`.
    fn enter_scope(&mut self, child: &mut Ctx, qualified_name: String) {
        self.scopes.push(qualified_name);
        child.scope = self.scopes.len() - 1;
    }

    /// A scope the table names by node kind (Rust's inline `mod`, TypeScript's `namespace`):
    /// named when it has a name and a body.
    fn hook_scope(&mut self, node: Node, ctx: Ctx, child: &mut Ctx) {
        if let (Some(name), Some(_)) = (
            field_text(node, "name", self.src),
            node.child_by_field_name("body"),
        ) {
            // `declare module "pkg" {}` is named by a string.
            let name = name.trim_matches(|c| c == '"' || c == '\'' || c == '`');
            let scope = clean_name(self.join(&self.scopes[ctx.scope], name));
            self.enter_scope(child, scope);
        }
    }

    /// A control-flow statement keeps its header lines (and its closing brace) in the
    /// enclosing definition's skeleton.
    fn control(&mut self, node: Node, def: usize) {
        let (table, lines) = (self.table, self.lines);
        let body = table
            .body_fields
            .iter()
            .find_map(|f| node.child_by_field_name(f));
        let (a, b) = (node.start_byte(), node.end_byte());
        let hdr = body.map_or(a, |body| header_end(node, body, self.src).max(a));
        let st = &mut self.defs[def];
        st.kept.insert_range(
            lines.line_of(a),
            brace_line(table, lines, lines.last_line(a, hdr), body),
        );
        let end_line = lines.last_line(a, b);
        if table.braces && is_closing_line(lines.text(end_line)) {
            st.kept.insert(end_line);
        }
    }

    /// Whether `node` is a field or constant of the module or of a class-like container.
    fn is_field(&self, node: Node, ctx: Ctx) -> bool {
        // The query names its fields precisely (C's inside include guards too).
        (ctx.def == 0 || is_container(self.file.nodes[ctx.def].kind))
            && self.caps().is_some_and(|c| c.is_field(node))
    }

    /// Records the name `node` uses, if any, as a reference of the definition `from`.
    fn references(&mut self, node: Node, from: usize) {
        let captured = self.caps().and_then(|c| c.reference(node));
        if let Some((name, kind)) = captured.map(|(n, k)| (n.to_string(), k)) {
            if is_identifier(&name) {
                self.add_ref(from, &name, kind);
            }
            return;
        }
        if !node.is_named() {
            return;
        }
        // Node kinds the table names as uses, for a query language too: a per-node pattern
        // with a predicate (every capitalized identifier) costs more as a query.
        let (table, src) = (self.table, self.src);
        let kind = node.kind();
        if table.calls.contains(&kind) {
            if let Some(name) = call_name(node, src) {
                self.add_ref(from, &name, RefKind::Call);
            }
        } else if let Some(name) = passed_name(table, node, src) {
            self.add_ref(from, name, RefKind::Call);
        } else if table.type_idents.contains(&kind)
            || (table.idents.contains(&kind) && text(node, src).starts_with(char::is_uppercase))
        {
            let t = text(node, src);
            if is_identifier(t) {
                self.add_ref(from, t, RefKind::Call);
            }
        }
    }

    /// Adds a reference once per (source, name, kind). A base is not also a use, even when
    /// the use came first (`impl<T: Args> Args for Box<T>`: a query meets the bound before
    /// the trait). A base of no definition (`impl Args for ()`, which names no type) is a use
    /// of the module.
    fn add_ref(&mut self, from: usize, name: &str, kind: RefKind) {
        if is_noise_name(name) || self.file.nodes[from].name == name {
            return;
        }
        let kind = if from == 0 { RefKind::Call } else { kind };
        let key = |kind| (from, name.to_string(), kind);
        if kind == RefKind::Call && self.seen_refs.contains(&key(RefKind::Inherits)) {
            return;
        }
        if kind == RefKind::Inherits && self.seen_refs.remove(&key(RefKind::Call)) {
            self.file
                .refs
                .retain(|r| !(r.from == from && r.name == name && r.kind == RefKind::Call));
        }
        if self.seen_refs.insert((from, name.to_string(), kind)) {
            self.file.refs.push(ParsedRef {
                from,
                name: name.to_string(),
                kind,
            });
        }
    }

    /// Renders the module and every definition from the collected line sets, and adds the
    /// file's warnings.
    fn finish(mut self, root: Node, clock: &mut Clock) -> Result<Walk, ParseFailure> {
        let comment_lines = &self.comment_lines;
        let neutral = next_code_lines(self.lines, &|l| {
            comment_lines.get(l).copied().unwrap_or(false)
        });
        let sections = self.render_module(root, &neutral);
        self.render_defs(&neutral, clock)?;
        self.file.nodes.extend(sections);
        let warnings = &mut self.file.warnings;
        if self.errors > 0 {
            warnings.push(format!(
                "syntax errors: {} error node(s); indexed what the parser recovered",
                self.errors
            ));
        }
        if self.folded > 0 {
            warnings.push(folded_warning(self.folded));
        }
        if self.deepest > NESTING_WARNING {
            warnings.push(format!(
                "nesting {} levels deep (over {NESTING_WARNING}); indexed, but the file is probably generated",
                self.deepest
            ));
        }
        Ok(Walk {
            file: self.file,
            outline: self.outline,
            error_bytes: self.error_bytes,
            comment_lines: self.comment_lines,
        })
    }

    /// The module's renderings: a one-line header, the module doc, and imports + top-level
    /// signatures + top-level control flow. Returns the Section nodes of the module doc.
    fn render_module(&mut self, root: Node, neutral: &[usize]) -> Vec<ParsedNode> {
        let (lines, src, path) = (self.lines, self.src, self.path);
        if let Some(p) = &self.package {
            // A package clause is source text of any length; the name built from it is bounded.
            self.file.nodes[0].qualified_name = clean_name(format!("{p}.{}", file_stem(path)));
        }
        let mut doc = (self.table.module_doc)(root, src);
        // A doc with Markdown headings is split into sections; the module keeps the part before
        // the first heading, and the headings as an outline in its skeleton.
        let sections = match &doc {
            Some((_, a, b)) => doc_sections(
                lines,
                *a,
                *b,
                &self.file.nodes[0].qualified_name,
                self.file.nodes.len(),
            ),
            None => DocSections::default(),
        };
        if let (Some((text, a, b)), Some(l)) = (&mut doc, sections.first_line) {
            // Only comment docs have sections, so the shortened doc is cleaned as one.
            *b = lines.start(l).max(*a);
            *text = clean_comment(slice(src, *a, *b));
        }
        let kept = &mut self.defs[0].kept;
        if let Some((_, a, b)) = &doc
            && b > a
        {
            kept.insert_range(lines.line_of(*a), lines.last_line(*a, *b));
        }
        kept.extend(sections.heading_lines);
        let signature = format!("{} {path}", self.table.comment_prefix);
        let with_doc = match &doc {
            Some((_, a, b)) if b > a => format!("{signature}\n{}", block_at(lines, *a, *b, 0)),
            _ => signature.clone(),
        };
        let module = &mut self.file.nodes[0];
        module.skeleton = render_kept(lines, 0, src.len(), &kept.set, neutral);
        if module.skeleton.is_empty() {
            module.skeleton = signature.clone();
        }
        module.signature = signature;
        module.with_doc = with_doc;
        module.doc = doc.map(|d| d.0).filter(|d| !d.is_empty());
        sections.nodes
    }

    /// Each definition's skeleton (depth 4), and its lines in the whole-file outline.
    fn render_defs(&mut self, neutral: &[usize], clock: &mut Clock) -> Result<(), ParseFailure> {
        let lines = self.lines;
        for (i, st) in self.defs.iter_mut().enumerate().skip(1) {
            if clock.expired() {
                return Err(ParseFailure::Timeout);
            }
            let n = &self.file.nodes[i];
            let (first, last) = (
                lines.line_of(n.start_byte),
                lines.last_line(n.start_byte, n.end_byte),
            );
            if st.keep_all {
                st.keep_all_lines(first, last, &mut self.outline);
            } else {
                self.outline.insert_range(st.sig_lines.0, st.sig_lines.1);
                self.outline.extend(st.closing);
            }
            let skeleton = render_kept(lines, n.start_byte, n.end_byte, &st.kept.set, neutral);
            self.file.nodes[i].skeleton = skeleton;
        }
        Ok(())
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
