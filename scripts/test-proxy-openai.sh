#!/usr/bin/env bash
# The real OpenAI Python client against `acms proxy`: a throwaway venv with `openai` from
# PyPI, a fake OpenAI-compatible upstream on loopback (Python standard library), the proxy
# in front of it with a small limit, then one completion and one streamed completion of a
# long tool-using conversation. Fails unless both round-trip, the upstream never receives
# more than the limit, and an irreducible request gets `context_length_exceeded` without
# reaching the upstream. Everything listens on 127.0.0.1 and is stopped on exit.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check openai >/dev/null

cargo build --quiet -p acms-cli
target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
acms="$target_dir/debug/acms"

# The fake upstream: answers every chat completion (JSON or server-sent events) and records
# the size of what it received, in bytes / 3 rounded up (the proxy's estimated tokens).
cat > "$work/upstream.py" <<'PY'
import json, math, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

log = open(sys.argv[1], "a", buffering=1)

def size(messages):
    total = 0
    for m in messages:
        text = m.get("role", "")
        if m.get("tool_call_id"):
            text += " " + m["tool_call_id"]
        content = m.get("content")
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content)
        text += "\n" + (content or "")
        for c in m.get("tool_calls") or []:
            text += "\n<tool_call %s %s>\n%s" % (c["id"], c["function"]["name"], c["function"].get("arguments", ""))
        total += math.ceil(len(text.encode()) / 3) + 3
    return total

class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        log.write("%d\n" % size(body["messages"]))
        if body.get("stream"):
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            for delta, finish in [({"role": "assistant", "content": ""}, None), ({"content": "streamed pong"}, None), ({}, "stop")]:
                chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "fake",
                         "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
            return
        out = json.dumps({"id": "c", "object": "chat.completion", "created": 1, "model": "fake",
                          "choices": [{"index": 0, "message": {"role": "assistant", "content": "pong"}, "finish_reason": "stop"}],
                          "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

server = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(server.server_address[1], flush=True)
server.serve_forever()
PY

python3 "$work/upstream.py" "$work/sizes.log" > "$work/upstream.port" &
pids+=($!)
for _ in $(seq 50); do [ -s "$work/upstream.port" ] && break; sleep 0.1; done
upstream_port="$(head -1 "$work/upstream.port")"

limit=3000
"$acms" proxy --listen 127.0.0.1:0 --upstream "http://127.0.0.1:$upstream_port/v1" \
  --limit "$limit" --unit estimated 2> "$work/proxy.err" &
pids+=($!)
for _ in $(seq 100); do grep -q "listening on" "$work/proxy.err" 2>/dev/null && break; sleep 0.1; done
base="$(grep -o 'http://127.0.0.1:[0-9]*/v1' "$work/proxy.err" | head -1)"
[ -n "$base" ] || { cat "$work/proxy.err"; exit 1; }

"$work/venv/bin/python" - "$base" "$work/sizes.log" "$limit" <<'PY'
import sys
import openai

base, sizes_log, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
client = openai.OpenAI(base_url=base, api_key="test-key")
messages = [{"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": "Fix the failing config tests."}]
for i in range(30):
    messages.append({"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_%d" % i, "type": "function",
         "function": {"name": "bash", "arguments": '{"command": "pytest tests/test_config.py"}'}}]})
    messages.append({"role": "tool", "tool_call_id": "call_%d" % i,
                     "content": "FAILED tests/test_config.py::test_key_%d - KeyError: 'k%d'\n" % (i, i) * 20})
messages.append({"role": "user", "content": "Continue."})

reply = client.chat.completions.create(model="fake", messages=messages)
assert reply.choices[0].message.content == "pong", reply

stream = client.chat.completions.create(model="fake", messages=messages, stream=True)
text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
assert text == "streamed pong", text

try:
    client.chat.completions.create(model="fake", messages=[
        {"role": "system", "content": "rule " * 20000}, {"role": "user", "content": "hi"}])
    raise SystemExit("an irreducible request was answered")
except openai.BadRequestError as e:
    assert e.code == "context_length_exceeded", e

sizes = [int(x) for x in open(sizes_log).read().split()]
assert len(sizes) == 2, sizes
assert max(sizes) <= limit, sizes
print("openai client through acms proxy: completion and stream ok; upstream saw %s (limit %d)" % (sizes, limit))
PY
