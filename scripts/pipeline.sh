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
#   Ports of the local devnet: RPC_PORT [26657] P2P_PORT [26656]
#     ABCI_PORT [26658] WEB3_PORT [8545] PROFILER_PORT [6060] METRICS_PORT [26661]
#     COMETBFT_METRICS_PORT [26660]; REDIS_PORT [6399]
# One's own fullnode instead of the local devnet: REDEPLOY_SCRIPT (called
#   with the candidate abcid; it deploys it and returns once the node serves),
#   NODE_WEB3, NODE_COMET_RPC, NODE_PROFILER, NODE_ROOT_KEY (a funded key file).
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

if [ -n "${REDEPLOY_SCRIPT:-}" ]; then
  own_node=1
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
    "$REDEPLOY_SCRIPT" "$ABCID"
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
    logs="${NODE_LOGS:?set NODE_LOGS to the folder holding cometbft.log and abcid.log of your node}"
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

# The candidate against the last good build, both on local devnets of their
# own, measured in ROUNDS interleaved rounds (or, on one's own node, the
# candidate measured ROUNDS times).
stage_compare() {
  local common=(--rounds "$ROUNDS" --seconds "$WINDOW_SECONDS" --senders "$SENDERS"
                --timeout-commit "$BLOCK_TIME" --out "$OUT/flamegraphs"
                --markdown "$OUT/compare.md" --quiet --json)
  if [ "$own_node" = 1 ]; then
    "$FETH" compare --network "$web3" --keys "$keys" --comet-rpc "$comet" --name b \
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
  "$FETH" compare --build-a "$baseline" --build-b "$ABCID" \
    "${common[@]}" "${compare_args[@]}" > "$OUT/compare.json"
  # The ladder's page (charts, differential flamegraphs), archived with reports/.
  "$FETH" report "$OUT/compare.json" --out "$OUT/report"
}

# Decides on the comparison's own interleaved pairing (b, the candidate,
# against a, the last good build): passes only when shown no more than
# MAX_REGRESSION percent slower; fails with exit 3 when shown slower, and with
# exit 4 when the rounds could not tell (run more: ROUNDS), never a pass.
stage_gate() {
  if [ ! -f "$BASELINE_DIR/compare.json" ]; then
    echo "pipeline: no $BASELINE_DIR/compare.json yet: nothing to gate; this build's becomes the baseline"
    return
  fi
  # One's own node has no pairing (one step): the last good build's report
  # is compared with this one, unpaired.
  local baseline=()
  [ "$own_node" = 1 ] && baseline=(--baseline "$BASELINE_DIR/compare.json")
  "$FETH" compare --candidate "$OUT/compare.json" "${baseline[@]}" --step b \
    --max-regression "$MAX_REGRESSION" --markdown "$OUT/gate.md" --json > "$OUT/gate.json"
}

# What the next build compares against: this build's report and abcid.
stage_keep() {
  mkdir -p "$OUT/next-baseline"
  cp "$OUT/compare.json" "$OUT/next-baseline/compare.json"
  cp "$ABCID" "$OUT/next-baseline/abcid"
}

stage_down() {
  if [ "$own_node" = 0 ]; then
    "$FETH" devnet down --dir "$DEVNET" || true
  fi
}

stages="baseline redeploy fund saturate profile etl compare gate keep down"
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
