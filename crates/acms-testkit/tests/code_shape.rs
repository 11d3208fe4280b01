//! The code's shape, checked on the workspace's own sources (issue 42): no function in a
//! library crate longer than [`MAX_FN_LINES`] unless a `// long: <reason>` comment stands
//! directly above it, and no import circle between the modules of any crate.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

const MAX_FN_LINES: usize = 120;
/// Binaries whose `main`-side code is not library code.
const NOT_LIBRARIES: [&str; 2] = ["acms-cli", "acms-eval"];

fn crates_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// Each crate's name and the parsed files under its `src/`, keyed by module path
/// (`""` for lib.rs/main.rs, `analyze::query` for src/analyze/query.rs).
/// A crate's files by module path: the file, its text and its syntax tree.
type Modules = BTreeMap<String, (PathBuf, String, syn::File)>;

fn crates() -> Vec<(String, Modules)> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(crates_dir())
        .expect("crates directory")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("src").is_dir())
        .collect();
    dirs.sort();
    dirs.into_iter()
        .map(|dir| {
            let src = dir.join("src");
            let mut files = Vec::new();
            rust_files(&src, &mut files);
            let modules = files
                .into_iter()
                .map(|f| {
                    let text = std::fs::read_to_string(&f).expect("readable source");
                    let ast = syn::parse_file(&text)
                        .unwrap_or_else(|e| panic!("{} does not parse: {e}", f.display()));
                    (module_of(&src, &f), (f, text, ast))
                })
                .collect();
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            (name, modules)
        })
        .collect()
}

fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts.join("::")
}

/// Functions (free, inherent, trait) with their first and last line.
#[derive(Default)]
struct Functions {
    found: Vec<(String, usize, usize)>,
}

impl Functions {
    fn add(&mut self, name: &syn::Ident, attrs: &[syn::Attribute], block: &syn::Block) {
        let start = attrs
            .iter()
            .filter(|a| !matches!(a.meta, syn::Meta::NameValue(ref m) if m.path.is_ident("doc")))
            .map(|a| a.pound_token.span.start().line)
            .chain([name.span().start().line])
            .min()
            .unwrap_or(0);
        let end = block.brace_token.span.close().end().line;
        self.found.push((name.to_string(), start, end));
    }
}

impl<'ast> Visit<'ast> for Functions {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.add(&f.sig.ident, &f.attrs, &f.block);
        syn::visit::visit_item_fn(self, f);
    }
    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.add(&f.sig.ident, &f.attrs, &f.block);
        syn::visit::visit_impl_item_fn(self, f);
    }
    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default {
            self.add(&f.sig.ident, &f.attrs, block);
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

/// Whether a `// long:` comment sits in the comment and attribute lines directly above `line`
/// (1-based), i.e. above the function's doc comment and attributes.
fn has_long_reason(text: &str, line: usize) -> bool {
    let lines: Vec<&str> = text.lines().collect();
    lines[..line.saturating_sub(1)]
        .iter()
        .rev()
        .map(|l| l.trim())
        .take_while(|l| l.starts_with("//") || l.starts_with("#["))
        .any(|l| l.starts_with("// long:"))
}

#[test]
fn no_long_function_without_a_reason() {
    let mut long = Vec::new();
    for (name, modules) in crates() {
        if NOT_LIBRARIES.contains(&name.as_str()) {
            continue;
        }
        for (path, text, ast) in modules.values() {
            let mut fns = Functions::default();
            fns.visit_file(ast);
            for (f, start, end) in fns.found {
                let lines = end + 1 - start;
                if lines > MAX_FN_LINES && !has_long_reason(text, start) {
                    let shown = path.strip_prefix(crates_dir()).unwrap_or(path);
                    long.push(format!(
                        "{}:{start} `{f}` is {lines} lines",
                        shown.display()
                    ));
                }
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_FN_LINES} lines without a `// long: <reason>` comment above:\n{}",
        long.join("\n")
    );
}

/// The paths a module's code names (`use` trees and expression/type paths), outside
/// `#[cfg(test)]` modules, as segment lists.
#[derive(Default)]
struct Paths {
    found: Vec<Vec<String>>,
}

impl Paths {
    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => self.push_with(prefix, &n.ident),
            syn::UseTree::Rename(r) => self.push_with(prefix, &r.ident),
            syn::UseTree::Glob(_) => self.found.push(prefix.clone()),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }

    fn push_with(&mut self, prefix: &[String], last: &syn::Ident) {
        let mut p = prefix.to_vec();
        if last != "self" {
            p.push(last.to_string());
        }
        self.found.push(p);
    }
}

fn is_test_module(m: &syn::ItemMod) -> bool {
    m.attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta
                .require_list()
                .is_ok_and(|l| l.tokens.to_string().contains("test"))
    })
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_test_module(m) {
            syn::visit::visit_item_mod(self, m);
        }
    }
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &u.tree);
    }
    fn visit_path(&mut self, p: &'ast syn::Path) {
        self.found
            .push(p.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, p);
    }
}

/// `pub use module::Name` items of the crate root: `Name` → `module`, so `crate::Name`
/// counts as a use of the module that defines it.
fn root_reexports(root: Option<&syn::File>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Some(root) = root else {
        return out;
    };
    for item in &root.items {
        if let syn::Item::Use(u) = item {
            let mut paths = Paths::default();
            paths.use_tree(&mut Vec::new(), &u.tree);
            for p in paths.found {
                if p.len() >= 2 && p[0] != "crate" && p[0] != "std" {
                    out.insert(p[p.len() - 1].clone(), p[0].clone());
                }
            }
        }
    }
    out
}

/// The module of `modules` a `crate::`/`super::` path names, from inside module `from`.
fn target_module(
    modules: &BTreeSet<String>,
    reexports: &BTreeMap<String, String>,
    from: &str,
    path: &[String],
) -> Option<String> {
    let mut base: Vec<String> = if from.is_empty() {
        Vec::new()
    } else {
        from.split("::").map(str::to_string).collect()
    };
    let rest: &[String] = match path.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            &path[1..]
        }
        Some("super") => {
            let mut rest = path;
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
            rest
        }
        _ => return None,
    };
    // A re-export may name another crate (`pub use acms_core::StrategyId`): not a module here.
    let reexported = |name: &String| {
        reexports
            .get(name)
            .filter(|m| modules.contains(*m))
            .cloned()
    };
    if base.is_empty() && rest.len() == 1 {
        return reexported(&rest[0]);
    }
    let mut full = base;
    full.extend(rest.iter().cloned());
    (1..=full.len())
        .rev()
        .map(|k| full[..k].join("::"))
        .find(|m| modules.contains(m))
        .or_else(|| rest.first().and_then(reexported))
}

/// Module → the modules it names, each with one path that names it (for the message).
type Graph = BTreeMap<String, BTreeMap<String, String>>;

fn circles(graph: &Graph) -> Vec<Vec<String>> {
    // Tarjan's strongly connected components; a component of two or more is a circle.
    struct State<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        for w in s.graph[v].keys() {
            if !s.index.contains_key(w.as_str()) {
                visit(s, w);
                let lw = s.low[w.as_str()];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.stack.contains(&w.as_str()) {
                let iw = s.index[w.as_str()];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// The crate's module graph: module → the modules its non-test code names. The crate root
/// (lib.rs) is left out: it only declares and re-exports.
fn module_graph(modules: &Modules) -> Graph {
    let names: BTreeSet<String> = modules.keys().cloned().collect();
    let reexports = root_reexports(modules.get("").map(|(_, _, ast)| ast));
    let mut graph = BTreeMap::new();
    for (m, (_, _, ast)) in modules {
        if m.is_empty() {
            continue;
        }
        let mut paths = Paths::default();
        paths.visit_file(ast);
        let mut targets = BTreeMap::new();
        for p in &paths.found {
            let Some(t) = target_module(&names, &reexports, m, p) else {
                continue;
            };
            if !t.is_empty() && t != *m && !m.starts_with(&format!("{t}::")) {
                targets.entry(t).or_insert_with(|| p.join("::"));
            }
        }
        graph.insert(m.clone(), targets);
    }
    graph
}

#[test]
fn modules_form_a_dag_in_every_crate() {
    let mut found = Vec::new();
    for (name, modules) in crates() {
        let graph = module_graph(&modules);
        for circle in circles(&graph) {
            let edges: Vec<String> = circle
                .iter()
                .flat_map(|a| {
                    graph[a]
                        .iter()
                        .filter(|(b, _)| circle.contains(b))
                        .map(move |(b, via)| format!("    {a} → {b} (`{via}`)"))
                })
                .collect();
            found.push(format!(
                "{name}: {}\n{}",
                circle.join(", "),
                edges.join("\n")
            ));
        }
    }
    assert!(
        found.is_empty(),
        "modules that import each other (move the shared piece down):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_circle_check_finds_a_circle() {
    let edge = |from: &str, to: &str| {
        (
            from.to_string(),
            BTreeMap::from([(to.to_string(), format!("crate::{to}"))]),
        )
    };
    let graph = BTreeMap::from([
        edge("a", "b"),
        edge("b", "c"),
        edge("c", "a"),
        edge("d", "a"),
    ]);
    assert_eq!(circles(&graph), vec![vec!["a", "b", "c"]]);
    let text = "fn x() {}\n// long: one flat match\n/// Doc.\n#[inline]\nfn y() {}\n";
    assert!(has_long_reason(text, 4));
    assert!(!has_long_reason(text, 1));
}
