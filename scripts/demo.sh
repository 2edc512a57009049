#!/usr/bin/env bash
# The main job end to end on a local devnet: start it, fund accounts from the
# root key, load it and read committed TPS from the chain, profile blocks under
# load, ingest the node's logs into Redis and answer block-time questions,
# write the run's report, stop everything, and end with a quick before/after
# of abcid's patches. Uses the release binaries `make demo` built.
set -euo pipefail
cd "$(dirname "$0")/.."
feth="$PWD/target/release/feth"
dir=.devnet/demo
web3=http://127.0.0.1:8545
profiler=http://127.0.0.1:6060
redis_port=6399
export FETH_ABCID="$PWD/target/release/abcid"

"$feth" devnet down --dir "$dir" >/dev/null 2>&1 || true
"$feth" devnet up --dir "$dir" --fresh --timeout-commit 500ms
redis_pid=""
cleanup() {
  "$feth" devnet down --dir "$dir" || true
  if [ -n "$redis_pid" ]; then kill "$redis_pid" 2>/dev/null || true; fi
}
trap cleanup EXIT

echo; echo "== feth fund: 500 accounts from the root key"
"$feth" fund --network "$web3" --root-key "$dir/root.key" --count 500 --amount 1eth \
  --out "$dir/keys.txt" --seed demo

echo; echo "== feth load: 20 s closed loop, committed TPS read from blocks"
"$feth" load --network "$web3" --keys "$dir/keys.txt" --duration 20 --json > "$dir/load.json"

echo; echo "== feth profiler: 3 blocks under load"
"$feth" profiler --profiler "$profiler" --enable --blocks 3 --frequency-hz 499
"$feth" load --network "$web3" --keys "$dir/keys.txt" --duration 5 --quiet >/dev/null
(cd "$dir" && "$feth" profiler --profiler "$profiler")

echo; echo "== feth etl: the node's logs into Redis, then the answers"
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" >/dev/null &
redis_pid=$!
for _ in $(seq 50); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done
"$feth" etl --tendermint "$dir/logs/cometbft.log" --abcid "$dir/logs/abcid.log" \
  --comet-rpc http://127.0.0.1:26657 --redis "redis://127.0.0.1:$redis_port" --no-progress
"$feth" etl stats --redis "redis://127.0.0.1:$redis_port" --chain-id feth-devnet-9000 --window 20

"$feth" etl stats --redis "redis://127.0.0.1:$redis_port" --chain-id feth-devnet-9000 --json --per-block \
  > "$dir/etl.json"

echo; echo "== feth report: the load run's charts, flamegraph and parameters in one page"
flames=()
for svg in "$dir"/flamegraphs/*/merged-*/all.svg; do
  [ -e "$svg" ] && flames+=(--flamegraph "abcid=$svg")
done
"$feth" report "$dir/load.json" --etl "$dir/etl.json" "${flames[@]}" --out "$dir/report"

echo; echo "reports: $dir/report/report.html (open it in a browser), $dir/report/summary.md,"
echo "         $dir/load.json, flamegraphs in $dir/flamegraphs/, logs in $dir/logs/"

# The question the toolkit answers: is the chain faster after a change, by
# how much, and is that more than noise? Quick mode (a few minutes on two
# cores): the fewest rounds a verdict needs, short windows, no kvstore
# reference and no profiles; the demo's devnet is stopped first so the
# compare's own devnets have the machine.
echo; echo "== feth compare: before/after, abcid without patches against all of them (quick mode)"
"$feth" devnet down --dir "$dir" >/dev/null
"$feth" compare --ladder none,all --rounds 5 --seconds 3 --senders 100 \
  --step-secs 2 --warmup-secs 1 --no-reference --profile-blocks 0 \
  --out "$dir/compare" --json > "$dir/compare.json"
echo "compare: $dir/compare.json (\`feth report $dir/compare.json\` draws its page)"
