#!/usr/bin/env bash
# Installs the Go tools only some tests use, into tools/bin: Tendermint 0.34,
# CometBFT 0.37 and 1.0 for the etl's all-versions tests
# (etl/scripts/install-extra-cometbft.sh), and geth, a reference node for the
# load tests (`geth --dev`). The tests that need them are the workspace's
# `#[ignore]`d ones, each saying what it needs; `make test` runs this at
# nice 19 beside the other tests, then those (scripts/test.sh).
# Idempotent. Go's caches are scratch of this script's own, removed on exit
# (geth's alone reach about 4 GB).
set -euo pipefail
cd "$(dirname "$0")/.."

bin="$PWD/tools/bin"
scratch="$PWD/tools/.go-scratch-test"
export GOCACHE="$scratch/cache" GOMODCACHE="$scratch/mod"
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-modcacherw"
trap 'rm -rf "$scratch"' EXIT

bash etl/scripts/install-extra-cometbft.sh

# geth: its binary prints its version, but reading it costs a start-up; the
# stamp file says which version is installed.
geth_version=v1.17.10
if [ -x "$bin/geth" ] && [ "$(cat "$bin/.geth.version" 2>/dev/null)" = "$geth_version" ]; then
  echo "install-test-tools: geth $geth_version already in tools/bin"
else
  echo "install-test-tools: go install github.com/ethereum/go-ethereum/cmd/geth@$geth_version into tools/bin"
  mkdir -p "$bin"
  GOBIN="$bin" go install "github.com/ethereum/go-ethereum/cmd/geth@$geth_version"
  echo "$geth_version" > "$bin/.geth.version"
fi
