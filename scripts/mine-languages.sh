#!/usr/bin/env bash
# Reproduce the per-language commit-task sets of issue 41 (eval/tasks/languages/<name>.jsonl)
# from local git mirrors of the projects, with `acms-eval mine` at a pinned commit: newest
# first from that commit, the first COUNT commits that qualify (1-3 modified source files of
# the language, at most 60 changed lines, a message that says something; see
# crates/acms-eval/src/mine.rs for the per-language source and test conventions).
#
# Usage: scripts/mine-languages.sh [--repos DIR] [--count N] [NAME...]
#   --repos DIR  where the mirrors are (bare or not): DIR/owner+name/repo, DIR/owner+name,
#                DIR/owner/name or DIR/name.git (default $ACMS_REPOS, else /work/.mirror)
#   --count N    tasks per set (default 40)
#   NAME         only these sets (default every set below)
# Env: ACMS_EVAL_BIN  an acms-eval binary (default: `cargo run --release -p acms-eval`)
#
# Gold symbols come from acms' own analyzers: a language acms reads as text (no analyzer yet)
# gets files and changed lines but no symbols, and re-running this script after its analyzer
# lands fills them in (the commits chosen do not depend on the analyzer).
# Nothing in CI runs this: the mirrors are not part of the repository.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# name  owner/repo  --lang  pinned newest commit
SETS=(
    "cobra     spf13/cobra              go     adbc8813901bba65827259daa8e22ff94ec1f30e"
    "jq        jqlang/jq                c      579e6f76cffd7643ba4002a2c3618a5ea710589a"
    "fmt       fmtlib/fmt               cpp    60ccad511fd680cb91d8b60a315759f71c67bef9"
    "newtonsoft JamesNK/Newtonsoft.Json csharp 09bb545d72969ad7fb4ea07db0d5c34f4fc07877"
    "sinatra   sinatra/sinatra          ruby   cb22afd7902b566b6eaba6c4ea89739494a65d12"
    "monolog   Seldaek/monolog          php    57eb1028342134e701e77c617565d51b6e5a2a53"
    "express   expressjs/express        js     a3714473feb3d2908add734d340e7755fd85e0a3"
    "axios     axios/axios              js     23a25af0688d1db2c396deb09229d2271cc24f6c"
    "gson      google/gson              java   9835b6f90192f79cdf5300c528fc6212455fb6c1"
    "jsoup     jhy/jsoup                java   46b620860af930eedc193a705eaf7cea5aec89a6"
    "okio      square/okio              kotlin 4164f2976ac7174f3d35d52150e8ffbdbe0acbec"
    "alamofire Alamofire/Alamofire      swift  7595cbcf59809f9977c5f6378500de2ad73b7ddb"
    "scopt     scopt/scopt              scala  75cd14c9e1f517e9d1beb8de9e3427e40630f1cb"
    "bats      bats-core/bats-core      bash   d22e41faad59f5fd942a88c992b4913a27a460c4"
)

repos="${ACMS_REPOS:-/work/.mirror}"
count=40
only=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --repos) repos="$2"; shift 2 ;;
        --count) count="$2"; shift 2 ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;;
        -*) echo "mine-languages.sh: unknown option '$1' (try --help)" >&2; exit 1 ;;
        *) only+=("$1"); shift ;;
    esac
done

if [[ -n "${ACMS_EVAL_BIN:-}" ]]; then
    eval_bin=("$ACMS_EVAL_BIN")
else
    eval_bin=(cargo run --quiet --release --manifest-path "$ROOT/Cargo.toml" -p acms-eval --)
fi

git_dir_of() {
    local slug="$1" owner="${1%%/*}" name="${1#*/}" c
    for c in "$repos/$owner+$name/repo" "$repos/$owner+$name" "$repos/$owner/$name" "$repos/$name.git" "$repos/$name"; do
        if [[ -d "$c/.git" ]]; then c="$c/.git"; fi
        if [[ -f "$c/HEAD" && -d "$c/objects" ]]; then echo "$c"; return 0; fi
    done
    echo "mine-languages.sh: no mirror of $slug under $repos (git clone --bare https://github.com/$slug $repos/$owner+$name)" >&2
    return 1
}

out_dir="$ROOT/eval/tasks/languages"
mkdir -p "$out_dir"
status=0
for row in "${SETS[@]}"; do
    read -r name slug lang rev <<<"$row"
    if [[ ${#only[@]} -gt 0 ]] && ! printf '%s\n' "${only[@]}" | grep -qx "$name"; then
        continue
    fi
    git_dir="$(git_dir_of "$slug")" || { status=1; continue; }
    if ! git --git-dir="$git_dir" cat-file -e "$rev^{commit}" 2>/dev/null; then
        echo "mine-languages.sh: $slug has no commit $rev (fetch the mirror again)" >&2
        status=1
        continue
    fi
    tmp="$(mktemp)"
    "${eval_bin[@]}" mine --git-dir "$git_dir" --slug "$slug" --rev "$rev" --lang "$lang" --count "$count" >"$tmp"
    n="$(wc -l <"$tmp")"
    if [[ "$n" -lt "$count" ]]; then
        echo "mine-languages.sh: $name: only $n of $count tasks" >&2
        status=1
    fi
    mv "$tmp" "$out_dir/$name.jsonl"
    echo "$name: $n tasks ($slug at ${rev:0:12}, $lang) -> eval/tasks/languages/$name.jsonl" >&2
done
exit "$status"
