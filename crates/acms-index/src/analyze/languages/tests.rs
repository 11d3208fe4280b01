//! Every query-described language on one fixture each: a definition of each kind, a doc
//! comment, a nested definition, an import and a call, checked as nodes, the three rendered
//! depths, references and imports.

use super::super::tests::{check_nodes, check_render};
use super::super::{ParseLimits, analyzer_for};
use crate::model::{Language, NodeKind, ParsedFile, RefKind};

fn analyze(language: Language, path: &str, src: &str) -> ParsedFile {
    analyzer_for(language).analyze(path, src, &ParseLimits::default())
}

#[allow(dead_code)]
fn dump(f: &ParsedFile) {
    for n in &f.nodes {
        eprintln!(
            "{:?} {} {}-{}\n  sig={:?}\n  doc={:?}\n  skel={:?}",
            n.kind, n.qualified_name, n.start_line, n.end_line, n.signature, n.with_doc, n.skeleton
        );
    }
    for r in &f.refs {
        eprintln!("ref {} {} {:?}", r.from, r.name, r.kind);
    }
    for i in &f.imports {
        eprintln!("import {} {:?}", i.module, i.names);
    }
    eprintln!("warnings {:?}", f.warnings);
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
    dump(&f);
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

#[test]
fn c() {
    let f = analyze(Language::C, "src/util.h", C_HEADER);
    dump(&f);
    let f = analyze(Language::C, "src/util.c", C_SOURCE);
    dump(&f);
}

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
fn cpp() {
    let f = analyze(Language::Cpp, "src/circle.cpp", CPP);
    dump(&f);
}

#[test]
fn every_query_compiles() {
    for t in super::ALL {
        let grammar = (t.grammar)(t.language);
        let q = t.query.expect("a query language");
        if let Err(e) = q.query(&grammar) {
            panic!("{}: {e}", t.language.name());
        }
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
fn dumps() {
    for (l, p, s) in [
        (Language::CSharp, "src/Acme.Web/UsersController.cs", CSHARP),
        (Language::Ruby, "lib/shop/cart.rb", RUBY),
        (Language::Php, "src/Http/UserController.php", PHP),
        (Language::Bash, "scripts/install.sh", BASH),
        (
            Language::Kotlin,
            "src/main/kotlin/com/acme/shop/Cart.kt",
            KOTLIN,
        ),
        (Language::Swift, "Sources/Shop/Cart.swift", SWIFT),
        (
            Language::Scala,
            "src/main/scala/com/acme/shop/Cart.scala",
            SCALA,
        ),
    ] {
        eprintln!("===== {l:?}");
        dump(&analyze(l, p, s));
    }
}
