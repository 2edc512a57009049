#!/usr/bin/env bash
# Committed TPS of abcid for each set of patches, one fresh devnet each:
# `none`, every patch alone, and `all` (or the sets given as arguments).
# Each run: `feth devnet up --fresh --patches SET` (500 ms blocks, the default
# block gas limit), fund 500 senders, then a closed-loop `feth load` of
# LADDER_SECS seconds (default 30) of signed transfers; committed TPS is read
# from the blocks. Runs are sequential, so slow drift of the machine shows up
# as noise: the interleaved comparison with intervals is `feth compare`.
# Prints one table row per set and writes a JSON line per set to
# $dir/ladder.jsonl. Uses the release binaries (`cargo build --release`).
set -euo pipefail
cd "$(dirname "$0")/.."
feth="$PWD/target/release/feth"
export FETH_ABCID="$PWD/target/release/abcid"
dir=.devnet/ladder
secs="${LADDER_SECS:-30}"
web3=http://127.0.0.1:8545
if [ "$#" -gt 0 ]; then
  sets=("$@")
else
  sets=(none parallel-abci rwlock check-tx-lite session-cache ram-block-txs quiet-logs
        fast-ecrecover sender-cache lite-recheck snapshot-reads all)
fi
mkdir -p "$dir"
: > "$dir/ladder.jsonl"
trap '"$feth" devnet down --dir "$dir/node" >/dev/null 2>&1 || true' EXIT
printf '%-16s %10s %10s %8s\n' patches committed/s included blocks
for set in "${sets[@]}"; do
  "$feth" devnet down --dir "$dir/node" >/dev/null 2>&1 || true
  "$feth" devnet up --dir "$dir/node" --fresh --timeout-commit 500ms --patches "$set" >/dev/null
  rm -f "$dir/keys.txt"
  "$feth" fund --network "$web3" --root-key "$dir/node/root.key" --count 500 --amount 1eth \
    --out "$dir/keys.txt" --seed ladder >/dev/null 2>&1
  "$feth" load --network "$web3" --keys "$dir/keys.txt" --duration "$secs" --json --quiet \
    > "$dir/load-$set.json" 2>/dev/null
  "$feth" devnet down --dir "$dir/node" >/dev/null
  python3 - "$set" "$dir/load-$set.json" "$dir/ladder.jsonl" <<'PY'
import json, sys
name, path, out = sys.argv[1:]
report = json.load(open(path))
chain, totals = report["chain"], report["totals"]
row = {"patches": name, "committed_tps": round(chain["committed_tps"], 1),
       "included": totals["included"], "signed": totals["signed"],
       "blocks": chain["last_block"] - chain["first_block"] + 1,
       "seconds": chain["seconds"], "cpus": report["environment"]["cpus"]}
print(f'{name:<16} {row["committed_tps"]:>10} {row["included"]:>10} {row["blocks"]:>8}')
with open(out, "a") as f:
    f.write(json.dumps(row) + "\n")
PY
done
echo "JSON: $dir/ladder.jsonl"
