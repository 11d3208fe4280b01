"""Plan-phase timings through a long-lived release `acms mcp` server (the library calls run
inside it and report their own time), for machines where the criterion-free bench binary
`cargo bench -p acms-benches --bench plan` is not built yet.

Usage: python3 scripts/bench-plan.py ACMS_BINARY REPO_COPY
Measures: phases with a no-change refresh (refresh and whole phase), phases after one edited
file, the `context` call's MCP overhead (round trip minus the library time inside the
server), and the plan database's size after 500 decisions. REPO_COPY is edited: pass a copy.
"""

import json
import os
import re
import statistics
import subprocess
import sys
import time


def pct(v, q):
    v = sorted(v)
    return v[round((len(v) - 1) * q)]


class Server:
    def __init__(self, binary, repo):
        self.p = subprocess.Popen([binary, "mcp", "--repo", repo], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.id = 0
        self.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "bench", "version": "0"}})

    def rpc(self, method, params):
        self.id += 1
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.id, "method": method,
                                       "params": params}) + "\n")
        self.p.stdin.flush()
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise SystemExit("server closed stdout")
            v = json.loads(line)
            if v.get("id") == self.id:
                return v

    def tool(self, name, args):
        t = time.perf_counter()
        v = self.rpc("tools/call", {"name": name, "arguments": args})
        ms = (time.perf_counter() - t) * 1000
        r = v["result"]
        if r.get("isError"):
            raise SystemExit(f"{name}: {r['content'][0]['text']}")
        return ms, r.get("structuredContent") or json.loads(r["content"][0]["text"])

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def refresh_ms(notes):
    for n in notes:
        if n == "refreshed 0 files before assembly (the file watch saw no change)":
            return 0, 0, 0
        m = re.match(r"refreshed (\d+) files before assembly \((\d+) (?:named by the file watch and )?checked, (\d+) ms[):]", n)
        if m:
            return int(m.group(1)), int(m.group(2)), int(m.group(3))
    raise SystemExit(f"no refresh note in {notes}")


def main(binary, repo):
    t = time.perf_counter()
    s = Server(binary, repo)
    _, started = s.tool("plan_start", {"task": "simplify the expression and collect the common factors of the polynomial"})
    plan = started["plan"]["id"]
    _, first = s.tool("plan_phase", {"plan": plan, "phase": "warm-up", "budget": 8000})
    print(f"open + index + first phase: {time.perf_counter() - t:.1f} s; "
          f"{refresh_ms(first['notes'])[1]} files checked")

    whole, refresh = [], []
    for i in range(30):
        _, d = s.tool("plan_phase", {"plan": plan, "phase": f"p{i}", "budget": 8000})
        n, _, r = refresh_ms(d["notes"])
        assert n == 0
        whole.append(d["millis"])
        refresh.append(r)
    print("| phase, nothing changed (30 runs, 8000-token budget) | p50 ms | p95 ms |")
    print("|---|---|---|")
    print(f"| refresh (walk + stat of every file; whole ms as the note rounds) | {pct(refresh, .5):.0f} | {pct(refresh, .95):.0f} |")
    print(f"| whole phase (maintenance, refresh, assembly, record) | {pct(whole, .5):.1f} | {pct(whole, .95):.1f} |")

    pys = []
    for root, dirs, files in os.walk(repo):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for f in files:
            p = os.path.join(root, f)
            if f.endswith(".py") and 2000 < os.path.getsize(p) < 60000:
                pys.append(p)
    pys.sort()
    edited = []
    edits = int(os.environ.get("ACMS_BENCH_EDITS", "10"))
    for i in range(edits):
        p = pys[(i * (len(pys) // 10)) % len(pys)]
        with open(p, "a") as fh:
            fh.write(f"\n\ndef acms_bench_edit_{i}(x):\n    return x + {i}\n")
        _, d = s.tool("plan_phase", {"plan": plan, "phase": f"e{i}", "budget": 8000})
        n, _, r = refresh_ms(d["notes"])
        assert n == 1, d["notes"]
        edited.append((d["millis"], r))
    w = [e[0] for e in edited]
    r = [e[1] for e in edited]
    print(f"| phase after one edited file ({edits} runs) | p50 ms | p95 ms |")
    print("|---|---|---|")
    print(f"| refresh: detect, re-index, reopen the engine | {pct(r, .5):.0f} | {pct(r, .95):.0f} |")
    print(f"| whole phase | {pct(w, .5):.1f} | {pct(w, .95):.1f} |")

    queries = ["simplify the expression", "collect the common factors of a polynomial",
               "solve a linear system of equations", "differentiate a trigonometric function",
               "print a matrix in LaTeX"]
    rt, over, inside = [], [], []
    for rnd in range(6):
        for q in queries:
            ms, d = s.tool("context", {"task": q, "budget": 8000})
            if rnd:
                rt.append(ms)
                inside.append(d["millis"])
                over.append(ms - d["millis"])
    print("| `context`, 8000-token budget, 25 calls | p50 ms | p95 ms |")
    print("|---|---|---|")
    print(f"| library call inside the server (`Workspace::context`) | {pct(inside, .5):.1f} | {pct(inside, .95):.1f} |")
    print(f"| MCP round trip over stdio | {pct(rt, .5):.1f} | {pct(rt, .95):.1f} |")
    print(f"| MCP overhead (round trip - library time) | {pct(over, .5):.2f} | {pct(over, .95):.2f} |")

    t = time.perf_counter()
    for i in range(500):
        if i % 10 == 0:
            if i:
                s.tool("plan_close", {"plan": plan})
            _, started = s.tool("plan_start", {"task": f"decision bench plan {i}: simplify and factor"})
            plan = started["plan"]["id"]
        s.tool("plan_phase", {"plan": plan, "phase": f"phase{i}", "budget": 2000})
        s.tool("plan_decide", {"plan": plan, "phase": f"phase{i}",
                               "notes": "a decision note of about one sentence, as agents write them"})
    took = time.perf_counter() - t
    _, h = s.tool("plan_history", {"plan": plan})
    s.close()
    db = os.path.join(repo, ".acms", "plans.sqlite")
    size = os.path.getsize(db) + (os.path.getsize(db + "-wal") if os.path.exists(db + "-wal") else 0)
    print(f"plan database after 500 decisions (+ the 41 phases above; 2000-token phases): "
          f"{size / 1e6:.2f} MB; tiers hot/warm/cold {h['memory']['hot']}/{h['memory']['warm']}/{h['memory']['cold']}; "
          f"500 x (phase + decide) in {took:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
