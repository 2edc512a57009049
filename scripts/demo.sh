#!/usr/bin/env bash
# The main job end to end on a local devnet: start it, send signed transfers,
# show them committed, stop it. Uses the release binaries `make demo` built.
set -euo pipefail
cd "$(dirname "$0")/.."
feth=target/release/feth
dir=.devnet/demo
export FETH_ABCID="$PWD/target/release/abcid"

"$feth" devnet down --dir "$dir" >/dev/null 2>&1 || true
"$feth" devnet up --dir "$dir" --fresh
trap '"$feth" devnet down --dir "$dir"' EXIT
echo
"$feth" send --network http://127.0.0.1:8545 --key-file "$dir/root.key" --count 20
echo
"$feth" devnet status --dir "$dir"
