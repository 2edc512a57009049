#!/usr/bin/env bash
# make test: lint, the bench builds, every test against real CometBFT and
# Redis, then each fuzz target briefly. README's second set-up command; CI
# runs it on a fresh 2-core machine (.ci/run), so its order is chosen for
# wall time without letting one part skew what another measures:
#
# 1. The installs every test phase needs (scripts/setup.sh --test-packages:
#    apt packages, the pinned CometBFT and toxiproxy), then the build. Not
#    side by side: tried, the installs' Go compiles and the build took 40 min
#    together here, where the build alone had measured 21.4 and the installs
#    about 10.
# 2. The tests that measure the machine (`quiet::*`, in feth's `it`: CPU per
#    transaction, the busy-machine guard, knees, a profiler's samples, the
#    agent's memory) run alone, one at a time.
# 3. Every other test, one at a time (on two cores, devnet tests side by
#    side starve each other, so their behaviour under load, not the code,
#    would decide them), with the fuzz builds and runs beside them at
#    `nice 19`: those tests mostly wait on block intervals, and a nice-19
#    process gets about 1.5 % of a core from one that wants it (CFS weights
#    15 against 1024), so it takes the idle time, not theirs. So do the Go
#    tools only some tests use (scripts/install-test-tools.sh: geth, older
#    CometBFTs; about 4 of the installs' 7 min here); the tests that need
#    them are the `#[ignore]`d ones, run last, once those are installed.
#
# The build lints in place: the workspace's own crates are compiled by
# clippy-driver, as `cargo clippy` runs it (RUSTC_WORKSPACE_WRAPPER, and its
# CLIPPY_ARGS for -D warnings), so the benches' and tests' build reports and
# fails on every lint `make lint` would, over the same targets, without
# `cargo clippy`'s own check-only pass over every dependency (8.5 min here).
# Benches are built (not run) in the dev profile, which shares the tests'
# compiled dependencies. No incremental state (a one-shot build does not
# reuse it, and it doubled target/ to 7 GB), and no separate `cargo build
# --bins`: the tests' build makes every binary the tests run.
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
MAKE=${MAKE:-make}
export CARGO_INCREMENTAL=0
logs=target/make-test
mkdir -p "$logs"

"$CARGO" fmt --all -- --check
# The layering ARCHITECTURE.md draws: the chain client and CometBFT's client
# pull in no Redis (the etl's), the etl no EVM (the chain client's).
layering() {
  local deps
  deps=$("$CARGO" tree -p "$1" -e normal --prefix none --format '{p}')
  if grep -E "^($2) " <<<"$deps"; then
    echo "layering: $1 depends on the crates above; see docs/ARCHITECTURE.md" >&2
    exit 1
  fi
}
layering feth-chain 'redis|feth-etl|flate2'
layering feth-comet 'redis|feth-etl|feth-chain|alloy'
layering feth-etl 'alloy|secp256k1|feth-chain'
command -v clippy-driver >/dev/null || {
  echo "clippy-driver missing: rustup component add clippy" >&2
  exit 1
}
linted() {
  CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__ \
    RUSTC_WORKSPACE_WRAPPER="$(command -v clippy-driver)" "$CARGO" "$@"
}

# The fuzz and the test tools' installs run in process groups of their own
# (setsid), so a failure here ends them and their children (cargo, rustc,
# go) by group, and only them.
groups=()
trap 'for g in "${groups[@]}"; do kill -- "-$g" 2>/dev/null || true; done' EXIT
# Waits for background part $1 (pid $2, log $3) and shows its log, with
# when it ended (its log's last write) on the suite's clock.
finish() {
  local rc=0
  wait "$2" || rc=$?
  echo "--- $1 (log: $3) ---"
  cat "$3"
  echo "--- $1: exit status $rc, ended at $(($(stat -c %Y "$3") - start))s ---"
  return "$rc"
}
# Each phase's start on the suite's clock, to keep the whole under CI's limit.
start=$(date +%s)
stamp() { echo "test: [$(($(date +%s) - start))s] $*"; }

stamp "the installs"
bash scripts/setup.sh --test-packages
stamp "the linted build"
linted bench --workspace --no-run --profile dev
linted test --workspace --no-run

failed=()
failed_logs=()
# Runs one phase of tests: $1 names it, $2 names its log ($logs/$2.log, the
# output kept as well as shown), the rest are cargo test's arguments. A
# failure is recorded, and its log is read for the summary at the end.
# --workspace, as the build: cargo unifies features over the packages it is
# given, and `-p feth` alone rebuilt 111 dependencies with other features.
tests() {
  local name=$1 log="$logs/$2.log"
  shift 2
  linted test --workspace --no-fail-fast "$@" 2>&1 | tee "$log" || {
    failed+=("$name")
    failed_logs+=("$log")
  }
}
# One line per failed test in the logs given: its name, where it panicked
# and the message's first lines, so a failure names itself in the last lines
# CI shows, however long the output before it.
summarise() {
  awk '
    function flush() { if (line != "") print substr(line, 1, 1200); line = ""; grab = 0 }
    /^---- .* stdout ----$/ { flush(); name = $2; next }
    name != "" && /panicked at/ { line = name ": " $0; grab = 6; name = ""; next }
    grab > 0 && /^note: run with/ { flush(); next }
    grab > 0 { line = line " | " $0; if (--grab == 0) flush(); next }
    /^test .* \.\.\. FAILED$/ || /^error: .*(failed|signal)/ { flush(); failures = failures $0 "\n" }
    END { flush(); printf "%s", failures }
  ' "$@"
}

stamp "the tests that measure the machine, alone"
tests "the machine-measuring tests (it::quiet)" quiet -- --test-threads 1 quiet::

stamp "every other test; beside them at nice 19, the fuzz targets and the test tools' installs (logs: $logs/fuzz.log, $logs/tools.log)"
setsid nice -n 19 "$MAKE" --no-print-directory fuzz FUZZ_SECONDS=10 FUZZ_FLAGS=--dev \
  >"$logs/fuzz.log" 2>&1 &
fuzz=$!
groups+=("$fuzz")
setsid nice -n 19 bash scripts/install-test-tools.sh >"$logs/tools.log" 2>&1 &
tools=$!
groups+=("$tools")
tests "the other tests" others -- --test-threads 1 --skip quiet::
stamp "the other tests ended"
if finish "the test tools' installs" "$tools" "$logs/tools.log"; then
  stamp "the tests that need those tools (the ignored ones)"
  tests "the tests that need the test tools" ignored -- --ignored --test-threads 1
else
  failed+=("the test tools' installs (so the tests that need them did not run)")
fi
finish fuzz "$fuzz" "$logs/fuzz.log" || failed+=("the fuzz runs")
stamp "every part ended"

if [ ${#failed[@]} -gt 0 ]; then
  printf 'test: FAILED: %s\n' "${failed[@]}" >&2
  if [ ${#failed_logs[@]} -gt 0 ]; then
    echo "test: the failed tests (whole output in ${failed_logs[*]}):" >&2
    summarise "${failed_logs[@]}" >&2
  fi
  exit 1
fi
echo "test: every part passed"
