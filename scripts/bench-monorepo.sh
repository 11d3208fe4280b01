#!/usr/bin/env bash
# The monorepo benchmark (issue 38, docs/BENCHMARKS.md "Monorepo"): index the corpus that
# scripts/fetch-monorepo.sh builds, then time one-shot queries and an MCP `initialize` on it.
# Every figure is the operating system's own accounting (/usr/bin/time -v): wall, CPU, peak RSS.
#
# Usage: scripts/bench-monorepo.sh ACMS_BINARY DIR [QUERIES]
#   ACMS_BINARY  e.g. target/release/acms
#   DIR          the corpus (fetched into it first if missing; an existing DIR/.acms is reused
#                incrementally — delete it for a cold index)
#   QUERIES      how many of the fixed one-shot tasks to run (default 5)
# Needs /usr/bin/time and python3. Nothing in the test suite runs this.
set -euo pipefail

acms="$(realpath "$1")"
dir="$2"
queries="${3:-5}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$here/fetch-monorepo.sh" "$dir" >/dev/null
dir="$(realpath "$dir")"
log="$(mktemp -d)"
trap 'rm -rf "$log"' EXIT

# wall seconds, CPU seconds and peak RSS (MB) of one /usr/bin/time -v report
measure() {
  awk -F': ' '
    /Elapsed \(wall clock\)/ { n = split($2, t, ":"); w = 0; for (i = 1; i <= n; i++) w = w * 60 + t[i] }
    /User time/ { c += $2 } /System time/ { c += $2 }
    /Maximum resident/ { r = $2 / 1024 }
    END { printf "wall %.2f s, cpu %.2f s, peak RSS %.0f MB", w, c, r }' "$1"
}

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); $(date -u +%F)"
echo "acms: $("$acms" --version 2>/dev/null || echo "$acms")"
src=$(find "$dir" -path "$dir/.acms" -prune -o -type f \( -name '*.py' -o -name '*.js' -o -name '*.mjs' \
  -o -name '*.ts' -o -name '*.tsx' -o -name '*.rs' -o -name '*.java' -o -name '*.md' \) -printf '%s\n' |
  awk '{s += $1} END {printf "%.0f", s / 1048576}')
echo "corpus: $(du -sm --exclude=.acms "$dir" | cut -f1) MB tree, $src MB of Python/JS/TS/Rust/Java/Markdown"

/usr/bin/time -v "$acms" index "$dir" >"$log/index.out" 2>"$log/index.err" || {
  tail -20 "$log/index.err"; exit 1; }
echo "index: $(measure "$log/index.err")"
grep -E "parsed|left out|nodes|edges|vectors|keyword" "$log/index.out" | head -8 | sed 's/^/  /'
for part in index.sqlite vectors keyword; do
  [ -e "$dir/.acms/$part" ] && echo "  on disk: $part $(du -sm "$dir/.acms/$part" | cut -f1) MB"
done
echo "  on disk: total $(du -sm "$dir/.acms" | cut -f1) MB"

tasks=(
  "sympy simplify returns a wrong result for trigonometric expressions with rational powers"
  "clap derive: default_value_t is ignored when the argument is also marked required"
  "xarray Dataset.to_netcdf fails when a variable has an empty attribute dictionary"
  "requests Session does not strip the Authorization header on a redirect to another host"
  "jackson-databind ObjectMapper fails to deserialize a record with a JsonCreator constructor"
  "svelte compiler crashes on an each block with a destructured key"
  "ripgrep --glob with a negated pattern still searches hidden directories"
)
for ((i = 0; i < queries && i < ${#tasks[@]}; i++)); do
  /usr/bin/time -v "$acms" query --index "$dir/.acms" --budget 16000 "${tasks[$i]}" \
    >"$log/q.out" 2>"$log/q.err" || { tail -5 "$log/q.err"; exit 1; }
  echo "query $((i + 1)): $(measure "$log/q.err"), $(wc -c <"$log/q.out") bytes of context"
done

# MCP: spawn → `initialize`, the first `context`, then 20 warm calls on the same server.
python3 "$here/bench-mcp-warm.py" "$acms" "$dir" --calls 20
