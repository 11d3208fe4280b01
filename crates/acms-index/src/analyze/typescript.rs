//! TypeScript, TSX and JavaScript (parsed with the TSX grammar, a superset that accepts JSX):
//! classes, interfaces, enums, type aliases, functions, methods, arrow functions and function
//! expressions assigned to `const`/`let`/class fields, `export default`, JSDoc, ES imports,
//! `export … from`, `require()` and dynamic `import()`, and resolution of relative specifiers.
//!
//! The language is data where a query can say it (`languages/typescript.scm`, one query for
//! the two grammars) and hand-written where it cannot ([`classify`]).
//! Modules are named by their path (`src/app` for `src/app.ts`).
//!
//! It does not read `tsconfig.json` path mappings or `node_modules`; bare specifiers other
//! than the common `@/` and `~/` aliases for `src/` stay unresolved.

use tree_sitter::Node;

use super::common::{dirname, first_existing, join, strip_ext};
use super::languages;
use super::query::QuerySpec;
use super::syntax::{Def, field_text, head_name, is_identifier, named_children, text};
use super::walker::{self, DocStyle, Table};
use super::{Analyzer, ParseLimits};
use crate::model::{Language, NodeKind, ParsedFile, ParsedImport};

/// One analyzer per language flavour, sharing the resolver.
pub(crate) struct TypeScript {
    language: Language,
}

pub(crate) static TYPESCRIPT: TypeScript = TypeScript {
    language: Language::TypeScript,
};
pub(crate) static TSX: TypeScript = TypeScript {
    language: Language::Tsx,
};
pub(crate) static JAVASCRIPT: TypeScript = TypeScript {
    language: Language::JavaScript,
};

fn grammar(language: Language) -> tree_sitter::Language {
    match language {
        // Plain TypeScript needs its own grammar: `<T>x` casts are JSX to the TSX grammar.
        Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
        _ => tree_sitter_typescript::LANGUAGE_TSX.into(),
    }
}

fn is_jsdoc(text: &str) -> bool {
    text.starts_with("/**") && text != "/**/"
}

/// One query, compiled once per grammar (JavaScript shares TSX's).
static QUERY_TS: QuerySpec = QuerySpec::new(include_str!("languages/typescript.scm"));
static QUERY_TSX: QuerySpec = QuerySpec::new(include_str!("languages/typescript.scm"));

const fn table(language: Language, query: &'static QuerySpec) -> Table {
    Table {
        language,
        grammar,
        doc_style: DocStyle::Leading(is_jsdoc),
        wrappers: &[
            "export_statement",
            "lexical_declaration",
            "variable_declaration",
            "ambient_declaration",
        ],
        // `namespace X {}`, `declare module "pkg" {}` (named by a string).
        scopes: &["internal_module", "module"],
        attrs: &["decorator"],
        control: &[
            "if_statement",
            "else_clause",
            "for_statement",
            "for_in_statement",
            "while_statement",
            "do_statement",
            "try_statement",
            "catch_clause",
            "finally_clause",
            "switch_statement",
            "switch_case",
            "switch_default",
        ],
        jumps: &["return_statement", "throw_statement", "yield_expression"],
        calls: &["call_expression", "new_expression"],
        passed: &[("member_expression", "property")],
        type_idents: &["type_identifier"],
        idents: &["identifier"],
        imports: &["call_expression"],
        classify,
        import,
        query: Some(query),
        ..languages::BASE
    }
}

pub(crate) static TABLE_TS: Table = table(Language::TypeScript, &QUERY_TS);
pub(crate) static TABLE_TSX: Table = table(Language::Tsx, &QUERY_TSX);
pub(crate) static TABLE_JS: Table = table(Language::JavaScript, &QUERY_TSX);

/// Test-framework calls whose callback is indexed as a function named by the title.
const TEST_BLOCKS: &[&str] = &["describe", "it", "test", "suite", "context", "bench"];

const FUNCTION_VALUES: &[&str] = &[
    "arrow_function",
    "function_expression",
    "generator_function",
];

/// The definitions the query cannot describe (`languages/typescript.scm` names the rest): a
/// function held by a constant, a field, an assignment or `export default` through any
/// nesting of casts, guards and wrapper calls ([`function_value`]); test blocks named by
/// their title's text; bodiless declarations, which are no node when an overload or the
/// implementation follows; and a named function passed to a call (a query pattern rooted at
/// every call costs more than this match).
fn classify<'t>(n: Node<'t>, src: &str, parent: &str) -> Option<Def<'t>> {
    match n.kind() {
        // `const f = () => {}`, `handle = async (e) => {}` as a class field.
        "variable_declarator" | "public_field_definition" => {
            let value = function_value(n.child_by_field_name("value")?)?;
            let name = field_text(n, "name", src)
                .or_else(|| field_text(n, "property", src))?
                .to_string();
            Some(Def::simple(value, NodeKind::Function, name))
        }
        // Declarations without a body (`.d.ts` files, `declare class`, abstract methods). Of a
        // run of overloads only the last is a node, and none when an implementation follows.
        "function_signature" | "method_signature" | "abstract_method_signature"
            if !matches!(parent, "interface_body" | "object_type") =>
        {
            if overloaded(n, src, parent) {
                return None;
            }
            Some(Def {
                kind: NodeKind::Function,
                name: field_text(n, "name", src)?.to_string(),
                body_owner: n,
                body: None,
            })
        }
        // `export default function () {}`, or a function behind a guard or a wrapper call
        // (`export default isSupported && (async (config) => {…})`: [`function_value`]),
        // named by itself or `default`.
        _ if parent == "export_statement" => {
            let value = function_value(n)?;
            let name = field_text(value, "name", src).unwrap_or("default");
            Some(Def::simple(value, NodeKind::Function, name.to_string()))
        }
        // `memo(function Button() {})`: a named function passed to a wrapper.
        "function_expression" if parent == "arguments" => Some(Def::simple(
            n,
            NodeKind::Function,
            field_text(n, "name", src)?.to_string(),
        )),
        // Test blocks: `describe("parser", () => {…})`, `it("parses", async () => {…})`.
        "call_expression" => test_block(n, src),
        // CommonJS: `module.exports.run = function () {}`, `exports.run = () => {}`.
        "assignment_expression" => {
            let value = function_value(n.child_by_field_name("right")?)?;
            let name = assigned_name(n.child_by_field_name("left")?, src)?;
            Some(Def::simple(value, NodeKind::Function, name))
        }
        _ => None,
    }
}

/// Whether the bodiless declaration `n` is followed by another declaration of its name (a
/// further overload or the implementation), directly or as the next `export` statement.
fn overloaded(n: Node, src: &str, parent: &str) -> bool {
    let next = n.next_named_sibling();
    next.is_some_and(|s| {
        matches!(
            s.kind(),
            "function_declaration"
                | "function_signature"
                | "method_definition"
                | "method_signature"
                | "abstract_method_signature"
        ) && field_text(s, "name", src) == field_text(n, "name", src)
    }) || (parent == "export_statement"
        && n.parent()
            .and_then(|p| p.next_named_sibling())
            .is_some_and(|s| {
                s.kind() == "export_statement"
                    && s.child_by_field_name("declaration").is_some_and(|d| {
                        matches!(d.kind(), "function_declaration" | "function_signature")
                            && field_text(d, "name", src) == field_text(n, "name", src)
                    })
            }))
}

/// A test block (`describe("parser", () => {…})`): a function named by its title, or by the
/// framework call when the title is empty.
fn test_block<'t>(n: Node<'t>, src: &str) -> Option<Def<'t>> {
    let f = n.child_by_field_name("function")?;
    if !TEST_BLOCKS.contains(&text(f, src)) {
        return None;
    }
    let args = named_children(n.child_by_field_name("arguments")?);
    let title = args
        .first()
        .filter(|a| matches!(a.kind(), "string" | "template_string"))?;
    let body_fn = args
        .get(1)
        .filter(|a| FUNCTION_VALUES.contains(&a.kind()))?;
    let title = string_value(*title, src);
    let name = if title.is_empty() {
        text(f, src).to_string()
    } else {
        title
    };
    Some(Def::simple(*body_fn, NodeKind::Function, name))
}

/// The function a value is, through what wraps it: parentheses and casts (`((props) => {…})
/// as any`, hono's `ErrorBoundary`; `(async () => {…}) satisfies Job`; `handler!`), a guard
/// (`isFetchSupported && (async (config) => {…})`, axios' fetch adapter; `a || function () {}`)
/// and a call whose one function argument is anonymous (`asyncHandler(async (req, res) =>
/// {…})`, `useCallback(() => {…}, [deps])`; a named one is a node of its own). Without this the
/// wrapper hid the function and the constant was no node: the code an agent has to change was
/// visible only as its module's outline.
fn function_value(value: Node) -> Option<Node> {
    let mut value = value;
    loop {
        value = match value.kind() {
            "parenthesized_expression"
            | "as_expression"
            | "satisfies_expression"
            | "non_null_expression" => value.named_child(0)?,
            "binary_expression"
                if value
                    .child_by_field_name("operator")
                    .is_some_and(|o| matches!(o.kind(), "&&" | "||" | "??")) =>
            {
                value.child_by_field_name("right")?
            }
            "call_expression" => {
                let args = value.child_by_field_name("arguments")?;
                let mut functions = named_children(args)
                    .into_iter()
                    .filter(|a| FUNCTION_VALUES.contains(&a.kind()));
                match (functions.next(), functions.next()) {
                    (Some(f), None) if f.child_by_field_name("name").is_none() => f,
                    _ => return None,
                }
            }
            k => return FUNCTION_VALUES.contains(&k).then_some(value),
        };
    }
}

/// The name an assignment gives its function: `exports.run` and `obj["run"]` give `run`; a
/// computed key (`(res as any)[key] = …`) gives none, not the name of the object it is set on.
fn assigned_name(left: Node, src: &str) -> Option<String> {
    if left.kind() != "subscript_expression" {
        return head_name(left, src);
    }
    let index = left.child_by_field_name("index")?;
    let key = (index.kind() == "string").then(|| string_value(index, src))?;
    is_identifier(&key).then_some(key)
}

/// `require("./x")` and `import("./x")`: the imports a call states (a query pattern rooted at
/// every call would cost more than this check).
fn import(n: Node, src: &str, out: &mut Vec<ParsedImport>) -> bool {
    let Some(f) = n.child_by_field_name("function") else {
        return false;
    };
    if !(f.kind() == "import" || (f.kind() == "identifier" && text(f, src) == "require")) {
        return false;
    }
    let arg = n
        .child_by_field_name("arguments")
        .and_then(|a| a.named_child(0))
        .filter(|a| a.kind() == "string");
    let Some(arg) = arg else {
        return false;
    };
    out.push(ParsedImport {
        module: string_value(arg, src),
        names: Vec::new(),
    });
    true
}

/// The text of a string literal without its quotes.
fn string_value(n: Node, src: &str) -> String {
    let t = text(n, src);
    t.trim_matches(|c| c == '"' || c == '\'' || c == '`')
        .to_string()
}

impl TypeScript {
    fn table(&self) -> &'static Table {
        match self.language {
            Language::TypeScript => &TABLE_TS,
            Language::Tsx => &TABLE_TSX,
            _ => &TABLE_JS,
        }
    }
}

const EXTENSIONS: &[&str] = &["ts", "tsx", "d.ts", "js", "jsx", "mjs", "cjs", "mts", "cts"];

impl Analyzer for TypeScript {
    fn language(&self) -> Language {
        self.language
    }

    fn analyze(&self, path: &str, source: &str, limits: &ParseLimits) -> ParsedFile {
        walker::analyze(self.table(), path, source, limits)
    }

    fn resolve_import(
        &self,
        from_path: &str,
        module: &str,
        exists: &dyn Fn(&str) -> bool,
    ) -> Option<String> {
        let bases: Vec<String> = if module.starts_with("./")
            || module.starts_with("../")
            || module == "."
            || module == ".."
        {
            vec![join(dirname(from_path), module)?]
        } else if let Some(rest) = module
            .strip_prefix("@/")
            .or_else(|| module.strip_prefix("~/"))
        {
            vec![join("src", rest)?]
        } else if module.contains('/') && !module.starts_with('@') {
            // `components/Button` under a `baseUrl` of `src/` or the root; a package path
            // (`lodash/fp`) has no such file in the repo and stays unresolved.
            vec![join("src", module)?, join("", module)?]
        } else {
            return None;
        };
        first_existing(bases.iter().flat_map(|b| candidates(b)), exists)
    }
}

/// The files a specifier resolved to `base` may name, in the order bundlers try them.
fn candidates(base: &str) -> Vec<String> {
    let mut out = vec![base.to_string()];
    // ESM TypeScript imports `./x.js` for the source file `./x.ts`.
    let stem = strip_ext(base);
    if stem != base {
        out.extend(EXTENSIONS.iter().map(|e| format!("{stem}.{e}")));
    }
    out.extend(EXTENSIONS.iter().map(|e| format!("{base}.{e}")));
    out.extend(EXTENSIONS.iter().map(|e| format!("{base}/index.{e}")));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::tests::{check_nodes, check_render, check_resolve};
    use crate::model::RefKind;

    const SRC: &str = r#"import React, { useState as useS } from "react";
import * as api from './api';
export { a, b as c } from "./mod";

/** A greeter. */
@Component({ tag: "x" })
export class Greeter extends Base<T> implements Greets {
  name: string = "x";
  handle = async (e: Event): Promise<void> => {
    if (e.ok) {
      throw new HttpError(e);
    } else {
      api.send(e);
    }
  };

  /**
   * Says hello.
   */
  greet(who: string): string {
    return `hi ${who}`;
  }
}

export interface Greets {
  greet(who: string): string;
}

export type Id = string | number;

export const add = (a: number, b: number): number => a + b;

export default function () {
  const util = require("./util");
  return util.run();
}
"#;

    #[test]
    fn extracts_nodes() {
        check_nodes(
            Language::TypeScript,
            "src/greeter.ts",
            SRC,
            &[
                (NodeKind::Module, "src/greeter", 1, 36),
                (NodeKind::Class, "src/greeter.Greeter", 5, 23),
                (NodeKind::Method, "src/greeter.Greeter.handle", 9, 15),
                (NodeKind::Method, "src/greeter.Greeter.greet", 17, 22),
                (NodeKind::Interface, "src/greeter.Greets", 25, 27),
                (NodeKind::TypeAlias, "src/greeter.Id", 29, 29),
                (NodeKind::Function, "src/greeter.add", 31, 31),
                (NodeKind::Function, "src/greeter.default", 33, 36),
            ],
        );
    }

    #[test]
    fn renders_depths() {
        check_render(
            Language::TypeScript,
            "src/greeter.ts",
            SRC,
            "src/greeter.Greeter",
            "@Component({ tag: \"x\" })\nexport class Greeter extends Base<T> implements Greets",
            "/** A greeter. */\n@Component({ tag: \"x\" })\nexport class Greeter extends Base<T> implements Greets",
            "/** A greeter. */\n@Component({ tag: \"x\" })\nexport class Greeter extends Base<T> implements Greets {\n  name: string = \"x\";\n  handle = async (e: Event): Promise<void> => {\n    ...\n  };\n  greet(who: string): string {\n    ...\n  }\n}",
        );
        check_render(
            Language::TypeScript,
            "src/greeter.ts",
            SRC,
            "src/greeter.Greeter.handle",
            "handle = async (e: Event): Promise<void> =>",
            "handle = async (e: Event): Promise<void> =>",
            "handle = async (e: Event): Promise<void> => {\n  if (e.ok) {\n    throw new HttpError(e);\n  } else {\n    ...\n  }\n}",
        );
        check_render(
            Language::TypeScript,
            "src/greeter.ts",
            SRC,
            "src/greeter",
            "// src/greeter.ts",
            "// src/greeter.ts",
            "import React, { useState as useS } from \"react\";\nimport * as api from './api';\nexport { a, b as c } from \"./mod\";\n@Component({ tag: \"x\" })\nexport class Greeter extends Base<T> implements Greets {\n  ...\n}\nexport interface Greets {\n  ...\n}\nexport type Id = string | number;\nexport const add = (a: number, b: number): number => a + b;\nexport default function () {\n  ...\n}",
        );
        check_render(
            Language::TypeScript,
            "src/greeter.ts",
            SRC,
            "src/greeter.add",
            "export const add = (a: number, b: number): number =>",
            "export const add = (a: number, b: number): number =>",
            "export const add = (a: number, b: number): number => a + b;",
        );
    }

    #[test]
    fn refs_imports_and_docs() {
        let f = TYPESCRIPT.analyze("src/greeter.ts", SRC, &ParseLimits::default());
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
                ("react", vec!["React", "useState"]),
                ("./api", vec!["api"]),
                ("./mod", vec!["a", "b"]),
                ("./util", vec![]),
            ]
        );
        let inherits: Vec<&str> = f
            .refs
            .iter()
            .filter(|r| r.kind == RefKind::Inherits)
            .map(|r| r.name.as_str())
            .collect();
        assert_eq!(inherits, vec!["Base", "Greets"]);
        assert!(f.refs.iter().any(|r| r.from == 2 && r.name == "HttpError"));
        assert!(f.refs.iter().any(|r| r.from == 2 && r.name == "send"));
        // A decorator in front of `export` is outside the class declaration: a module use.
        assert!(f.refs.iter().any(|r| r.from == 0 && r.name == "Component"));
        assert!(f.refs.iter().any(|r| r.from == 7 && r.name == "run"));
        assert_eq!(f.nodes[3].doc.as_deref(), Some("Says hello."));
        assert!(f.warnings.is_empty(), "{:?}", f.warnings);
    }

    #[test]
    fn javascript_commonjs_and_object_methods() {
        let src = "const fs = require('fs');\nmodule.exports.read = function (p) {\n  return fs.readFileSync(p);\n};\nexports.write = (p, d) => fs.writeFileSync(p, d);\nconst api = {\n  get(url) { return fetch(url); },\n};\ndeclare module \"pkg\" {\n  function inner(): void;\n  export class Box {}\n}\n";
        check_nodes(
            Language::JavaScript,
            "lib/io.js",
            src,
            &[
                (NodeKind::Module, "lib/io", 1, 12),
                (NodeKind::Function, "lib/io.read", 2, 4),
                (NodeKind::Function, "lib/io.write", 5, 5),
                (NodeKind::Function, "lib/io.get", 7, 7),
                (NodeKind::Function, "lib/io.pkg.inner", 10, 10),
                (NodeKind::Class, "lib/io.pkg.Box", 11, 11),
            ],
        );
        let f = JAVASCRIPT.analyze("lib/io.js", src, &ParseLimits::default());
        assert_eq!(f.imports[0].module, "fs");
        assert_eq!(f.nodes[1].signature, "module.exports.read = function (p)");
    }

    #[test]
    fn functions_behind_casts_are_functions_and_computed_keys_name_none() {
        let src = "export const Boundary = ((props: Props) => {\n  return props.children;\n}) as any;\nconst job = (async () => {}) satisfies Job;\n(res as any)[key] = (err: Error) => err;\nhandlers[\"onError\"] = () => null;\nconst limit = 10 as number;\n";
        check_nodes(
            Language::TypeScript,
            "src/jsx.ts",
            src,
            &[
                (NodeKind::Module, "src/jsx", 1, 7),
                (NodeKind::Function, "src/jsx.Boundary", 1, 3),
                (NodeKind::Function, "src/jsx.job", 4, 4),
                (NodeKind::Function, "src/jsx.onError", 6, 6),
            ],
        );
    }

    #[test]
    fn functions_behind_guards_and_wrappers_are_functions() {
        let src = "export default isFetchSupported && (async (config) => {\n  return config;\n});\nconst handler = asyncHandler(async (req, res) => {\n  res.send(1);\n});\nconst pick = useCallback(() => {\n  go();\n}, [go]);\nconst two = both(() => 1, () => 2);\nexport default supported && function httpAdapter(config) {\n  return 1;\n}\nconst app = express();\nconst fallback = fn || (() => {});\nconst Named = memo(function Inner() {});\n";
        check_nodes(
            Language::JavaScript,
            "lib/a.js",
            src,
            &[
                (NodeKind::Module, "lib/a", 1, 16),
                (NodeKind::Function, "lib/a.default", 1, 3),
                (NodeKind::Function, "lib/a.handler", 4, 6),
                (NodeKind::Function, "lib/a.pick", 7, 9),
                (NodeKind::Function, "lib/a.httpAdapter", 11, 13),
                (NodeKind::Function, "lib/a.fallback", 15, 15),
                (NodeKind::Function, "lib/a.Inner", 16, 16),
            ],
        );
        let f = JAVASCRIPT.analyze("lib/a.js", src, &ParseLimits::default());
        let sigs: Vec<&str> = f.nodes.iter().map(|n| n.signature.as_str()).collect();
        assert_eq!(
            sigs[1], "export default isFetchSupported && (async (config) =>",
            "{sigs:?}"
        );
        assert_eq!(
            sigs[2], "const handler = asyncHandler(async (req, res) =>",
            "{sigs:?}"
        );
    }

    #[test]
    fn declarations_and_overloads() {
        let src = "export declare function parse(s: string): Ast;\nexport function fmt(a: string): string;\nexport function fmt(a: number): string;\nexport function fmt(a: any): string {\n  return String(a);\n}\ndeclare class Lexer {\n  next(): Token;\n}\ninterface Tok {\n  kind(): string;\n}\nexport default memo(function Button() {\n  return null;\n});\n";
        check_nodes(
            Language::TypeScript,
            "types/index.d.ts",
            src,
            &[
                (NodeKind::Module, "types/index.d", 1, 15),
                (NodeKind::Function, "types/index.d.parse", 1, 1),
                (NodeKind::Function, "types/index.d.fmt", 4, 6),
                (NodeKind::Class, "types/index.d.Lexer", 7, 9),
                (NodeKind::Method, "types/index.d.Lexer.next", 8, 8),
                (NodeKind::Interface, "types/index.d.Tok", 10, 12),
                (NodeKind::Function, "types/index.d.Button", 13, 15),
            ],
        );
        check_render(
            Language::TypeScript,
            "types/index.d.ts",
            src,
            "types/index.d.parse",
            "export declare function parse(s: string): Ast;",
            "export declare function parse(s: string): Ast;",
            "export declare function parse(s: string): Ast;",
        );
    }

    #[test]
    fn default_exported_classes_and_type_alias_bodies() {
        let src = "export default class {\n  run() {}\n}\n";
        check_nodes(
            Language::TypeScript,
            "src/a.ts",
            src,
            &[
                (NodeKind::Module, "src/a", 1, 3),
                (NodeKind::Class, "src/a.default", 1, 3),
                (NodeKind::Method, "src/a.default.run", 2, 2),
            ],
        );
        let src = "export default class Store extends Base {\n  n = 1;\n}\ntype Long<T> = {\n  a: T;\n  b: T;\n};\n";
        check_nodes(
            Language::JavaScript,
            "src/b.js",
            src,
            &[
                (NodeKind::Module, "src/b", 1, 7),
                (NodeKind::Class, "src/b.Store", 1, 3),
                (NodeKind::TypeAlias, "src/b.Long", 4, 7),
            ],
        );
        let f = TYPESCRIPT.analyze("src/b.ts", src, &ParseLimits::default());
        assert_eq!(f.nodes[2].signature, "type Long<T> =", "{:?}", f.nodes[2]);
        assert!(
            f.refs
                .iter()
                .any(|r| r.from == 1 && r.name == "Base" && r.kind == RefKind::Inherits)
        );
    }

    #[test]
    fn jsdoc_above_an_assignment_or_a_test_block_is_its_doc() {
        let src = "/**\n * Uses middleware.\n */\napp.use = function use(fn) {\n  return this;\n};\n/** Pure types. */\ndescribe('types', () => {\n  it('infers', () => {});\n});\nconst K = class extends Base {};\n";
        let f = JAVASCRIPT.analyze("lib/app.js", src, &ParseLimits::default());
        let docs: Vec<(&str, Option<&str>)> = f
            .nodes
            .iter()
            .map(|n| (n.name.as_str(), n.doc.as_deref()))
            .collect();
        assert_eq!(
            docs[1..4],
            [
                ("use", Some("Uses middleware.")),
                ("types", Some("Pure types.")),
                ("infers", None)
            ],
            "{docs:?}"
        );
        assert_eq!(f.nodes[1].start_line, 1);
        // A class expression's base is a base of where it is written (here the module: a use).
        assert!(f.refs.iter().any(|r| r.from == 0 && r.name == "Base"));
    }

    #[test]
    fn test_blocks_are_functions() {
        let src = "import { parse } from './parse';\ndescribe('parse', () => {\n  it('reads numbers', async () => {\n    expect(parse('1')).toBe(1);\n  });\n  test(`empty`, function () {});\n});\n";
        check_nodes(
            Language::TypeScript,
            "src/parse.test.ts",
            src,
            &[
                (NodeKind::Module, "src/parse.test", 1, 7),
                (NodeKind::Function, "src/parse.test.parse", 2, 7),
                (
                    NodeKind::Function,
                    "src/parse.test.parse.reads numbers",
                    3,
                    5,
                ),
                (NodeKind::Function, "src/parse.test.parse.empty", 6, 6),
            ],
        );
        check_render(
            Language::TypeScript,
            "src/parse.test.ts",
            src,
            "src/parse.test.parse.reads numbers",
            "it('reads numbers', async () =>",
            "it('reads numbers', async () =>",
            "it('reads numbers', async () => {\n  ...\n})",
        );
        let f = TYPESCRIPT.analyze("src/parse.test.ts", src, &ParseLimits::default());
        assert!(f.refs.iter().any(|r| r.from == 2 && r.name == "parse"));
    }

    #[test]
    fn resolves_imports() {
        let files = ["src/api.ts", "src/ui/index.tsx", "src/util.js", "lib/x.mjs"];
        check_resolve(
            Language::TypeScript,
            "src/app.ts",
            "./api",
            &files,
            Some("src/api.ts"),
        );
        check_resolve(
            Language::TypeScript,
            "src/app.ts",
            "./api.js",
            &files,
            Some("src/api.ts"),
        );
        check_resolve(
            Language::TypeScript,
            "src/app.ts",
            "./ui",
            &files,
            Some("src/ui/index.tsx"),
        );
        check_resolve(
            Language::TypeScript,
            "src/ui/b.ts",
            "../util",
            &files,
            Some("src/util.js"),
        );
        check_resolve(
            Language::TypeScript,
            "src/app.ts",
            "../lib/x.mjs",
            &files,
            Some("lib/x.mjs"),
        );
        check_resolve(
            Language::TypeScript,
            "src/app.ts",
            "@/api",
            &files,
            Some("src/api.ts"),
        );
        check_resolve(Language::TypeScript, "src/app.ts", "react", &files, None);
        check_resolve(
            Language::TypeScript,
            "src/app.ts",
            "ui/index",
            &files,
            Some("src/ui/index.tsx"),
        );
        check_resolve(
            Language::TypeScript,
            "test/a.ts",
            "lib/x.mjs",
            &files,
            Some("lib/x.mjs"),
        );
        check_resolve(
            Language::TypeScript,
            "src/app.ts",
            "lodash/fp",
            &files,
            None,
        );
        check_resolve(
            Language::TypeScript,
            "src/app.ts",
            "@scope/pkg/x",
            &files,
            None,
        );
        check_resolve(Language::TypeScript, "a.ts", "../../x", &files, None);
    }
}
