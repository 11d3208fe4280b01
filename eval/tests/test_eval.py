"""Tests for task generation (make_tasks.py) and the peer-map scoring helpers (run_peer.py).

Run all of them with the eval venv (it has tree-sitter, which TypeScript task generation needs):
    .cache/eval-venv/bin/python -m unittest discover -s eval/tests
Plain python3 runs the rest and reports the TypeScript class as skipped. The peers themselves
are checked by eval/peers/setup.sh (offline self-check).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import make_tasks as mt  # noqa: E402
import run_peer  # noqa: E402


def write_corpus(root: Path, files: dict[str, str], registry: str = "pypi") -> None:
    (root / ".acms-corpus").write_text(f"name=x registry={registry} package=x version=0\n")
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))


class FirstSentence(unittest.TestCase):
    def check(self, doc: str, expected: str) -> None:
        self.assertEqual(mt.first_sentence(doc), expected)

    def test_cases(self) -> None:
        self.check("Constructs and sends a :class:`Request <Request>`.\n\n:param method: x", "Constructs and sends a Request.")
        self.check("Return the thing, e.g. a dict of values. More here.", "Return the thing, e.g. a dict of values.")
        self.check("Summary line without a period\n:param x: y", "Summary line without a period")
        self.check("Parse the header\nacross two lines. Then more.", "Parse the header across two lines.")
        self.check("Build a ``Foo`` from *raw* bytes.\n\nArgs:\n  x: y", "Build a Foo from raw bytes.")
        self.check("Split the value.\nArgs:\n  x: y", "Split the value.")
        self.check("Is it done? Maybe.", "Is it done?")
        self.check("", "")


class StripNameWords(unittest.TestCase):
    def check(self, text: str, name: str, expected: str) -> None:
        self.assertEqual(mt.strip_name_words(text, name), expected)

    def test_cases(self) -> None:
        self.check("Merges the given settings into the session setting.", "merge_setting", "the given into the session.")
        self.check("Get the HTTP adapter for a URL.", "get_adapter", "the HTTP for a URL.")
        self.check("Encoding of the body, as text.", "encode", "of the body, as text.")
        self.check("Calls merge_setting() on the result.", "merge_setting", "Calls on the result.")
        self.check("Render a Console object.", "renderConsole", "a object.")
        self.check("Nothing in common here at all.", "frobnicate", "Nothing in common here at all.")


class IsNameWord(unittest.TestCase):
    def test_inflections(self) -> None:
        for word, names, expected in [
            ("encoding", {"encode"}, True),
            ("encoded", {"encode"}, True),
            ("settings", {"setting"}, True),
            ("set", {"setting"}, False),
            ("settle", {"set"}, False),
            ("adapters", {"adapter"}, True),
        ]:
            self.assertEqual(mt.is_name_word(word, names), expected, (word, names))


CORPUS = {
    "src/pkg/__init__.py": '''
        def fetch_remote_index(url, retries=3):
            """Download the package listing from a mirror and cache it on disk.

            :param url: where
            """
            return url * retries

        def short():
            """Too short here."""
            return 1

        def get_user_name(user):
            """Get the user name of the user."""
            return user.name

        def later():
            """TODO: write a proper description of this later on."""
            return 2

        def stub():
            """Compute something very important for the caller."""
            raise NotImplementedError

        class Shelf:
            def __repr__(self):
                """Show the shelf with all of its books in order."""
                return "Shelf"

            def reorder(self, key):
                """Sort the books on this shelf by the given key function."""
                self.books.sort(key=key)

            class Inner:
                def tidy(self):
                    """Remove dust from every surface of the inner shelf."""
                    return None

        def twin_a():
            """Shared words that appear twice in the corpus."""
            return 1

        def twin_b():
            """Shared words that appear twice in the corpus."""
            return 2
        ''',
    "tests/test_pkg.py": '''
        def test_fetch():
            """Fetching works when the mirror responds with a listing."""
            assert True
        ''',
    "src/pkg/broken.py": "def (:\n",
}


class Candidates(unittest.TestCase):
    def test_filters_and_names(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            write_corpus(root, CORPUS)
            cands, stats = mt.python_candidates("x", root)
            self.assertEqual(
                sorted(c.qualified_name for c in cands),
                ["pkg.Shelf.Inner.tidy", "pkg.Shelf.reorder", "pkg.fetch_remote_index"],
            )
            self.assertEqual(
                stats.rejected,
                {
                    "dunder method": 1,
                    "duplicate first sentence": 2,
                    f"first sentence < {mt.MIN_WORDS} words": 1,
                    "no body beyond the docstring": 1,
                    "placeholder / cross-reference": 1,
                    "restates the name": 1,
                },
            )
            fetch = next(c for c in cands if c.name == "fetch_remote_index")
            self.assertEqual((fetch.start_line, fetch.end_line), (2, 7))
            src = (root / fetch.path).read_bytes()
            s, e = fetch.doc_span
            self.assertTrue(src[s:e].startswith(b'"""Download') and src[s:e].endswith(b'"""'))

    def test_task_record_and_sampling_are_deterministic(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            write_corpus(root, CORPUS)
            cands, _ = mt.python_candidates("x", root)
            rec = mt.task_record(next(c for c in cands if c.name == "reorder"))
            self.assertEqual(rec["id"], "x/pkg.Shelf.reorder@30")
            self.assertEqual(rec["query_set1"], "Sort the books on this shelf by the given key function.")
            self.assertEqual(rec["query_set2"], "Sort the books on this shelf by the given key function.")
            self.assertIn("shelf", rec["mentioned_idents"])
            json.dumps(rec)  # serialisable as the harness expects
            first = [c.qualified_name for c in mt.sample_tasks(cands, "x", seed=1, cap=2)]
            self.assertEqual(first, [c.qualified_name for c in mt.sample_tasks(cands, "x", seed=1, cap=2)])
            self.assertEqual(len(first), 2)

    def test_stripped_copy_keeps_lines_and_parses(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            root, out = Path(d) / "c", Path(d) / "out"
            root.mkdir()
            write_corpus(root, CORPUS)
            cands, _ = mt.python_candidates("x", root)
            # Also a docstring that is the whole body: it must become "..." to stay valid.
            sole = mt.Candidate("x", "src/pkg/__init__.py", "pkg.short", "short", 9, 11, (0, 0), (10, 10), True, "")
            text = (root / sole.path).read_bytes()
            start = text.index(b'"""Too short')
            sole.doc_span = (start, text.index(b'"""', start + 3) + 3)
            mt.write_stripped(root, out, cands + [sole])
            before = (root / "src/pkg/__init__.py").read_text().splitlines()
            after = (out / "src/pkg/__init__.py").read_text().splitlines()
            self.assertEqual(len(before), len(after))
            ast.parse("\n".join(after))
            self.assertNotIn("Download the package listing", "\n".join(after))
            self.assertEqual(after[9].strip(), "...")
            for c in cands:  # def lines did not move
                self.assertEqual(before[c.start_line - 1], after[c.start_line - 1])
            self.assertEqual((root / "tests/test_pkg.py").read_text(), (out / "tests/test_pkg.py").read_text())


class TsEstimate(unittest.TestCase):
    def test_counts_jsdoc_functions_not_tests(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            write_corpus(
                root,
                {
                    "src/a.ts": """
                        /** Emits the last value seen when the source completes. */
                        export function last<T>(x: T): T { return x; }
                        /**
                         * Subscribes to the source and mirrors every notification.
                         * @param s the source
                         */
                        export const mirror = (s: number) => s;
                        class K {
                          /** Tear down every resource held by this subscription. */
                          public unsubscribe(): void {}
                        }
                        /** Short. */
                        function tiny() {}
                        """,
                    "src/a.test.ts": "/** Checks that the last value is emitted on complete. */\nfunction t() {}\n",
                    "src/a.d.ts": "/** Declared type only, not an implementation. */\n"
                    "export declare function d(): void;\n",
                },
                registry="npm",
            )
            self.assertEqual(mt.ts_estimate(root), {"files": 1, "jsdoc_functions": 4, "meaningful": 3})


TS_CORPUS = {
    "src/ops/map.ts": """
        /** @deprecated Use the other signature instead of this one please. */
        export function map<T>(f: (x: T) => T, thisArg: any): T[];
        /**
         * Applies a projection to each value emitted by the source, in order.
         * @param f the projection
         */
        export function map<T>(f: (x: T) => T, thisArg?: any): T[] {
          return [];
        }

        /** Builds a {@link Thing} from %%raw%% bytes read off the wire. */
        export const parseThing = (raw: Uint8Array) => new Thing(raw);

        export class Thing {
          /** Creates the thing, which is not a useful task at all. */
          constructor(raw: Uint8Array) {}
          /** Tear down every resource held by this subscription object. */
          unsubscribe(): void {
            this.closed = true;
          }
          /** Interop point for the observable spec, keyed by a symbol. */
          [Symbol_observable]() { return this; }
          /** Nothing to do in here, intentionally left empty always. */
          noop(): void {}
        }
        """,
    "src/ops/map.test.ts": "/** Checks the projection of each value in the source. */\nfunction t() { return 1; }\n",
}


@unittest.skipUnless(mt.ts_available(), "needs tree-sitter: run under .cache/eval-venv/bin/python (eval/peers/setup.sh)")
class TsCandidates(unittest.TestCase):
    def test_filters_names_and_stripping(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            root, out = Path(d) / "c", Path(d) / "out"
            root.mkdir()
            write_corpus(root, TS_CORPUS, registry="npm")
            cands, stats = mt.corpus_candidates("x", root)
            by_name = {c.qualified_name: c for c in cands}
            self.assertEqual(sorted(by_name), ["ops.map.Thing.unsubscribe", "ops.map.map", "ops.map.parseThing"])
            self.assertEqual(stats.rejected, {"constructor": 1, "no body beyond the docstring": 1})
            self.assertEqual(
                by_name["ops.map.map"].sentence, "Applies a projection to each value emitted by the source, in order."
            )
            self.assertEqual(by_name["ops.map.parseThing"].sentence, "Builds a Thing from raw bytes read off the wire.")
            self.assertEqual((by_name["ops.map.map"].start_line, by_name["ops.map.map"].end_line), (8, 10))
            mt.write_stripped(root, out, cands)
            before = (root / "src/ops/map.ts").read_text().splitlines()
            after = (out / "src/ops/map.ts").read_text().splitlines()
            self.assertEqual(len(before), len(after))
            self.assertNotIn("Applies a projection", "\n".join(after))
            self.assertIn("@deprecated", "\n".join(after))  # only sampled docs are removed


@unittest.skipUnless(
    importlib.util.find_spec("rank_bm25") is not None, "needs rank_bm25/tiktoken: run under .cache/eval-venv/bin/python"
)
class Bm25Packing(unittest.TestCase):
    def test_stop_and_first_fit_respect_the_budget(self) -> None:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "peers"))
        import bm25_files
        import common

        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            big = "def parse_header(value):\n" + "    header = header_value + parse(value)\n" * 60
            write_corpus(root, {"big.py": big, "small.py": "def parse_header_list(x):\n    return x\n",
                                "other.txt": "nothing relevant lives here\n"})
            counter = common.Cl100kCounter()
            task = {"id": "t", "repo": d, "query": "parse the header", "mentioned_idents": [], "budget": 100}
            for first_fit, expected_files in [(False, []), (True, ["small.py"])]:
                peer = bm25_files.Bm25Peer(counter, first_fit)
                peer.prepare(task)
                text = peer.handle(task)
                self.assertLessEqual(counter.token_count(text), 100)
                self.assertEqual([ln[:-1] for ln in text.splitlines() if ln.endswith(".py:")], expected_files)
            # A budget that fits everything relevant packs by score, and never the 0-score file.
            peer = bm25_files.Bm25Peer(counter, False)
            peer.prepare(task)
            packed = peer.handle(dict(task, budget=100_000))
            self.assertTrue(packed.startswith("big.py:") or packed.startswith("small.py:"))
            self.assertNotIn("other.txt:", packed)

    def test_tokenize_splits_identifiers(self) -> None:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "peers"))
        import bm25_files

        self.assertEqual(bm25_files.tokenize("HTTPAdapter merge_setting x"),
                         ["httpadapter", "http", "adapter", "merge_setting", "merge", "setting", "x"])


class PeerScoring(unittest.TestCase):
    def test_symbol_pattern(self) -> None:
        for line, name, is_ts, expected in [
            ("    def merge_setting(a, b):", "merge_setting", False, True),
            ("merge_setting(a, b)", "merge_setting", False, False),
            ("export function map<T, R>(project: P): O {", "map", True, True),
            ("  public async unsubscribe(): void {", "unsubscribe", True, True),
            ("export const parseThing = (raw) => x;", "parseThing", True, True),
            ("  const y = parseThing(raw);", "parseThing", True, False),
        ]:
            self.assertEqual(re.search(run_peer.symbol_pattern(name, is_ts), line) is not None, expected, line)

    def test_file_blocks(self) -> None:
        text = "\nsrc/a.py:\n⋮\n│def f(x):\n⋮\n\nsrc/b.py:\ndef g():\n    return 1\nnot/a/file.py:\n"
        blocks = run_peer.file_blocks(text, {"src/a.py", "src/b.py"})
        self.assertEqual(blocks["src/a.py"], "⋮\ndef f(x):\n⋮\n")
        self.assertEqual(blocks["src/b.py"], "def g():\n    return 1\nnot/a/file.py:")

    def test_lines_in_order(self) -> None:
        for needles, hay, expected in [
            (["a", "b"], ["a", "x", "b"], True),
            (["b", "a"], ["a", "x", "b"], False),
            ([], ["a"], True),
            (["a", "a"], ["a"], False),
        ]:
            self.assertEqual(run_peer.lines_in_order(needles, hay), expected, (needles, hay))

    def test_percentile(self) -> None:
        self.assertEqual(run_peer.percentile([3.0, 1.0, 2.0], 0.5), 2.0)
        self.assertEqual(run_peer.percentile([], 0.95), 0.0)


if __name__ == "__main__":
    unittest.main()
