"""A scripted MCP session with the official Python SDK client (`mcp` from PyPI) against
`acms mcp`: list the tools, call `context`, start a plan and call `plan_phase`.

Usage: python mcp_session.py ACMS_BINARY REPO
Exits non-zero (with the reason) on any mismatch.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

EXPECTED = {
    "compact", "context", "expand", "plan_child", "plan_close", "plan_decide",
    "plan_history", "plan_phase", "plan_start", "search",
}


def check(cond, what):
    if not cond:
        raise SystemExit(f"mcp_session.py: {what}")


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def data_of(result):
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(text_of(result))


async def main(binary, repo):
    params = StdioServerParameters(command=binary, args=["mcp", "--repo", repo])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            check(init.server_info.name == "acms", f"server name {init.server_info.name!r}")

            tools = (await session.list_tools()).tools
            names = {t.name for t in tools}
            check(names == EXPECTED, f"tools {sorted(names)}")
            for t in tools:
                check(t.description and "\n" not in t.description, f"{t.name}: description")
                check(t.input_schema.get("type") == "object", f"{t.name}: schema {t.input_schema}")

            ctx = await session.call_tool("context", {"task": "apply the discount and add sales tax", "budget": 1500})
            check(not ctx.is_error, f"context failed: {text_of(ctx)}")
            check("def compute_total" in text_of(ctx), "context lacks compute_total")
            data = data_of(ctx)
            check(data["tokens"] <= 1500, f"over budget: {data['tokens']}")
            check(any(m["name"] == "shop.pricing.compute_total" for m in data["manifest"]), "manifest")

            started = data_of(await session.call_tool("plan_start", {"task": "charge the card for the cart"}))
            plan = started["plan"]["id"]
            phase = await session.call_tool(
                "plan_phase", {"plan": plan, "phase": "explore", "window": 8192, "tool_definitions": 1000}
            )
            check(not phase.is_error, f"plan_phase failed: {text_of(phase)}")
            pdata = data_of(phase)
            check(pdata["budget"] == 8192 - 4096 - 1000, f"phase budget {pdata['budget']}")
            check(pdata["seq"] == 1 and pdata["phase"] == "explore", f"phase record {pdata}")
            check("def charge_card" in text_of(phase), "phase lacks charge_card")

            bad = await session.call_tool("plan_phase", {"plan": "p999", "phase": "explore"})
            check(bad.is_error and text_of(bad).startswith("unknown plan p999"), f"error {text_of(bad)!r}")
    print(f"mcp_session.py: ok ({len(names)} tools; context {data['tokens']} tokens; "
          f"plan {plan} phase explore {pdata['tokens']} tokens)")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
