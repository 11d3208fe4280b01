"""Peer: Aider's repository map (aider-chat's `RepoMap`) at a fixed token budget.

Owns: driving `aider.repomap.RepoMap` the way the evaluation specifies: `map_tokens` = the
task's budget, the task's identifiers as `mentioned_idents`, no chat files, every corpus file as
an "other" file, no `max_context_window` (with one, Aider multiplies the budget by 8 when the
chat is empty, which would not be the budget we compare at). One RepoMap per repo, reused across
tasks, with its tags cache under .cache/aider-tags/ instead of inside the corpus.

Does not own: token budgeting accuracy. Aider estimates tokens by sampling lines and accepts a
map within 15% of the budget, over or under; we report its exact cl100k count ("tokens") and the
harness counts violations. Nor does it decide hits: the harness does.

Usage: .cache/eval-venv/bin/python eval/peers/aider_map.py < tasks.jsonl > maps.jsonl
       (task "repo" is a path; relative paths are taken from the current directory)
Env:   ACMS_AIDER_CACHE  tags cache root (default <repo>/.cache/aider-tags)
"""

from __future__ import annotations

import hashlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402

common.fixed_hash_seed()
common.offline_env()

import os  # noqa: E402

from aider.repomap import RepoMap  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]
CACHE_ROOT = Path(os.environ.get("ACMS_AIDER_CACHE", REPO_ROOT / ".cache" / "aider-tags"))


class StderrIO:
    """The slice of Aider's InputOutput that RepoMap calls: messages go to stderr."""

    def tool_output(self, *args, **_kw) -> None:
        common.log(" ".join(str(a) for a in args))

    tool_warning = tool_output
    tool_error = tool_output

    def read_text(self, fname) -> str | None:
        return common.read_text(Path(fname))


class CachedRepoMap(RepoMap):
    """RepoMap whose tags cache lives outside the corpus, so the corpus an engine indexes is
    never polluted with Aider's sqlite files."""

    def __init__(self, cache_dir: Path, **kw) -> None:
        # RepoMap opens Path(root) / TAGS_CACHE_DIR in __init__; an absolute path wins the join.
        self.TAGS_CACHE_DIR = str(cache_dir)
        super().__init__(**kw)

    def _run_captures(self, query, node):
        """Aider's captures, in source order.

        py-tree-sitter 0.25 returns each capture's node list in an order that changes from call
        to call, and Aider's get_tags_raw appends the *last* node of every list a second time,
        so which tag gets double weight, and with it the map, varied between runs on identical
        input. Sorting restores reproducibility without changing what Aider extracts.
        """
        caps = super()._run_captures(query, node)
        return {
            tag: sorted(nodes, key=lambda n: (n.start_byte, n.end_byte))
            for tag, nodes in sorted(caps.items())
        }


class AiderPeer:
    def __init__(self, counter: common.Cl100kCounter) -> None:
        self.counter = counter
        self.io = StderrIO()
        self.maps: dict[Path, tuple[CachedRepoMap, list[str]]] = {}

    def repo_map(self, repo: Path) -> tuple[CachedRepoMap, list[str]]:
        if repo in self.maps:
            return self.maps[repo]
        if not repo.is_dir():
            raise FileNotFoundError(f"repo {repo} is not a directory")
        key = hashlib.sha1(str(repo).encode()).hexdigest()[:12]
        # "sorted": tags cached by an unpatched run (see _run_captures) must not be reused.
        cache_dir = CACHE_ROOT / f"{repo.name}-{key}-sorted"
        cache_dir.parent.mkdir(parents=True, exist_ok=True)
        rm = CachedRepoMap(
            cache_dir,
            map_tokens=1024,
            root=str(repo),
            main_model=self.counter,
            io=self.io,
            max_context_window=None,
            # "always": recompute the ranking for every task, so `seconds` is a real per-query
            # cost and not a hit in RepoMap's in-memory map cache.
            refresh="always",
        )
        files = [str(p) for p in common.list_files(repo)]
        # Warm the tags cache once per repo (Aider's "initial repo scan"); this is its index
        # time, reported separately so per-task seconds measure querying only.
        start = time.perf_counter()
        for f in files:
            rm.get_tags(f, rm.get_rel_fname(f))
        # One throw-away map pays Aider's lazy costs (networkx/scipy imports, per-file tree
        # contexts) up front, as in a long-running Aider session.
        rm.get_repo_map(chat_files=[], other_files=files, force_refresh=True)
        common.log(
            f"aider: {repo}: {len(files)} files, ready in {time.perf_counter() - start:.2f}s"
        )
        self.maps[repo] = (rm, files)
        return rm, files

    def prepare(self, task: dict) -> None:
        self.repo_map(Path(task["repo"]).resolve())

    def handle(self, task: dict) -> str:
        repo = Path(task["repo"]).resolve()
        budget = int(task["budget"])
        if budget <= 0:
            return ""
        rm, files = self.repo_map(repo)
        rm.max_map_tokens = budget
        idents = {str(i) for i in task.get("mentioned_idents") or []}
        text = rm.get_repo_map(
            chat_files=[],
            other_files=files,
            mentioned_fnames=set(),
            mentioned_idents=idents,
            force_refresh=True,
        )
        return text or ""


def main() -> int:
    counter = common.Cl100kCounter()
    peer = AiderPeer(counter)
    failed = common.serve(peer.handle, counter, sys.stdin, prepare=peer.prepare)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
