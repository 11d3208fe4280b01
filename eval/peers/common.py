"""Shared plumbing for the peer scripts: offline setup, exact token counting, corpus file
listing and the JSON-lines task loop.

Owns: the environment that keeps the peers off the network, the cl100k_base counter (the same
BPE and the same "ordinary" encoding, no special tokens, as the engine's TokenCounter), and the
stdin/stdout contract shared by every peer:

    in : {"id", "repo", "query", "mentioned_idents": [...], "budget"}  one task per line
    out: {"id", "map", "seconds", "tokens"}                             one result per line
         ({"id", "map": "", "error": "..."} when a task cannot be served)

Does not own: ranking or packing (each peer script), scoring (the Rust harness recounts every
map with the engine's own tokenizer and decides hits).

Run `python common.py --self-check` to verify the offline setup (eval/peers/setup.sh does).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from typing import Callable, Iterable

# tiktoken names its cache files by the SHA-1 of the BPE's download URL; this is cl100k_base's.
# litellm ships that exact file, and tiktoken checks the content's SHA-256 when it loads it, so a
# wrong or truncated copy fails loudly instead of producing different counts.
CL100K_CACHE_KEY = "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"

# Directories no peer should see: VCS and tool state, build output, dependency trees, and the
# engine's own index dir (which would otherwise be "retrieved" as if it were source).
SKIP_DIRS = {".git", ".hg", ".svn", ".acms", "node_modules", "__pycache__", "dist", "build"}


def fixed_hash_seed() -> None:
    """Re-exec the interpreter with PYTHONHASHSEED=0 unless it is already set that way.

    Aider's RepoMap iterates sets of identifiers and tags while building its graph, so with
    Python's per-process string hashing the same task gives a (slightly) different map from one
    run to the next. A fixed seed makes every peer result reproducible.
    """
    if os.environ.get("PYTHONHASHSEED") != "0":
        env = dict(os.environ, PYTHONHASHSEED="0")
        os.execve(sys.executable, [sys.executable, *sys.argv], env)


def offline_env() -> None:
    """Point tiktoken at litellm's bundled BPE and disable every phone-home we know of.

    Must run before tiktoken, litellm or aider are imported. We locate litellm's package dir
    without importing it: importing litellm itself fetches a model-cost map from the network.
    """
    spec = importlib.util.find_spec("litellm")
    if spec is None or spec.origin is None:
        raise SystemExit("litellm is not installed: run eval/peers/setup.sh")
    bpe_dir = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
    if not (bpe_dir / CL100K_CACHE_KEY).is_file():
        # Without the file tiktoken would try to download it; fail instead, with the reason.
        raise SystemExit(f"cl100k_base BPE not found in {bpe_dir}; litellm layout changed?")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(bpe_dir)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("AIDER_ANALYTICS", "false")
    os.environ.setdefault("AIDER_CHECK_UPDATE", "false")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


class Cl100kCounter:
    """Exact cl100k_base token counts; also serves as Aider's `main_model` (it only calls
    `token_count`)."""

    def __init__(self) -> None:
        import tiktoken

        self._enc = tiktoken.get_encoding("cl100k_base")

    def token_count(self, text: str) -> int:
        # encode_ordinary: special-token text such as "<|endoftext|>" in a corpus counts as plain
        # text, exactly like the engine's tiktoken-rs `encode_ordinary`.
        return len(self._enc.encode_ordinary(text))


def list_files(root: Path) -> list[Path]:
    """Every regular file under `root`, sorted, skipping hidden entries and SKIP_DIRS.

    Hidden files are skipped so a corpus marker (`.acms-corpus`) or tool caches never count.
    """
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            if not name.startswith("."):
                p = Path(dirpath) / name
                if p.is_file() and not p.is_symlink():
                    out.append(p)
    return out


def read_text(path: Path) -> str | None:
    """File text as UTF-8, or None for binary / undecodable files (peers skip those)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def serve(
    handle: Callable[[dict], str],
    counter: Cl100kCounter,
    lines: Iterable[str],
    prepare: Callable[[dict], None] | None = None,
) -> int:
    """Run `handle(task) -> map text` for each JSON task line; print one JSON result per line.

    `prepare(task)` runs first and untimed: per-repo setup (parsing, index building) is the
    peer's index time, logged by the peer, and must not inflate the first task's `seconds`.

    Library chatter (Aider prints progress) is sent to stderr by swapping sys.stdout while a
    task runs, so stdout carries only results. Returns the number of failed tasks; a failing
    task still produces a result line (with "error") so the harness can count it.
    """
    real_stdout = sys.stdout
    failed = 0
    for lineno, line in enumerate(lines, 1):
        line = line.strip()
        if not line:
            continue
        try:
            task = json.loads(line)
            task_id = task["id"]
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            log(f"stdin line {lineno}: not a task ({e}); skipped")
            failed += 1
            continue
        result: dict = {"id": task_id}
        sys.stdout = sys.stderr
        try:
            if prepare is not None:
                prepare(task)
            start = time.perf_counter()
            text = handle(task)
            result["seconds"] = round(time.perf_counter() - start, 6)
            result["map"] = text
            result["tokens"] = counter.token_count(text)
        except Exception as e:  # one bad task must not end the run: report it and go on
            failed += 1
            result.update(map="", tokens=0, error=f"{type(e).__name__}: {e}")
        finally:
            sys.stdout = real_stdout
        real_stdout.write(json.dumps(result) + "\n")
        real_stdout.flush()
    return failed


def _self_check() -> None:
    offline_env()
    counter = Cl100kCounter()
    # "hello world" = 2 is also asserted by the engine's tiktoken-rs tests; the special-token
    # string must count as 7 plain-text tokens, not as one special token.
    for text, want in [("hello world", 2), ("", 0), ("<|endoftext|>", 7)]:
        got = counter.token_count(text)
        if got != want:
            raise SystemExit(f"self-check: cl100k count of {text!r} is {got}, expected {want}")
    from tree_sitter_language_pack import get_parser

    for lang, src in [("python", b"def f():\n    pass\n"), ("typescript", b"function f(): void {}\n")]:
        if get_parser(lang).parse(src).root_node.has_error:
            raise SystemExit(f"self-check: {lang} grammar failed to parse a trivial file")
    from aider.repomap import RepoMap  # noqa: F401  (import must work offline)

    log("peers self-check ok: cl100k_base offline, python/typescript grammars, aider.repomap")


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-check"]:
        _self_check()
    else:
        raise SystemExit("usage: common.py --self-check")
