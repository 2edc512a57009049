#!/usr/bin/env bash
# Fuzzes the etl's line parser for a bounded time.
#
#   etl/scripts/fuzz.sh [SECONDS]     (default 60)
#
# Installs cargo-fuzz from crates.io if missing. cargo fuzz needs a nightly
# compiler (sanitizer flags): the nightly toolchain is used when rustup has
# one, else the stable compiler with RUSTC_BOOTSTRAP=1. The corpus is seeded
# with the real log lines of tests/fixtures/. Exit status: 0 when no crash
# was found in the time given; crashes are saved in etl/fuzz/artifacts/.
set -euo pipefail
secs="${1:-60}"
etl="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

if ! command -v cargo-fuzz >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
toolchain=()
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    toolchain=(+nightly)
else
    export RUSTC_BOOTSTRAP=1
fi

corpus="$etl/fuzz/corpus/parse_line"
mkdir -p "$corpus"
if [[ -z "$(ls -A "$corpus")" ]]; then
    # One seed per distinct line shape: the first 300 lines of each fixture.
    n=0
    for f in "$etl"/tests/fixtures/*.log; do
        head -n 300 "$f" | while IFS= read -r line; do
            printf '%s' "$line" >"$corpus/seed-$(basename "$f")-$((n++))"
        done
    done
fi

cd "$etl/fuzz"
exec cargo "${toolchain[@]}" fuzz run parse_line "$corpus" -- \
    -max_total_time="$secs" -max_len=4096 -timeout=10
