#!/usr/bin/env python3
"""Run one peer (Aider's repo map or BM25 files) on a corpus's tasks and print a rough score.

Owns: the end-to-end peer baseline that needs no acms: make the tasks (eval/make_tasks.py),
write the stripped copy of the corpus, feed the peer one task per (task, budget), and score
the maps it returns. This is the first peer baseline; the Rust harness will replace the scoring
with the engine's exact tokenizer and its symbol/code-visible definitions.

Python and TypeScript corpora alike (TypeScript task generation needs tree-sitter, so the
script re-runs itself under the venv python when a TypeScript corpus is asked for).

Scores (per budget):
  over budget   maps whose exact cl100k_base count (the peer's "tokens") exceeds the budget
  name hit      the function's simple name occurs as a word anywhere in the map
  symbol hit    the map has the target file's block ("<path>:" line) and, inside it, the
                function's declaration line (`def <name>`; TS: `function <name>(`, `<name>(`,
                `<name> =`), i.e. its signature is visible
  code hit      every non-blank line of the function (stripped copy) is in that block, in order

Does not own: the peers themselves (eval/peers/), task selection rules (make_tasks.py).

Usage: eval/run_peer.py [--peer aider,bm25,bm25-first-fit] [--corpus requests,click,...]
                        [--tasks 20] [--budgets 2000,4000,8000] [--set 1,2]
       Fetches missing corpora and builds the peers' venv on first use (one command from a
       clean clone); prints one markdown table per (corpus, peer, set).
Env:   ACMS_EVAL_PYTHON  the venv python (default <repo>/.cache/eval-venv/bin/python,
                         created by eval/peers/setup.sh)
Standard library only; raw results go to .cache/eval/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_tasks  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
WORK = REPO_ROOT / ".cache" / "eval"
PEERS = {
    "aider": ["aider_map.py"],
    "bm25": ["bm25_files.py"],
    "bm25-first-fit": ["bm25_files.py", "--first-fit"],
}


def file_blocks(text: str, files: set[str]) -> dict[str, str]:
    """Split a map into per-file blocks at lines that are exactly "<corpus file path>:".

    Both peers introduce a file that way; Aider prefixes its content lines with "│", which is
    removed so block lines compare with source lines.
    """
    blocks: dict[str, list[str]] = {}
    cur: list[str] | None = None
    for line in text.splitlines():
        if line.endswith(":") and line[:-1] in files:
            cur = blocks.setdefault(line[:-1], [])
            continue
        if cur is not None:
            cur.append(line[1:] if line.startswith("│") else line)
    return {k: "\n".join(v) for k, v in blocks.items()}


def symbol_pattern(name: str, is_ts: bool) -> str:
    """A regex for the function's declaration line: `def name` in Python; in TypeScript
    `function name(`, a method `name(` / `name<T>(`, or `name = ` for function-valued consts."""
    n = re.escape(name)
    if is_ts:
        return rf"(?m)^\s*(?:[\w@]+\s+)*{n}\s*(?:<[^>\n]*>)?\s*(?:\(|=|:)"
    return rf"\bdef\s+{n}\b"


def lines_in_order(needles: list[str], hay: list[str]) -> bool:
    it = iter(hay)
    return all(any(n == h for h in it) for n in needles)


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))] if xs else 0.0


def ensure_ready(corpus: str, python: str) -> None:
    """From a clean clone: fetch the corpus and build the peers' venv when they are missing."""
    root = make_tasks.DEFAULT_CORPUS_DIR / corpus
    if make_tasks.corpus_registry(root) is None:
        # Progress to stderr: stdout carries only the result tables.
        subprocess.run([str(REPO_ROOT / "scripts" / "fetch-corpus.sh"), corpus], check=True, stdout=sys.stderr)
    if not Path(python).exists():
        subprocess.run([str(REPO_ROOT / "eval" / "peers" / "setup.sh")], check=True, stdout=subprocess.DEVNULL)


def run_one(peer: str, corpus: str, task_set: str, n_tasks: int, budgets: list[int], seed: int, python: str) -> int:
    root = make_tasks.DEFAULT_CORPUS_DIR / corpus
    cands, _ = make_tasks.corpus_candidates(corpus, root)
    is_ts = make_tasks.corpus_registry(root) == "npm"
    # The same sample make_tasks.py prints (same seed and cap), then N of it: the stripped copy
    # must match the full task file the harness uses.
    sample = make_tasks.sample_tasks(cands, corpus, seed)
    stripped = WORK / "stripped" / corpus
    make_tasks.write_stripped(root, stripped, sample)
    records = [make_tasks.task_record(c) for c in sample]
    key = "query_set1" if task_set == "1" else "query_set2"
    idents_key = "mentioned_idents" if task_set == "1" else "mentioned_idents_set2"
    records = [r for r in records if r[key]]
    chosen = random.Random(f"{seed}:pick:{corpus}").sample(records, min(n_tasks, len(records)))

    peer_in = []
    for r in chosen:
        for b in budgets:
            peer_in.append(
                {"id": f"{r['id']}#{b}", "repo": str(stripped), "query": r[key],
                 "mentioned_idents": r[idents_key], "budget": b}
            )
    peer_script = PEERS[peer]
    cmd = [python, str(REPO_ROOT / "eval" / "peers" / peer_script[0]), *peer_script[1:]]
    proc = subprocess.run(cmd, input="".join(json.dumps(t) + "\n" for t in peer_in), capture_output=True, text=True)
    sys.stderr.write(proc.stderr[-2000:])
    results = {}
    for line in proc.stdout.splitlines():
        r = json.loads(line)
        results[r["id"]] = r
    out_dir = WORK / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    raw = out_dir / f"{peer}-{corpus}-set{task_set}.jsonl"
    raw.write_text(proc.stdout)

    files = {p.relative_to(stripped).as_posix() for p in stripped.rglob("*") if p.is_file()}
    print(f"\npeer={peer} corpus={corpus} set={task_set} tasks={len(chosen)} (raw: {raw.relative_to(REPO_ROOT)})\n")
    print("| budget | maps | errors | mean tokens | max tokens | over budget | p50 s | p95 s "
          "| name hit | symbol hit | code hit |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for b in budgets:
        toks, secs, errors, over, name_hit, sym_hit, code_hit = [], [], 0, 0, 0, 0, 0
        for r in chosen:
            res = results.get(f"{r['id']}#{b}")
            if res is None or "error" in res:
                errors += 1
                continue
            text = res["map"]
            toks.append(res["tokens"])
            secs.append(res["seconds"])
            over += res["tokens"] > b
            name = r["qualified_name"].rsplit(".", 1)[-1]
            name_hit += re.search(rf"\b{re.escape(name)}\b", text) is not None
            block = file_blocks(text, files).get(r["path"], "")
            if re.search(symbol_pattern(name, is_ts), block):
                sym_hit += 1
                src = (stripped / r["path"]).read_text(encoding="utf-8").splitlines()
                fn_lines = [ln for ln in src[r["start_line"] - 1:r["end_line"]] if ln.strip()]
                code_hit += lines_in_order(fn_lines, block.splitlines())
        n = max(len(chosen), 1)
        mean = statistics.mean(toks) if toks else 0
        print(
            f"| {b} | {len(chosen) - errors} | {errors} | {mean:.0f} | {max(toks, default=0)} | {over} "
            f"| {percentile(secs, 0.5):.3f} | {percentile(secs, 0.95):.3f} "
            f"| {name_hit / n:.2f} | {sym_hit / n:.2f} | {code_hit / n:.2f} |"
        )
    sys.stdout.flush()
    return proc.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer", default="aider", help=f"comma list of {sorted(PEERS)}")
    ap.add_argument("--corpus", default="requests", help="comma list of corpus names")
    ap.add_argument("--tasks", type=int, default=20)
    ap.add_argument("--budgets", default="2000,4000,8000")
    ap.add_argument("--set", default="1", help="task set(s): 1, 2 or 1,2")
    ap.add_argument("--seed", type=int, default=make_tasks.DEFAULT_SEED)
    args = ap.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]
    peers = args.peer.split(",")
    sets = args.set.split(",")
    for p in peers:
        if p not in PEERS:
            ap.error(f"unknown peer {p!r}; choose from {sorted(PEERS)}")
    for s in sets:
        if s not in ("1", "2"):
            ap.error(f"unknown task set {s!r}")
    python = os.environ.get("ACMS_EVAL_PYTHON", str(REPO_ROOT / ".cache" / "eval-venv" / "bin" / "python"))
    corpora = args.corpus.split(",")
    for corpus in corpora:
        ensure_ready(corpus, python)
    if not make_tasks.ts_available() and any(
        make_tasks.corpus_registry(make_tasks.DEFAULT_CORPUS_DIR / c) == "npm" for c in corpora
    ):
        # TypeScript tasks come from tree-sitter, which only the eval venv has: continue there.
        os.execv(python, [python, str(Path(__file__).resolve()), *sys.argv[1:]])
    failed = 0
    for corpus in corpora:
        for peer in peers:
            for s in sets:
                failed += run_one(peer, corpus, s, args.tasks, budgets, args.seed, python) != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
