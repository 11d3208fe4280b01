#!/usr/bin/env bash
# Builds the Python wheel of crates/acms-py (module `acms`, abi3: CPython >= 3.9) into
# $CARGO_TARGET_DIR/wheels and prints its path. The wheel carries the `acms` executable
# (CLI and MCP server) as acms/bin/acms, run by the `acms` console script: the release binary
# is built first (nothing to do when `cargo install --path crates/acms-cli` or an earlier
# build left it fresh in the same target directory), copied into the package for the build,
# and removed again. maturin builds the extension module in the same target directory; its
# dependency graph (no MCP server, no proxy) resolves features differently from the binary's,
# so on a fresh target most dependencies compile once more for it (3-6 min on 2 cores), and
# later builds take seconds.
#   MATURIN: the maturin to run (default: `maturin` on PATH; `pip install maturin`).
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$REPO_ROOT/target}"
MATURIN="${MATURIN:-maturin}"
command -v "$MATURIN" >/dev/null || {
    echo "build-wheel.sh: maturin is needed (pip install 'maturin>=1.16,<2'), or set MATURIN" >&2
    exit 1
}
PKG="$REPO_ROOT/crates/acms-py"
BIN_DIR="$PKG/python/acms/bin"

(cd "$REPO_ROOT" && cargo build --quiet --release --locked -p acms-cli)
# Copied, not ignored by git: maturin leaves out of the wheel what .gitignore names.
trap 'rm -rf "$BIN_DIR"' EXIT
mkdir -p "$BIN_DIR"
cp "$CARGO_TARGET_DIR/release/acms" "$BIN_DIR/acms"
chmod 755 "$BIN_DIR/acms"
# Symbols are of no use to a user; stripping takes about a tenth off the binary.
if command -v strip >/dev/null; then strip "$BIN_DIR/acms"; fi

OUT="$CARGO_TARGET_DIR/wheels"
rm -f "$OUT"/acms-*.whl
"$MATURIN" build --quiet --release --locked --strip -m "$PKG/Cargo.toml" --out "$OUT" >&2
ls "$OUT"/acms-*.whl
