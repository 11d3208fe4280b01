#!/usr/bin/env python3
"""Generate docstring-to-code evaluation tasks (task sets 1 and 2) from the fetched corpora.

Owns: choosing which functions make a task (the "meaningful docstring" filters below), turning
a docstring into task text (set 1: its first sentence; set 2: the same with every sub-word of
the function's name stripped), deterministic sampling, and (--write-stripped) the copy of a
corpus with the sampled docstrings removed, which is what the engine and the peers index.

Does not own: running anything or scoring. The Rust harness consumes the JSON lines this prints.
TypeScript corpora get only a regex estimate of their JSDoc'd functions (--stats); their task
generator belongs with the engine's tree-sitter analyzers.

Output, one JSON object per line (Python corpora):
  id                "<corpus>/<qualified_name>@<start_line>"
  corpus, path      corpus name and file path relative to the corpus root
  qualified_name    dotted module path (leading "src/" dropped) + classes + function name
  start_line        1-based first line of the function (its first decorator, if any)
  end_line          1-based last line, inclusive
  docstring_span    [start_byte, end_byte) of the docstring literal in the ORIGINAL file
  query_set1        first sentence of the docstring, markup removed
  query_set2        query_set1 without any word built from the name's sub-words; null when
                    fewer than 3 words, or fewer than 2 non-stopwords, would remain (the task
                    then only counts for set 1)
  mentioned_idents  words of query_set1 split on \\W+, as Aider's Coder.get_ident_mentions does
  mentioned_idents_set2  the same for query_set2

Stripping keeps every line number: the docstring's bytes are replaced by its line breaks only
(by "..." plus its line breaks when the docstring is the function's whole body), so start_line
and end_line hold in both the original and the stripped copy.

Usage:
  eval/make_tasks.py [NAME...]                      tasks for Python corpora, JSON lines on stdout
  eval/make_tasks.py --stats [NAME...]              qualifying-function counts per corpus
  eval/make_tasks.py --write-stripped DIR NAME      also write DIR/<NAME>/, the stripped copy
Standard library only.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import random
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS_DIR = Path(os.environ.get("ACMS_CORPUS_DIR", REPO_ROOT / ".cache" / "corpora"))
DEFAULT_SEED = 6  # the evaluation's issue number; any fixed value makes the sample reproducible
DEFAULT_CAP = 150

# Paths whose functions never make tasks: tests (their docstrings describe test cases, not
# behaviour), documentation build scripts, examples (toy code) and packaging scripts.
EXCLUDED_DIRS = {"tests", "test", "testing", "docs", "doc", "examples", "example", "benchmarks"}
EXCLUDED_FILES = {"setup.py", "conftest.py", "noxfile.py", "fabfile.py"}

MIN_WORDS = 5
MIN_CONTENT_WORDS = 2
MIN_SET2_WORDS = 3
MAX_QUERY_CHARS = 400

PLACEHOLDER = re.compile(
    r"^(todo|fixme|xxx|tbd|hack|deprecated|internal use|private|see\b|same as|alias (for|of)"
    r"|overrides?\b|implements?\b|inherited|copy of|:meta|#|docstring)",
    re.IGNORECASE,
)
STOPWORDS = set(
    """a an the and or but if then else of to in on at by for from with without into onto as is
    are was were be been being it its this that these those there here which who whom whose what
    when where why how not no nor do does did done can could should would may might must shall
    will all any each every some such than too very so only also just own same other more most
    less few many much one two we you they he she i me my our your their them us his her
    return returns returned returning method function helper class instance object self cls
    given value values""".split()
)
WORD = re.compile(r"[A-Za-z][A-Za-z0-9_'-]*")
TOKEN = re.compile(r"[A-Za-z0-9_]+")
SUBWORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
INFLECTIONS = ("", "s", "es", "ed", "d", "ing", "er", "ers", "ly")


def subwords(identifier: str) -> list[str]:
    """`HTTPAdapter` -> [http, adapter]; `merge_setting` -> [merge, setting]."""
    return [p.lower() for p in SUBWORD.findall(identifier)]


def is_name_word(word: str, name_words: set[str]) -> bool:
    """True if `word` (lower case) is a name sub-word or a simple inflection of one."""
    for w in name_words:
        if word.startswith(w) and word[len(w):] in INFLECTIONS:
            return True
        # "encoding" for sub-word "encode": drop a trailing e before -ing/-ed/-er.
        if w.endswith("e") and word.startswith(w[:-1]) and word[len(w) - 1:] in ("ing", "ed", "er", "ers"):
            return True
    return False


def clean_markup(text: str) -> str:
    """Drop reST / Markdown markup that would leak role names into the task text."""
    text = re.sub(r":[a-z]+(?::[a-z]+)?:`~?([^`<]*?)(?:\s*<[^>]*>)?`", r"\1", text)  # :func:`x`
    text = re.sub(r"``([^`]*)``", r"\1", text)
    text = re.sub(r"`([^`]*)`_?", r"\1", text)
    text = re.sub(r"\*\*?([^*]+)\*\*?", r"\1", text)
    text = re.sub(r"%%([^%]+)%%", r"\1", text)  # ethers' parameter markup: %%value%%
    return re.sub(r"\s+", " ", text).strip()


def first_sentence(doc: str) -> str:
    """First sentence of the first paragraph: up to ". " / "? " / "! " or the paragraph's end.

    The paragraph also ends at a field list or section header (":param", "Args:", ">>>"), as
    many one-line summaries are followed directly by those.
    """
    lines: list[str] = []
    for line in doc.strip().splitlines():
        s = line.strip()
        if not s:
            if lines:
                break
            continue
        if s.startswith((":", ">>>", "..")) or re.match(r"^[A-Z][a-z]+( [A-Z][a-z]+)?:$", s):
            break
        lines.append(s)
    para = clean_markup(" ".join(lines))
    m = re.search(r"(?<![.][a-z])(?<!\be\.g)(?<!\bi\.e)[.?!](\s|$)", para)
    sentence = para[: m.start() + 1] if m else para
    return sentence[:MAX_QUERY_CHARS].strip()


def strip_name_words(text: str, name: str) -> str:
    """Remove every token built from a sub-word of `name` (set 2's identifier-free text)."""
    name_words = set(subwords(name))

    def keep(tok: str) -> bool:
        return not any(is_name_word(w, name_words) for w in subwords(tok) + [tok.lower()])

    out = TOKEN.sub(lambda m: m.group(0) if keep(m.group(0)) else "", text)
    out = re.sub(r"\s+([,.;:?!)])", r"\1", out)
    out = re.sub(r"\(\s*\)", "", out)
    return re.sub(r"\s+", " ", out).strip()


def ident_mentions(text: str) -> list[str]:
    """Aider's Coder.get_ident_mentions: the set of \\W+-separated words (sorted here)."""
    return sorted({w for w in re.split(r"\W+", text) if w})


@dataclass
class Candidate:
    corpus: str
    path: str
    qualified_name: str
    name: str
    start_line: int
    end_line: int
    doc_span: tuple[int, int]
    doc_lines: tuple[int, int]
    sole_statement: bool
    sentence: str


@dataclass
class Stats:
    functions: int = 0
    with_docstring: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    qualifying: int = 0
    set2: int = 0

    def reject(self, why: str) -> None:
        self.rejected[why] = self.rejected.get(why, 0) + 1


def excluded(rel: Path) -> bool:
    parts = [p.lower() for p in rel.parts]
    name = parts[-1]
    return (
        any(p in EXCLUDED_DIRS or p.startswith(".") for p in parts[:-1])
        or name in EXCLUDED_FILES
        or name.startswith("test_")
        or name.endswith("_test.py")
    )


def module_name(rel: Path) -> str:
    parts = list(rel.with_suffix("").parts)
    if parts and parts[0] == "src":
        parts = parts[1:]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def trivial_body(body: list[ast.stmt]) -> bool:
    """A stub: nothing after the docstring but pass / ... / raise NotImplementedError."""
    for stmt in body:
        if isinstance(stmt, ast.Pass):
            continue
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and stmt.value.value is Ellipsis:
            continue
        if isinstance(stmt, ast.Raise) and "NotImplementedError" in ast.unparse(stmt):
            continue
        return False
    return True


def is_overload(fn: ast.AST) -> bool:
    return any(ast.unparse(d).split(".")[-1] == "overload" for d in getattr(fn, "decorator_list", []))


def line_starts(src: bytes) -> list[int]:
    starts = [0]
    for line in src.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def scan_file(corpus: str, root: Path, path: Path, stats: Stats) -> list[Candidate]:
    src = path.read_bytes()
    try:
        tree = ast.parse(src, filename=str(path))
    except (SyntaxError, ValueError) as e:
        print(f"make_tasks: {path}: not parsed ({e}); skipped", file=sys.stderr)
        return []
    rel = path.relative_to(root)
    starts = line_starts(src)
    mod = module_name(rel)
    out: list[Candidate] = []

    # Iterative walk over module-level functions and (nested) class methods; functions nested
    # in functions are closures, rarely documented, and not what a user asks for.
    stack: list[tuple[ast.AST, str]] = [(tree, mod)]
    while stack:
        node, prefix = stack.pop()
        for child in getattr(node, "body", []):
            if isinstance(child, ast.ClassDef):
                stack.append((child, f"{prefix}.{child.name}" if prefix else child.name))
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                stats.functions += 1
                cand = check_function(corpus, rel, prefix, child, starts, stats)
                if cand is not None:
                    out.append(cand)
    return out


def sentence_rejection(sentence: str, name: str) -> str | None:
    """Why a first sentence is not a meaningful task for function `name`, or None if it is."""
    words = WORD.findall(sentence)
    if len(words) < MIN_WORDS:
        return f"first sentence < {MIN_WORDS} words"
    if PLACEHOLDER.match(sentence) or "TODO" in sentence:
        return "placeholder / cross-reference"
    name_words = set(subwords(name))
    content = [w.lower() for w in words if w.lower() not in STOPWORDS and not is_name_word(w.lower(), name_words)]
    if len(content) < MIN_CONTENT_WORDS:
        return "restates the name"
    return None


def check_function(corpus, rel, prefix, fn, starts, stats) -> Candidate | None:
    doc = ast.get_docstring(fn, clean=True)
    if not doc:
        return None
    stats.with_docstring += 1
    name = fn.name
    if name.startswith("__") and name.endswith("__"):
        stats.reject("dunder method")
        return None
    if is_overload(fn):
        stats.reject("@overload stub")
        return None
    if trivial_body(fn.body[1:]):
        stats.reject("no body beyond the docstring")
        return None
    sentence = first_sentence(doc)
    why = sentence_rejection(sentence, name)
    if why is not None:
        stats.reject(why)
        return None
    node = fn.body[0].value  # ast.get_docstring guarantees an Expr(Constant(str)) here
    start = starts[node.lineno - 1] + node.col_offset
    end = starts[node.end_lineno - 1] + node.end_col_offset
    first = min([fn.lineno] + [d.lineno for d in fn.decorator_list])
    qual = f"{prefix}.{name}" if prefix else name
    return Candidate(
        corpus, rel.as_posix(), qual, name, first, fn.end_lineno, (start, end),
        (node.lineno, node.end_lineno), len(fn.body) == 1, sentence,
    )


def corpus_registry(root: Path) -> str | None:
    marker = root / ".acms-corpus"
    if not marker.is_file():
        return None
    m = re.search(r"registry=(\w+)", marker.read_text())
    return m.group(1) if m else None


def python_candidates(corpus: str, root: Path) -> tuple[list[Candidate], Stats]:
    stats = Stats()
    cands: list[Candidate] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
        for fname in sorted(filenames):
            path = Path(dirpath) / fname
            if fname.endswith(".py") and not excluded(path.relative_to(root)):
                cands.extend(scan_file(corpus, root, path, stats))
    cands = dedupe_sentences(cands, stats)
    stats.qualifying = len(cands)
    stats.set2 = sum(1 for c in cands if set2_query(c) is not None)
    return cands, stats


JSDOC_FN = re.compile(
    r"/\*\*(?P<doc>(?:(?!\*/).)*)\*/\s*"
    r"(?:@\w+(?:\([^)]*\))?\s*)*"  # decorators
    r"(?:export\s+)?(?:default\s+)?(?:declare\s+)?"
    r"(?:(?:async\s+)?function\s*\*?\s*(?P<f>\w+)"
    r"|(?:(?:public|private|protected|static|readonly|abstract|override|async|get|set)\s+)*(?P<m>\w+)\s*(?:<[^>{;]*>)?\s*\("
    r"|(?:const|let|var)\s+(?P<v>\w+)\s*(?::[^=]+)?=\s*(?:async\s*)?(?:function|\(|\w+\s*=>|<))",
    re.DOTALL,
)
TS_KEYWORDS = {"if", "for", "while", "switch", "return", "catch", "function", "constructor", "super"}


def ts_estimate(root: Path) -> dict[str, int]:
    """Regex estimate of JSDoc'd functions / methods / arrow-function consts in .ts/.tsx sources
    (not .d.ts, not tests), and how many pass the same first-sentence filters as Python."""
    counts = {"files": 0, "jsdoc_functions": 0, "meaningful": 0}
    sentences: dict[str, int] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in ("node_modules", "dist"))
        for fname in sorted(filenames):
            rel = (Path(dirpath) / fname).relative_to(root)
            if not fname.endswith((".ts", ".tsx")) or fname.endswith(".d.ts"):
                continue
            if any(p in EXCLUDED_DIRS or p == "__tests__" for p in rel.parts[:-1]) or re.search(r"\.(test|spec)\.tsx?$", fname):
                continue
            counts["files"] += 1
            text = (Path(dirpath) / fname).read_text(encoding="utf-8", errors="replace")
            for m in JSDOC_FN.finditer(text):
                name = m.group("f") or m.group("m") or m.group("v")
                if not name or name in TS_KEYWORDS:
                    continue
                counts["jsdoc_functions"] += 1
                doc = "\n".join(re.sub(r"^\s*\*\s?", "", ln) for ln in m.group("doc").splitlines())
                doc = "\n".join(ln for ln in doc.splitlines() if not ln.strip().startswith("@"))
                sentence = first_sentence(doc)
                words = WORD.findall(sentence)
                nw = set(subwords(name))
                content = [w for w in words if w.lower() not in STOPWORDS and not is_name_word(w.lower(), nw)]
                if len(words) >= MIN_WORDS and not PLACEHOLDER.match(sentence) and len(content) >= MIN_CONTENT_WORDS:
                    sentences[sentence.lower()] = sentences.get(sentence.lower(), 0) + 1
    counts["meaningful"] = sum(1 for n in sentences.values() if n == 1)
    return counts


def set2_query(c: Candidate) -> str | None:
    """Set 2's task text, or None when too little is left to be a fair task (fewer than
    MIN_SET2_WORDS words, or fewer than MIN_CONTENT_WORDS non-stopwords)."""
    text = strip_name_words(c.sentence, c.name)
    words = WORD.findall(text)
    content = [w for w in words if w.lower() not in STOPWORDS]
    if len(words) < MIN_SET2_WORDS or len(content) < MIN_CONTENT_WORDS:
        return None
    return text


def sample_tasks(cands: list[Candidate], corpus: str, seed: int = DEFAULT_SEED, cap: int = DEFAULT_CAP) -> list[Candidate]:
    """The corpus's task sample: at most `cap` candidates drawn with a per-corpus fixed seed,
    in (path, line) order, so the same inputs always give the same task file."""
    rng = random.Random(f"{seed}:{corpus}")
    sample = rng.sample(cands, min(cap, len(cands)))
    return sorted(sample, key=lambda c: (c.path, c.start_line))


def dedupe_sentences(cands: list[Candidate], stats: Stats) -> list[Candidate]:
    """A first sentence shared by several functions makes an ambiguous task: drop them all."""
    seen: dict[str, int] = {}
    for c in cands:
        seen[c.sentence.lower()] = seen.get(c.sentence.lower(), 0) + 1
    dup = sum(1 for c in cands if seen[c.sentence.lower()] > 1)
    if dup:
        stats.rejected["duplicate first sentence"] = dup
    return [c for c in cands if seen[c.sentence.lower()] == 1]


def jsdoc_text(comment: str) -> str:
    """The description part of a JSDoc block: markers, leading `*` and block tags removed."""
    body = comment[3:-2] if comment.startswith("/**") and comment.endswith("*/") else comment
    lines = []
    for ln in body.splitlines():
        ln = re.sub(r"^\s*\*\s?", "", ln)
        if ln.lstrip().startswith("@"):
            break  # @param, @return, @example...: the description is over
        lines.append(ln)
    text = "\n".join(lines)
    return re.sub(r"\{@(?:link|linkcode|linkplain)\s+([^}|\s]+)[^}]*\}", r"\1", text)


TS_FUNCTION_NODES = {"function_declaration", "generator_function_declaration", "method_definition"}
TS_EXCLUDED = re.compile(r"(^|/)(__tests__|tests?|docs?|examples?)/|\.(test|spec)\.tsx?$|\.d\.ts$")


def ts_module_name(rel: Path) -> str:
    parts = list(rel.with_suffix("").parts)
    if parts and parts[0] == "src":
        parts = parts[1:]
    if parts and parts[-1] == "index":
        parts = parts[:-1]
    return ".".join(parts)


def ts_candidates(corpus: str, root: Path) -> tuple[list[Candidate], Stats]:
    """Functions, methods and function-valued consts with a JSDoc block, found with
    tree-sitter (the eval venv's tree-sitter-language-pack; the engine's own analyzer is what is
    being evaluated, so it must not define the tasks). Overload signatures have no body and are
    skipped; the JSDoc must directly precede the implementation (or its `export`)."""
    from tree_sitter_language_pack import get_parser  # only in .cache/eval-venv

    stats = Stats()
    cands: list[Candidate] = []
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".ts", ".tsx") and p.is_file()):
        rel = path.relative_to(root)
        if TS_EXCLUDED.search(rel.as_posix()) or any(part.startswith(".") for part in rel.parts):
            continue
        src = path.read_bytes()
        tree = get_parser("tsx" if path.suffix == ".tsx" else "typescript").parse(src)
        mod = ts_module_name(rel)
        stack = [(tree.root_node, mod)]
        while stack:
            node, prefix = stack.pop()
            for child in node.named_children:
                decl, holder = child, child
                if child.type == "export_statement":
                    inner = child.child_by_field_name("declaration")
                    if inner is None:
                        continue
                    decl = inner
                if decl.type in ("class_declaration", "abstract_class_declaration"):
                    cname = decl.child_by_field_name("name")
                    body = decl.child_by_field_name("body")
                    if cname is not None and body is not None:
                        stack.append((body, f"{prefix}.{cname.text.decode()}"))
                    continue
                fn_name, body = None, None
                if decl.type in TS_FUNCTION_NODES:
                    n = decl.child_by_field_name("name")
                    # Computed names (`[Symbol.iterator]()`) and string keys are not identifiers
                    # anyone would search for; skip them.
                    if n is not None and n.type in ("identifier", "property_identifier", "private_property_identifier"):
                        fn_name = n.text.decode()
                    body = decl.child_by_field_name("body")
                elif decl.type in ("lexical_declaration", "variable_declaration"):
                    vars_ = [v for v in decl.named_children if v.type == "variable_declarator"]
                    if len(vars_) == 1:
                        value = vars_[0].child_by_field_name("value")
                        if value is not None and value.type in ("arrow_function", "function_expression", "function"):
                            n = vars_[0].child_by_field_name("name")
                            fn_name = n.text.decode() if n is not None else None
                            body = value.child_by_field_name("body")
                if fn_name is None or body is None:
                    continue
                stats.functions += 1
                doc = holder.prev_named_sibling
                if doc is None or doc.type != "comment" or not doc.text.startswith(b"/**"):
                    continue
                if doc.end_point[0] < holder.start_point[0] - 1:
                    continue  # a blank line between: a file or section comment, not this doc
                stats.with_docstring += 1
                if fn_name == "constructor":
                    stats.reject("constructor")
                    continue
                if body.type == "statement_block" and body.named_child_count == 0:
                    stats.reject("no body beyond the docstring")
                    continue
                sentence = first_sentence(jsdoc_text(doc.text.decode("utf-8", "replace")))
                why = sentence_rejection(sentence, fn_name)
                if why is not None:
                    stats.reject(why)
                    continue
                cands.append(Candidate(
                    corpus, rel.as_posix(), f"{prefix}.{fn_name}" if prefix else fn_name, fn_name,
                    holder.start_point[0] + 1, holder.end_point[0] + 1, (doc.start_byte, doc.end_byte),
                    (doc.start_point[0] + 1, doc.end_point[0] + 1), False, sentence,
                ))
    cands = dedupe_sentences(cands, stats)
    stats.qualifying = len(cands)
    stats.set2 = sum(1 for c in cands if set2_query(c) is not None)
    return cands, stats


def ts_available() -> bool:
    return importlib.util.find_spec("tree_sitter_language_pack") is not None


def corpus_candidates(corpus: str, root: Path) -> tuple[list[Candidate], Stats]:
    """Candidates of a fetched corpus, by its registry: PyPI -> Python, npm -> TypeScript."""
    registry = corpus_registry(root)
    if registry == "pypi":
        return python_candidates(corpus, root)
    if registry == "npm":
        return ts_candidates(corpus, root)
    raise ValueError(f"{root} is not a fetched corpus (no .acms-corpus marker)")


def task_record(c: Candidate) -> dict:
    set2 = set2_query(c)
    return {
        "id": f"{c.corpus}/{c.qualified_name}@{c.start_line}",
        "corpus": c.corpus,
        "path": c.path,
        "qualified_name": c.qualified_name,
        "start_line": c.start_line,
        "end_line": c.end_line,
        "docstring_span": list(c.doc_span),
        "query_set1": c.sentence,
        "query_set2": set2,
        "mentioned_idents": ident_mentions(c.sentence),
        "mentioned_idents_set2": ident_mentions(set2) if set2 else [],
    }


def write_stripped(root: Path, out: Path, tasks: list[Candidate]) -> None:
    """Copy `root` to `out` with every sampled docstring removed, line numbers preserved."""
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(root, out, symlinks=True)
    by_file: dict[str, list[Candidate]] = {}
    for c in tasks:
        by_file.setdefault(c.path, []).append(c)
    for rel, cands in by_file.items():
        path = out / rel
        src = path.read_bytes()
        # Replace from the end so earlier spans keep their offsets.
        for c in sorted(cands, key=lambda c: -c.doc_span[0]):
            s, e = c.doc_span
            breaks = b"\n" * src[s:e].count(b"\n")
            src = src[:s] + (b"..." if c.sole_statement else b"") + breaks + src[e:]
        if rel.endswith(".py"):
            try:
                ast.parse(src)
            except SyntaxError as err:
                # Never write a corpus the analyzers would see as broken because of us.
                raise SystemExit(f"make_tasks: stripping {rel} broke its syntax: {err}")
        path.write_bytes(src)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="corpus names (default: every fetched corpus)")
    ap.add_argument("--corpus-dir", type=Path, default=DEFAULT_CORPUS_DIR)
    ap.add_argument("--cap", type=int, default=DEFAULT_CAP, help="max tasks per corpus")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--stats", action="store_true", help="print qualifying-function counts instead of tasks")
    ap.add_argument("--write-stripped", type=Path, metavar="DIR", help="write DIR/<corpus>/ with the sampled docstrings removed")
    args = ap.parse_args()

    names = args.names
    if not names and args.corpus_dir.is_dir():
        names = sorted(p.name for p in args.corpus_dir.iterdir() if (p / ".acms-corpus").is_file())
    if not names:
        print(f"make_tasks: no corpora in {args.corpus_dir}; run scripts/fetch-corpus.sh", file=sys.stderr)
        return 1
    for name in names:
        root = args.corpus_dir / name
        registry = corpus_registry(root)
        if registry is None:
            print(f"make_tasks: {root} is not a fetched corpus; run scripts/fetch-corpus.sh {name}", file=sys.stderr)
            return 1
        if registry == "npm" and not ts_available():
            # System python: no tree-sitter. Give the regex estimate, and say how to get tasks.
            est = ts_estimate(root)
            print(
                f"make_tasks: {name}: TypeScript tasks need the eval venv "
                "(eval/peers/setup.sh; run with .cache/eval-venv/bin/python); skipped",
                file=sys.stderr,
            )
            if args.stats:
                print(
                    f"{name:14s} ts   files={est['files']:<4d} "
                    f"jsdoc_functions~{est['jsdoc_functions']:<5d} meaningful~{est['meaningful']} (regex estimate)"
                )
            continue
        lang = "ts" if registry == "npm" else "py"
        cands, stats = corpus_candidates(name, root)
        if args.stats:
            rej = ", ".join(f"{k}: {v}" for k, v in sorted(stats.rejected.items()))
            print(
                f"{name:14s} {lang}   functions={stats.functions:<5d} with_docstring={stats.with_docstring:<5d} "
                f"qualifying={stats.qualifying:<5d} set2={stats.set2:<5d} rejected: {rej}"
            )
            continue
        sample = sample_tasks(cands, name, args.seed, args.cap)
        for c in sample:
            print(json.dumps(task_record(c)))
        if args.write_stripped:
            write_stripped(root, args.write_stripped / name, sample)
            print(f"make_tasks: wrote {args.write_stripped / name} ({len(sample)} docstrings stripped)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
