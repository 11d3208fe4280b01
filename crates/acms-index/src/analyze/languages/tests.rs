//! Every query-described language on one fixture each: a definition of each kind, a doc
//! comment, a nested definition, an import and a call, checked as nodes, the three rendered
//! depths, references and imports.

use super::super::tests::{check_nodes, check_render, check_resolve};
use super::super::{ParseLimits, analyzer_for};
use crate::model::{Language, NodeKind, ParsedFile, RefKind};

fn analyze(language: Language, path: &str, src: &str) -> ParsedFile {
    analyzer_for(language).analyze(path, src, &ParseLimits::default())
}

fn refs(f: &ParsedFile, from: usize, kind: RefKind) -> Vec<&str> {
    f.refs
        .iter()
        .filter(|r| r.from == from && r.kind == kind)
        .map(|r| r.name.as_str())
        .collect()
}

fn imports(f: &ParsedFile) -> Vec<&str> {
    f.imports.iter().map(|i| i.module.as_str()).collect()
}

const GO: &str = r#"// Package server serves requests.
package server

import (
	"fmt"
	"github.com/acme/app/internal/store"
)

// MaxConns caps open connections.
const MaxConns = 10

// Server answers requests.
type Server struct {
	Base
	name string
}

// Handler handles one request.
type Handler interface {
	Serve(r Request) error
}

type ID = string

// Serve runs the server.
func (s *Server) Serve(r Request) error {
	if r.Bad() {
		return fmt.Errorf("bad")
	}
	store.Save(r)
	return nil
}

func New(name string) *Server {
	inner := func() int { return 1 }
	_ = inner
	return &Server{name: name}
}
"#;

#[test]
fn go() {
    let path = "internal/server/server.go";
    let f = analyze(Language::Go, path, GO);
    check_nodes(
        Language::Go,
        path,
        GO,
        &[
            (NodeKind::Module, "internal/server/server", 1, 38),
            (NodeKind::Struct, "internal/server.Server", 12, 16),
            (NodeKind::Interface, "internal/server.Handler", 18, 21),
            (NodeKind::Method, "internal/server.Handler.Serve", 20, 20),
            (NodeKind::TypeAlias, "internal/server.ID", 23, 23),
            (NodeKind::Method, "internal/server.Server.Serve", 25, 32),
            (NodeKind::Function, "internal/server.New", 34, 38),
        ],
    );
    check_render(
        Language::Go,
        path,
        GO,
        "internal/server.Server.Serve",
        "func (s *Server) Serve(r Request) error",
        "// Serve runs the server.\nfunc (s *Server) Serve(r Request) error",
        "// Serve runs the server.\nfunc (s *Server) Serve(r Request) error {\n\tif r.Bad() {\n\t\treturn fmt.Errorf(\"bad\")\n\t}\n\t...\n\treturn nil\n}",
    );
    assert_eq!(imports(&f), ["fmt", "github.com/acme/app/internal/store"]);
    let serve = f
        .nodes
        .iter()
        .position(|n| n.name == "Serve" && n.kind == NodeKind::Method && n.start_line == 25)
        .unwrap();
    assert!(refs(&f, serve, RefKind::Call).contains(&"Save"));
    assert!(refs(&f, serve, RefKind::Call).contains(&"Request"));
    assert_eq!(refs(&f, 1, RefKind::Inherits), ["Base"]);
    assert!(f.warnings.is_empty(), "{:?}", f.warnings);
}

const C_HEADER: &str = r#"#ifndef UTIL_H
#define UTIL_H
#include <stdio.h>
#include "types.h"

#define MAX_LEN 64
#define SQUARE(x) ((x) * (x))

/* A parsed option. */
typedef struct {
    const char *name;
    int value;
} option_t;

struct list {
    struct list *next;
};

enum color { RED, GREEN };

typedef int count_t;

/** Parses argv into options. */
int parse_args(int argc, char **argv, option_t *out);
char *dup_name(const char *s);
#endif
"#;

const C_SOURCE: &str = r#"#include "util.h"

static int helper(int x) {
    return SQUARE(x);
}

/* Parses argv into options. */
int parse_args(int argc, char **argv, option_t *out) {
    for (int i = 0; i < argc; i++) {
        if (argv[i][0] == '-') {
            out[i].value = helper(i);
        } else {
            log_arg(argv[i]);
        }
    }
    return 0;
}
"#;

const CPP: &str = r#"#include <string>
#include "shape.hpp"

namespace geo {

/// A circle.
class Circle : public Shape, private Named {
public:
    explicit Circle(double r);
    /// Its area.
    double area() const override;
private:
    double r_;
};

template <typename T>
T twice(T x) { return x + x; }

double Circle::area() const {
    if (r_ < 0) {
        throw std::domain_error("negative");
    }
    return helper::pi() * r_ * r_;
}

}  // namespace geo
"#;

#[test]
fn every_query_compiles() {
    for t in super::ALL.iter().chain([
        &&crate::analyze::python::TABLE,
        &&crate::analyze::rust::TABLE,
        &&crate::analyze::typescript::TABLE_TS,
        &&crate::analyze::typescript::TABLE_TSX,
        &&crate::analyze::typescript::TABLE_JS,
    ]) {
        let grammar = (t.grammar)(t.language);
        let q = t.query.expect("a query language");
        // Compiling also checks that each pattern opens with a named kind, so the walk knows
        // where to run it.
        if let Err(e) = q.compiled(&grammar) {
            panic!("{}: {e}", t.language.name());
        }
    }
}

#[test]
fn a_pattern_must_open_with_a_named_kind() {
    let grammar: tree_sitter::Language = tree_sitter_python::LANGUAGE.into();
    let rooted = crate::analyze::query::QuerySpec::new("(function_definition name: (_) @name)");
    assert!(rooted.compiled(&grammar).is_ok());
    for source in [
        "(_ name: (identifier) @name)",
        "[(class_definition) (function_definition)] @x",
    ] {
        let spec = crate::analyze::query::QuerySpec::new(source);
        let err = spec.compiled(&grammar).err().expect(source);
        assert!(err.contains("named node kind"), "{source}: {err}");
    }
}

const CSHARP: &str = r#"using System;
using Acme.Storage;

namespace Acme.Web
{
    /// <summary>Serves users.</summary>
    [ApiController]
    public partial class UsersController : ControllerBase, IDisposable
    {
        private readonly IRepo _repo;
        public string Name { get; set; }

        public UsersController(IRepo repo) { _repo = repo; }

        /// <summary>Lists users.</summary>
        public List<User> List(int max)
        {
            if (max < 0)
            {
                throw new ArgumentException("max");
            }
            return _repo.FindAll(max);
        }
    }

    public interface IRepo { List<User> FindAll(int max); }
    public enum Role { Admin, User }
}
"#;

const RUBY: &str = r#"require "json"
require_relative "store/base"

module Shop
  # A cart of items.
  class Cart < Base
    include Enumerable
    attr_reader :items
    LIMIT = 10

    # Adds an item.
    def add(item)
      if item.nil?
        raise ArgumentError, "nil"
      end
      items << item
      Store.save(item)
    end

    def self.empty
      new
    end
  end
end
"#;

const PHP: &str = r#"<?php
namespace App\Http;

use App\Models\User;
use Psr\Log\LoggerInterface;

/**
 * Handles users.
 */
class UserController extends Controller implements Responder
{
    use Loggable;
    private $repo;
    const LIMIT = 10;

    /** Shows one user. */
    public function show(int $id): User
    {
        if ($id < 0) {
            throw new \InvalidArgumentException("id");
        }
        return $this->repo->find($id);
    }
}

function helper($x) { return strtolower($x); }
"#;

const BASH: &str = r#"#!/usr/bin/env bash
source ./lib/common.sh
PREFIX=/usr/local

# Installs one package.
install_pkg() {
    if [ -z "$1" ]; then
        die "no package"
    fi
    log_info "installing $1"
    cp "$1" "$PREFIX"
}

install_pkg "$@"
"#;

const KOTLIN: &str = r#"package com.acme.shop

import com.acme.store.Repo

/** A cart. */
class Cart(private val repo: Repo) : Base(), Closeable {
    val items = mutableListOf<Item>()

    /** Adds an item. */
    fun add(item: Item): Boolean {
        if (item.price < 0) {
            throw IllegalArgumentException("price")
        }
        repo.save(item)
        return items.add(item)
    }
}

interface Closeable { fun close() }
enum class Color { RED, GREEN }
fun helper(x: Int) = x * 2
"#;

const SWIFT: &str = r#"import Foundation
import Store

/// A cart.
class Cart: Base, Codable {
    var items: [Item] = []

    /// Adds an item.
    func add(_ item: Item) -> Bool {
        if item.price < 0 {
            return false
        }
        Store.save(item)
        return true
    }
}

extension Cart {
    func clear() { items.removeAll() }
}

protocol Closeable { func close() }
struct Point { var x: Int }
enum Color { case red, green }
"#;

const SCALA: &str = r#"package com.acme.shop

import com.acme.store.Repo

/** A cart. */
class Cart(repo: Repo) extends Base with Closeable {
  val items = List.empty[Item]

  /** Adds an item. */
  def add(item: Item): Boolean = {
    if (item.price < 0) {
      throw new IllegalArgumentException("price")
    }
    repo.save(item)
    true
  }
}

trait Closeable { def close(): Unit }
object Cart { def empty: Cart = new Cart(null) }
"#;

#[test]
fn csharp() {
    let path = "src/Acme.Web/UsersController.cs";
    check_nodes(
        Language::CSharp,
        path,
        CSHARP,
        &[
            (NodeKind::Module, "src/Acme.Web/UsersController", 1, 28),
            (NodeKind::Class, "Acme.Web.UsersController", 6, 24),
            (
                NodeKind::Method,
                "Acme.Web.UsersController.UsersController",
                13,
                13,
            ),
            (NodeKind::Method, "Acme.Web.UsersController.List", 15, 23),
            (NodeKind::Interface, "Acme.Web.IRepo", 26, 26),
            (NodeKind::Method, "Acme.Web.IRepo.FindAll", 26, 26),
            (NodeKind::Enum, "Acme.Web.Role", 27, 27),
        ],
    );
    check_render(
        Language::CSharp,
        path,
        CSHARP,
        "Acme.Web.UsersController.List",
        "public List<User> List(int max)",
        "/// <summary>Lists users.</summary>\npublic List<User> List(int max)",
        "/// <summary>Lists users.</summary>\npublic List<User> List(int max)\n{\n    if (max < 0)\n    {\n        throw new ArgumentException(\"max\");\n    }\n    return _repo.FindAll(max);\n}",
    );
    let f = analyze(Language::CSharp, path, CSHARP);
    assert_eq!(imports(&f), ["System", "Acme.Storage"]);
    assert_eq!(
        refs(&f, 1, RefKind::Inherits),
        ["ControllerBase", "IDisposable"]
    );
    assert!(refs(&f, 3, RefKind::Call).contains(&"FindAll"));
}

#[test]
fn csharp_preprocessor_lines_do_not_cut_a_class_short() {
    // Newtonsoft.Json's JValue: `#if` inside a base list and inside a switch section.
    let src = "namespace N\n{\n    public class V : Base, IComparable\n#if HAVE_ICONVERTIBLE\n        , IConvertible\n#endif\n    {\n        #region Compare\n        int Compare(int t)\n        {\n            switch (t)\n            {\n                case 1:\n#if HAVE_OFFSET\n                    return 1;\n#endif\n                case 2:\n                    return 2;\n            }\n            return 0;\n        }\n        #endregion\n\n        static V CreateString(string s) { return null; }\n    }\n}\n";
    check_nodes(
        Language::CSharp,
        "V.cs",
        src,
        &[
            (NodeKind::Module, "V", 1, 26),
            (NodeKind::Class, "N.V", 3, 25),
            (NodeKind::Method, "N.V.Compare", 9, 21),
            (NodeKind::Method, "N.V.CreateString", 24, 24),
        ],
    );
    let f = analyze(Language::CSharp, "V.cs", src);
    assert!(f.warnings.is_empty(), "{:?}", f.warnings);
    assert_eq!(
        refs(&f, 1, RefKind::Inherits),
        ["Base", "IComparable", "IConvertible"]
    );
    // The directives stay in the source the renderings show.
    assert!(f.nodes[1].end_byte > src.find("#endregion").unwrap());
}

#[test]
fn ruby() {
    let path = "lib/shop/cart.rb";
    check_nodes(
        Language::Ruby,
        path,
        RUBY,
        &[
            (NodeKind::Module, "lib/shop/cart", 1, 24),
            (NodeKind::Class, "Shop", 4, 24),
            (NodeKind::Class, "Shop::Cart", 5, 23),
            (NodeKind::Method, "Shop::Cart::add", 11, 18),
            (NodeKind::Method, "Shop::Cart::empty", 20, 22),
        ],
    );
    check_render(
        Language::Ruby,
        path,
        RUBY,
        "Shop::Cart",
        "class Cart < Base",
        "# A cart of items.\nclass Cart < Base",
        "# A cart of items.\nclass Cart < Base\n  include Enumerable\n  attr_reader :items\n  LIMIT = 10\n  def add(item)\n    ...\n  def self.empty\n    ...",
    );
    let f = analyze(Language::Ruby, path, RUBY);
    assert_eq!(imports(&f), ["json", "store/base"]);
    assert_eq!(refs(&f, 2, RefKind::Inherits), ["Base", "Enumerable"]);
    assert!(refs(&f, 3, RefKind::Call).contains(&"save"));
}

#[test]
fn php() {
    let path = "src/Http/UserController.php";
    check_nodes(
        Language::Php,
        path,
        PHP,
        &[
            (NodeKind::Module, "App\\Http.UserController", 1, 26),
            (NodeKind::Class, "App\\Http\\UserController", 7, 24),
            (NodeKind::Method, "App\\Http\\UserController\\show", 16, 23),
            (NodeKind::Function, "App\\Http\\helper", 26, 26),
        ],
    );
    check_render(
        Language::Php,
        path,
        PHP,
        "App\\Http\\UserController\\show",
        "public function show(int $id): User",
        "/** Shows one user. */\npublic function show(int $id): User",
        "/** Shows one user. */\npublic function show(int $id): User\n{\n    if ($id < 0) {\n        throw new \\InvalidArgumentException(\"id\");\n    }\n    return $this->repo->find($id);\n}",
    );
    let f = analyze(Language::Php, path, PHP);
    assert_eq!(
        imports(&f),
        ["App\\Models\\User", "Psr\\Log\\LoggerInterface"]
    );
    assert_eq!(
        refs(&f, 1, RefKind::Inherits),
        ["Controller", "Responder", "Loggable"]
    );
    assert!(refs(&f, 2, RefKind::Call).contains(&"find"));
}

#[test]
fn bash() {
    let path = "scripts/install.sh";
    check_nodes(
        Language::Bash,
        path,
        BASH,
        &[
            (NodeKind::Module, "scripts/install", 1, 14),
            (NodeKind::Function, "scripts/install.install_pkg", 5, 12),
            // The program around the functions, in chunks (blank edges trimmed).
            (NodeKind::Chunk, "scripts/install:1-3", 1, 3),
            (NodeKind::Chunk, "scripts/install:14-14", 14, 14),
        ],
    );
    check_render(
        Language::Bash,
        path,
        BASH,
        "scripts/install.install_pkg",
        "install_pkg()",
        "# Installs one package.\ninstall_pkg()",
        "# Installs one package.\ninstall_pkg() {\n    if [ -z \"$1\" ]; then\n        ...\n}",
    );
    let f = analyze(Language::Bash, path, BASH);
    assert_eq!(imports(&f), ["./lib/common.sh"]);
    assert!(refs(&f, 1, RefKind::Call).contains(&"log_info"));
    assert!(refs(&f, 0, RefKind::Call).contains(&"install_pkg"));
}

#[test]
fn a_long_shell_program_is_chunked_around_its_functions() {
    // 70 lines of program, a function, 60 more: chunks of at most 60 lines (the default
    // `chunk_lines`), none over the function.
    let mut src = "echo step\n".repeat(70);
    src.push_str("f() {\n    echo f\n}\n");
    src.push_str(&"echo more\n".repeat(60));
    let f = analyze(Language::Bash, "run.sh", &src);
    let spans: Vec<(NodeKind, u32, u32)> = f
        .nodes
        .iter()
        .map(|n| (n.kind, n.start_line, n.end_line))
        .collect();
    assert_eq!(
        spans,
        [
            (NodeKind::Module, 1, 133),
            (NodeKind::Function, 71, 73),
            (NodeKind::Chunk, 1, 60),
            (NodeKind::Chunk, 61, 70),
            (NodeKind::Chunk, 74, 133),
        ]
    );
}

#[test]
fn kotlin() {
    let path = "src/main/kotlin/com/acme/shop/Cart.kt";
    check_nodes(
        Language::Kotlin,
        path,
        KOTLIN,
        &[
            (NodeKind::Module, "com.acme.shop.Cart", 1, 21),
            (NodeKind::Class, "com.acme.shop.Cart", 5, 17),
            (NodeKind::Method, "com.acme.shop.Cart.add", 9, 16),
            (NodeKind::Interface, "com.acme.shop.Closeable", 19, 19),
            (NodeKind::Method, "com.acme.shop.Closeable.close", 19, 19),
            (NodeKind::Enum, "com.acme.shop.Color", 20, 20),
            (NodeKind::Function, "com.acme.shop.helper", 21, 21),
        ],
    );
    check_render(
        Language::Kotlin,
        path,
        KOTLIN,
        "com.acme.shop.Cart.add",
        "fun add(item: Item): Boolean",
        "/** Adds an item. */\nfun add(item: Item): Boolean",
        "/** Adds an item. */\nfun add(item: Item): Boolean {\n    if (item.price < 0) {\n        throw IllegalArgumentException(\"price\")\n    }\n    ...\n    return items.add(item)\n}",
    );
    let f = analyze(Language::Kotlin, path, KOTLIN);
    assert_eq!(imports(&f), ["com.acme.store.Repo"]);
    assert_eq!(refs(&f, 1, RefKind::Inherits), ["Base", "Closeable"]);
    assert!(refs(&f, 2, RefKind::Call).contains(&"save"));
}

#[test]
fn swift() {
    let path = "Sources/Shop/Cart.swift";
    check_nodes(
        Language::Swift,
        path,
        SWIFT,
        &[
            (NodeKind::Module, "Sources/Shop/Cart", 1, 24),
            (NodeKind::Class, "Cart", 4, 16),
            (NodeKind::Method, "Cart.add", 8, 15),
            (NodeKind::Impl, "Cart", 18, 20),
            (NodeKind::Method, "Cart.clear", 19, 19),
            (NodeKind::Interface, "Closeable", 22, 22),
            (NodeKind::Method, "Closeable.close", 22, 22),
            (NodeKind::Struct, "Point", 23, 23),
            (NodeKind::Enum, "Color", 24, 24),
        ],
    );
    check_render(
        Language::Swift,
        path,
        SWIFT,
        "Cart.add",
        "func add(_ item: Item) -> Bool",
        "/// Adds an item.\nfunc add(_ item: Item) -> Bool",
        "/// Adds an item.\nfunc add(_ item: Item) -> Bool {\n    if item.price < 0 {\n        return false\n    }\n    ...\n    return true\n}",
    );
    let f = analyze(Language::Swift, path, SWIFT);
    assert_eq!(imports(&f), ["Foundation", "Store"]);
    assert_eq!(refs(&f, 1, RefKind::Inherits), ["Base", "Codable"]);
    assert!(refs(&f, 2, RefKind::Call).contains(&"save"));
}

#[test]
fn scala() {
    let path = "src/main/scala/com/acme/shop/Cart.scala";
    check_nodes(
        Language::Scala,
        path,
        SCALA,
        &[
            (NodeKind::Module, "com.acme.shop.Cart", 1, 20),
            (NodeKind::Class, "com.acme.shop.Cart", 5, 17),
            (NodeKind::Method, "com.acme.shop.Cart.add", 9, 16),
            (NodeKind::Trait, "com.acme.shop.Closeable", 19, 19),
            (NodeKind::Method, "com.acme.shop.Closeable.close", 19, 19),
            (NodeKind::Class, "com.acme.shop.Cart", 20, 20),
            (NodeKind::Method, "com.acme.shop.Cart.empty", 20, 20),
        ],
    );
    check_render(
        Language::Scala,
        path,
        SCALA,
        "com.acme.shop.Cart.add",
        "def add(item: Item): Boolean =",
        "/** Adds an item. */\ndef add(item: Item): Boolean =",
        "/** Adds an item. */\ndef add(item: Item): Boolean = {\n  if (item.price < 0) {\n    throw new IllegalArgumentException(\"price\")\n  }\n  ...\n}",
    );
    let f = analyze(Language::Scala, path, SCALA);
    assert_eq!(imports(&f), ["com.acme.store.Repo"]);
    assert_eq!(refs(&f, 1, RefKind::Inherits), ["Base", "Closeable"]);
    assert!(refs(&f, 2, RefKind::Call).contains(&"save"));
}

#[test]
fn a_package_name_of_any_length_builds_a_bounded_module_name() {
    // Found by the analyze_scala fuzz target: a package of 510 bytes, and the file's stem.
    let src = format!("package com.{}\nclass A\n", "x".repeat(510));
    for language in [
        Language::Scala,
        Language::Kotlin,
        Language::Go,
        Language::Java,
    ] {
        let f = analyze(language, "src/A.scala", &src);
        for n in &f.nodes {
            assert!(
                n.qualified_name.len() <= crate::MAX_NAME_BYTES,
                "{language:?}: {} bytes",
                n.qualified_name.len()
            );
        }
    }
}

#[test]
fn c_header_and_source() {
    check_nodes(
        Language::C,
        "src/util.h",
        C_HEADER,
        &[
            (NodeKind::Module, "src/util", 1, 26),
            (NodeKind::Function, "src/util::SQUARE", 7, 7),
            (NodeKind::Struct, "src/util::option_t", 9, 13),
            (NodeKind::Struct, "src/util::list", 15, 17),
            (NodeKind::Enum, "src/util::color", 19, 19),
            (NodeKind::TypeAlias, "src/util::count_t", 21, 21),
            (NodeKind::Function, "src/util::parse_args", 23, 24),
            (NodeKind::Function, "src/util::dup_name", 25, 25),
        ],
    );
    check_render(
        Language::C,
        "src/util.c",
        C_SOURCE,
        "src/util::parse_args",
        "int parse_args(int argc, char **argv, option_t *out)",
        "/* Parses argv into options. */\nint parse_args(int argc, char **argv, option_t *out)",
        "/* Parses argv into options. */\nint parse_args(int argc, char **argv, option_t *out) {\n    for (int i = 0; i < argc; i++) {\n        if (argv[i][0] == '-') {\n            ...\n        } else {\n            ...\n        }\n    }\n    return 0;\n}",
    );
    let h = analyze(Language::C, "src/util.h", C_HEADER);
    assert_eq!(imports(&h), ["stdio.h", "types.h"]);
    // Include guards wrap the whole header; its macros and fields still show.
    assert!(
        h.nodes[0].skeleton.contains("#define MAX_LEN 64"),
        "{}",
        h.nodes[0].skeleton
    );
    let c = analyze(Language::C, "src/util.c", C_SOURCE);
    assert_eq!(
        refs(&c, 2, RefKind::Call),
        ["option_t", "helper", "log_arg"]
    );
}

#[test]
fn cpp_methods_outside_their_class_share_its_name() {
    let path = "src/circle.cpp";
    check_nodes(
        Language::Cpp,
        path,
        CPP,
        &[
            (NodeKind::Module, "src/circle", 1, 26),
            (NodeKind::Class, "src/circle::geo::Circle", 6, 14),
            (NodeKind::Method, "src/circle::geo::Circle::Circle", 9, 9),
            (NodeKind::Method, "src/circle::geo::Circle::area", 10, 11),
            (NodeKind::Function, "src/circle::geo::twice", 16, 17),
            (NodeKind::Method, "src/circle::geo::Circle::area", 19, 24),
        ],
    );
    check_render(
        Language::Cpp,
        path,
        CPP,
        "src/circle::geo::Circle",
        "class Circle : public Shape, private Named",
        "/// A circle.\nclass Circle : public Shape, private Named",
        "/// A circle.\nclass Circle : public Shape, private Named {\npublic:\n    explicit Circle(double r);\n    double area() const override;\nprivate:\n    double r_;\n}",
    );
    let f = analyze(Language::Cpp, path, CPP);
    assert_eq!(imports(&f), ["string", "shape.hpp"]);
    assert_eq!(refs(&f, 1, RefKind::Inherits), ["Shape", "Named"]);
    assert!(refs(&f, 5, RefKind::Call).contains(&"pi"));
}

// Java: the hand-written analyzer's fixtures, unchanged, on the query-described one.

const JAVA: &str = r#"package com.acme.web;

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
fn java_extracts_nodes() {
    check_nodes(
        Language::Java,
        "src/main/java/com/acme/web/Users.java",
        JAVA,
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
fn java_anonymous_classes_held_by_fields_are_named_by_them() {
    let src = "package p;\n\nclass Adapters {\n  static final Adapter<Boolean> BOOLEAN = new Adapter<Boolean>() {\n    @Override public Boolean read(Reader in) {\n      return in.nextBoolean();\n    }\n  };\n  static final int LIMIT = 3;\n  Runnable task = () -> {};\n}\n";
    check_nodes(
        Language::Java,
        "src/p/Adapters.java",
        src,
        &[
            (NodeKind::Module, "p.Adapters", 1, 11),
            (NodeKind::Class, "p.Adapters", 3, 11),
            (NodeKind::Class, "p.Adapters.BOOLEAN", 4, 8),
            (NodeKind::Method, "p.Adapters.BOOLEAN.read", 5, 7),
        ],
    );
    let f = analyze(Language::Java, "src/p/Adapters.java", src);
    let field = f.nodes.iter().find(|n| n.name == "BOOLEAN").unwrap();
    assert_eq!(
        field.signature,
        "static final Adapter<Boolean> BOOLEAN = new Adapter<Boolean>()"
    );
    let class = &f.nodes[1];
    assert!(
        class.skeleton.contains("static final int LIMIT = 3;"),
        "{}",
        class.skeleton
    );
}

#[test]
fn java_renders_depths() {
    let path = "src/main/java/com/acme/web/Users.java";
    check_render(
        Language::Java,
        path,
        JAVA,
        "com.acme.web.Users.names",
        "@Override\npublic List<String> names(int max)",
        "/** Lists names. */\n@Override\npublic List<String> names(int max)",
        "/** Lists names. */\n@Override\npublic List<String> names(int max) {\n    if (max < 0) {\n        throw new IllegalArgumentException(\"max\");\n    } else {\n        ...\n    }\n    return repo.findAll(max);\n}",
    );
    check_render(
        Language::Java,
        path,
        JAVA,
        "com.acme.web.Users",
        "@Controller\npublic class Users extends Base implements Handler, Closeable",
        "/**\n * A controller.\n */\n@Controller\npublic class Users extends Base implements Handler, Closeable",
        "/**\n * A controller.\n */\n@Controller\npublic class Users extends Base implements Handler, Closeable {\n    private final Repo repo;\n    public Users(Repo repo) {\n        ...\n    }\n    @Override\n    public List<String> names(int max) {\n        ...\n    }\n    static class Inner {\n        ...\n    }\n}",
    );
}

#[test]
fn java_refs_imports_and_docs() {
    let f = analyze(Language::Java, "Users.java", JAVA);
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
fn java_allman_braces_stay_balanced() {
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

#[test]
fn java_resolves_imports() {
    let files = [
        "src/main/java/com/acme/util/Strings.java",
        "src/main/java/com/acme/web/Users.java",
    ];
    let from = "src/main/java/com/acme/web/Users.java";
    check_resolve(
        Language::Java,
        from,
        "com.acme.util.Strings",
        &files,
        Some(files[0]),
    );
    check_resolve(
        Language::Java,
        from,
        "com.acme.util.Strings.join",
        &files,
        Some(files[0]),
    );
    check_resolve(Language::Java, from, "java.util.List", &files, None);
}

#[test]
fn jvm_imports_name_package_directories_and_files_of_other_modules() {
    let files = [
        "app/src/main/kotlin/com/acme/app/Main.kt",
        "app/src/main/kotlin/com/acme/app/wasi/Preview1.kt",
        "core/src/commonMain/kotlin/com/acme/Meta.kt",
        "core/src/jvmMain/kotlin/com/acme/Meta.kt",
        "core/src/main/kotlin/com/acme/MetaData.kt",
        "other/src/main/kotlin/org/acme/Meta.kt",
    ];
    let exists = |p: &str| {
        files
            .iter()
            .any(|f| *f == p || (p.ends_with('/') && f.starts_with(p)))
    };
    let kotlin = analyzer_for(Language::Kotlin);
    let from = files[0];
    // A top-level function's import names its package directory (no file is named after it);
    // a one-segment prefix (`com/`) never does.
    assert_eq!(
        kotlin.resolve_import(from, "com.acme.app.wasi.path_open", &exists),
        Some("app/src/main/kotlin/com/acme/app/wasi/".to_string())
    );
    assert_eq!(kotlin.resolve_import(from, "com.Missing", &exists), None);
    assert_eq!(
        kotlin.resolve_import(from, "com.acme.app.wasi", &exists),
        Some("app/src/main/kotlin/com/acme/app/wasi/".to_string()),
        "a star import's package"
    );
    // Another module's class: not under any directory above `Main.kt`, found by its stem;
    // `expect` and `actual` files both, a namesake in another package not.
    assert_eq!(kotlin.resolve_import(from, "com.acme.Meta", &exists), None);
    let with_stem = |stem: &str| -> Vec<String> {
        files
            .iter()
            .filter(|f| f.rsplit('/').next().and_then(|n| n.strip_suffix(".kt")) == Some(stem))
            .map(|f| f.to_string())
            .collect()
    };
    assert_eq!(
        kotlin.resolve_import_elsewhere("com.acme.Meta.Companion.of", &with_stem),
        [files[2], files[3]]
    );
    assert!(
        kotlin
            .resolve_import_elsewhere("kotlin.time.Instant", &with_stem)
            .is_empty()
    );
    // Languages whose imports name paths do not look elsewhere.
    assert!(
        analyzer_for(Language::Go)
            .resolve_import_elsewhere("com.acme.Meta", &with_stem)
            .is_empty()
    );
}

#[test]
fn a_jvm_file_knows_its_source_root_and_package_directory() {
    let kotlin = analyzer_for(Language::Kotlin);
    assert_eq!(
        kotlin.source_set("okio/src/jvmMain/kotlin/okio/internal/Zip.kt"),
        Some(("okio/src/jvmMain/kotlin/", "okio/internal/"))
    );
    // The last marker counts: a module may be nested in a directory named `src`.
    assert_eq!(
        analyzer_for(Language::Java).source_set("src/libs/src/test/java/com/acme/FooTest.java"),
        Some(("src/libs/src/test/java/", "com/acme/"))
    );
    assert_eq!(
        analyzer_for(Language::Scala).source_set("src/main/scala/scopt/OParser.scala"),
        Some(("src/main/scala/", "scopt/"))
    );
    // The default package, a layout without source sets, and languages without packages.
    assert_eq!(kotlin.source_set("app/src/main/kotlin/Main.kt"), None);
    assert_eq!(kotlin.source_set("java/com/acme/Foo.kt"), None);
    assert_eq!(kotlin.source_set("src/main/kotlin"), None);
    assert_eq!(
        analyzer_for(Language::Go).source_set("x/src/main/java/a/b.go"),
        None
    );
}

#[test]
fn properties_with_code_are_methods_and_plain_ones_stay_field_lines() {
    // Newtonsoft.Json's `JsonReader.MaxDepth` validates in its setter: a task about it has to
    // find it by name. Auto-properties, stored and `=>` ones stay lines of their class.
    let cs = "namespace N\n{\n    public class Reader\n    {\n        public int Count { get; set; }\n        public bool Empty => Count == 0;\n        /// <summary>Nesting allowed.</summary>\n        public int? MaxDepth\n        {\n            get => _maxDepth;\n            set\n            {\n                if (value <= 0) throw new ArgumentException(\"value\");\n                _maxDepth = value;\n            }\n        }\n    }\n}\n";
    check_nodes(
        Language::CSharp,
        "Reader.cs",
        cs,
        &[
            (NodeKind::Module, "Reader", 1, 18),
            (NodeKind::Class, "N.Reader", 3, 17),
            (NodeKind::Method, "N.Reader.MaxDepth", 7, 16),
        ],
    );
    check_render(
        Language::CSharp,
        "Reader.cs",
        cs,
        "N.Reader.MaxDepth",
        "public int? MaxDepth",
        "/// <summary>Nesting allowed.</summary>\npublic int? MaxDepth",
        "/// <summary>Nesting allowed.</summary>\npublic int? MaxDepth\n{\n    ...\n        if (value <= 0) throw new ArgumentException(\"value\");\n        ...\n}",
    );
    let f = analyze(Language::CSharp, "Reader.cs", cs);
    assert!(refs(&f, 2, RefKind::Call).contains(&"ArgumentException"));

    let kt = "package shop\n\nclass Cart {\n  var total: Long = 0\n  val empty get() = total == 0L\n  val size: Int\n    get() {\n      return items.count()\n    }\n}\n";
    check_nodes(
        Language::Kotlin,
        "Cart.kt",
        kt,
        &[
            (NodeKind::Module, "shop.Cart", 1, 10),
            (NodeKind::Class, "shop.Cart", 3, 10),
            (NodeKind::Method, "shop.Cart.size", 6, 9),
        ],
    );
    let f = analyze(Language::Kotlin, "Cart.kt", kt);
    assert!(refs(&f, 2, RefKind::Call).contains(&"count"));

    let swift = "class Cart {\n    var total = 0\n    var observed = 0 {\n        didSet { log(observed) }\n    }\n    var count: Int {\n        return items.count\n    }\n}\n";
    check_nodes(
        Language::Swift,
        "Cart.swift",
        swift,
        &[
            (NodeKind::Module, "Cart", 1, 9),
            (NodeKind::Class, "Cart", 1, 9),
            (NodeKind::Method, "Cart.count", 6, 8),
        ],
    );
}
