#!/usr/bin/env bash
# Build the monorepo benchmark corpus (issue 38): 25 real projects side by side — Python, JavaScript,
# TypeScript, Rust and Java, about 3 million lines — from package registries only, every archive
# pinned by URL and sha256:
#   PyPI source distributions  (files.pythonhosted.org)
#   npm tarballs               (registry.npmjs.org)
#   crates.io crates           (static.crates.io)
#   Debian source packages     (deb.debian.org: Java sources are on none of the above)
#
# Usage: scripts/fetch-monorepo.sh [DIR]      (default: <repo>/.cache/monorepo)
#        scripts/fetch-monorepo.sh --list
#
# Each project lands in DIR/<name>/ (its archive's top directory stripped). A project already
# present with the pinned version (DIR/<name>/.acms-monorepo) is not fetched again, so the
# script is idempotent. Archives are checked before they are unpacked; a mismatch deletes the
# download and stops. Nothing here is needed by the test suite: only `scripts/bench-monorepo.sh`
# (docs/BENCHMARKS.md, "Monorepo") reads it.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# name | url | sha256
PROJECTS="
sympy|https://files.pythonhosted.org/packages/83/d3/803453b36afefb7c2bb238361cd4ae6125a569b4db67cd9e79846ba2d68c/sympy-1.14.0.tar.gz|d3d3fe8df1e5a0b42f0e7bdf50541697dbe7d23746e894990c030e2b05e72517
astropy|https://files.pythonhosted.org/packages/95/57/02089e6da0fc00846d309034ad74e13ebcadc67b1c5cef397ae0597473fa/astropy-8.0.2.tar.gz|e6af35823099ad6a40b57dbe5ff845f577374ea131925c9fa4b49eeab06c5310
ansible-core|https://files.pythonhosted.org/packages/0b/27/d02c3f75e9f1468b5efbe49667574f68331b17e8a9f2bb99e1d18be70052/ansible_core-2.21.5.tar.gz|65bb3148c58ebb843cd5074004c805f404f152114d98476dd823324616c9c6cb
pylint|https://files.pythonhosted.org/packages/e5/68/c205f6074acbaac2390c4bcba30ae2604fb5434e834508225f4ce2503393/pylint-4.1.5.tar.gz|e6f1b42eefe7ac926ea0eb50f9528466610e6d77144a3e32357b992aa1adc6d5
xarray|https://files.pythonhosted.org/packages/ff/f5/781c70b234f54e0401f4f7c4427a7486da38d50dbb138c7d7c55144b3d86/xarray-2026.9.0.tar.gz|6abc69694c22fa1f0fb2f357ff4e41d88beb4477ed71091f944b7dbf67ed54fe
keras|https://files.pythonhosted.org/packages/ec/a6/4cebb4196f4e6284b35e68dc17dda9a4111a2e2bf21db8211de12881ef89/keras-3.15.1.tar.gz|92ae7c1dd7f61041953dc2d42253181ee099086f0b58ae36fcf98147a6f08a29
django|https://files.pythonhosted.org/packages/55/79/49a609ea76ec51404b482932e33f1e6858946b920232c11b11a25bea3032/django-6.1.3.tar.gz|b5d2d9e35295065d13b1927b3f19a59bd119f737aa6299def14ccca1ae3c8c0d
requests|https://files.pythonhosted.org/packages/ac/c3/e2a2b89f2d3e2179abd6d00ebd70bff6273f37fb3e0cc209f48b39d00cbf/requests-2.34.2.tar.gz|f288924cae4e29463698d6d60bc6a4da69c89185ad1e0bcc4104f584e960b9ed
seaborn|https://files.pythonhosted.org/packages/86/59/a451d7420a77ab0b98f7affa3a1d78a313d2f7281a57afb1a34bae8ab412/seaborn-0.13.2.tar.gz|93e60a40988f4d65e9f4885df477e2fdaff6b73a9ded434c1ab356dd57eefff7
httpx|https://files.pythonhosted.org/packages/9a/d5/b4d2c4d397b7c0222635cd069098f232fb5cba31f6749e77b339e263b52c/httpx-0.29.0.tar.gz|700928ee6c1f4213795e67c47eba8f8553639069fea89199f71d654e38edc593
flask|https://files.pythonhosted.org/packages/26/00/35d85dcce6c57fdc871f3867d465d780f302a175ea360f62533f12b27e2b/flask-3.1.3.tar.gz|0ef0e52b8a9cd932855379197dd8f94047b359ca0a78695144304cb45f87c9eb
starlette|https://files.pythonhosted.org/packages/48/bb/3d8757f21e9a53d9035c9eb039a777047139a16bfdbedfc7a58241c3d914/starlette-1.10.0.tar.gz|b8399098d4c1e3522734f7235dc79b1fc967f96cf139c81e0fa30479e0685f9b
svelte|https://registry.npmjs.org/svelte/-/svelte-5.57.3.tgz|SHA512:5mAftM3SoDV9X0zdF386F9p2pv8iKOwi/KfBS1XnBAkVCKFzVOLHUoa8iGWAt4buoicLmyWVRpuuD5wplXOQsg==
zod|https://registry.npmjs.org/zod/-/zod-4.6.7.tgz|SHA512:g8W2D2kU6a8untc053fX1uVBKzM7yqAxW/3zwk83+6RyF2+SKOuV+c0wBDhUwzV1PaGapmZH+rmcUzPf+3CGwg==
nodebb|https://registry.npmjs.org/nodebb/-/nodebb-1.4.0.tgz|SHA512:G/QGMcGx4pg57Pl/ZxAjimHsP4GN/6IwyV22Mha0utPqMs3vD6OTAHpYWgXtimrbkbhppFV9RMZ/5MNFQ+tj9w==
clap|https://static.crates.io/crates/clap/clap-4.6.10.crate|50066ca966813ca8957ee15361752f19424a8ff620dbe9c8993d9f99d99b04b3
clap_builder|https://static.crates.io/crates/clap_builder/clap_builder-4.6.10.crate|a0ed97c96ef4efb3cc84e09fa388df4463e7cc3224ec38d7b1d9e45749333590
tracing|https://static.crates.io/crates/tracing/tracing-0.1.44.crate|63e71662fa4b2a2c3a26f570f037eb95bb1f85397f3cd8076caed2f026a6d100
tracing-core|https://static.crates.io/crates/tracing-core/tracing-core-0.1.36.crate|db97caf9d906fbde555dd62fa95ddba9eecfd14cb388e4f491a66d74cd5fb79a
tracing-subscriber|https://static.crates.io/crates/tracing-subscriber/tracing-subscriber-0.3.23.crate|cb7f578e5945fb242538965c2d0b04418d38ec25c79d160cd279bf0731c8d319
rayon|https://static.crates.io/crates/rayon/rayon-1.12.0.crate|fb39b166781f92d482534ef4b4b1b2568f42613b53e5b6c160e24cfbfa30926d
rayon-core|https://static.crates.io/crates/rayon-core/rayon-core-1.13.0.crate|22e18b0f0062d30d4230b2e85ff77fdfe4326feb054b9783a3460d8435c8ab91
ripgrep|https://static.crates.io/crates/ripgrep/ripgrep-15.2.0.crate|a30750b6d0743bfdd2656ebbaf4555aa278c43144b84bc389bcbfa399485ec71
jackson-core|http://deb.debian.org/debian/pool/main/j/jackson-core/jackson-core_2.14.1.orig.tar.xz|d9eb6aa1898c4d5a582c52e69da249efae25e4d2c809c57dc6b6ee01c4b0fb3b
jackson-databind|http://deb.debian.org/debian/pool/main/j/jackson-databind/jackson-databind_2.14.0.orig.tar.xz|ec086218027c3ecf235fcda042bf04d87b4178ee225f0633f062cd20e64f74a9
"

die() { echo "fetch-monorepo: $*" >&2; exit 1; }

if [[ "${1:-}" == "--list" ]]; then
    printf '%s\n' "$PROJECTS" | grep -v '^$' | awk -F'|' '{printf "%-20s %s\n", $1, $2}'
    exit 0
fi
dest="${1:-$repo_root/.cache/monorepo}"
mkdir -p "$dest"

# sha256 hex, or npm's "SHA512:<base64>" integrity.
verify() {
    local file="$1" want="$2" got
    if [[ "$want" == SHA512:* ]]; then
        got="SHA512:$(openssl dgst -sha512 -binary "$file" | base64 -w0)"
    else
        got="$(sha256sum "$file" | cut -d' ' -f1)"
    fi
    [[ "$got" == "$want" ]]
}

scratch=""
trap 'if [ -n "$scratch" ]; then rm -rf "$scratch"; fi' EXIT

printf '%s\n' "$PROJECTS" | grep -v '^$' | while IFS='|' read -r name url sum; do
    marker="$dest/$name/.acms-monorepo"
    if [[ -f "$marker" ]] && grep -qxF "$url" "$marker"; then
        echo "$name: present" >&2
        continue
    fi
    scratch="$(mktemp -d "$dest/.fetch-$name.XXXXXX")"
    archive="$scratch/$(basename "$url")"
    curl -fsSL --retry 3 -o "$archive" "$url" || die "$name: download of $url failed"
    verify "$archive" "$sum" || die "$name: checksum mismatch for $url (download deleted)"
    mkdir -p "$scratch/src"
    tar -xf "$archive" -C "$scratch/src" --strip-components=1 --no-same-owner
    echo "$url" >"$scratch/src/.acms-monorepo"
    rm -rf "${dest:?}/$name"
    mv "$scratch/src" "$dest/$name"
    rm -rf "$scratch"
    scratch=""
    echo "$name: fetched" >&2
done
echo "$dest"
