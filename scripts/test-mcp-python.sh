#!/usr/bin/env bash
# `acms mcp` driven by the official Python MCP SDK client as a host drives it, started exactly
# as the README says (scripts/mcp_session.py): start-up on an unindexed repository (the smoke
# corpus: initialize within 1 s, progress while indexing), then every tool on a copy of the
# shop fixture (bounds, schemas, annotations, bad arguments). Installs `mcp` and `tiktoken`
# (exact token counts) from PyPI into a throwaway virtual environment. Uses target/debug/acms
# (built when missing) in place of the installed binary. Exits non-zero on any failure.
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MCP_VERSION=2.3.0
TIKTOKEN_VERSION=0.14.0
PYTHON="$(command -v python3 || command -v python || true)"
[[ -n "$PYTHON" ]] || { echo "test-mcp-python.sh: python3 is needed" >&2; exit 1; }

TARGET="${CARGO_TARGET_DIR:-$REPO_ROOT/target}"
BIN="${ACMS_BIN:-$TARGET/debug/acms}"
if [[ ! -x "$BIN" ]]; then
    (cd "$REPO_ROOT" && cargo build -p acms-cli)
fi
# The token counts use the BPE table of the tiktoken-rs crate (a dependency of the workspace).
(cd "$REPO_ROOT" && cargo fetch --locked >/dev/null 2>&1 || true)
"$REPO_ROOT/scripts/fetch-corpus.sh" --smoke >/dev/null

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
"$PYTHON" -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "mcp==$MCP_VERSION" "tiktoken==$TIKTOKEN_VERSION" >&2
CORPUS="${ACMS_CORPUS_DIR:-$REPO_ROOT/.cache/corpora}/requests"
cp -r "$CORPUS" "$WORK/start"
rm -rf "$WORK/start/.acms" "$WORK/start/.acms-corpus"
cp -r "$REPO_ROOT/tests/data/shop" "$WORK/shop"
if ! "$WORK/venv/bin/python" "$REPO_ROOT/scripts/mcp_session.py" \
    "$BIN" "$REPO_ROOT/README.md" "$WORK/start" "$WORK/shop" "$WORK/server.log"; then
    echo "test-mcp-python.sh: the server's stderr:" >&2
    tail -n 40 "$WORK/server.log" >&2 || true
    exit 1
fi
