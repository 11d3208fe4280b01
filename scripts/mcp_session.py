"""`acms mcp` driven as an agent host drives it, with the official Python SDK client (`mcp`
from PyPI), started exactly as the README's MCP section says.

1. The README's commands: the Claude Code line (`claude mcp add acms -- ...`) gives a command
   and its arguments; the `--print-config` line prints a host configuration, which must hold
   absolute paths and the shape of the README's example. `$HOME/.cargo/bin/acms` and
   `~/.cargo/bin/acms` (where the install step puts the binary) stand for ACMS_BINARY, `$PWD`
   and `/path/to/your/repository` for the repository: nothing else is changed.
2. Start-up on an unindexed repository (START_REPO), launched from the printed configuration:
   `initialize` within 1 s, log messages about indexing, and a `context` call made at once
   that gets progress notifications and then its answer, within its budget.
3. Every tool on SHOP_REPO (also unindexed), launched from the Claude Code line: annotations
   and output schemas (the SDK checks every structured result against its tool's schema),
   each result within its documented bound (exact cl100k counts), every bad argument of
   issue 39 answered with an error naming the field, and the ids the text shows accepted.

Usage: python mcp_session.py ACMS_BINARY README START_REPO SHOP_REPO SERVER_LOG
Exits non-zero (with the reason) on any mismatch.
"""

import asyncio
import json
import os
import re
import shlex
import subprocess
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from mcp_tokens import count_tokens

EXPECTED = {
    "compact", "context", "expand", "plan_child", "plan_close", "plan_decide",
    "plan_history", "plan_phase", "plan_start", "search",
}
READ_ONLY = {"compact", "context", "expand", "plan_history", "search"}
# The documented bounds (README, tool descriptions).
STATUS_BLOCK = 400
SMALL_RESULT = 1000
DEFAULT_MAX_TOKENS = 4000


def check(cond, what):
    if not cond:
        raise SystemExit(f"mcp_session.py: {what}")


def texts(result):
    return [c.text for c in result.content if getattr(c, "type", "") == "text"]


def text_of(result):
    return "\n".join(texts(result))


def structured_tokens(result):
    return count_tokens(json.dumps(result.structured_content, ensure_ascii=False,
                                   separators=(",", ":")))


def manifest_bound(budget):
    return max(1000, budget // 4)


def readme_commands(readme, binary, repo):
    """The Claude Code command and the printed configuration's command, from the README."""
    text = open(readme, encoding="utf-8").read()
    m = re.search(r"^\s*claude mcp add acms -- (.+)$", text, re.M)
    check(m, "README: no `claude mcp add acms -- ...` line")
    words = shlex.split(m.group(1))
    check(words[0] == "$HOME/.cargo/bin/acms", f"README: Claude Code command {words[0]!r}")
    claude = [binary] + [repo if w == "$PWD" else w for w in words[1:]]

    m = re.search(r"^\s*(~/\.cargo/bin/acms mcp --print-config .+)$", text, re.M)
    check(m, "README: no `~/.cargo/bin/acms mcp --print-config ...` line")
    words = shlex.split(m.group(1))
    words = [binary] + [repo if w == "/path/to/your/repository" else w for w in words[1:]]
    printed = subprocess.run(words, capture_output=True, text=True)
    check(printed.returncode == 0, f"--print-config failed: {printed.stderr}")
    config = json.loads(printed.stdout)
    entry = config["mcpServers"]["acms"]
    check(os.path.isabs(entry["command"]) and os.path.samefile(entry["command"], binary),
          f"printed command {entry['command']!r}")
    check(entry["args"] == ["mcp", "--repo", os.path.realpath(repo)], f"printed args {entry['args']}")

    # The README's example of that output has the same shape.
    blocks = re.findall(r"```json\n(.*?)```", text[m.end():], re.S)
    check(blocks, "README: no example of the printed configuration")
    example = json.loads(blocks[0])["mcpServers"]["acms"]
    check(set(example) == set(entry) and os.path.isabs(example["command"])
          and example["args"][:2] == ["mcp", "--repo"], f"README example {example}")
    return claude, [entry["command"]] + entry["args"]


def params(command, errlog_path):
    return StdioServerParameters(command=command[0], args=command[1:]), open(errlog_path, "a")


async def startup(command, log_path):
    """Start-up on an unindexed repository: initialize at once, progress while indexing."""
    logs, progress = [], []

    async def on_log(p):
        logs.append(str(p.data))

    async def on_progress(done, total, message):
        progress.append((done, total, message))

    server, errlog = params(command, log_path)
    async with stdio_client(server, errlog=errlog) as (read, write):
        async with ClientSession(read, write, logging_callback=on_log) as session:
            started = time.monotonic()
            init = await session.initialize()
            init_s = time.monotonic() - started
            check(init_s < 1.0, f"initialize took {init_s:.2f} s")
            check(init.server_info.name == "acms", f"server name {init.server_info.name!r}")
            ctx = await session.call_tool(
                "context", {"task": "how are cookies merged into a prepared request?", "budget": 3000},
                progress_callback=on_progress)
            first_s = time.monotonic() - started
            check(not ctx.is_error, f"context failed: {text_of(ctx)}")
            check(progress, "no progress notification while the repository was indexed")
            values = [p[0] for p in progress]
            check(values == sorted(set(values)), f"progress does not increase: {values}")
            check(any("indexing" in m for m in logs), f"no log message about indexing: {logs}")
            check(count_tokens(texts(ctx)[0]) <= 3000, "context over its budget")
    print(f"mcp_session.py: start-up ok (initialize {init_s * 1000:.0f} ms, first context "
          f"{first_s:.1f} s, {len(progress)} progress notifications, {len(logs)} log messages)")


async def tools(command, log_path, repo):
    server, errlog = params(command, log_path)
    async with stdio_client(server, errlog=errlog) as (read, write):
        async with ClientSession(read, write) as session:
            started = time.monotonic()
            await session.initialize()
            check(time.monotonic() - started < 1.0, "initialize took 1 s or more")

            listed = (await session.list_tools()).tools
            names = {t.name for t in listed}
            check(names == EXPECTED, f"tools {sorted(names)}")
            for t in listed:
                check(t.description and "\n" not in t.description, f"{t.name}: description")
                check(t.input_schema.get("type") == "object", f"{t.name}: input schema")
                check(t.output_schema and t.output_schema.get("type") == "object",
                      f"{t.name}: output schema {t.output_schema}")
                a = t.annotations
                check(a is not None and a.read_only_hint == (t.name in READ_ONLY),
                      f"{t.name}: annotations {a}")
            conv = next(t for t in listed if t.name == "compact").input_schema["properties"]["conversation"]
            check("anyOf" in conv, f"compact.conversation has no type: {conv}")

            async def call(name, args):
                # The SDK validates the structured content against the output schema.
                return await session.call_tool(name, args)

            async def bad(name, args, *wanted):
                r = await call(name, args)
                t = text_of(r)
                check(r.is_error, f"{name} {args}: not an error: {t[:300]}")
                for w in wanted:
                    check(w in t, f"{name} {args}: {w!r} not in {t!r}")

            sizes = {}

            def within(name, tokens, bound):
                sizes[name] = max(sizes.get(name, 0), tokens)
                check(tokens <= bound, f"{name}: {tokens} tokens over its bound {bound}")

            # context and plan_phase: text, status block, manifest.
            for budget in (600, 4000, 16000):
                r = await call("context", {"task": "apply the discount and add sales tax", "budget": budget})
                check(not r.is_error, f"context failed: {text_of(r)}")
                t = texts(r)
                within("context", count_tokens(t[0]), budget)
                within("context status", count_tokens(t[1]), STATUS_BLOCK)
                within("context manifest", structured_tokens(r), manifest_bound(budget) * 1.02)
            check("def compute_total" in texts(r)[0], "context lacks compute_total")

            # The ids the text shows: a block header, and its location.
            header = next(line for line in texts(r)[0].splitlines()
                          if line.startswith("# shop/pricing.py:") and line.endswith("depth 9"))
            location = header[2:].split(" · ")[0]
            for target in (header, location, "compute_total"):
                e = await call("expand", {"target": target})
                check(not e.is_error, f"expand {target!r}: {text_of(e)}")
                within("expand", count_tokens(texts(e)[0]), 4000)
            e = await call("expand", {"target": location, "budget": 60})
            check(not e.is_error and count_tokens(texts(e)[0]) <= 60, f"expand budget 60: {text_of(e)}")

            s = await call("search", {"query": "cart total tax card", "limit": 100})
            check(not s.is_error, f"search failed: {text_of(s)}")
            within("search", count_tokens(texts(s)[0]), DEFAULT_MAX_TOKENS)
            s = await call("search", {"query": "cart total tax card", "limit": 100, "max_tokens": 500})
            within("search", count_tokens(texts(s)[0]), 500)

            started = await call("plan_start", {"task": "charge the card for the cart " * 100})
            within("plan_start", count_tokens(text_of(started)), SMALL_RESULT)
            plan = started.structured_content["plan"]["id"]
            for phase in ("explore", "design", "implement", "verify", "review"):
                p = await call("plan_phase", {"plan": plan, "phase": phase, "budget": 16000})
                check(not p.is_error, f"plan_phase failed: {text_of(p)}")
                within("plan_phase", count_tokens(texts(p)[0]), 16000)
                within("plan_phase status", count_tokens(texts(p)[1]), STATUS_BLOCK)
                within("plan_phase manifest", structured_tokens(p), manifest_bound(16000) * 1.02)
                d = await call("plan_decide", {"plan": plan, "phase": phase,
                                               "notes": f"{phase}: keep the tax after the discount"})
                check(not d.is_error, f"plan_decide failed: {text_of(d)}")
                within("plan_decide", count_tokens(text_of(d)), SMALL_RESULT)
            p = await call("plan_phase", {"plan": plan, "phase": "window", "window": 8192,
                                          "tool_definitions": 1000})
            check(p.structured_content["budget"] == 8192 - 4096 - 1000, "budget from the window")
            pheader = next(line for line in texts(p)[0].splitlines() if line.startswith("# "))
            d = await call("plan_decide", {"plan": plan, "phase": "window", "notes": "narrow",
                                           "fragments": [pheader]})
            check(not d.is_error and d.structured_content["decision"]["fragments"] >= 1,
                  f"plan_decide with a header: {text_of(d)}")
            child = await call("plan_child", {"parent": plan, "task": "refund a failed charge"})
            within("plan_child", count_tokens(text_of(child)), SMALL_RESULT)
            h = await call("plan_history", {"plan": plan})
            check(not h.is_error, f"plan_history failed: {text_of(h)}")
            within("plan_history", count_tokens(text_of(h)), DEFAULT_MAX_TOKENS)
            check(len(h.structured_content["phases"]) == 6, "history summary lists the phases")
            h = await call("plan_history", {"plan": plan, "phase": "explore"})
            within("plan_history", count_tokens(text_of(h)), DEFAULT_MAX_TOKENS)
            check(h.structured_content["detail"]["manifest"], "history detail lists fragments")
            c = await call("plan_close", {"plan": plan})
            within("plan_close", count_tokens(text_of(c)), SMALL_RESULT)

            conversation = [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "hello " * 400},
                {"role": "assistant", "content": "hi"},
                {"role": "user", "content": "what now?"},
            ]
            r = await call("compact", {"conversation": conversation, "limit": 200})
            check(not r.is_error and r.structured_content["size"] <= 200, f"compact: {text_of(r)[:300]}")
            within("compact", count_tokens(text_of(r)), 200 + 300)

            # Every bad argument of issue 39: an error naming the field and what it accepts.
            await bad("context", {"task": "tax", "budget": 300},
                      "budget: 300 is below the minimum of 500 tokens", "500–16000")
            r = await call("context", {"task": "tax", "budget": 100000})
            check(not r.is_error and r.structured_content["budget"] == 16000, "budget 100000")
            check(any("capped at 16000" in c for c in r.structured_content["caps"]), "cap not reported")
            check("cap: budget 100000 capped at 16000" in texts(r)[1], "cap not in the status block")
            await bad("context", {"task": "tax", "files": ["shop/nothing.py"], "symbols": ["NoSuchThing"]},
                      "files[0]: `shop/nothing.py` is not a file of the index",
                      "symbols[0]: no symbol named `NoSuchThing`")
            await bad("search", {"query": "tax", "strategies": ["bogus"]},
                      "strategies[0]: `bogus` is not a strategy", "simple-keyword")
            r = await call("context", {"task": "tax", "budget": "4000"})
            check(not r.is_error and r.structured_content["budget"] == 4000, f"budget \"4000\": {text_of(r)[:200]}")
            await bad("context", {"task": "tax", "budget": "lots"}, "budget: expected a whole number")
            await bad("context", {"task": "tax", "budjet": 4000}, "budjet: not an argument of `context`")
            await bad("plan_phase", {"plan": "p999", "phase": "explore"},
                      "unknown plan p999: call `plan_start` first")
            await bad("compact", {"conversation": 5, "limit": 100}, "conversation: expected an array")
    width = max(len(k) for k in sizes)
    for k in sorted(sizes):
        print(f"mcp_session.py:   {k:<{width}} {sizes[k]:>6} tokens at most")
    print("mcp_session.py: tools ok (bounds, schemas, annotations, bad arguments, ids in the text)")


async def main(binary, readme, start_repo, shop_repo, log_path):
    claude, printed_start = readme_commands(readme, binary, start_repo)
    await startup(printed_start, log_path)
    claude, _ = readme_commands(readme, binary, shop_repo)
    await tools(claude, log_path, shop_repo)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6]))
