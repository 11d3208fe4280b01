#!/usr/bin/env bash
# `acms` installed the ways a user installs it, then used the way a host uses it:
#   1. `cargo install --path crates/acms-cli` into a throwaway root; that binary serves MCP to
#      the official Python SDK exactly as the README's host snippets say
#      (scripts/test-mcp-python.sh with ACMS_BIN);
#   2. `cargo install --git` from this checkout's committed HEAD (as from the hosted
#      repository), and the installed binary answers (`--debug`: the git path is what is
#      checked here, and the debug build reuses what `cargo test` compiled);
#   3. `cargo package --workspace --no-verify`: every crate's metadata and file list package
#      (verification of the dependent crates needs them on a registry; see the README).
# Both installs share the workspace's target directory, so only the acms crates are compiled
# again. Exits non-zero on any failure.
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$REPO_ROOT/target}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

echo "test-install.sh: cargo install --path crates/acms-cli" >&2
cargo install --quiet --locked --path "$REPO_ROOT/crates/acms-cli" --root "$WORK/path"
"$WORK/path/bin/acms" --version
ACMS_BIN="$WORK/path/bin/acms" "$REPO_ROOT/scripts/test-mcp-python.sh"

echo "test-install.sh: cargo install --git (this checkout's HEAD)" >&2
cargo install --quiet --locked --debug --git "file://$REPO_ROOT" acms-cli --root "$WORK/git"
"$WORK/git/bin/acms" --version

echo "test-install.sh: cargo package --workspace --no-verify" >&2
(cd "$REPO_ROOT" && cargo package --quiet --workspace --no-verify --allow-dirty --locked)
echo "test-install.sh: ok" >&2
