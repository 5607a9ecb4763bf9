#!/usr/bin/env bash
# Fuzzes the URL normaliser/escaper (fuzz/fuzz_targets/loc.rs) with cargo-fuzz (libFuzzer).
#
#   scripts/fuzz.sh [SECONDS] [extra libFuzzer flags...]    (default: 60 seconds)
#
# cargo-fuzz needs a nightly compiler (-Zsanitizer). With a nightly toolchain installed through
# rustup it is used; otherwise the stable toolchain is told to accept nightly flags with
# RUSTC_BOOTSTRAP=1 (no toolchain download: only crates.io may be reachable). Crashes land in
# fuzz/artifacts/loc/, the corpus in fuzz/corpus/loc/ (both ignored by git).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
shift || true

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: installing cargo-fuzz from crates.io" >&2
    cargo install cargo-fuzz --locked
fi

toolchain=()
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    toolchain=(+nightly)
    echo "fuzz.sh: using $(rustc +nightly -V)" >&2
else
    export RUSTC_BOOTSTRAP=1
    echo "fuzz.sh: no nightly toolchain; using $(rustc -V) with RUSTC_BOOTSTRAP=1" >&2
fi

# Seeds: the awkward cases the unit tests know about, so the run starts from real shapes.
corpus=fuzz/corpus/loc
mkdir -p "$corpus"
i=0
for seed in \
    '/fr/article.php?AIndex=12' \
    'https://www.example.com/caf%C3%A9?q=été&x=<1>' \
    '/100%/x%41%zz%' \
    "/it's?x=1&y=\"2\"#a#b" \
    'HTTPS://WWW.EXAMPLE.COM:443/a/../b/./c' \
    '//evil.com/a' \
    'javascript:alert(1)' \
    'https://user:pw@www.example.com/' \
    '/catalog/item?id=1' \
    '  /trimmed ' \
    '/a|b^c{d}`e[f]\g'; do
    printf '%s' "$seed" > "$corpus/seed-$i"
    i=$((i + 1))
done
# Right at the 2,048-character limit, raw and once encoded (é is 6 characters encoded).
pad() { local n=$1 c=$2 s= k=0; while [ "$k" -lt "$n" ]; do s="$s$c"; k=$((k + 1)); done; printf '%s' "$s"; }
printf 'https://www.example.com/%s' "$(pad 2024 a)" > "$corpus/seed-len-2048"
printf '/%s' "$(pad 2025 b)" > "$corpus/seed-len-2049"
printf '/%sab' "$(pad 337 é)" > "$corpus/seed-encoded-2048"

exec cargo "${toolchain[@]}" fuzz run loc "$corpus" -- \
    -max_total_time="$seconds" -max_len=8192 "$@"
