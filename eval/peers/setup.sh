#!/usr/bin/env bash
# Create the evaluation virtualenv (Aider's repo map, BM25, tiktoken) under .cache/ and check
# that the peers work with no network but the package registry used to install them.
#
# Usage: eval/peers/setup.sh            (idempotent: skips the install when requirements match)
# Env:   ACMS_EVAL_VENV  venv location (default <repo>/.cache/eval-venv)
#        PYTHON          interpreter to build the venv from (default python3; aider needs 3.10-3.12)
# Prints the venv's python path as its last line, for scripts that want to capture it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$here/../.." && pwd)"
venv="${ACMS_EVAL_VENV:-$repo_root/.cache/eval-venv}"
python="${PYTHON:-python3}"
req="$here/requirements.txt"
stamp="$venv/.acms-requirements.sha256"
want="$(sha256sum "$req" | cut -d' ' -f1)"

if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "eval venv up to date: $venv" >&2
else
    "$python" -c 'import sys; sys.exit(0 if (3, 10) <= sys.version_info[:2] <= (3, 12) else 1)' \
        || { echo "setup.sh: aider-chat needs Python 3.10-3.12; set PYTHON=" >&2; exit 1; }
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" >&2
    echo "$want" >"$stamp"
fi

# Self-check, run with the same offline environment the peers set for themselves: the BPE loads
# from the local litellm copy and the repo map's parsers come from the installed language pack.
"$venv/bin/python" "$here/common.py" --self-check >&2
echo "$venv/bin/python"
