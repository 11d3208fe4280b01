#!/usr/bin/env bash
# The Python package as a user gets it: builds the wheel (scripts/build-wheel.sh, maturin from
# PyPI in a throwaway build venv), installs it alone into a fresh venv, runs pytest over
# crates/acms-py/tests there (context, search, plans, compaction, an agent loop, two threads,
# the `acms` console script, the README's Python example verbatim), then times a cold start:
# `import acms` + the first `context` on an unindexed repository (the smoke corpus when
# fetched, else crates/acms-pack), which indexes it with the user's model. Prints the wheel
# build time, the wheel size and that cold start. Exits non-zero on any failure.
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$REPO_ROOT/target}"
MATURIN_VERSION=1.16.0
PYTEST_VERSION=8.4.2
PYTHON="$(command -v python3 || command -v python || true)"
[[ -n "$PYTHON" ]] || { echo "test-python.sh: python3 is needed" >&2; exit 1; }

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
pip_install() { "$1/bin/python" -m pip install --quiet --disable-pip-version-check "${@:2}" >&2; }

"$PYTHON" -m venv "$WORK/build"
pip_install "$WORK/build" "maturin==$MATURIN_VERSION"
start=$SECONDS
WHEEL="$(MATURIN="$WORK/build/bin/maturin" "$REPO_ROOT/scripts/build-wheel.sh")"
build_s=$((SECONDS - start))

"$PYTHON" -m venv "$WORK/venv"
pip_install "$WORK/venv" "pytest==$PYTEST_VERSION"
pip_install "$WORK/venv" "$WHEEL"
# From the tests directory's parent-less copy: `import acms` must find the installed wheel,
# never crates/acms-py/python.
cp -r "$REPO_ROOT/crates/acms-py/tests" "$WORK/tests"
(cd "$WORK" && ACMS_REPO_ROOT="$REPO_ROOT" "$WORK/venv/bin/python" -m pytest -q -p no:cacheprovider tests)

SMOKE="${ACMS_CORPUS_DIR:-$REPO_ROOT/.cache/corpora}/requests"
if [[ -d "$SMOKE" ]]; then SRC="$SMOKE"; else SRC="$REPO_ROOT/crates/acms-pack"; fi
cp -r "$SRC" "$WORK/cold"
rm -rf "$WORK/cold/.acms" "$WORK/cold/.acms-corpus"
cold="$(cd "$WORK" && "$WORK/venv/bin/python" - "$WORK/cold" <<'PY'
import sys, time
t0 = time.perf_counter()
import acms
t1 = time.perf_counter()
ctx = acms.Workspace(sys.argv[1]).context("where are redirects followed?", budget=8000)
t2 = time.perf_counter()
assert ctx.tokens <= 8000
print(f"import acms {1000 * (t1 - t0):.0f} ms, first context (indexing included) {t2 - t1:.1f} s, {ctx.tokens} tokens")
PY
)"
size=$(du -k "$WHEEL" | cut -f1)
echo "test-python.sh: wheel $(basename "$WHEEL"): $((size / 1024)) MiB ($size KiB), built in ${build_s} s" >&2
echo "test-python.sh: cold start on $(basename "$SRC"): $cold" >&2
echo "test-python.sh: ok" >&2
