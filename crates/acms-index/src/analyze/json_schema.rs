//! JSON Schema: one Schema node per entry of `definitions`, `$defs`, `properties` and
//! `patternProperties`, nested, named by JSON pointer (`schema#/definitions/User/properties/id`).
//! The `description` (or `title`) is the doc, the `type` (or `$ref`, `enum`, combinator) the
//! signature. `$ref`s are refs (`allOf` members are Inherits); `$ref`s into other files are
//! imports.
//!
//! It does not validate the schema or dereference remote (`http://`) references.

use std::collections::HashSet;

use tree_sitter::Node;

use super::common::{
    Clock, Lines, bounded, chunk_file, clean_name, deadline, dirname, first_existing, join,
    make_node, module_node, parse, slice, strip_ext, timeout_warning, truncate_chars,
};
use super::walker::folded_warning;
use super::{Analyzer, MAX_DEF_DEPTH, ParseLimits};
use crate::model::{Language, NodeKind, ParsedFile, ParsedImport, ParsedRef, RefKind};

pub(crate) struct JsonSchema;

const CONTAINERS: &[&str] = &["definitions", "$defs", "properties", "patternProperties"];

/// True when the top-level object has a key that marks a JSON Schema. A cheap scan that
/// tracks nesting depth and strings, so it never builds a value.
pub(crate) fn looks_like_schema(source: &str) -> bool {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut key_start = 0usize;
    let bytes = source.as_bytes();
    let mut last_string: Option<(usize, usize)> = None;
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
                last_string = Some((key_start, i));
            }
            continue;
        }
        match b {
            b'"' => {
                in_string = true;
                key_start = i + 1;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b':' if depth == 1 => {
                if let Some((a, e)) = last_string.take() {
                    let key = &source[a..e];
                    if key == "$schema"
                        || key == "definitions"
                        || key == "$defs"
                        || key == "properties"
                    {
                        return true;
                    }
                }
            }
            b if b.is_ascii_whitespace() => {}
            _ => last_string = None,
        }
    }
    false
}

/// The unescaped value of a JSON string node.
fn string_value(n: Node, src: &str) -> String {
    let raw = slice(src, n.start_byte(), n.end_byte());
    serde_json::from_str::<String>(raw).unwrap_or_else(|_| raw.trim_matches('"').to_string())
}

/// The value of `key` in an object node.
fn member<'t>(obj: Node<'t>, key: &str, src: &str) -> Option<Node<'t>> {
    let mut c = obj.walk();
    let found = obj.named_children(&mut c).find(|p| {
        p.kind() == "pair"
            && p.child_by_field_name("key")
                .is_some_and(|k| string_value(k, src) == key)
    });
    found.and_then(|p| p.child_by_field_name("value"))
}

/// `object`, `string | null`, `$ref #/definitions/User`, `enum ["a", "b"]`, `oneOf`, …
fn type_of(obj: Node, src: &str) -> String {
    if obj.kind() != "object" {
        return truncate_chars(slice(src, obj.start_byte(), obj.end_byte()), 60);
    }
    if let Some(t) = member(obj, "type", src) {
        return match t.kind() {
            "string" => string_value(t, src),
            "array" => {
                let mut c = t.walk();
                t.named_children(&mut c)
                    .filter(|e| e.kind() == "string")
                    .map(|e| string_value(e, src))
                    .collect::<Vec<_>>()
                    .join(" | ")
            }
            _ => "schema".to_string(),
        };
    }
    if let Some(r) = member(obj, "$ref", src) {
        return format!("$ref {}", string_value(r, src));
    }
    if let Some(e) = member(obj, "enum", src) {
        return format!(
            "enum {}",
            truncate_chars(slice(src, e.start_byte(), e.end_byte()), 60)
        );
    }
    for k in ["oneOf", "anyOf", "allOf"] {
        if member(obj, k, src).is_some() {
            return k.to_string();
        }
    }
    if member(obj, "properties", src).is_some() {
        return "object".to_string();
    }
    "schema".to_string()
}

fn doc_of(obj: Node, src: &str) -> Option<String> {
    if obj.kind() != "object" {
        return None;
    }
    ["description", "title"]
        .iter()
        .find_map(|k| member(obj, k, src))
        .filter(|d| d.kind() == "string")
        .map(|d| string_value(d, src))
        .filter(|d| !d.trim().is_empty())
}

fn with_doc(signature: &str, doc: Option<&str>) -> String {
    match doc {
        Some(d) => {
            let body: Vec<String> = d.lines().map(|l| format!("  {l}")).collect();
            format!("{signature}\n{}", body.join("\n"))
        }
        None => signature.to_string(),
    }
}

#[derive(Clone, Copy)]
struct Ctx {
    def: usize,
    /// This object's pairs are entries of a container (`properties`, …) with this index into
    /// `CONTAINERS`.
    member_of: Option<usize>,
    /// Set on a pair's children when the pair's key is a container.
    pending: Option<usize>,
    all_of: bool,
    /// Schema nodes enclosing this one (the module not counted).
    depth: usize,
}

fn analyze_json(path: &str, source: &str, limits: &ParseLimits) -> ParsedFile {
    let module_q = strip_ext(path).to_string();
    match walk_json(path, source, limits, module_q.clone()) {
        Some(f) => bounded(f, path, source, module_q, limits),
        None => {
            let mut f = chunk_file(path, source, module_q, limits);
            f.warnings.push(timeout_warning(limits));
            f
        }
    }
}

/// The schema's nodes, or `None` when parsing and walking ran past the timeout.
fn walk_json(
    path: &str,
    source: &str,
    limits: &ParseLimits,
    module_q: String,
) -> Option<ParsedFile> {
    let grammar: tree_sitter::Language = tree_sitter_json::LANGUAGE.into();
    let deadline = deadline(limits);
    let tree = parse(&grammar, source, deadline).ok()?;
    let mut clock = Clock::new(deadline);
    let root = tree.root_node();
    let lines = Lines::new(source);
    let mut walk = SchemaWalk::new(path, &lines, root, module_q);

    let mut cursor = root.walk();
    let root_ctx = Ctx {
        def: 0,
        member_of: None,
        pending: None,
        all_of: false,
        depth: 0,
    };
    let mut stack = vec![root_ctx];
    // The top-level object is the module's schema: its `properties` belong to the module.
    loop {
        if clock.expired() {
            return None;
        }
        let n = cursor.node();
        let ctx = *stack.last().unwrap_or(&root_ctx);
        let mut child = Ctx {
            pending: None,
            member_of: None,
            ..ctx
        };
        match n.kind() {
            "object" => child.member_of = ctx.pending,
            "pair" => walk.pair(n, ctx, &mut child),
            _ => {}
        }
        // The top-level object's pairs sit directly in `document`/`object`, not under a
        // container; `member_of` stays None for them.
        if cursor.goto_first_child() {
            stack.push(child);
            continue;
        }
        let mut done = false;
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                done = true;
                break;
            }
            stack.pop();
        }
        if done {
            break;
        }
    }
    Some(walk.finish(root))
}

/// The state of one walk over a schema: the nodes so far and their JSON pointers.
struct SchemaWalk<'a> {
    src: &'a str,
    lines: &'a Lines<'a>,
    file: ParsedFile,
    /// The JSON pointer of each node in `file.nodes`.
    pointers: Vec<String>,
    seen_refs: HashSet<(usize, String, RefKind)>,
    seen_imports: HashSet<String>,
    /// Entries not made nodes because they are nested deeper than `MAX_DEF_DEPTH`.
    folded: usize,
}

impl<'a> SchemaWalk<'a> {
    /// Starts with the module node: the schema's title (or `$id`) signs it, its description
    /// is its doc.
    fn new(path: &str, lines: &'a Lines<'a>, root: Node, module_q: String) -> Self {
        let source = lines.src;
        let top = root.named_child(0).filter(|n| n.kind() == "object");
        let title = top
            .and_then(|t| member(t, "title", source).or_else(|| member(t, "$id", source)))
            .filter(|t| t.kind() == "string")
            .map(|t| string_value(t, source));
        let signature = match &title {
            Some(t) => format!("{path}: {t}"),
            None => path.to_string(),
        };
        let mdoc = top
            .and_then(|t| member(t, "description", source))
            .map(|d| string_value(d, source));
        let mut file = ParsedFile::default();
        file.nodes.push(module_node(
            lines,
            path,
            module_q.clone(),
            signature.clone(),
            mdoc.clone(),
            with_doc(&signature, mdoc.as_deref()),
            String::new(),
        ));
        SchemaWalk {
            src: source,
            lines,
            file,
            pointers: vec![clean_name(format!("{module_q}#"))],
            seen_refs: HashSet::new(),
            seen_imports: HashSet::new(),
            folded: 0,
        }
    }

    /// A pair is an entry of a container (a node), a container key, or a `$ref`.
    fn pair(&mut self, n: Node, ctx: Ctx, child: &mut Ctx) {
        let key = n
            .child_by_field_name("key")
            .map(|k| string_value(k, self.src));
        let value = n.child_by_field_name("value");
        if let (Some(_), Some(_), Some(_)) = (&key, value, ctx.member_of)
            && ctx.depth >= MAX_DEF_DEPTH
        {
            // Too deep: the entry stays part of its enclosing schema node.
            self.folded += 1;
        } else if let (Some(key), Some(value), Some(c)) = (&key, value, ctx.member_of) {
            self.entry(n, key, value, CONTAINERS[c], ctx, child);
        } else if let Some(key) = &key {
            child.pending = CONTAINERS.iter().position(|c| c == key);
            if key == "allOf" {
                child.all_of = true;
            }
            if key == "$ref"
                && let Some(v) = value.filter(|v| v.kind() == "string")
            {
                self.reference(v, ctx);
            }
        }
    }

    /// An entry `key` of the container `container`: a Schema node named by its pointer.
    fn entry(
        &mut self,
        n: Node,
        key: &str,
        value: Node,
        container: &str,
        ctx: Ctx,
        child: &mut Ctx,
    ) {
        let idx = self.file.nodes.len();
        let pointer = clean_name(format!(
            "{}/{}/{}",
            self.pointers[ctx.def],
            container,
            key.replace('~', "~0").replace('/', "~1")
        ));
        let signature = format!("{key}: {}", type_of(value, self.src));
        let doc = doc_of(value, self.src);
        let wd = with_doc(&signature, doc.as_deref());
        self.file.nodes.push(make_node(
            self.lines,
            NodeKind::Schema,
            key.to_string(),
            pointer.clone(),
            Some(ctx.def),
            n.start_byte(),
            n.end_byte(),
            signature,
            doc,
            wd,
            String::new(),
        ));
        self.pointers.push(pointer);
        child.def = idx;
        child.all_of = false;
        child.depth = ctx.depth + 1;
    }

    /// A `$ref` (the string node `v`): a reference to its last pointer segment (a base inside
    /// `allOf`), and an import of the file it names, if any.
    fn reference(&mut self, v: Node, ctx: Ctx) {
        let target = string_value(v, self.src);
        let (file, frag) = target.split_once('#').unwrap_or((&target, ""));
        if !file.is_empty() && !file.contains("://") && self.seen_imports.insert(file.to_string()) {
            self.file.imports.push(ParsedImport {
                module: file.to_string(),
                names: Vec::new(),
            });
        }
        let name = frag.rsplit('/').next().unwrap_or("");
        let kind = if ctx.all_of {
            RefKind::Inherits
        } else {
            RefKind::Call
        };
        if !name.is_empty() && self.seen_refs.insert((ctx.def, name.to_string(), kind)) {
            self.file.refs.push(ParsedRef {
                from: ctx.def,
                name: name.to_string(),
                kind,
            });
        }
    }

    /// Skeletons (signature, doc, then the signatures of direct children, indented) and the
    /// file's warnings.
    fn finish(self, root: Node) -> ParsedFile {
        let mut f = self.file;
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); f.nodes.len()];
        for (i, n) in f.nodes.iter().enumerate().skip(1) {
            if let Some(p) = n.parent {
                children[p].push(i);
            }
        }
        for (i, kids) in children.iter().enumerate() {
            let mut s = f.nodes[i].with_doc.clone();
            for &c in kids {
                s.push_str("\n  ");
                s.push_str(&f.nodes[c].signature);
            }
            f.nodes[i].skeleton = s;
        }
        if root.has_error() {
            f.warnings
                .push("syntax errors; indexed what the parser recovered".to_string());
        }
        if self.folded > 0 {
            f.warnings.push(folded_warning(self.folded));
        }
        f
    }
}

/// The schema reduced to its definitions' and properties' signatures.
pub(crate) fn outline(source: &str, limits: &ParseLimits) -> Option<String> {
    let f = analyze_json("schema.json", source, limits);
    if !f.warnings.is_empty() || f.nodes.len() < 2 {
        return None;
    }
    let depth = |mut i: usize| {
        let mut d = 0;
        while let Some(p) = f.nodes[i].parent {
            d += 1;
            i = p;
        }
        d
    };
    let out: Vec<String> = f
        .nodes
        .iter()
        .enumerate()
        .skip(1)
        .map(|(i, n)| format!("{}{}", "  ".repeat(depth(i) - 1), n.signature))
        .collect();
    Some(out.join("\n"))
}

impl Analyzer for JsonSchema {
    fn language(&self) -> Language {
        Language::JsonSchema
    }

    fn analyze(&self, path: &str, source: &str, limits: &ParseLimits) -> ParsedFile {
        analyze_json(path, source, limits)
    }

    /// `other.json` in a `$ref` resolves against the schema's directory.
    fn resolve_import(
        &self,
        from_path: &str,
        module: &str,
        exists: &dyn Fn(&str) -> bool,
    ) -> Option<String> {
        if module.contains("://") {
            return None;
        }
        first_existing(join(dirname(from_path), module), exists)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::tests::{check_nodes, check_render};

    const SRC: &str = r##"{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "title": "Config",
  "description": "Tool configuration.",
  "definitions": {
    "User": {
      "type": "object",
      "description": "A user.",
      "allOf": [{ "$ref": "#/definitions/Base" }],
      "properties": {
        "id": { "type": ["string", "null"], "description": "Stable id." },
        "role": { "$ref": "common.json#/definitions/Role" }
      }
    },
    "Base": { "type": "object" }
  },
  "properties": {
    "users": { "type": "array", "items": { "$ref": "#/definitions/User" } }
  }
}
"##;

    #[test]
    fn detects_schemas() {
        assert!(looks_like_schema(SRC));
        assert!(looks_like_schema(r#"{"properties": {}}"#));
        assert!(!looks_like_schema(
            r#"{"name": "pkg", "deps": {"properties": 1}}"#
        ));
        assert!(!looks_like_schema(r#"["$schema"]"#));
        assert!(!looks_like_schema(""));
    }

    #[test]
    fn extracts_definitions() {
        check_nodes(
            Language::JsonSchema,
            "schemas/config.json",
            SRC,
            &[
                (NodeKind::Module, "schemas/config", 1, 20),
                (NodeKind::Schema, "schemas/config#/definitions/User", 6, 14),
                (
                    NodeKind::Schema,
                    "schemas/config#/definitions/User/properties/id",
                    11,
                    11,
                ),
                (
                    NodeKind::Schema,
                    "schemas/config#/definitions/User/properties/role",
                    12,
                    12,
                ),
                (NodeKind::Schema, "schemas/config#/definitions/Base", 15, 15),
                (NodeKind::Schema, "schemas/config#/properties/users", 18, 18),
            ],
        );
    }

    #[test]
    fn renders_depths() {
        check_render(
            Language::JsonSchema,
            "schemas/config.json",
            SRC,
            "schemas/config#/definitions/User",
            "User: object",
            "User: object\n  A user.",
            "User: object\n  A user.\n  id: string | null\n  role: $ref common.json#/definitions/Role",
        );
        check_render(
            Language::JsonSchema,
            "schemas/config.json",
            SRC,
            "schemas/config",
            "schemas/config.json: Config",
            "schemas/config.json: Config\n  Tool configuration.",
            "schemas/config.json: Config\n  Tool configuration.\n  User: object\n  Base: object\n  users: array",
        );
    }

    #[test]
    fn refs_and_imports() {
        let f = JsonSchema.analyze("schemas/config.json", SRC, &ParseLimits::default());
        let refs: Vec<(usize, &str, RefKind)> = f
            .refs
            .iter()
            .map(|r| (r.from, r.name.as_str(), r.kind))
            .collect();
        assert_eq!(
            refs,
            vec![
                (1, "Base", RefKind::Inherits),
                (3, "Role", RefKind::Call),
                (5, "User", RefKind::Call),
            ]
        );
        assert_eq!(f.imports.len(), 1);
        assert_eq!(f.imports[0].module, "common.json");
        let exists = |p: &str| p == "schemas/common.json";
        assert_eq!(
            JsonSchema
                .resolve_import("schemas/config.json", "common.json", &exists)
                .as_deref(),
            Some("schemas/common.json")
        );
        assert_eq!(
            outline(SRC, &ParseLimits::default()).as_deref(),
            Some(
                "User: object\n  id: string | null\n  role: $ref common.json#/definitions/Role\nBase: object\nusers: array"
            )
        );
    }
}
