#!/usr/bin/env bash
# Fetch the evaluation / benchmark corpora: real projects nobody on this team wrote, pinned to exact
# versions and checked against a sha256, from package registries only (PyPI source distributions
# via `pip download`, npm tarballs via `npm pack`).
#
# Usage: scripts/fetch-corpus.sh [--smoke] [--list] [NAME...]
#   no NAME    fetch every corpus
#   --smoke    fetch only the smallest corpus (for CI)
#   --list     print the corpus table (name, registry, package, version, role) and exit
#
# Each corpus lands unpacked in ${ACMS_CORPUS_DIR:-<repo>/.cache/corpora}/<name>/, flattened one
# level so <name>/ is the package's source root. A marker file <name>/.acms-corpus records the
# pinned version and the measured line count; a corpus whose marker matches is skipped, so the
# script is idempotent and cheap to run before every evaluation. The script prints one line per
# corpus: name, version, code files, code lines.
#
# npm tarballs carry compiled output (dist/, lib.*/) next to the TypeScript sources; we keep only
# the source dir (renamed to src/ when the package calls it something else, e.g. ethers' src.ts/)
# and the package metadata, because indexing the compiled copies would put every function in the
# corpus twice and make retrieval scores meaningless. Python sdists are kept whole: their tests
# and docs are part of a real repository, and the task generator filters tests out itself.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
corpus_dir="${ACMS_CORPUS_DIR:-$repo_root/.cache/corpora}"

# name | registry | package | version | sha256 of the archive | role | npm source dir
# Line counts (code files only, measured by this script): requests ~10.7k .py, click ~17.6k .py,
# rich ~26.6k .py, docutils ~87.7k .py, rxjs ~21.4k .ts, ethers ~30.2k .ts (sources only).
# TypeScript packages were chosen for JSDoc on functions, measured with eval/make_tasks.py
# --stats: rxjs 188 and ethers 524 qualifying functions (@reduxjs/toolkit 2.5.0: 30, mobx: 21,
# @trpc/server: 36, @tanstack/query-core: 1 -- most TS libraries document types, not functions).
CORPORA="
requests|pypi|requests|2.32.3|55365417734eb18255590a9ff9eb97e9e1da868d4ccd6402399eaf68af20a760|eval,smoke
click|pypi|click|8.1.7|ca9853ad459e787e2192211578cc907e7594e294c7ccc834310722b41b9ca6de|eval
rich|pypi|rich|13.9.4|439594978a49a09530cff7ebc4b5c7103ef57baf48d5ea3184f21d9a2befa098|eval
docutils|pypi|docutils|0.21.2|3a6b18732edf182daa3cd12775bbb338cf5691468f91eeeb109deff6ebfa986f|eval,bench
rxjs|npm|rxjs|7.8.1|c532167725ab7d085123209156c93cef22f2479cb9c8527060f1cd903aa9d149|eval|src
ethers|npm|ethers|6.13.4|32aad3770eafe954d29bbb9fb44d16bddf1bb2c2d5c3b575a3ec5ca5b4fd8a1a|eval|src.ts
"
SMOKE=requests

die() { echo "fetch-corpus: $*" >&2; exit 1; }

# The scratch dir of the corpus being fetched, removed if the script dies half-way.
scratch=""
trap 'if [ -n "$scratch" ]; then rm -rf "$scratch"; fi' EXIT

corpus_row() {
    local name="$1" row
    row="$(printf '%s\n' "$CORPORA" | grep -E "^${name}\|" || true)"
    [ -n "$row" ] || die "unknown corpus '$name' (known: $(all_names | tr '\n' ' '))"
    printf '%s\n' "$row"
}

all_names() { printf '%s\n' "$CORPORA" | grep -v '^$' | cut -d'|' -f1; }

# Code files only: what the evaluation indexes and what "lines of code" means in the README.
count_code() {
    local dir="$1" registry="$2"
    local -a pat
    if [ "$registry" = pypi ]; then
        pat=(-name '*.py')
    else
        pat=( \( -name '*.ts' -o -name '*.tsx' \) -not -name '*.d.ts' )
    fi
    local files lines
    files="$(find "$dir" -type f "${pat[@]}" | wc -l)"
    lines="$(find "$dir" -type f "${pat[@]}" -print0 | xargs -0 -r cat | wc -l)"
    echo "$files $lines"
}

fetch_one() {
    local name="$1" row registry package version sha role srcdir
    row="$(corpus_row "$name")"
    IFS='|' read -r _ registry package version sha role srcdir <<<"$row"
    local dest="$corpus_dir/$name" marker="$corpus_dir/$name/.acms-corpus"
    local want="name=$name registry=$registry package=$package version=$version"

    if [ -f "$marker" ] && head -n1 "$marker" | grep -qxF "$want"; then
        read -r files lines < <(count_code "$dest" "$registry")
        printf '%-14s %-8s %-10s files=%-5s lines=%-6s (present)\n' "$name" "$registry" "$version" "$files" "$lines"
        return
    fi

    mkdir -p "$corpus_dir"
    # Download and unpack in a scratch dir next to the destination, then rename: a run killed
    # half-way never leaves a directory that looks complete.
    local tmp
    tmp="$(mktemp -d "$corpus_dir/.fetch-$name.XXXXXX")"
    scratch="$tmp"

    local archive
    case "$registry" in
        pypi)
            $PIP download --quiet --no-deps --no-binary :all: "$package==$version" -d "$tmp/dl" >&2 \
                || die "pip download $package==$version failed"
            ;;
        npm)
            mkdir -p "$tmp/dl"
            (cd "$tmp/dl" && npm pack --silent "$package@$version" >/dev/null) \
                || die "npm pack $package@$version failed"
            ;;
        *) die "unknown registry '$registry'" ;;
    esac
    archive="$(find "$tmp/dl" -maxdepth 1 -type f \( -name '*.tar.gz' -o -name '*.tgz' \) | head -n1)"
    [ -n "$archive" ] || die "no source archive downloaded for $package $version"

    local got
    got="$(sha256sum "$archive" | cut -d' ' -f1)"
    [ "$got" = "$sha" ] || die "$name: sha256 mismatch for $(basename "$archive"): got $got, pinned $sha"

    mkdir -p "$tmp/src"
    tar -xzf "$archive" -C "$tmp/src" --strip-components=1 --no-same-owner

    if [ "$registry" = npm ]; then
        [ -d "$tmp/src/$srcdir" ] || die "$name: npm package has no $srcdir/ directory"
        mkdir -p "$tmp/keep"
        mv "$tmp/src/$srcdir" "$tmp/keep/src"
        local f
        for f in package.json README.md LICENSE LICENSE.txt LICENSE.md tsconfig.json; do
            if [ -e "$tmp/src/$f" ]; then mv "$tmp/src/$f" "$tmp/keep/"; fi
        done
        rm -rf "$tmp/src"
        mv "$tmp/keep" "$tmp/src"
    fi

    read -r files lines < <(count_code "$tmp/src" "$registry")
    {
        echo "$want"
        echo "sha256=$sha role=$role code_files=$files code_lines=$lines"
    } >"$tmp/src/.acms-corpus"

    rm -rf "$dest"
    mv "$tmp/src" "$dest"
    rm -rf "$tmp"
    scratch=""
    printf '%-14s %-8s %-10s files=%-5s lines=%-6s (fetched)\n' "$name" "$registry" "$version" "$files" "$lines"
}

names=()
for arg in "$@"; do
    case "$arg" in
        --smoke) names+=("$SMOKE") ;;
        --list)
            printf '%s\n' "$CORPORA" | grep -v '^$' | awk -F'|' '{printf "%-14s %-5s %-18s %-8s %s\n", $1, $2, $3, $4, $6}'
            exit 0
            ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;;
        -*) die "unknown option '$arg' (try --help)" ;;
        *) names+=("$arg") ;;
    esac
done
if [ "${#names[@]}" -eq 0 ]; then
    mapfile -t names < <(all_names)
fi

PIP="${PIP:-python3 -m pip}"
for name in "${names[@]}"; do
    fetch_one "$name"
done
echo "corpora in $corpus_dir"
