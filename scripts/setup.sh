#!/usr/bin/env bash
# Installs what feth's demo needs on a fresh Debian machine: redis-server
# (Debian package), the pinned CometBFT and the pinned toxiproxy server that
# a devnet of several nodes puts between them (go install into tools/bin).
#
#   setup.sh                  what the demo needs
#   setup.sh --test           also all that only the tests use: the packages
#                             below, then scripts/install-test-tools.sh
#   setup.sh --test-packages  also the tests' Debian packages, not their Go
#                             tools (`make test` installs those beside the
#                             tests that do not need them: scripts/test.sh)
#
# The tests' packages: Debian's groovy and the default Java runtime it runs
# on, to check that the Jenkinsfile parses; Debian's chromium, to open
# `feth report`'s page headless. Idempotent: does nothing that is already
# done. Go's caches are scratch, removed on exit (see below).
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
command -v go >/dev/null 2>&1 || need_apt+=(golang-go)
mode=${1:-}
case "$mode" in
  "" | --test | --test-packages) ;;
  *)
    echo "setup: unknown option $mode (use --test, --test-packages or none)" >&2
    exit 2
    ;;
esac
if [ -n "$mode" ]; then
  command -v groovy >/dev/null 2>&1 || need_apt+=(groovy)
  # groovy runs the Java of /usr/lib/jvm/default-java.
  [ -x /usr/lib/jvm/default-java/bin/java ] || need_apt+=(default-jre-headless)
  command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: please install: ${need_apt[*]} (apt-get install ${need_apt[*]})" >&2
    exit 1
  fi
  echo "setup: apt-get install ${need_apt[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

version=$(tr -d '[:space:]' < COMETBFT_VERSION)
bin="$PWD/tools/bin"

# Go's build and module caches for these installs go to a scratch folder
# that is removed on exit: they reach several GB (geth alone about 4), the
# binaries are all that is kept, and a full disk fails the Rust build that
# follows. Installs run once; a rerun that installs nothing downloads nothing.
scratch="$PWD/tools/.go-scratch"
export GOCACHE="$scratch/cache" GOMODCACHE="$scratch/mod"
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-modcacherw"
trap 'rm -rf "$scratch"' EXIT
if [ -x "$bin/cometbft" ] && [ "v$("$bin/cometbft" version 2>/dev/null)" = "$version" ]; then
  echo "setup: CometBFT $version already in tools/bin"
else
  echo "setup: go install github.com/cometbft/cometbft/cmd/cometbft@$version into tools/bin"
  mkdir -p "$bin"
  GOBIN="$bin" go install "github.com/cometbft/cometbft/cmd/cometbft@$version"
fi

# toxiproxy: `go install` names the binary `server` and stamps no version
# into it, so it is renamed and its version kept in a stamp file.
toxi_version=v2.12.0
if [ -x "$bin/toxiproxy-server" ] && [ "$(cat "$bin/.toxiproxy-server.version" 2>/dev/null)" = "$toxi_version" ]; then
  echo "setup: toxiproxy $toxi_version already in tools/bin"
else
  echo "setup: go install github.com/Shopify/toxiproxy/v2/cmd/server@$toxi_version into tools/bin"
  mkdir -p "$bin"
  tmp=$(mktemp -d)
  GOBIN="$tmp" go install "github.com/Shopify/toxiproxy/v2/cmd/server@$toxi_version"
  mv "$tmp/server" "$bin/toxiproxy-server"
  rmdir "$tmp"
  echo "$toxi_version" > "$bin/.toxiproxy-server.version"
fi

if [ "$mode" = "--test" ]; then
  bash scripts/install-test-tools.sh
fi
