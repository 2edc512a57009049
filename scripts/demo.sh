#!/usr/bin/env bash
# The main job end to end on a local devnet: start it, fund accounts from the
# root key, load it with signed transfers, report committed TPS read from the
# chain, stop it. Uses the release binaries `make demo` built.
set -euo pipefail
cd "$(dirname "$0")/.."
feth=target/release/feth
dir=.devnet/demo
web3=http://127.0.0.1:8545
export FETH_ABCID="$PWD/target/release/abcid"

"$feth" devnet down --dir "$dir" >/dev/null 2>&1 || true
"$feth" devnet up --dir "$dir" --fresh --timeout-commit 500ms
trap '"$feth" devnet down --dir "$dir"' EXIT

echo; echo "== feth fund: 500 accounts from the root key"
"$feth" fund --network "$web3" --root-key "$dir/root.key" --count 500 --amount 1eth \
  --out "$dir/keys.txt" --seed demo

echo; echo "== feth load: 20 s closed loop, committed TPS read from blocks"
"$feth" load --network "$web3" --keys "$dir/keys.txt" --duration 20 --json "$dir/load.json"

echo; echo "== the last blocks"
height=$("$feth" devnet status --dir "$dir" --json | sed -n 's/.*"height": \([0-9]*\).*/\1/p')
"$feth" block --network "$web3" --start $((height > 5 ? height - 5 : 1)) --count 5
echo; echo "full report: $dir/load.json"
