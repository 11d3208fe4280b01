#!/usr/bin/env bash
# A scripted session of the official Python MCP SDK client against `acms mcp`: installs `mcp`
# from PyPI into a throwaway virtual environment, copies the shop fixture, and runs
# scripts/mcp_session.py (lists the tools, calls `context` and `plan_phase`). Uses
# target/debug/acms (built when missing). Exits non-zero on any failure.
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MCP_VERSION=2.3.0
PYTHON="$(command -v python3 || command -v python || true)"
[[ -n "$PYTHON" ]] || { echo "test-mcp-python.sh: python3 is needed" >&2; exit 1; }

BIN="${ACMS_BIN:-$REPO_ROOT/target/debug/acms}"
if [[ ! -x "$BIN" ]]; then
    (cd "$REPO_ROOT" && cargo build -p acms-cli)
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
"$PYTHON" -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install --quiet --disable-pip-version-check "mcp==$MCP_VERSION" >&2
cp -r "$REPO_ROOT/tests/data/shop" "$WORK/shop"
"$WORK/venv/bin/python" "$REPO_ROOT/scripts/mcp_session.py" "$BIN" "$WORK/shop"
