#!/usr/bin/env bash
# What web3 reads cost the block rate (docs/MEASUREMENTS.md, "Measured: reads
# beside the writes"): on a devnet of abcid with each patch set, 20 s closed-loop
# ERC-20 loads from 500 senders, without and with `--reads 400` (the
# default ERC-20 read mix), interleaved off/on, on/off four times. Each
# run's JSON goes to $OUT (default .devnet/reads-beside-writes).
# Needs the release build: cargo build --release --workspace --bins
set -euo pipefail
cd "$(dirname "$0")/.."
feth="$PWD/target/release/feth"
export FETH_ABCID="${FETH_ABCID:-$PWD/target/release/abcid}"
out="${OUT:-.devnet/reads-beside-writes}"
web3=http://127.0.0.1:8545
mkdir -p "$out"
for patches in ${PATCH_SETS:-all none}; do
  dir=.devnet/reads-$patches
  "$feth" devnet down --dir "$dir" >/dev/null 2>&1 || true
  "$feth" devnet up --dir "$dir" --fresh --timeout-commit 500ms --patches "$patches"
  trap '"$feth" devnet down --dir "$dir"' EXIT
  "$feth" fund --network "$web3" --root-key "$dir/root.key" --count 500 --amount 1eth \
    --out "$dir/keys.txt" --seed reads >/dev/null
  round=0
  for order in "off on" "on off" "off on" "on off"; do
    round=$((round + 1))
    for mode in $order; do
      extra=()
      [ "$mode" = on ] && extra=(--reads 400)
      "$feth" load --network "$web3" --keys "$dir/keys.txt" --duration 20 --workload erc20 \
        --quiet --json "${extra[@]}" >"$out/$patches-$mode-$round.json"
      echo "$patches reads $mode, round $round: $(jq -r \
        '"\(.chain.committed_tps | floor) tx/s, \(.chain.gas_per_second / 1e6 | . * 100 | floor / 100) Mgas/s"' \
        "$out/$patches-$mode-$round.json")"
    done
  done
  "$feth" devnet down --dir "$dir"
  trap - EXIT
done
