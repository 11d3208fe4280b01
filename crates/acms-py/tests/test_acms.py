"""The acms Python package, as installed from the wheel (scripts/test-python.sh)."""

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import acms
from conftest import REPO_ROOT

HEX_ID = re.compile(r"^[0-9a-f]{16}$")


def test_the_package_is_the_installed_wheel():
    # Not the source tree: the tests check what `pip install` gives.
    assert "site-packages" in acms.__file__
    assert acms.__version__ == acms.version()
    assert issubclass(acms.AcmsError, Exception)
    stubs = Path(acms.__file__).with_name("__init__.pyi")
    assert stubs.is_file() and Path(acms.__file__).with_name("py.typed").is_file()


def test_context_is_within_budget_and_says_where_it_comes_from(shared_shop):
    repo, ws = shared_shop
    assert ws.path == str(repo.resolve())
    for budget in (600, 2000, 8000):
        ctx = ws.context("where is the order total computed with discounts and tax?", budget)
        assert 0 < ctx.tokens <= budget == ctx.budget
        assert "compute_total" in ctx.text
        assert str(ctx) == ctx.text
        assert isinstance(ctx.notes, list) and isinstance(ctx.dropped, list)
        assert ctx.manifest, "a context with nothing in it"
        for e in ctx.manifest:
            assert HEX_ID.match(e["node"])
            assert (repo / e["path"]).is_file()
            assert 1 <= e["start_line"] <= e["end_line"]
            assert e["depth"] in (0, 2, 4, 9)
            assert isinstance(e["score"], float) and isinstance(e["reasons"], list)
        assert ctx.data["context"]["tokens"] == ctx.tokens
        # Indexed on first use with the user's model (scripts/test.sh installs it).
        assert any(n.startswith("embeddings:") for n in ctx.notes), ctx.notes
    big = ws.context("compute_total", budget=8000)
    assert any(e["path"] == "shop/pricing.py" for e in big.manifest)
    # Below context.budget.min-useful-budget (500) the engine assembles nothing, and says so.
    tiny = ws.context("compute_total", budget=20)
    assert tiny.tokens <= 20 and not tiny.manifest
    assert any("min-useful-budget" in n for n in tiny.notes)
    # No budget: context.hot.max-tokens (16 000).
    assert ws.context("compute_total", budget=None).budget == 16000


def test_search_hits_name_their_place(shared_shop):
    _, ws = shared_shop
    hits = ws.search("charge card payment", limit=5)
    assert 0 < len(hits) <= 5
    assert any(h["path"] == "shop/payment.py" for h in hits)
    for h in hits:
        assert HEX_ID.match(h["node"]) and h["start_line"] <= h["end_line"]
    keyword = ws.search("refund", strategies=["simple-keyword"], limit=3)
    assert keyword and all(h["strategy"] == "simple-keyword" for h in keyword)
    with pytest.raises(acms.AcmsError, match="unknown strategy `keyword`"):
        ws.search("refund", strategies=["keyword"])
    shown = ws.expand(f"{hits[0]['path']}:{hits[0]['start_line']}-{hits[0]['end_line']}", 500)
    assert shown["tokens"] <= 500 and shown["text"]


def test_plans_phases_decisions_children(shared_shop):
    _, ws = shared_shop
    plan = ws.plan("add a coupon code to the order total")
    assert plan.task.startswith("add a coupon")
    explore = plan.phase("explore", budget=1500)
    assert 0 < explore.tokens <= 1500 and explore.manifest
    assert explore.data["phase"]["phase"] == "explore"
    node = explore.manifest[0]["node"]
    decision = plan.decide("explore", "the total is computed in pricing.compute_total", [node])
    assert decision["notes"].startswith("the total")
    child = plan.child("write the coupon tests")
    assert child.parent == plan.id
    verify = child.phase("verify", budget=1200, focus="tests for the coupon")
    assert verify.tokens <= 1200
    history = plan.history()
    assert [p["phase"] for p in history["phases"]] == ["explore"]
    assert len(history["decisions"]) == 1
    assert history["children"] == [child.id]
    again = ws.get_plan(plan.id)
    assert again.id == plan.id and again.task == plan.task
    closed = plan.close()
    assert closed["closed"] is not None
    with pytest.raises(acms.AcmsError, match="closed"):
        plan.phase("design", budget=1000)


def test_bad_input_raises_acms_error_with_the_engine_message(shared_shop, tmp_path):
    _, ws = shared_shop
    with pytest.raises(acms.AcmsError, match="budget"):
        ws.context("anything", budget=0)
    with pytest.raises(acms.AcmsError, match="larger than the model window"):
        ws.context("anything", budget=5000, window=1000)
    with pytest.raises(acms.AcmsError, match="999999"):
        ws.get_plan("999999")
    with pytest.raises(acms.AcmsError):
        ws.get_plan("not a plan id")
    with pytest.raises(acms.AcmsError, match="unknown symbol"):
        ws.expand("no_such_symbol_anywhere", 100)
    with pytest.raises(acms.AcmsError):
        acms.Workspace(tmp_path / "does-not-exist")
    plan = ws.plan("a task")
    with pytest.raises(acms.AcmsError):
        plan.decide("never-ran", "notes")
    with pytest.raises(acms.AcmsError, match="not a phase name"):
        plan.phase("two\nlines", budget=1000)
    # Python's own checks still apply before the engine is called.
    with pytest.raises(OverflowError):
        ws.context("anything", budget=-1)
    with pytest.raises(TypeError):
        ws.context(42)


def conversation(turns: int, result_chars: int):
    messages = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the discount rounding in the shop."},
    ]
    for i in range(turns):
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{i}",
                        "type": "function",
                        "function": {"name": "bash", "arguments": json.dumps({"cmd": f"cat f{i}.py"})},
                    }
                ],
            }
        )
        body = "\n".join(f"def f{i}_{j}(x):\n    return x * {j}" for j in range(result_chars // 30))
        messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": body})
    return messages


def test_compact_openai_messages():
    messages = conversation(6, 3000)
    small = acms.compact(messages[:2], hard_limit=1000)
    assert small.outcome == "within_limit" and small.messages == messages[:2]
    # Key order survives too: a prompt cache compares the bytes of the request.
    ordered = [{"role": "user", "name": "dev", "content": "hi"}, {"content": "yes?", "role": "assistant"}]
    assert [list(m) for m in acms.compact(ordered, hard_limit=100).messages] == [list(m) for m in ordered]
    out = acms.compact(messages, hard_limit=2000)
    assert out.outcome != "within_limit"
    assert out.size <= 2000 < out.original_size
    assert out.messages[0] == messages[0] and out.messages[1] == messages[1]
    assert json.dumps(out.messages[:2]) == json.dumps(messages[:2])
    assert out.diagnostics["outcome"] == out.outcome
    # Every tool call still has its result.
    calls = {c["id"] for m in out.messages for c in m.get("tool_calls") or []}
    results = {m["tool_call_id"] for m in out.messages if m["role"] == "tool"}
    assert calls == results


def test_compact_anthropic_request():
    request = {
        "model": "claude",
        "system": "You are a coding agent.",
        "messages": [
            {"role": "user", "content": "Fix the discount rounding."},
            *[
                m
                for i in range(5)
                for m in (
                    {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "read", "input": {"path": f"f{i}.py"}}]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "x = 1\n" * 800}]},
                )
            ],
            {"role": "user", "content": "Now fix it."},
        ],
    }
    out = acms.compact(request, hard_limit=1500, format="anthropic")
    assert out.size <= 1500 < out.original_size
    assert out.messages["model"] == "claude" and out.messages["system"] == request["system"]
    last = out.messages["messages"][-1]  # same-role neighbours are merged into one message
    assert last["role"] == "user" and last["content"][-1]["text"] == "Now fix it."


def test_compact_errors():
    with pytest.raises(acms.AcmsError, match="cannot fit"):
        acms.compact([{"role": "user", "content": "word " * 5000}], hard_limit=50)
    with pytest.raises(acms.AcmsError):
        acms.compact([{"role": "wizard", "content": "hi"}], hard_limit=100)
    with pytest.raises(acms.AcmsError):
        acms.compact([{"role": "user", "content": "hi"}], hard_limit=100, format="gemini")
    with pytest.raises(acms.AcmsError):
        acms.compact([{"role": "user", "content": "hi"}], hard_limit=100, tokenizer="gpt2")
    with pytest.raises(acms.AcmsError):
        acms.compact([{"role": "user", "content": object()}], hard_limit=100)
    with pytest.raises(acms.AcmsError):
        acms.compact([{"role": "user", "content": "hi"}], hard_limit=0)


class ScriptedModel:
    """A fake model in the style of mini-swe-agent: one bash command per turn, then done."""

    def __init__(self, commands):
        self.commands = list(commands)
        self.calls = []

    def query(self, messages):
        self.calls.append(messages)
        if not self.commands:
            return {"role": "assistant", "content": "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}
        cmd = self.commands.pop(0)
        n = len(self.calls)
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": f"call_{n}", "type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": cmd})}}
            ],
        }


def test_agent_loop_context_per_step_and_compact_before_each_call(shop):
    """A mini-swe-agent-style loop: each step asks acms for the context of what the agent
    is looking at, and the conversation is compacted before every model call."""
    ws = acms.Workspace(shop)
    task = "Orders with a discount are taxed on the full price; fix compute_total."
    limit, budget = 3000, 1200
    files = ["shop/pricing.py", "shop/cart.py", "shop/payment.py", "web/src/basket.ts", "web/src/api.ts", "README.md"]
    model = ScriptedModel([f"cat {f}" for f in files] * 3)
    messages = [{"role": "system", "content": "You are a coding agent. Reply with one bash command."}]
    observation = ""
    outcomes = []
    for step in range(30):
        ctx = ws.context(f"{task}\n{observation[-500:]}", budget=budget)
        assert ctx.tokens <= budget
        messages.append({"role": "user", "content": f"{task}\n\nRelevant code:\n{ctx.text}"})
        sent = acms.compact(messages, hard_limit=limit)
        assert sent.size <= limit
        outcomes.append(sent.outcome)
        reply = model.query(sent.messages)
        messages = sent.messages + [reply]
        if not reply.get("tool_calls"):
            break
        call = reply["tool_calls"][0]
        command = json.loads(call["function"]["arguments"])["command"]
        observation = (shop / command.split()[1]).read_text() * 4
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": observation})
        if step == 3:
            # The agent edits a file: the next context sees the edit (refresh before every call).
            (shop / "shop" / "pricing.py").write_text(
                (shop / "shop" / "pricing.py").read_text() + "\n\ndef apply_coupon_rounding(total):\n    return round(total, 2)\n"
            )
    else:
        pytest.fail("the scripted model never finished")
    assert model.calls and all(acms.compact(m, hard_limit=limit).size <= limit for m in model.calls)
    assert "reduced" in outcomes or "preservation_fallback" in outcomes
    found = ws.search("apply_coupon_rounding", limit=3)
    assert any(h["name"].endswith("apply_coupon_rounding") for h in found)


def test_two_threads_share_one_workspace(shared_shop):
    _, ws = shared_shop
    errors, results = [], {}
    tasks = {
        "a": ["how are card payments charged?", "where are refunds made?", "compute_total"],
        "b": ["what does the basket send to the api?", "sales tax", "discounts"],
    }

    def work(name):
        try:
            plan = ws.plan(f"thread {name}")
            out = []
            for i, task in enumerate(tasks[name]):
                out.append(ws.context(task, budget=800).tokens)
                out.append(plan.phase(f"step{i}", budget=600).tokens)
                out.append(len(ws.search(task, limit=3)))
            plan.close()
            results[name] = out
        except Exception as e:  # reported below with the thread's name
            errors.append((name, e))

    threads = [threading.Thread(target=work, args=(n,)) for n in tasks]
    ticks = 0
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        ticks += 1  # runs while the engine works: the GIL is released during calls
        threads[0].join(0.001)
    for t in threads:
        t.join()
    assert not errors, errors
    assert set(results) == {"a", "b"}
    for out in results.values():
        assert all(0 < t <= 800 for t in out[0::3]) and all(0 < t <= 600 for t in out[1::3])
    assert ticks > 0


def acms_command():
    path = Path(sys.executable).with_name("acms")
    assert path.is_file(), f"the console script is not installed next to {sys.executable}"
    return str(path)


def test_console_script_runs_the_bundled_binary(shared_shop):
    repo, ws = shared_shop
    version = subprocess.run([acms_command(), "--version"], capture_output=True, text=True, check=True)
    assert acms.__version__ in version.stdout
    query = subprocess.run(
        [acms_command(), "query", "--index", ws.index_dir, "--budget", "700", "--format", "json", "how is a refund made?"],
        capture_output=True,
        text=True,
    )
    assert query.returncode == 0, query.stderr
    out = json.loads(query.stdout)
    assert 0 < out["tokens"] <= 700
    # One vocabulary: the module's manifest entries have the CLI's field names.
    mine = ws.context("how is a refund made?", budget=700)
    assert out["manifest"] and set(out["manifest"][0]) == set(mine.manifest[0])
    bad = subprocess.run([acms_command(), "query", "--budget", "10"], capture_output=True, text=True)
    assert bad.returncode == 2


def readme_python_blocks():
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme.split("## Use it from Python", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_readme_python_example_runs_verbatim(shop):
    blocks = readme_python_blocks()
    assert blocks, "README.md has no ```python block under 'Use it from Python'"
    for code in blocks:
        run = subprocess.run([sys.executable, "-c", code], cwd=shop, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr
        assert run.stdout.strip()


def test_console_script_serves_mcp(shared_shop):
    """`pip install` alone gives a working MCP server: initialize, then one tool call."""
    repo, _ = shared_shop
    server = subprocess.Popen(
        [acms_command(), "mcp", "--repo", str(repo)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        def call(message):
            server.stdin.write(json.dumps(message) + "\n")
            server.stdin.flush()
            while "id" in message:  # notifications (log messages, progress) come first
                reply = json.loads(server.stdout.readline())
                if reply.get("id") == message["id"]:
                    return reply

        init = call(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "pytest", "version": "0"}},
            }
        )
        assert init["result"]["serverInfo"]["name"] == "acms"
        call({"jsonrpc": "2.0", "method": "notifications/initialized"})
        result = call(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "context", "arguments": {"task": "how is a refund made?", "budget": 800}},
            }
        )
        assert "result" in result and not result["result"].get("isError"), result
        assert "shop/payment.py" in json.dumps(result["result"])
    finally:
        server.stdin.close()
        assert server.wait(timeout=60) == 0
