#!/usr/bin/env bash
# Regenerates the real-log fixtures in etl/tests/fixtures/ by running a real
# node with the built-in kvstore app, sending a few transactions, stopping it
# and starting it again (so the log holds replayed heights too).
#
#   etl/scripts/make-fixtures.sh BINARY TAG [plain|json]
#
# BINARY is a tendermint/cometbft binary (e.g. tools/bin/cometbft), TAG names
# the output (e.g. cometbft-v0.38.17). Writes
# etl/tests/fixtures/TAG.FORMAT.log. Uses ports 127.0.0.1:36xxx only.
# APP=persistent_kvstore (Tendermint 0.34 / CometBFT 0.37 only) also sends
# malformed validator txs ("val:bad") that the app includes but rejects, so
# the log holds non-zero num_invalid_txs.
set -euo pipefail
app="${APP:-kvstore}"
bin="$1"; tag="$2"; format="${3:-plain}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$root/etl/tests/fixtures/$tag.$format.log"
home="$(mktemp -d)"
rpc=36657; p2p=36656
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$home"' EXIT
"$bin" init --home "$home" >/dev/null 2>&1 || "$bin" init validator --home "$home" >/dev/null 2>&1
sed -i -e 's/^timeout_commit = .*/timeout_commit = "300ms"/' \
       -e 's/^timeout_propose = .*/timeout_propose = "1s"/' \
       -e "s/^log_format = .*/log_format = \"$format\"/" "$home/config/config.toml"
: >"$out"
run() { # run SECONDS SEND_TXS
    "$bin" start --home "$home" --proxy_app="$app" \
        --rpc.laddr "tcp://127.0.0.1:$rpc" --p2p.laddr "tcp://127.0.0.1:$p2p" >>"$out" 2>&1 &
    pid=$!
    for _ in $(seq 50); do curl -fs "http://127.0.0.1:$rpc/status" >/dev/null && break; sleep 0.2; done
    if [[ "$2" == 1 ]]; then
        for i in $(seq 1 30); do
            curl -fs "http://127.0.0.1:$rpc/broadcast_tx_async?tx=\"k$i=v$i\"" >/dev/null
            if (( i % 7 == 0 )); then sleep 0.4; fi
            if [[ "$app" == persistent_kvstore ]] && (( i % 10 == 0 )); then
                curl -fs "http://127.0.0.1:$rpc/broadcast_tx_async?tx=\"val:bad$i\"" >/dev/null
            fi
        done
    fi
    sleep "$1"
    kill -INT "$pid"; wait "$pid" || true
}
run 4 1
run 2 0
echo "wrote $out ($(wc -l <"$out") lines)"
