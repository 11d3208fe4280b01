"""A warm `acms mcp` as an agent host drives it (issue 38, docs/BENCHMARKS.md "Monorepo"): seconds
from spawn to the `initialize` answer, to the first `context` result, then the latency of N more
`context` calls on the same server (p50 / p95 / max, ms), over raw JSON-RPC on stdio.

With --edit FILE (repository-relative, a Python file) it then appends a function to FILE before
each of --edits more calls and reports their latency (refresh of one file + assembly), and
puts FILE back as it was at the end. With --create as well, each of those calls follows a new
file beside FILE instead (removed at the end).

Usage: python3 scripts/bench-mcp-warm.py ACMS_BINARY REPO [--index DIR] [--calls N] [--budget T]
                                         [--edit FILE] [--edits N] [--create]
"""

import argparse
import json
import os
import statistics
import subprocess
import time

TASKS = [
    "sympy simplify returns a wrong result for trigonometric expressions with rational powers",
    "clap derive: default_value_t is ignored when the argument is also marked required",
    "xarray Dataset.to_netcdf fails when a variable has an empty attribute dictionary",
    "requests Session does not strip the Authorization header on a redirect to another host",
    "jackson-databind ObjectMapper fails to deserialize a record with a JsonCreator constructor",
    "svelte compiler crashes on an each block with a destructured key",
    "ripgrep --glob with a negated pattern still searches hidden directories",
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("acms")
    ap.add_argument("repo")
    ap.add_argument("--index")
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--budget", type=int, default=16000)
    ap.add_argument("--edit")
    ap.add_argument("--edits", type=int, default=5)
    ap.add_argument("--create", action="store_true")
    a = ap.parse_args()
    cmd = [a.acms, "mcp", "--repo", a.repo] + (["--index", a.index] if a.index else [])
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)

    def call(i, method, params):
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method,
                                  "params": params}) + "\n")
        p.stdin.flush()
        while True:
            msg = json.loads(p.stdout.readline())
            if msg.get("id") == i:
                if "error" in msg or msg.get("result", {}).get("isError"):
                    raise SystemExit(f"{method} failed: {json.dumps(msg)[:500]}")
                return msg

    call(1, "initialize", {"protocolVersion": "2025-03-26", "capabilities": {},
                           "clientInfo": {"name": "bench", "version": "0"}})
    t1 = time.monotonic()
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    times = []
    for n in range(a.calls + 1):
        s = time.monotonic()
        call(2 + n, "tools/call", {"name": "context", "arguments": {
            "task": TASKS[n % len(TASKS)], "budget": a.budget}})
        times.append((time.monotonic() - s) * 1000)
    warm = sorted(times[1:])
    p95 = warm[min(len(warm) - 1, round(0.95 * (len(warm) - 1)))]
    print(f"mcp: initialize {t1 - t0:.2f} s; first context {times[0] / 1000:.2f} s; "
          f"{len(warm)} warm context calls at {a.budget}: p50 {statistics.median(warm):.0f} ms, "
          f"p95 {p95:.0f} ms, max {warm[-1]:.0f} ms")
    if a.edit:
        path = os.path.join(a.repo, a.edit)
        original = open(path, "rb").read()
        created = []
        edited = []
        try:
            for n in range(a.edits):
                target = path
                if a.create:
                    target = os.path.join(os.path.dirname(path), f"bench_new_{n}.py")
                    created.append(target)
                with open(target, "a") as f:
                    f.write(f"\n\ndef bench_edit_{n}(value):\n    return value + {n}\n")
                s = time.monotonic()
                msg = call(100 + n, "tools/call", {"name": "context", "arguments": {
                    "task": TASKS[n % len(TASKS)], "budget": a.budget}})
                edited.append((time.monotonic() - s) * 1000)
                out = msg["result"].get("structuredContent") or {}
                refreshed = out.get("refreshed")
                if os.environ.get("BENCH_NOTES"):
                    print([n for n in out.get("notes", []) if "refresh" in n])
                if refreshed != 1:
                    raise SystemExit(f"edit {n}: refreshed {refreshed}, expected 1")
        finally:
            open(path, "wb").write(original)
            for c in created:
                os.remove(c)
        print(f"{len(edited)} calls after one {'new' if a.create else 'edited'} file each: p50 "
              f"{statistics.median(edited):.0f} ms, max {max(edited):.0f} ms "
              f"(in call order: {', '.join(f'{t:.0f}' for t in edited)})")
    p.stdin.close()
    p.wait(timeout=60)


if __name__ == "__main__":
    main()
