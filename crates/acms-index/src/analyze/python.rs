//! Python: classes, functions and methods (decorated and async included), module-level
//! constants, docstrings,
//! `import` / `from … import` statements, and resolution of dotted and relative imports to
//! `a/b.py` or `a/b/__init__.py`.
//!
//! The language is data: a table row here and a query (`languages/python.scm`); walking and
//! rendering are shared (`walker`). Import resolution does not follow `sys.path` tricks or
//! installed packages.

use super::common::{dirname, first_existing, join, strip_ext};
use super::languages;
use super::query::QuerySpec;
use super::walker::{self, DocStyle, Table};
use super::{Analyzer, ParseLimits};
use crate::model::{Language, ParsedFile};

pub(crate) struct Python;

static QUERY: QuerySpec = QuerySpec::new(include_str!("languages/python.scm"));

pub(crate) static TABLE: Table = Table {
    language: Language::Python,
    grammar: |_| tree_sitter_python::LANGUAGE.into(),
    comment_prefix: "#",
    braces: false,
    doc_style: DocStyle::Docstring,
    control: &[
        "if_statement",
        "elif_clause",
        "else_clause",
        "for_statement",
        "while_statement",
        "try_statement",
        "except_clause",
        "except_group_clause",
        "finally_clause",
        "with_statement",
        "match_statement",
        "case_clause",
    ],
    jumps: &["return_statement", "raise_statement", "yield"],
    calls: &["call"],
    passed: &[("attribute", "attribute")],
    idents: &["identifier"],
    module_names,
    module_doc: walker::python_module_doc,
    query: Some(&QUERY),
    ..languages::BASE
};

/// `pkg.sub.mod` for `pkg/sub/mod.py` (also under `src/`), `pkg` for `pkg/__init__.py`.
fn module_names(path: &str) -> (String, String) {
    let p = strip_ext(path);
    let p = p.strip_prefix("src/").unwrap_or(p);
    let p = p.strip_suffix("/__init__").unwrap_or(p);
    let q = p.replace('/', ".");
    (q.clone(), q)
}

impl Analyzer for Python {
    fn language(&self) -> Language {
        Language::Python
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
        let dots = module.chars().take_while(|c| *c == '.').count();
        let rel = module[dots..].replace('.', "/");
        let roots: Vec<String> = if dots > 0 {
            // One dot is the importing file's package; each further dot goes up one level.
            let mut d = dirname(from_path).to_string();
            for _ in 1..dots {
                if d.is_empty() {
                    return None;
                }
                d = dirname(&d).to_string();
            }
            vec![d]
        } else {
            // Absolute imports: the repo root, `src/`, then every directory above the
            // importing file (its top package may sit in a subdirectory of the repo).
            let mut roots = vec![String::new(), "src".to_string()];
            let mut d = dirname(from_path);
            let mut ups = Vec::new();
            while !d.is_empty() {
                ups.push(d.to_string());
                d = dirname(d);
            }
            roots.extend(ups.into_iter().rev());
            roots
        };
        let candidates = roots.iter().flat_map(|root| {
            let files: Vec<String> = if rel.is_empty() {
                vec!["__init__.py".to_string()]
            } else {
                vec![
                    format!("{rel}.py"),
                    format!("{rel}/__init__.py"),
                    format!("{rel}.pyi"),
                ]
            };
            files.into_iter().filter_map(move |f| join(root, &f))
        });
        first_existing(candidates, exists)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::tests::{check_nodes, check_render, check_resolve};
    use crate::model::{NodeKind, ParsedImport};

    const SRC: &str = r#""""Flask-like app module."""
import os
from ..util import helper, other as o

class App(Base, metaclass=Meta):
    """An app.

    Holds routes.
    """
    name: str = "app"

    @route("/")
    async def handle(self, req) -> int:
        """Handle a request."""
        if req.ok:
            return self.respond(req)
        elif req.bad:
            raise ValueError("bad")
        for x in req.items:
            print(x)
        return 0

    def _inner(self):
        def nested():
            pass
        return nested

def top(a, b=1):
    return helper(a) + Config.value
"#;

    #[test]
    fn extracts_nodes() {
        check_nodes(
            Language::Python,
            "pkg/app.py",
            SRC,
            &[
                (NodeKind::Module, "pkg.app", 1, 29),
                (NodeKind::Class, "pkg.app.App", 5, 26),
                (NodeKind::Method, "pkg.app.App.handle", 12, 21),
                (NodeKind::Method, "pkg.app.App._inner", 23, 26),
                (NodeKind::Function, "pkg.app.App._inner.nested", 24, 25),
                (NodeKind::Function, "pkg.app.top", 28, 29),
            ],
        );
    }

    #[test]
    fn renders_depths() {
        check_render(
            Language::Python,
            "pkg/app.py",
            SRC,
            "pkg.app.App.handle",
            "@route(\"/\")\nasync def handle(self, req) -> int:",
            "@route(\"/\")\nasync def handle(self, req) -> int:\n    \"\"\"Handle a request.\"\"\"",
            "@route(\"/\")\nasync def handle(self, req) -> int:\n    \"\"\"Handle a request.\"\"\"\n    if req.ok:\n        return self.respond(req)\n    elif req.bad:\n        raise ValueError(\"bad\")\n    for x in req.items:\n        ...\n    return 0",
        );
        check_render(
            Language::Python,
            "pkg/app.py",
            SRC,
            "pkg.app.App",
            "class App(Base, metaclass=Meta):",
            "class App(Base, metaclass=Meta):\n    \"\"\"An app.\n\n    Holds routes.\n    \"\"\"",
            "class App(Base, metaclass=Meta):\n    \"\"\"An app.\n\n    Holds routes.\n    \"\"\"\n    name: str = \"app\"\n    @route(\"/\")\n    async def handle(self, req) -> int:\n        ...\n    def _inner(self):\n        ...",
        );
        check_render(
            Language::Python,
            "pkg/app.py",
            SRC,
            "pkg.app",
            "# pkg/app.py",
            "# pkg/app.py\n\"\"\"Flask-like app module.\"\"\"",
            "\"\"\"Flask-like app module.\"\"\"\nimport os\nfrom ..util import helper, other as o\nclass App(Base, metaclass=Meta):\n    ...\ndef top(a, b=1):\n    ...",
        );
    }

    #[test]
    fn module_level_values_are_constants() {
        let src = "\"\"\"Settings.\"\"\"\n__all__ = [\"App\"]\nT = TypeVar(\"T\")\nx, y = 1, 2\nLIMIT: int = 10\nDEFAULT_LOG_FORMAT = \"%(levelname)s %(message)s\"\nKNOWN = {\n    \"sin\": \"Sin\",\n    \"cos\": \"Cos\",\n}\nname: str\n\ndef f():\n    return Limits(LIMIT)\n\nclass C:\n    size = 3\n";
        check_nodes(
            Language::Python,
            "pkg/settings.py",
            src,
            &[
                (NodeKind::Module, "pkg.settings", 1, 17),
                (NodeKind::Constant, "pkg.settings.LIMIT", 5, 5),
                (NodeKind::Constant, "pkg.settings.DEFAULT_LOG_FORMAT", 6, 6),
                (NodeKind::Constant, "pkg.settings.KNOWN", 7, 10),
                (NodeKind::Function, "pkg.settings.f", 13, 14),
                (NodeKind::Class, "pkg.settings.C", 16, 17),
            ],
        );
        // A short value is its own signature; a long table is signed by its first line.
        let short = "LIMIT: int = 10";
        check_render(
            Language::Python,
            "pkg/settings.py",
            src,
            "pkg.settings.LIMIT",
            short,
            short,
            short,
        );
        check_render(
            Language::Python,
            "pkg/settings.py",
            src,
            "pkg.settings.KNOWN",
            "KNOWN =",
            "KNOWN =",
            "KNOWN = {\n    ...",
        );
        // The module's skeleton still lists every module-level line it listed before.
        let f = Python.analyze("pkg/settings.py", src, &ParseLimits::default());
        let skeleton = &f.nodes[0].skeleton;
        for line in [
            "__all__ = [\"App\"]",
            "LIMIT: int = 10",
            "KNOWN = {",
            "x, y = 1, 2",
        ] {
            assert!(skeleton.contains(line), "{line} in {skeleton}");
        }
    }

    #[test]
    fn refs_imports_and_docs() {
        let f = Python.analyze("pkg/app.py", SRC, &ParseLimits::default());
        assert_eq!(
            f.imports,
            vec![
                ParsedImport {
                    module: "os".into(),
                    names: vec![]
                },
                ParsedImport {
                    module: "..util".into(),
                    names: vec!["helper".into(), "other".into()]
                },
            ]
        );
        let refs: Vec<(usize, &str, crate::model::RefKind)> = f
            .refs
            .iter()
            .map(|r| (r.from, r.name.as_str(), r.kind))
            .collect();
        use crate::model::RefKind::{Call, Inherits};
        assert_eq!(
            refs,
            vec![
                (1, "Base", Inherits),
                (1, "Meta", Call),
                (2, "route", Call),
                (2, "respond", Call),
                (2, "ValueError", Call),
                (5, "helper", Call),
                (5, "Config", Call),
            ]
        );
        assert_eq!(f.nodes[1].doc.as_deref(), Some("An app.\n\nHolds routes."));
        assert_eq!(f.nodes[0].doc.as_deref(), Some("Flask-like app module."));
        assert!(f.warnings.is_empty(), "{:?}", f.warnings);
    }

    #[test]
    fn a_base_written_as_a_call_is_a_base_only() {
        let src = "class A(with_metaclass(Meta, Base), mod.Mixin, Generic[T]):\n    pass\n";
        let f = Python.analyze("pkg/a.py", src, &ParseLimits::default());
        let refs: Vec<(&str, crate::model::RefKind)> =
            f.refs.iter().map(|r| (r.name.as_str(), r.kind)).collect();
        use crate::model::RefKind::{Call, Inherits};
        for (name, kind) in [
            ("with_metaclass", Inherits),
            ("Mixin", Inherits),
            ("Generic", Inherits),
            ("Meta", Call),
            ("Base", Call),
        ] {
            assert_eq!(
                refs.iter().filter(|r| r.0 == name).collect::<Vec<_>>(),
                vec![&(name, kind)],
                "{refs:?}"
            );
        }
    }

    #[test]
    fn resolves_imports() {
        let files = [
            "pkg/__init__.py",
            "pkg/util.py",
            "pkg/sub/mod.py",
            "src/lib/x/__init__.py",
            "app/pkg2/a.py",
        ];
        check_resolve(
            Language::Python,
            "pkg/sub/mod.py",
            "..util",
            &files,
            Some("pkg/util.py"),
        );
        check_resolve(
            Language::Python,
            "pkg/sub/mod.py",
            "pkg.util",
            &files,
            Some("pkg/util.py"),
        );
        check_resolve(Language::Python, "pkg/sub/mod.py", ".", &files, None);
        check_resolve(
            Language::Python,
            "pkg/util.py",
            ".",
            &files,
            Some("pkg/__init__.py"),
        );
        check_resolve(Language::Python, "pkg/util.py", "...x", &files, None);
        check_resolve(
            Language::Python,
            "tests/t.py",
            "lib.x",
            &files,
            Some("src/lib/x/__init__.py"),
        );
        check_resolve(
            Language::Python,
            "app/pkg2/b.py",
            "pkg2.a",
            &files,
            Some("app/pkg2/a.py"),
        );
        check_resolve(Language::Python, "pkg/util.py", "os", &files, None);
    }
}
