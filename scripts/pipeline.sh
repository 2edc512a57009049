#!/usr/bin/env bash
# The stages of the Jenkinsfile's redeploy-and-retest loop, one per call:
#   bash scripts/pipeline.sh STAGE      (STAGE: see `--list`)
# The Jenkinsfile calls nothing else, and CI runs every stage it calls in a
# short form (agentd/tests/it/quiet/pipeline.rs), so the pipeline cannot rot unseen.
#
# Settings come from the environment (defaults in brackets):
#   FETH [target/release/feth], ABCID: the candidate build [target/release/abcid]
#   OUT: where reports go [reports]; DEVNET: the local devnet [.devnet/ci]
#   BLOCK_TIME [500ms]; SENDERS [1000]; WINDOW_SECONDS measured per window [10];
#   ROUNDS of the interleaved comparison [8]
#   MAX_REGRESSION: percent [5]; BASELINE_DIR: the last good build's
#     compare.json and abcid [baseline]
#   SATURATE_ARGS, COMPARE_ARGS: extra arguments (CI's short form uses them)
#   BISECT=1: when the gate found a regression and the build spans several
#     commits since the last good one, name the first slower one (feth
#     bisect) [off]; BISECT_BUILD: its build command [cargo build --release
#     -p abcid]; BISECT_ARGS: extra arguments
#   Ports of the local devnet: RPC_PORT [26657] P2P_PORT [26656]
#     ABCI_PORT [26658] WEB3_PORT [8545] PROFILER_PORT [6060] METRICS_PORT [26661]
#     COMETBFT_METRICS_PORT [26660]; REDIS_PORT [6399]
# One's own fullnode instead of the local devnet, any binary, paired:
#   DEPLOY_CANDIDATE and DEPLOY_BASELINE, bash commands that deploy this
#   build and the last good one to your node (switch the binary or its
#   config, restart the service). `feth compare --deploy-a/--deploy-b` runs
#   them before every run, rounds ABBA, and waits for the node each time
#   (serving, caught up, a new block, an empty mempool); the redeploy stage
#   runs DEPLOY_CANDIDATE once, which must then return once the node serves.
#   Their environment: BUILD (this build's binary, kept for the next one
#   [ABCID]), BASELINE_BUILD (the last good build's kept binary), FETH_STEP
#   (a: baseline, b: candidate), FETH_ROUND, FETH_PIDS_FILE (write the node's
#   PIDs there, one per line, for its CPU per transaction).
#   NODE_WEB3, NODE_COMET_RPC, NODE_PROFILER, NODE_ROOT_KEY (a funded key
#   file), NODE_LOGS (optional: the folder of cometbft.log and abcid.log).
set -euo pipefail
cd "$(dirname "$0")/.."

FETH="${FETH:-$PWD/target/release/feth}"
ABCID="${ABCID:-$PWD/target/release/abcid}"
OUT="${OUT:-reports}"
DEVNET="${DEVNET:-.devnet/ci}"
BLOCK_TIME="${BLOCK_TIME:-500ms}"
SENDERS="${SENDERS:-1000}"
WINDOW_SECONDS="${WINDOW_SECONDS:-10}"
ROUNDS="${ROUNDS:-8}"
MAX_REGRESSION="${MAX_REGRESSION:-5}"
BASELINE_DIR="${BASELINE_DIR:-baseline}"
RPC_PORT="${RPC_PORT:-26657}" P2P_PORT="${P2P_PORT:-26656}" ABCI_PORT="${ABCI_PORT:-26658}"
WEB3_PORT="${WEB3_PORT:-8545}" PROFILER_PORT="${PROFILER_PORT:-6060}" REDIS_PORT="${REDIS_PORT:-6399}"
METRICS_PORT="${METRICS_PORT:-26661}" COMETBFT_METRICS_PORT="${COMETBFT_METRICS_PORT:-26660}"
read -r -a saturate_args <<< "${SATURATE_ARGS:-}"
read -r -a compare_args <<< "${COMPARE_ARGS:-}"
export FETH_ABCID="$ABCID"

if [ -n "${DEPLOY_CANDIDATE:-}${DEPLOY_BASELINE:-}" ]; then
  own_node=1
  : "${DEPLOY_CANDIDATE:?set DEPLOY_CANDIDATE too: the command that deploys this build to your node}"
  : "${DEPLOY_BASELINE:?set DEPLOY_BASELINE too: the command that deploys the last good build (\$BASELINE_BUILD) to your node}"
  web3="${NODE_WEB3:?set NODE_WEB3 to the web3 URL of your node}"
  comet="${NODE_COMET_RPC:?set NODE_COMET_RPC to the CometBFT RPC URL of your node}"
  profiler="${NODE_PROFILER:-}"
  root_key="${NODE_ROOT_KEY:?set NODE_ROOT_KEY to a key file of a funded account}"
else
  own_node=0
  web3="http://127.0.0.1:$WEB3_PORT"
  comet="http://127.0.0.1:$RPC_PORT"
  profiler="http://127.0.0.1:$PROFILER_PORT"
  root_key="$DEVNET/root.key"
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
keys="$OUT/keys.txt"
BUILD=$(realpath -m "${BUILD:-$ABCID}")
BASELINE_BUILD="$(realpath -m "$BASELINE_DIR")/build"
export BUILD BASELINE_BUILD

# The last successful build's kept files, as Jenkins' Copy Artifact step
# left them in baseline-copy/, become BASELINE_DIR.
stage_baseline() {
  local copied="${BASELINE_COPY:-baseline-copy/reports/next-baseline}"
  if [ -d "$copied" ]; then
    rm -rf "$BASELINE_DIR"
    mv "$copied" "$BASELINE_DIR"
  else
    echo "pipeline: no kept files of an earlier build in $copied"
  fi
}

stage_redeploy() {
  if [ "$own_node" = 1 ]; then
    FETH_STEP=b FETH_ROUND=setup FETH_PIDS_FILE="$OUT/candidate.pids" bash -c "$DEPLOY_CANDIDATE"
    return
  fi
  "$FETH" devnet down --dir "$DEVNET" >/dev/null 2>&1 || true
  "$FETH" devnet up --dir "$DEVNET" --fresh --abcid "$ABCID" --timeout-commit "$BLOCK_TIME" \
    --rpc-port "$RPC_PORT" --p2p-port "$P2P_PORT" --abci-port "$ABCI_PORT" \
    --web3-port "$WEB3_PORT" --profiler-port "$PROFILER_PORT" --metrics-port "$METRICS_PORT" \
    --cometbft-metrics-port "$COMETBFT_METRICS_PORT" --json > "$OUT/devnet.json"
}

stage_fund() {
  rm -f "$keys"
  "$FETH" fund --network "$web3" --root-key "$root_key" --count "$SENDERS" --amount 1eth \
    --out "$keys" --seed "ci-$(date +%s)" --json > "$OUT/fund.json"
}

stage_saturate() {
  "$FETH" saturate --network "$web3" --keys "$keys" --comet-rpc "$comet" --quiet --json \
    "${saturate_args[@]}" > "$OUT/saturate.json"
}

stage_profile() {
  if [ -z "$profiler" ]; then
    echo "pipeline: no NODE_PROFILER given: no profiles of your node"
    return
  fi
  "$FETH" profiler --profiler "$profiler" --enable --blocks 5
  "$FETH" load --network "$web3" --keys "$keys" --duration "${PROFILE_SECS:-10}" --quiet > /dev/null
  (cd "$OUT" && "$FETH" profiler --profiler "$profiler" --json > profiles.json)
}

stage_etl() {
  local logs="$DEVNET/logs"
  if [ "$own_node" = 1 ]; then
    if [ -z "${NODE_LOGS:-}" ]; then
      echo "pipeline: no NODE_LOGS given (the folder of your node's cometbft.log and abcid.log): no etl"
      return
    fi
    logs="$NODE_LOGS"
  fi
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --daemonize yes --pidfile "$OUT/redis.pid" --dir "$OUT" >/dev/null
  trap 'kill "$(cat "$OUT/redis.pid")" 2>/dev/null || true' RETURN
  for _ in $(seq 100); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
  "$FETH" etl --tendermint "$logs/cometbft.log" --abcid "$logs/abcid.log" \
    --comet-rpc "$comet" --redis "redis://127.0.0.1:$REDIS_PORT" --no-progress
  local chain
  chain=$(curl -s "$comet/status" | python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["node_info"]["network"])')
  "$FETH" etl stats --redis "redis://127.0.0.1:$REDIS_PORT" --chain-id "$chain" --format json \
    > "$OUT/stats.json"
}

# The candidate against the last good build in ROUNDS interleaved rounds
# (ABBA), each round a pair: both on local devnets of their own, or both
# deployed in turn to one's own node before each of their runs.
stage_compare() {
  local common=(--rounds "$ROUNDS" --seconds "$WINDOW_SECONDS" --senders "$SENDERS"
                --out "$OUT/flamegraphs" --markdown "$OUT/compare.md" --quiet --json)
  if [ "$own_node" = 1 ]; then
    local deploy_a="$DEPLOY_BASELINE"
    if [ ! -f "$BASELINE_BUILD" ]; then
      echo "pipeline: no baseline build in $BASELINE_BUILD: comparing the candidate with itself (the noise floor)"
      deploy_a="$DEPLOY_CANDIDATE"
    fi
    "$FETH" compare --network "$web3" --keys "$keys" --comet-rpc "$comet" \
      --deploy-a "$deploy_a" --deploy-b "$DEPLOY_CANDIDATE" \
      "${common[@]}" "${compare_args[@]}" > "$OUT/compare.json"
    "$FETH" report "$OUT/compare.json" --out "$OUT/report"
    return
  fi
  "$FETH" devnet down --dir "$DEVNET" >/dev/null 2>&1 || true
  local baseline="$BASELINE_DIR/abcid"
  if [ ! -x "$baseline" ]; then
    echo "pipeline: no baseline build in $BASELINE_DIR: comparing the candidate with itself (the noise floor)"
    baseline="$ABCID"
  fi
  "$FETH" compare --build-a "$baseline" --build-b "$ABCID" --timeout-commit "$BLOCK_TIME" \
    "${common[@]}" "${compare_args[@]}" > "$OUT/compare.json"
  # The ladder's page (charts, differential flamegraphs), archived with reports/.
  "$FETH" report "$OUT/compare.json" --out "$OUT/report"
}

# Decides on the comparison's own interleaved pairing (b, the candidate,
# against a, the last good build), on a devnet or one's own node alike:
# passes only when shown no more than MAX_REGRESSION percent slower; fails
# with exit 3 when shown slower, and with exit 4 when the rounds could not
# tell (run more: ROUNDS), never a pass.
stage_gate() {
  if [ ! -f "$BASELINE_DIR/compare.json" ]; then
    echo "pipeline: no $BASELINE_DIR/compare.json yet: nothing to gate; this build's becomes the baseline"
    return
  fi
  "$FETH" compare --candidate "$OUT/compare.json" --step b \
    --max-regression "$MAX_REGRESSION" --markdown "$OUT/gate.md" --json > "$OUT/gate.json"
}

# What the next build compares against: this build's report and binary
# (abcid on a devnet, BUILD on one's own node).
stage_keep() {
  mkdir -p "$OUT/next-baseline"
  cp "$OUT/compare.json" "$OUT/next-baseline/compare.json"
  # Its commit: where the next build's bisection starts.
  git rev-parse HEAD > "$OUT/next-baseline/commit" 2>/dev/null || rm -f "$OUT/next-baseline/commit"
  if [ "$own_node" = 1 ]; then
    cp "$BUILD" "$OUT/next-baseline/build"
  else
    cp "$ABCID" "$OUT/next-baseline/abcid"
  fi
}

# After a failed gate (BISECT=1): which commit since the last good build
# (its commit, kept beside its report) made the chain slower. Each probe
# builds a commit in feth's own worktree and compares it with both ends,
# paired; its answer, table and flamegraph go to OUT/bisect.*.
stage_bisect() {
  if [ "${BISECT:-0}" != 1 ]; then
    echo "pipeline: bisect is off (BISECT=1 turns it on)"
    return
  fi
  if ! grep -q '"outcome": *"regression"' "$OUT/gate.json" 2>/dev/null; then
    echo "pipeline: the gate found no regression: nothing to bisect"
    return
  fi
  local good bad
  good=$(cat "$BASELINE_DIR/commit" 2>/dev/null || true)
  bad=$(git rev-parse HEAD)
  if [ -z "$good" ] || [ "$(git rev-list --first-parent --count "$good..$bad")" -lt 2 ]; then
    echo "pipeline: the build is one commit after the last good one (or that one's commit is unknown): nothing to bisect"
    return
  fi
  read -r -a bisect_args <<< "${BISECT_ARGS:-}"
  "$FETH" bisect --good "$good" --bad "$bad" --repo . \
    --build "${BISECT_BUILD:-cargo build --release -p abcid}" \
    --max-regression "$MAX_REGRESSION" --seconds "$WINDOW_SECONDS" --senders "$SENDERS" \
    --out "$OUT/bisect" --markdown "$OUT/bisect.md" --json "${bisect_args[@]}" > "$OUT/bisect.json"
}

stage_down() {
  if [ "$own_node" = 0 ]; then
    "$FETH" devnet down --dir "$DEVNET" || true
  fi
}

stages="baseline redeploy fund saturate profile etl compare gate keep down bisect"
case "${1:-}" in
  --list) echo "$stages" ;;
  *)
    if [[ " $stages " != *" ${1:-none} "* ]]; then
      echo "usage: pipeline.sh STAGE, one of: $stages" >&2
      exit 2
    fi
    "stage_$1"
    ;;
esac
