//! One small repository per query-described language, indexed whole: every definition kind
//! at four depths, and the graph linking a call in one file to the definition it reaches in
//! another the way a reader of that language resolves it (an import, a package directory, a
//! header and its implementation, a namespace).

use acms_core::Depth;
use acms_index::{EdgeKind, NodeKind, NodeRecord};

use super::{index, open, write_repo};

struct Repo {
    language: &'static str,
    files: &'static [(&'static str, &'static str)],
    /// (caller, callee, doc the callee shows at depth 2): the call must resolve.
    call: (&'static str, &'static str, &'static str),
    /// Lowest confidence the call's edge may have: 0.8 means it resolved through an import,
    /// a package directory or a header (a unique name anywhere gives 0.6).
    confidence: f32,
}

const REPOS: &[Repo] = &[
    Repo {
        language: "go",
        files: &[
            ("go.mod", "module github.com/acme/app\n"),
            (
                "internal/store/store.go",
                "package store\n\n// Save writes a record.\nfunc Save(r string) error {\n\treturn nil\n}\n",
            ),
            (
                "internal/server/server.go",
                "package server\n\nimport \"github.com/acme/app/internal/store\"\n\n// Server serves.\ntype Server struct{ name string }\n\nfunc (s *Server) Handle(r string) error {\n\treturn store.Save(r)\n}\n",
            ),
            (
                "internal/server/run.go",
                "package server\n\n// Run starts a server.\nfunc (s *Server) Run() {\n\ts.Handle(\"x\")\n\tcheck()\n}\n",
            ),
            (
                "internal/server/util.go",
                "package server\n\n// check verifies the setup.\nfunc check() {}\n",
            ),
        ],
        call: ("Handle", "Save", "// Save writes a record."),
        confidence: 0.8,
    },
    Repo {
        language: "c",
        files: &[
            (
                "src/util.h",
                "#ifndef UTIL_H\n#define UTIL_H\n/* Parses one argument. */\nint parse_arg(const char *s);\n#endif\n",
            ),
            (
                "src/util.c",
                "#include \"util.h\"\n\n/* Parses one argument. */\nint parse_arg(const char *s) {\n    return s[0] == '-';\n}\n",
            ),
            (
                "src/main.c",
                "#include \"util.h\"\n\nint main(int argc, char **argv) {\n    return parse_arg(argv[1]);\n}\n",
            ),
        ],
        call: ("main", "parse_arg", "/* Parses one argument. */"),
        confidence: 0.4,
    },
    Repo {
        language: "cpp",
        files: &[
            (
                "include/geo/circle.hpp",
                "#pragma once\nnamespace geo {\n/// A circle.\nclass Circle {\npublic:\n    /// Its area.\n    double area() const;\n};\n}\n",
            ),
            (
                "src/circle.cpp",
                "#include \"geo/circle.hpp\"\nnamespace geo {\ndouble Circle::area() const {\n    return 3.14 * r_ * r_;\n}\n}\n",
            ),
            (
                "src/main.cpp",
                "#include \"geo/circle.hpp\"\n\nint report(const geo::Circle &c) {\n    return (int)c.area();\n}\n",
            ),
        ],
        call: ("report", "area", "/// Its area."),
        confidence: 0.4,
    },
    Repo {
        language: "csharp",
        files: &[
            (
                "src/Acme.Storage/Repo.cs",
                "namespace Acme.Storage\n{\n    public partial class Repo\n    {\n        /// <summary>Finds all.</summary>\n        public int FindAll() { return 0; }\n    }\n}\n",
            ),
            (
                "src/Acme.Storage/Repo.Write.cs",
                "namespace Acme.Storage\n{\n    public partial class Repo\n    {\n        public void Save() { FindAll(); }\n    }\n}\n",
            ),
            (
                "src/Acme.Web/Users.cs",
                "using Acme.Storage;\n\nnamespace Acme.Web;\n\npublic class Users\n{\n    public int List(Repo r) { return r.FindAll(); }\n}\n",
            ),
        ],
        call: ("List", "FindAll", "/// <summary>Finds all.</summary>"),
        confidence: 0.8,
    },
    Repo {
        language: "ruby",
        files: &[
            (
                "lib/shop/cart.rb",
                "module Shop\n  class Cart\n    # Adds an item.\n    def add(item)\n      items << item\n    end\n  end\nend\n",
            ),
            (
                "lib/shop/cart_totals.rb",
                "module Shop\n  class Cart\n    def total\n      0\n    end\n  end\nend\n",
            ),
            (
                "lib/shop/checkout.rb",
                "require_relative \"cart\"\n\nmodule Shop\n  class Checkout\n    def run(cart)\n      cart.add(1)\n    end\n  end\nend\n",
            ),
        ],
        call: ("run", "add", "# Adds an item."),
        confidence: 0.8,
    },
    Repo {
        language: "php",
        files: &[
            (
                "src/Models/User.php",
                "<?php\nnamespace App\\Models;\n\nclass User\n{\n    /** Finds a user. */\n    public static function find($id) { return null; }\n}\n",
            ),
            (
                "src/Http/UserController.php",
                "<?php\nnamespace App\\Http;\n\nuse App\\Models\\User;\n\nclass UserController\n{\n    public function show($id) { return User::find($id); }\n}\n",
            ),
        ],
        call: ("show", "find", "/** Finds a user. */"),
        confidence: 0.8,
    },
    Repo {
        language: "bash",
        files: &[
            (
                "scripts/lib.sh",
                "# Logs a line.\nlog_info() {\n    echo \"$1\"\n}\n",
            ),
            (
                "scripts/install.sh",
                "source ./lib.sh\n\ninstall_pkg() {\n    log_info \"installing\"\n}\n",
            ),
        ],
        call: ("install_pkg", "log_info", "# Logs a line."),
        confidence: 0.8,
    },
    Repo {
        language: "kotlin",
        files: &[
            (
                "src/main/kotlin/com/acme/store/Repo.kt",
                "package com.acme.store\n\nclass Repo {\n    /** Saves an item. */\n    fun save(x: Int) {}\n}\n",
            ),
            (
                "src/main/kotlin/com/acme/shop/Cart.kt",
                "package com.acme.shop\n\nimport com.acme.store.Repo\n\nclass Cart(val repo: Repo) {\n    fun add(x: Int) { repo.save(x) }\n}\n",
            ),
        ],
        call: ("add", "save", "/** Saves an item. */"),
        confidence: 0.8,
    },
    Repo {
        language: "swift",
        files: &[
            (
                "Sources/Store/Repo.swift",
                "public class Repo {\n    /// Saves an item.\n    public func save(_ x: Int) {}\n}\n",
            ),
            (
                "Sources/Shop/Cart.swift",
                "import Store\n\nclass Cart {\n    let repo = Repo()\n    func add(_ x: Int) { repo.save(x) }\n}\n",
            ),
        ],
        call: ("add", "save", "/// Saves an item."),
        confidence: 0.6,
    },
    Repo {
        language: "scala",
        files: &[
            (
                "src/main/scala/com/acme/store/Repo.scala",
                "package com.acme.store\n\nclass Repo {\n  /** Saves an item. */\n  def save(x: Int): Unit = ()\n}\n",
            ),
            (
                "src/main/scala/com/acme/shop/Cart.scala",
                "package com.acme.shop\n\nimport com.acme.store.Repo\n\nclass Cart(repo: Repo) {\n  def add(x: Int): Unit = repo.save(x)\n}\n",
            ),
        ],
        call: ("add", "save", "/** Saves an item. */"),
        confidence: 0.8,
    },
];

fn named<'a>(nodes: &'a [NodeRecord], name: &str) -> Vec<&'a NodeRecord> {
    nodes.iter().filter(|n| n.name == name).collect()
}

#[test]
fn every_language_links_a_call_to_the_definition_it_reaches() {
    for repo in REPOS {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<(&str, &[u8])> =
            repo.files.iter().map(|(p, t)| (*p, t.as_bytes())).collect();
        write_repo(dir.path(), &files);
        let report = index(dir.path());
        let lang = repo.language;
        assert!(report.warnings.is_empty(), "{lang}: {:?}", report.warnings);
        let store = open(dir.path());
        let nodes = store.nodes().unwrap();
        let edges = store.edges().unwrap();
        let (caller, callee, doc) = repo.call;
        let callers = named(&nodes, caller);
        let callees = named(&nodes, callee);
        assert!(
            !callers.is_empty() && !callees.is_empty(),
            "{lang}: {nodes:#?}"
        );
        let linked: Vec<f32> = edges
            .iter()
            .filter(|e| {
                e.kind == EdgeKind::Calls
                    && callers.iter().any(|c| c.id == e.src)
                    && callees.iter().any(|c| c.id == e.dst)
            })
            .map(|e| e.confidence)
            .collect();
        assert!(
            linked.iter().any(|&c| c >= repo.confidence - 1e-6),
            "{lang}: {caller} → {callee} edges {linked:?}"
        );
        // Every depth renders, and the doc comment shows from depth 2 on.
        let target = callees
            .iter()
            .find(|n| store.text(n.id, Depth::Doc).unwrap().contains(doc))
            .unwrap_or_else(|| panic!("{lang}: no {callee} shows {doc:?}"));
        let sig = store.text(target.id, Depth::Signature).unwrap();
        let skeleton = store.text(target.id, Depth::Skeleton).unwrap();
        let full = store.text(target.id, Depth::Full).unwrap();
        assert!(!sig.is_empty() && !sig.contains(doc), "{lang}: {sig:?}");
        assert!(skeleton.contains(doc) && full.contains(doc), "{lang}");
        assert!(full.len() >= skeleton.len(), "{lang}");
    }
}

#[test]
fn go_packages_c_headers_and_reopened_types_resolve_as_a_reader_expects() {
    let go = &REPOS[0];
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<(&str, &[u8])> = go.files.iter().map(|(p, t)| (*p, t.as_bytes())).collect();
    write_repo(dir.path(), &files);
    index(dir.path());
    let store = open(dir.path());
    let nodes = store.nodes().unwrap();
    let edges = store.edges().unwrap();
    let id = |name: &str| named(&nodes, name)[0].id;
    let conf = |src, dst| {
        edges
            .iter()
            .find(|e| e.src == src && e.dst == dst && e.kind == EdgeKind::Calls)
            .map(|e| e.confidence)
    };
    // A method in run.go belongs to the type declared in server.go.
    let run = named(&nodes, "Run")[0];
    assert_eq!(run.qualified_name, "internal/server.Server.Run");
    // Same package, other file, no import: resolved through the package directory.
    assert_eq!(conf(id("Run"), id("check")), Some(0.8));
    assert_eq!(conf(id("Run"), id("Handle")), Some(0.8));

    // A C call through an include reaches the declaration and the definition.
    let c = &REPOS[1];
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<(&str, &[u8])> = c.files.iter().map(|(p, t)| (*p, t.as_bytes())).collect();
    write_repo(dir.path(), &files);
    index(dir.path());
    let store = open(dir.path());
    let nodes = store.nodes().unwrap();
    let main = nodes
        .iter()
        .find(|n| n.name == "main" && n.kind == acms_index::NodeKind::Function)
        .unwrap()
        .id;
    let reached: Vec<&str> = store
        .edges()
        .unwrap()
        .iter()
        .filter(|e| e.src == main && e.kind == EdgeKind::Calls)
        .filter_map(|e| nodes.iter().find(|n| n.id == e.dst))
        .map(|n| n.path.as_str())
        .collect();
    assert_eq!(reached.len(), 2, "{reached:?}");
    assert!(reached.contains(&"src/util.h") && reached.contains(&"src/util.c"));

    // C# partial classes and Ruby reopened classes: one qualified name across files.
    for (repo, name, qualified) in [
        (&REPOS[3], "Repo", "Acme.Storage.Repo"),
        (&REPOS[4], "Cart", "Shop::Cart"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<(&str, &[u8])> =
            repo.files.iter().map(|(p, t)| (*p, t.as_bytes())).collect();
        write_repo(dir.path(), &files);
        index(dir.path());
        let nodes = open(dir.path()).nodes().unwrap();
        let parts: Vec<_> = named(&nodes, name)
            .into_iter()
            .filter(|n| n.kind == acms_index::NodeKind::Class)
            .collect();
        assert_eq!(parts.len(), 2, "{name}");
        assert!(
            parts.iter().all(|n| n.qualified_name == qualified),
            "{parts:#?}"
        );
        assert_ne!(parts[0].path, parts[1].path);
    }
}

/// Edges as a sorted list of (source path:name, target path:name, kind, confidence bits).
fn named_edges(repo: &std::path::Path) -> Vec<(String, String, &'static str, u32)> {
    let store = open(repo);
    let nodes = store.nodes().unwrap();
    let label = |id| {
        nodes
            .iter()
            .find(|n| n.id == id)
            .map(|n| format!("{}:{}", n.path, n.qualified_name))
            .unwrap_or_default()
    };
    let mut out: Vec<_> = store
        .edges()
        .unwrap()
        .iter()
        .map(|e| {
            (
                label(e.src),
                label(e.dst),
                e.kind.name(),
                e.confidence.to_bits(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn an_edited_go_or_c_file_resolves_as_a_full_run_does() {
    for (repo, edit, text) in [
        (
            &REPOS[0],
            "internal/server/run.go",
            "package server\n\n// Run starts a server.\nfunc (s *Server) Run() {\n\tcheck()\n\ts.Handle(\"y\")\n}\n",
        ),
        (
            &REPOS[1],
            "src/main.c",
            "#include \"util.h\"\n\nint main(int argc, char **argv) {\n    int r = parse_arg(argv[1]);\n    return r;\n}\n",
        ),
    ] {
        let files: Vec<(&str, &[u8])> =
            repo.files.iter().map(|(p, t)| (*p, t.as_bytes())).collect();
        let incremental = tempfile::tempdir().unwrap();
        write_repo(incremental.path(), &files);
        index(incremental.path());
        write_repo(incremental.path(), &[(edit, text.as_bytes())]);
        index(incremental.path());
        let full = tempfile::tempdir().unwrap();
        write_repo(full.path(), &files);
        write_repo(full.path(), &[(edit, text.as_bytes())]);
        index(full.path());
        assert_eq!(
            named_edges(incremental.path()),
            named_edges(full.path()),
            "{edit}"
        );
    }
}

/// A shell project's core is often commands without an extension (bats-core's
/// `libexec/bats-core/bats-exec-test`): their `#!` line makes them shell, and the program
/// around their functions is chunks an argument-parsing change can be found in.
#[test]
fn an_extension_less_script_is_read_by_its_interpreter_line() {
    let dir = tempfile::tempdir().unwrap();
    write_repo(
        dir.path(),
        &[
            (
                "lib/common.bash",
                b"# Logs a line.\nlog_info() {\n    echo \"$1\"\n}\n",
            ),
            (
                "libexec/tool",
                b"#!/usr/bin/env bash\nset -e\n\nrun() {\n    log_info \"running\"\n}\n\nwhile [[ $# -gt 0 ]]; do\n    case \"$1\" in\n        -v) VERBOSE=1 ;;\n    esac\n    shift\ndone\nrun\n",
            ),
            ("libexec/notes", b"run() is not a function here\n"),
        ],
    );
    index(dir.path());
    let store = open(dir.path());
    let nodes = store.nodes().unwrap();
    let run = named(&nodes, "run");
    assert_eq!(run.len(), 1, "{nodes:#?}");
    assert_eq!(run[0].path, "libexec/tool");
    let log_info = named(&nodes, "log_info");
    assert!(
        store
            .edges()
            .unwrap()
            .iter()
            .any(|e| e.kind == EdgeKind::Calls && e.src == run[0].id && e.dst == log_info[0].id)
    );
    let mut chunks: Vec<(u32, u32)> = nodes
        .iter()
        .filter(|n| n.path == "libexec/tool" && n.kind == NodeKind::Chunk)
        .map(|n| (n.start_line, n.end_line))
        .collect();
    chunks.sort();
    assert_eq!(chunks, [(1, 2), (8, 14)]);
    // A file without a `#!` line stays text.
    assert!(
        nodes
            .iter()
            .any(|n| n.path == "libexec/notes" && n.kind == NodeKind::Chunk)
    );
}

/// A Kotlin project of several Gradle modules: `fake` imports a class of `core` (another
/// source root, which no directory above the importing file is), calls a function of its own
/// package without importing it, and imports a top-level function by its package; it does not
/// see its tests' declarations. Each has a namesake elsewhere that a reader would not reach.
/// `core`'s multiplatform source sets declare a function in `commonMain` (`expect`) and
/// `jvmMain` (`actual`).
const JVM_MODULES: &[(&str, &str)] = &[
    (
        "core/src/commonMain/kotlin/com/acme/Platform.kt",
        "package com.acme\n\nexpect fun platformName(): String\n",
    ),
    (
        "core/src/commonMain/kotlin/com/acme/Summary.kt",
        "package com.acme\n\nfun summary(): String {\n  return platformName()\n}\n",
    ),
    (
        "core/src/jvmMain/kotlin/com/acme/JvmPlatform.kt",
        "package com.acme\n\nactual fun platformName(): String {\n  return \"jvm\"\n}\n",
    ),
    (
        "core/src/jvmMain/kotlin/com/acme/JvmBanner.kt",
        "package com.acme\n\nfun banner(): String {\n  return summary() + platformName()\n}\n",
    ),
    (
        "fake/src/test/kotlin/com/acme/fake/Fixtures.kt",
        "package com.acme.fake\n\nfun sampleKey(): String {\n  return \"k\"\n}\n",
    ),
    (
        "core/src/main/kotlin/com/acme/Meta.kt",
        "package com.acme\n\nclass Meta(val size: Long)\n",
    ),
    (
        "fake/src/main/kotlin/com/acme/fake/FakeStore.kt",
        "package com.acme.fake\n\nimport com.acme.Meta\nimport com.acme.fake.util.slugify\n\nclass FakeStore {\n  fun stat(): Meta {\n    return Meta(1L)\n  }\n\n  fun now(): Long {\n    return clockNow()\n  }\n\n  fun key(s: String): String {\n    return slugify(s)\n  }\n}\n",
    ),
    (
        "fake/src/main/kotlin/com/acme/fake/Clock.kt",
        "package com.acme.fake\n\nfun clockNow(): Long {\n  return sampleKey().length.toLong()\n}\n",
    ),
    (
        "fake/src/main/kotlin/com/acme/fake/util/Strings.kt",
        "package com.acme.fake.util\n\nfun slugify(s: String): String {\n  return s\n}\n",
    ),
    (
        "other/src/main/kotlin/com/acme/other/Meta.kt",
        "package com.acme.other\n\nclass Meta(val name: String)\n\nfun clockNow(): Long {\n  return 1L\n}\n\nfun slugify(s: String): String {\n  return s.lowercase()\n}\n",
    ),
];

#[test]
fn a_jvm_package_and_the_modules_beside_it_resolve_as_a_reader_expects() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<(&str, &[u8])> = JVM_MODULES
        .iter()
        .map(|(p, t)| (*p, t.as_bytes()))
        .collect();
    write_repo(dir.path(), &files);
    index(dir.path());
    let edges = named_edges(dir.path());
    let has = |src: &str, dst: &str, kind: &str, confidence: f32| {
        edges
            .iter()
            .any(|e| e.0 == src && e.1 == dst && e.2 == kind && e.3 == confidence.to_bits())
    };
    let fake = "fake/src/main/kotlin/com/acme/fake/FakeStore.kt";
    // The import of another module's class is an import edge, and the call follows it.
    assert!(
        has(
            &format!("{fake}:com.acme.fake.FakeStore"),
            "core/src/main/kotlin/com/acme/Meta.kt:com.acme.Meta",
            "imports",
            1.0
        ),
        "{edges:#?}"
    );
    assert!(has(
        &format!("{fake}:com.acme.fake.FakeStore.stat"),
        "core/src/main/kotlin/com/acme/Meta.kt:com.acme.Meta",
        "calls",
        0.8
    ));
    // Same package, no import: the package directory's function, not its namesake.
    assert!(has(
        &format!("{fake}:com.acme.fake.FakeStore.now"),
        "fake/src/main/kotlin/com/acme/fake/Clock.kt:com.acme.fake.clockNow",
        "calls",
        0.8
    ));
    // Code does not see its tests: a name only a test defines is a guess from main.
    assert!(
        has(
            "fake/src/main/kotlin/com/acme/fake/Clock.kt:com.acme.fake.clockNow",
            "fake/src/test/kotlin/com/acme/fake/Fixtures.kt:com.acme.fake.sampleKey",
            "calls",
            0.6
        ),
        "{edges:#?}"
    );
    // Kotlin's source sets: `jvmMain` reaches `commonMain`'s function of its package, and its
    // own `actual` before the `expect`; `commonMain` reaches the `expect`.
    let common = "core/src/commonMain/kotlin/com/acme";
    let jvm = "core/src/jvmMain/kotlin/com/acme";
    for (src, dst) in [
        (
            format!("{jvm}/JvmBanner.kt:com.acme.banner"),
            format!("{common}/Summary.kt:com.acme.summary"),
        ),
        (
            format!("{jvm}/JvmBanner.kt:com.acme.banner"),
            format!("{jvm}/JvmPlatform.kt:com.acme.platformName"),
        ),
        (
            format!("{common}/Summary.kt:com.acme.summary"),
            format!("{common}/Platform.kt:com.acme.platformName"),
        ),
    ] {
        assert!(has(&src, &dst, "calls", 0.8), "{src} -> {dst}: {edges:#?}");
    }
    assert_eq!(
        edges
            .iter()
            .filter(|e| e.0.contains("JvmBanner") && e.1.contains("platformName"))
            .count(),
        1
    );
    // A top-level function imported by its package name.
    assert!(has(
        &format!("{fake}:com.acme.fake.FakeStore.key"),
        "fake/src/main/kotlin/com/acme/fake/util/Strings.kt:com.acme.fake.util.slugify",
        "calls",
        0.8
    ));
    assert!(
        !edges
            .iter()
            .any(|e| e.0.starts_with(fake) && e.1.starts_with("other/")),
        "{edges:#?}"
    );

    // An edit resolved incrementally (imports found through the store's module names) gives
    // the edges a full run gives.
    let edited = "package com.acme.fake\n\nimport com.acme.Meta\n\nclass FakeStore {\n  fun stat(): Meta {\n    return Meta(clockNow())\n  }\n}\n";
    write_repo(dir.path(), &[(fake, edited.as_bytes())]);
    assert!(index(dir.path()).edges_incremental);
    let full = tempfile::tempdir().unwrap();
    write_repo(full.path(), &files);
    write_repo(full.path(), &[(fake, edited.as_bytes())]);
    index(full.path());
    assert_eq!(named_edges(dir.path()), named_edges(full.path()));
    assert!(has_import(&named_edges(dir.path()), fake));
}

fn has_import(edges: &[(String, String, &'static str, u32)], from: &str) -> bool {
    edges
        .iter()
        .any(|e| e.0.starts_with(from) && e.1.starts_with("core/") && e.2 == "imports")
}
