"""Peer: naive BM25 over whole files, packed greedily into the token budget.

Owns: the "what would plain keyword search over files give you" baseline. Every text file of
the repo (UTF-8, no NUL bytes, at most 1 MB, hidden and vendored dirs skipped) is one BM25
document (rank_bm25's Okapi BM25, default k1/b). Files are ranked by score for the task's query
plus its mentioned identifiers, and packed whole, best first, each as "<relative path>:\\n<text>",
until the next file would exceed the budget (the default, as this peer was specified) or, with
--first-fit, skipping files that do not fit and going on down the ranking. Files scoring 0 are
never packed.

Does not own: snippet extraction or any structure (that is exactly what it is a baseline for),
nor scoring. The packed text never exceeds the budget in exact cl100k_base tokens: the final
text is recounted and trimmed, not estimated.

Usage: .cache/eval-venv/bin/python eval/peers/bm25_files.py [--first-fit] < tasks.jsonl
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

common.offline_env()

from rank_bm25 import BM25Okapi  # noqa: E402

MAX_FILE_BYTES = 1 << 20
WORD = re.compile(r"[A-Za-z0-9_]+")
# Split identifiers into sub-words: HTTPAdapter -> HTTP, Adapter; merge_setting -> merge, setting.
SUBWORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def tokenize(text: str) -> list[str]:
    """Lower-cased words plus their identifier sub-words, so "mergeSetting" in a query matches
    both "merge_setting" and "merge" in code."""
    out: list[str] = []
    for word in WORD.findall(text):
        low = word.lower()
        out.append(low)
        parts = [p.lower() for p in SUBWORD.findall(word)]
        if len(parts) > 1:
            out.extend(parts)
    return out


class Bm25Peer:
    def __init__(self, counter: common.Cl100kCounter, first_fit: bool) -> None:
        self.counter = counter
        self.first_fit = first_fit
        # repo -> (bm25, [(block text, block tokens)])
        self.repos: dict[Path, tuple[BM25Okapi, list[tuple[str, int]]]] = {}

    def prepare(self, task: dict) -> None:
        repo = Path(task["repo"]).resolve()
        if repo in self.repos:
            return
        if not repo.is_dir():
            raise FileNotFoundError(f"repo {repo} is not a directory")
        start = time.perf_counter()
        docs: list[list[str]] = []
        blocks: list[tuple[str, int]] = []
        for path in common.list_files(repo):
            try:
                if path.stat().st_size > MAX_FILE_BYTES:
                    continue
            except OSError:
                continue
            text = common.read_text(path)
            if text is None:
                continue
            rel = path.relative_to(repo).as_posix()
            block = f"{rel}:\n{text}" + ("" if text.endswith("\n") else "\n")
            # The path is part of the document: a query naming a module should find its file.
            docs.append(tokenize(rel + "\n" + text))
            blocks.append((block, self.counter.token_count(block)))
        if not docs:
            raise ValueError(f"repo {repo} has no text files")
        self.repos[repo] = (BM25Okapi(docs), blocks)
        common.log(
            f"bm25: {repo}: {len(docs)} files indexed in {time.perf_counter() - start:.2f}s"
        )

    def handle(self, task: dict) -> str:
        repo = Path(task["repo"]).resolve()
        budget = int(task["budget"])
        bm25, blocks = self.repos[repo]
        query = tokenize(" ".join([str(task.get("query", ""))] + list(task.get("mentioned_idents") or [])))
        if budget <= 0 or not query:
            return ""
        scores = bm25.get_scores(query)
        ranked = sorted(range(len(blocks)), key=lambda i: (-scores[i], i))
        chosen: list[int] = []
        used = 0
        for i in ranked:
            if scores[i] <= 0:
                break
            block, tokens = blocks[i]
            # Each block ends in a newline and starts with a path, and cl100k's pre-tokenizer
            # never merges across that boundary, so per-block counts add up; the exact recount
            # below guards the budget anyway.
            if used + tokens > budget:
                if self.first_fit:
                    continue
                break
            chosen.append(i)
            used += tokens
        text = "".join(blocks[i][0] for i in chosen)
        while chosen and self.counter.token_count(text) > budget:
            chosen.pop()
            text = "".join(blocks[i][0] for i in chosen)
        return text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--first-fit", action="store_true", help="skip files that do not fit instead of stopping")
    args = ap.parse_args()
    counter = common.Cl100kCounter()
    peer = Bm25Peer(counter, args.first_fit)
    failed = common.serve(peer.handle, counter, sys.stdin, prepare=peer.prepare)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
