"""Measures `acms mcp` as an agent host sees it, with the official Python SDK client: the time
to answer `initialize` and to the first `context` result on a repository, and the size in
cl100k tokens of what each tool returns (its text blocks, and its structured content as
compact JSON).

Usage: python mcp_measure.py ACMS_BINARY REPO [--phases N] [--budget TOKENS] [--wait-ready]
Prints one JSON object. REPO should be a fresh copy (it is indexed on first use). With
--wait-ready the session stays open until the server logs that its index is complete (the
vectors too) and reports when; a server that does not log is not waited for.
"""

import argparse
import asyncio
import json
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from mcp_tokens import count_tokens

PHASES = ["explore", "design", "implement", "verify", "review", "document", "release"]


def sizes(result):
    text = "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")
    structured = result.structured_content
    return {
        "text_tokens": count_tokens(text),
        "structured_tokens": 0 if structured is None else count_tokens(
            json.dumps(structured, ensure_ascii=False, separators=(",", ":"))),
        "error": bool(result.is_error),
    }


def data_of(result):
    if result.structured_content is not None:
        return result.structured_content
    text = "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")
    return json.loads(text)


async def main(args):
    params = StdioServerParameters(command=args.binary, args=["mcp", "--repo", args.repo])
    out = {"repo": args.repo}
    progress = []
    logs = []
    ready = asyncio.Event()

    async def on_progress(done, total, message):
        progress.append((time.monotonic() - started, done, total, message))

    async def on_log(p):
        logs.append((round(time.monotonic() - started, 3), str(p.data)))
        if "index ready" in str(p.data):
            ready.set()

    async with stdio_client(params, errlog=open(args.server_log, "a")) as (read, write):
        async with ClientSession(read, write, logging_callback=on_log) as session:
            started = time.monotonic()
            await session.initialize()
            out["initialize_s"] = round(time.monotonic() - started, 3)
            task = args.task
            ctx = await session.call_tool(
                "context", {"task": task, "budget": args.budget}, progress_callback=on_progress,
                read_timeout_seconds=1800)
            out["first_context_s"] = round(time.monotonic() - started, 3)
            out["progress_notifications"] = len(progress)
            out["context"] = sizes(ctx)
            plan = data_of(await session.call_tool("plan_start", {"task": task}))["plan"]
            plan = plan["id"] if isinstance(plan, dict) else plan
            for name in PHASES[: args.phases]:
                r = await session.call_tool("plan_phase", {"plan": plan, "phase": name})
                out.setdefault("plan_phase", sizes(r))
            out["plan_decide"] = sizes(await session.call_tool(
                "plan_decide", {"plan": plan, "phase": PHASES[0],
                                "notes": "the redirect logic lives in the client"}))
            out["plan_history"] = sizes(await session.call_tool("plan_history", {"plan": plan}))
            tools = {t.name for t in (await session.list_tools()).tools}
            if "plan_history" in tools:
                detail = await session.call_tool(
                    "plan_history", {"plan": plan, "phase": PHASES[0]})
                out["plan_history_phase"] = sizes(detail)
            if args.wait_ready and logs:
                await asyncio.wait_for(ready.wait(), timeout=3600)
            out["logs"] = logs
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("binary")
    p.add_argument("repo")
    p.add_argument("--phases", type=int, default=5)
    p.add_argument("--budget", type=int, default=16000)
    p.add_argument("--wait-ready", action="store_true")
    p.add_argument("--server-log", default="/dev/null")
    p.add_argument("--task", default="where are HTTP redirects followed and how are cookies kept across them?")
    asyncio.run(main(p.parse_args()))
