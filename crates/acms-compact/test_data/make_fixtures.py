#!/usr/bin/env python3
"""Builds the real-shaped agent transcripts in this directory.

The shapes follow public agent-trajectory formats: OpenAI chat-completions tool calling
(SWE-agent / OpenHands style: bash, read_file, edit_file, run_tests) and Anthropic messages
with tool_use / tool_result blocks (Claude Code style: Read, Bash, Edit, Grep). File contents
are real source files (CPython 3.11 stdlib and this repository's acms-core), test output is
real-shaped pytest / cargo output. Run from this directory; the output is deterministic.
"""
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[3]
PY = pathlib.Path("/usr/lib/python3.11")


def src(path):
    return pathlib.Path(path).read_text()


T0 = 1764400000.0  # fixed start time: the fixtures do not depend on when they were built


def openai_session():
    t = [T0]

    def ts():
        t[0] += 90.0
        return t[0]

    msgs = [{
        "role": "system",
        "content": (
            "You are an autonomous software engineer working in a Python repository at /repo. "
            "You can call tools: bash (run a shell command), read_file (show a file), "
            "edit_file (replace text in a file) and run_tests (run pytest). Work in small "
            "verified steps: reproduce, locate, fix, test. Never modify tests to make them "
            "pass. When you are done, summarize the change.\n"
            + "Guidelines:\n" + "".join(f"- Rule {i}: keep diffs minimal and explain why.\n" for i in range(30))
        ),
        "timestamp": ts(),
    }]
    call_n = [0]

    def tool(name, args, output, text="", error=False):
        call_n[0] += 1
        cid = f"call_{call_n[0]:03d}"
        msgs.append({"role": "assistant", "content": text or None, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}],
            "timestamp": ts()})
        msgs.append({"role": "tool", "tool_call_id": cid, "content": output, "timestamp": ts()})

    msgs.append({"role": "user", "content": (
        "Our report generator wraps long lines with the vendored textwrap module "
        "(src/vendor/textwrap.py). `shorten()` drops the placeholder when the text has "
        "trailing whitespace, and tests/test_wrap.py::test_shorten_placeholder fails. "
        "Please find the cause and fix it."), "timestamp": ts()})
    tool("bash", {"command": "cd /repo && git status && ls -R src tests | head -50"},
         "On branch main\nnothing to commit, working tree clean\nsrc:\nreport\nvendor\n\nsrc/report:\n__init__.py\nbuild.py\nrender.py\n\nsrc/vendor:\n__init__.py\ntextwrap.py\njson_decoder.py\njson_scanner.py\nshlex.py\n\ntests:\ntest_wrap.py\ntest_json.py\ntest_shlex.py\n",
         text="Let me look at the repository layout first.")
    tool("read_file", {"path": "src/vendor/textwrap.py"}, src(PY / "textwrap.py"))
    tool("run_tests", {"command": "pytest -q tests/test_wrap.py"},
         "F....                                                                    [100%]\n"
         "=================================== FAILURES ===================================\n"
         "__________________________ test_shorten_placeholder ___________________________\n\n"
         "    def test_shorten_placeholder():\n"
         ">       assert shorten('Hello  world!  ', width=12) == 'Hello [...]'\n"
         "E       AssertionError: assert 'Hello world!' == 'Hello [...]'\n"
         "E         - Hello [...]\n E         + Hello world!\n\n"
         "tests/test_wrap.py:14: AssertionError\n"
         "=========================== short test summary info ============================\n"
         "FAILED tests/test_wrap.py::test_shorten_placeholder - AssertionError: assert 'Hello world!' == 'Hello [...]'\n"
         "1 failed, 4 passed in 0.05s\n")
    msgs.append({"role": "assistant", "content": (
        "The failure reproduces. `shorten` collapses whitespace with `' '.join(text.strip().split())` "
        "before wrapping, so the trailing spaces are not the cause; the test expectation assumes the "
        "width counts the placeholder. Let me check the wrap loop in `_wrap_chunks`."),
        "timestamp": ts()})
    tool("bash", {"command": "grep -n 'placeholder' src/vendor/textwrap.py"},
         "\n".join(f"{i}:{l}" for i, l in enumerate(src(PY / "textwrap.py").splitlines(), 1) if "placeholder" in l))
    tool("edit_file", {"path": "src/vendor/textwrap.py", "old_str": "if self.max_lines is None or len(lines) + 1 < self.max_lines",
                       "new_str": "if self.max_lines is None or len(lines) + 1 < self.max_lines or not chunks"},
         "The file src/vendor/textwrap.py has been edited. Here's the result of running `cat -n` on a snippet:\n"
         "   262\t            if self.max_lines is None or len(lines) + 1 < self.max_lines or not chunks:\n")
    tool("run_tests", {"command": "pytest -q tests/test_wrap.py"}, ".....                                                                    [100%]\n5 passed in 0.04s\n")
    msgs.append({"role": "assistant", "content": "All five wrap tests pass now. The fix makes the last-line check consider remaining chunks.", "timestamp": ts()})
    msgs.append({"role": "user", "content": (
        "Thanks. Next: tests/test_json.py has two failures around NaN handling in the vendored "
        "decoder (src/vendor/json_decoder.py). Investigate, but don't change behaviour for valid JSON."),
        "timestamp": ts()})
    tool("run_tests", {"command": "pytest -q tests/test_json.py"},
         "..F.F..                                                                  [100%]\n"
         "=================================== FAILURES ===================================\n"
         "______________________________ test_nan_strict ________________________________\n"
         "Traceback (most recent call last):\n"
         "  File \"/repo/tests/test_json.py\", line 31, in test_nan_strict\n"
         "    loads('[NaN]', parse_constant=reject)\n"
         "  File \"/repo/src/vendor/json_decoder.py\", line 337, in decode\n"
         "    obj, end = self.raw_decode(s, idx=_w(s, 0).end())\n"
         "ValueError: reject called with 'NaN'\n"
         "2 failed, 5 passed in 0.08s\n")
    tool("read_file", {"path": "src/vendor/json_decoder.py"}, src(PY / "json/decoder.py"))
    tool("read_file", {"path": "src/vendor/json_scanner.py"}, src(PY / "json/scanner.py"))
    msgs.append({"role": "assistant", "content": (
        "The scanner calls `parse_constant` for NaN/Infinity before the strict check. The tests expect "
        "a JSONDecodeError with position information instead of a bare ValueError."),
        "timestamp": ts()})
    tool("edit_file", {"path": "src/vendor/json_scanner.py", "old_str": "return parse_constant('NaN'), idx + 3",
                       "new_str": "return _constant(parse_constant, 'NaN', string, idx), idx + 3"},
         "The file src/vendor/json_scanner.py has been edited.")
    tool("run_tests", {"command": "pytest -q tests/test_json.py"},
         "..F....                                                                  [100%]\nFAILED tests/test_json.py::test_infinity_strict - NameError: name '_constant' is not defined\n1 failed, 6 passed in 0.07s\n")
    tool("edit_file", {"path": "src/vendor/json_scanner.py", "old_str": "def py_make_scanner(context):",
                       "new_str": "def _constant(fn, name, s, idx):\n    try:\n        return fn(name)\n    except ValueError as e:\n        raise JSONDecodeError(str(e), s, idx) from e\n\n\ndef py_make_scanner(context):"},
         "The file src/vendor/json_scanner.py has been edited.")
    tool("run_tests", {"command": "pytest -q tests/test_json.py"}, ".......                                                                  [100%]\n7 passed in 0.06s\n")
    msgs.append({"role": "user", "content": "Good. Finally, run the whole suite and check shlex too; then summarize everything you changed.", "timestamp": ts()})
    tool("read_file", {"path": "src/vendor/shlex.py"}, src(PY / "shlex.py"))
    tool("run_tests", {"command": "pytest -q"}, "..................                                                       [100%]\n18 passed in 0.21s\n")
    return {"model": "gpt-4o-2024-08-06", "messages": msgs}


def anthropic_session():
    msgs = []
    n = [0]

    def tool(name, args, output, text=None, error=False):
        n[0] += 1
        tid = f"toolu_{n[0]:02d}"
        content = ([{"type": "text", "text": text}] if text else []) + [
            {"type": "tool_use", "id": tid, "name": name, "input": args}]
        msgs.append({"role": "assistant", "content": content})
        block = {"type": "tool_result", "tool_use_id": tid, "content": output}
        if error:
            block["is_error"] = True
        msgs.append({"role": "user", "content": [block]})

    core = ROOT / "crates/acms-core/src"
    msgs.append({"role": "user", "content": "Add a `max_output_tokens` setting under `context.llm` in acms-core's config, with validation, and make sure `cargo test -p acms-core` passes."})
    tool("Bash", {"command": "ls crates/acms-core/src && git log --oneline | head -5"},
         "config.rs\ndepth.rs\nerror.rs\nid.rs\nlib.rs\ntokens.rs\n69af1bb Workspace skeleton, acms-core (depth, ids, exact token counting, context.* config) and the UKO model\n",
         text="I'll start by looking at the crate layout.")
    tool("Read", {"file_path": "/repo/crates/acms-core/src/config.rs"}, src(core / "config.rs"))
    tool("Read", {"file_path": "/repo/crates/acms-core/src/error.rs"}, src(core / "error.rs"))
    tool("Grep", {"pattern": "timeout_seconds", "path": "crates"},
         "crates/acms-core/src/config.rs:337:    pub timeout_seconds: f64,\ncrates/acms-core/src/config.rs:343:    timeout_seconds: 60.0,\n")
    tool("Edit", {"file_path": "/repo/crates/acms-core/src/config.rs", "old_string": "    pub timeout_seconds: f64,\n}",
                  "new_string": "    pub timeout_seconds: f64,\n    pub max_output_tokens: u32,\n}"},
         "The file /repo/crates/acms-core/src/config.rs has been updated.")
    tool("Bash", {"command": "cargo test -p acms-core 2>&1 | tail -20"},
         "   Compiling acms-core v0.0.0 (/repo/crates/acms-core)\n"
         "error[E0063]: missing field `max_output_tokens` in initializer of `LlmConfig`\n"
         "   --> crates/acms-core/src/config.rs:339:1\n    |\n339 | defaults!(LlmConfig {\n    | ^^^^^^^^^^^^^^^^^^^^ missing `max_output_tokens`\n\n"
         "error: could not compile `acms-core` (lib) due to 1 previous error\n", error=True)
    msgs.append({"role": "assistant", "content": "The defaults block needs the new field too. I'll add `max_output_tokens: 4096` there."})
    msgs.append({"role": "user", "content": "Use 2048 as the default, not 4096."})
    tool("Edit", {"file_path": "/repo/crates/acms-core/src/config.rs", "old_string": "    timeout_seconds: 60.0,\n});",
                  "new_string": "    timeout_seconds: 60.0,\n    max_output_tokens: 2048,\n});"},
         "The file /repo/crates/acms-core/src/config.rs has been updated.", text="Using 2048 as you asked.")
    tool("Read", {"file_path": "/repo/crates/acms-core/src/tokens.rs"}, src(core / "tokens.rs"))
    tool("Bash", {"command": "cargo test -p acms-core 2>&1 | tail -15"},
         "running 14 tests\n" + "".join(f"test config::tests::case_{i} ... ok\n" for i in range(14)) +
         "\ntest result: ok. 14 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.02s\n")
    msgs.append({"role": "assistant", "content": [{"type": "text", "text": "Done: `context.llm.max-output-tokens` (default 2048) is parsed and defaulted; all 14 acms-core tests pass."}]})
    msgs.append({"role": "user", "content": "Now document the key in the config module doc and show me the final LlmConfig."})
    tool("Read", {"file_path": "/repo/crates/acms-core/src/lib.rs"}, src(core / "lib.rs"))
    return {"model": "claude-sonnet-4-5", "max_tokens": 8192,
            "system": "You are Claude Code, an interactive CLI coding agent. Use the tools to read, search and edit files in /repo. Be concise. Prefer small, verified edits. Never commit unless asked.",
            "messages": msgs}


def messy():
    return [
        {"role": "developer", "content": "Answer tersely."},
        {"role": "user", "content": [{"type": "text", "text": "What does "}, {"type": "text", "text": "shlex.split do?"}]},
        {"role": "tool", "tool_call_id": "call_lost", "content": "stale output from a truncated log"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"src/vendor/shlex.py\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": src(PY / "shlex.py")},
        {"role": "assistant", "content": "It splits a string using shell-like syntax.", "pinned": True},
        {"role": "user", "content": "And quote()?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_2", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"python3 -c 'import shlex; print(shlex.quote(\\\"a b\\\"))'\"}"}}]},
    ]


for name, doc in [("openai_fix_failing_tests.json", openai_session()),
                  ("anthropic_config_change.json", anthropic_session()),
                  ("openai_messy.json", messy())]:
    pathlib.Path(name).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    print(name, len(json.dumps(doc)))
