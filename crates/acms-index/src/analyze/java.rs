//! Java: classes, records, interfaces, annotation types, enums, methods and constructors
//! (nested types included), Javadoc, `package` (which prefixes qualified names) and
//! `import` declarations, resolved to `…/a/b/C.java` under the importing file's source root.
//!
//! It does not read build files (Maven/Gradle source sets) or resolve wildcard imports.

use tree_sitter::Node;

use super::common::{file_stem, package_file};
use super::walker::{self, Def, DocStyle, Table, field_text, head_name, named_children, text};
use super::{Analyzer, ParseLimits};
use crate::model::{Language, NodeKind, ParsedFile, ParsedImport};

pub(crate) struct Java;

fn is_javadoc(text: &str) -> bool {
    text.starts_with("/**") && text != "/**/"
}

pub(crate) static TABLE: Table = Table {
    language: Language::Java,
    grammar: |_| tree_sitter_java::LANGUAGE.into(),
    sep: ".",
    comment_prefix: "//",
    braces: true,
    doc_style: DocStyle::Leading(is_javadoc),
    wrappers: &[],
    scopes: &[],
    attrs: &[],
    comments: &["line_comment", "block_comment"],
    body_fields: &["body", "consequence"],
    control: &[
        "if_statement",
        "for_statement",
        "enhanced_for_statement",
        "while_statement",
        "do_statement",
        "try_statement",
        "try_with_resources_statement",
        "catch_clause",
        "finally_clause",
        "switch_expression",
        "switch_block_statement_group",
        "switch_rule",
        "synchronized_statement",
    ],
    jumps: &["return_statement", "throw_statement", "yield_statement"],
    clause_tokens: &["else"],
    imports: &["import_declaration"],
    calls: &["method_invocation", "object_creation_expression"],
    passed: &[],
    type_idents: &["type_identifier"],
    idents: &["identifier"],
    field,
    classify,
    bases,
    import,
    module_names,
    package,
    module_doc: walker::no_module_doc,
    query: None,
};

fn classify<'t>(n: Node<'t>, src: &str, _parent: &str) -> Option<Def<'t>> {
    let kind = match n.kind() {
        "class_declaration" | "record_declaration" => NodeKind::Class,
        "interface_declaration" | "annotation_type_declaration" => NodeKind::Interface,
        "enum_declaration" => NodeKind::Enum,
        "method_declaration" | "constructor_declaration" | "compact_constructor_declaration" => {
            NodeKind::Function
        }
        _ => return None,
    };
    let name = field_text(n, "name", src)?.to_string();
    Some(Def::simple(n, kind, name))
}

/// Fields and interface constants of a type (Java has nothing else at the top level).
fn field(n: Node, in_module: bool) -> bool {
    !in_module && matches!(n.kind(), "field_declaration" | "constant_declaration")
}

fn bases(n: Node, src: &str) -> Vec<String> {
    let mut out = Vec::new();
    for c in named_children(n) {
        let types = match c.kind() {
            "superclass" => named_children(c),
            "super_interfaces" | "extends_interfaces" => named_children(c)
                .into_iter()
                .flat_map(named_children)
                .collect(),
            _ => continue,
        };
        out.extend(types.into_iter().filter_map(|t| head_name(t, src)));
    }
    out
}

fn import(n: Node, src: &str, out: &mut Vec<ParsedImport>) -> bool {
    let t: String = text(n, src)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let t = t.trim_start_matches("import").trim();
    let t = t.strip_prefix("static ").unwrap_or(t);
    let t: String = t.trim_end_matches(';').split_whitespace().collect();
    match t.strip_suffix(".*") {
        Some(module) => out.push(ParsedImport {
            module: module.to_string(),
            names: Vec::new(),
        }),
        None => {
            let name = t.rsplit('.').next().unwrap_or(&t).to_string();
            out.push(ParsedImport {
                module: t.clone(),
                names: vec![name],
            });
        }
    }
    true
}

fn package(n: Node, src: &str) -> Option<String> {
    if n.kind() != "package_declaration" {
        return None;
    }
    named_children(n)
        .into_iter()
        .find(|c| matches!(c.kind(), "scoped_identifier" | "identifier"))
        .map(|c| text(c, src).split_whitespace().collect())
}

/// The module is named `package.File` once the package is known (the walker adds it); top-level
/// types are qualified by the package alone.
fn module_names(path: &str) -> (String, String) {
    (file_stem(path).to_string(), String::new())
}

impl Analyzer for Java {
    fn language(&self) -> Language {
        Language::Java
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
        package_file(from_path, module, &["java"], exists)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::tests::{check_nodes, check_render};
    use crate::model::RefKind;

    const SRC: &str = r#"package com.acme.web;

import java.util.List;
import static com.acme.util.Strings.join;

/**
 * A controller.
 */
@Controller
public class Users extends Base implements Handler, Closeable {
    private final Repo repo;

    public Users(Repo repo) {
        this.repo = repo;
    }

    /** Lists names. */
    @Override
    public List<String> names(int max) {
        if (max < 0) {
            throw new IllegalArgumentException("max");
        } else {
            log(max);
        }
        return repo.findAll(max);
    }

    static class Inner {
        void run() {}
    }
}

interface Handler {
    void handle(Request r);
}
"#;

    #[test]
    fn extracts_nodes() {
        check_nodes(
            Language::Java,
            "src/main/java/com/acme/web/Users.java",
            SRC,
            &[
                (NodeKind::Module, "com.acme.web.Users", 1, 35),
                (NodeKind::Class, "com.acme.web.Users", 6, 31),
                (NodeKind::Method, "com.acme.web.Users.Users", 13, 15),
                (NodeKind::Method, "com.acme.web.Users.names", 17, 26),
                (NodeKind::Class, "com.acme.web.Users.Inner", 28, 30),
                (NodeKind::Method, "com.acme.web.Users.Inner.run", 29, 29),
                (NodeKind::Interface, "com.acme.web.Handler", 33, 35),
                (NodeKind::Method, "com.acme.web.Handler.handle", 34, 34),
            ],
        );
    }

    #[test]
    fn renders_depths() {
        let path = "src/main/java/com/acme/web/Users.java";
        check_render(
            Language::Java,
            path,
            SRC,
            "com.acme.web.Users.names",
            "@Override\npublic List<String> names(int max)",
            "/** Lists names. */\n@Override\npublic List<String> names(int max)",
            "/** Lists names. */\n@Override\npublic List<String> names(int max) {\n    if (max < 0) {\n        throw new IllegalArgumentException(\"max\");\n    } else {\n        ...\n    }\n    return repo.findAll(max);\n}",
        );
        check_render(
            Language::Java,
            path,
            SRC,
            "com.acme.web.Users",
            "@Controller\npublic class Users extends Base implements Handler, Closeable",
            "/**\n * A controller.\n */\n@Controller\npublic class Users extends Base implements Handler, Closeable",
            "/**\n * A controller.\n */\n@Controller\npublic class Users extends Base implements Handler, Closeable {\n    private final Repo repo;\n    public Users(Repo repo) {\n        ...\n    }\n    @Override\n    public List<String> names(int max) {\n        ...\n    }\n    static class Inner {\n        ...\n    }\n}",
        );
    }

    #[test]
    fn refs_imports_and_docs() {
        let f = Java.analyze("Users.java", SRC, &ParseLimits::default());
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
                ("java.util.List", vec!["List"]),
                ("com.acme.util.Strings.join", vec!["join"]),
            ]
        );
        let inherits: Vec<(usize, &str)> = f
            .refs
            .iter()
            .filter(|r| r.kind == RefKind::Inherits)
            .map(|r| (r.from, r.name.as_str()))
            .collect();
        assert_eq!(
            inherits,
            vec![(1, "Base"), (1, "Handler"), (1, "Closeable")]
        );
        assert!(f.refs.iter().any(|r| r.from == 3 && r.name == "findAll"));
        assert!(
            f.refs
                .iter()
                .any(|r| r.from == 3 && r.name == "IllegalArgumentException")
        );
        assert_eq!(f.nodes[1].doc.as_deref(), Some("A controller."));
        assert!(f.warnings.is_empty(), "{:?}", f.warnings);
    }

    #[test]
    fn allman_braces_stay_balanced() {
        let src = "class A\n{\n    int f(int x)\n    {\n        if (x > 0)\n        {\n            return x;\n        }\n        log(x);\n        return 0;\n    }\n}\n";
        check_render(
            Language::Java,
            "A.java",
            src,
            "A.f",
            "int f(int x)",
            "int f(int x)",
            "int f(int x)\n{\n    if (x > 0)\n    {\n        return x;\n    }\n    ...\n    return 0;\n}",
        );
        check_render(
            Language::Java,
            "A.java",
            src,
            "A",
            "class A",
            "class A",
            "class A\n{\n    int f(int x)\n    {\n        ...\n    }\n}",
        );
    }

    fn check_resolve(from: &str, module: &str, files: &[&str], expected: Option<&str>) {
        let exists = |p: &str| files.contains(&p);
        assert_eq!(
            Java.resolve_import(from, module, &exists).as_deref(),
            expected,
            "{from} {module}"
        );
    }

    #[test]
    fn resolves_imports() {
        let files = [
            "src/main/java/com/acme/util/Strings.java",
            "src/main/java/com/acme/web/Users.java",
        ];
        let from = "src/main/java/com/acme/web/Users.java";
        check_resolve(from, "com.acme.util.Strings", &files, Some(files[0]));
        check_resolve(from, "com.acme.util.Strings.join", &files, Some(files[0]));
        check_resolve(from, "java.util.List", &files, None);
    }
}
