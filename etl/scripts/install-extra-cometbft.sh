#!/usr/bin/env bash
# Installs the extra Tendermint/CometBFT versions the etl's all-versions tests
# run (ignored tests: cargo test -p feth-etl -- --include-ignored), into <workspace>/tools/bin/:
#
#   cometbft-v0.34  Tendermint v0.34.24 (built from a tiny wrapper module: the
#                   deprecated module cannot be `go install`ed directly)
#   cometbft-v0.37  CometBFT v0.37.18
#   cometbft-v1.0   CometBFT v1.0.1
#
# Idempotent: a binary that is present and reports the expected version is
# kept. Needs Go (1.22+) and the Go module proxy. Each build takes a few
# minutes on 2 cores.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="$root/tools/bin"
mkdir -p "$bin"

TM034=v0.34.24
CB037=v0.37.18
CB100=v1.0.1

# A stamp file records the module version each binary was built from (the
# binaries' own `version` output can lag: v0.37.18 reports 0.37.16).
have() { # have NAME MODULE_VERSION
    [[ -x "$bin/$1" ]] && [[ "$(cat "$bin/.$1.version" 2>/dev/null)" == "$2" ]] \
        && "$bin/$1" version >/dev/null 2>&1
}

install_cometbft() { # install_cometbft NAME VERSION
    local name="$1" version="$2" tmp
    if have "$name" "$version"; then
        echo "$name $version already installed"
        return
    fi
    echo "installing $name ($version)"
    tmp="$(mktemp -d)"
    GOBIN="$tmp" go install "github.com/cometbft/cometbft/cmd/cometbft@$version"
    mv "$tmp/cometbft" "$bin/$name"
    echo "$version" >"$bin/.$name.version"
    rm -rf "$tmp"
}

install_tendermint_034() {
    local name=cometbft-v0.34 tmp
    if have "$name" "$TM034"; then
        echo "$name $TM034 already installed"
        return
    fi
    echo "installing $name (tendermint $TM034 via wrapper module)"
    tmp="$(mktemp -d)"
    cat >"$tmp/go.mod" <<GOMOD
module feth.invalid/tendermint034

go 1.22

require github.com/tendermint/tendermint $TM034
GOMOD
    # Same as tendermint's cmd/tendermint/main.go at $TM034 (package main
    # cannot be imported, so the wrapper repeats it).
    cat >"$tmp/main.go" <<'GOMAIN'
package main

import (
	"os"
	"path/filepath"

	cmd "github.com/tendermint/tendermint/cmd/tendermint/commands"
	"github.com/tendermint/tendermint/cmd/tendermint/commands/debug"
	cfg "github.com/tendermint/tendermint/config"
	"github.com/tendermint/tendermint/libs/cli"
	nm "github.com/tendermint/tendermint/node"
)

func main() {
	rootCmd := cmd.RootCmd
	rootCmd.AddCommand(
		cmd.GenValidatorCmd,
		cmd.InitFilesCmd,
		cmd.ResetAllCmd,
		cmd.ResetPrivValidatorCmd,
		cmd.ResetStateCmd,
		cmd.ShowValidatorCmd,
		cmd.TestnetFilesCmd,
		cmd.ShowNodeIDCmd,
		cmd.GenNodeKeyCmd,
		cmd.VersionCmd,
		cmd.RollbackStateCmd,
		debug.DebugCmd,
		cli.NewCompletionCmd(rootCmd, true),
	)
	rootCmd.AddCommand(cmd.NewRunNodeCmd(nm.DefaultNewNode))
	c := cli.PrepareBaseCmd(rootCmd, "TM", os.ExpandEnv(filepath.Join("$HOME", cfg.DefaultTendermintDir)))
	if err := c.Execute(); err != nil {
		panic(err)
	}
}
GOMAIN
    (cd "$tmp" && go mod tidy && go build -o "$bin/$name" .)
    echo "$TM034" >"$bin/.$name.version"
    rm -rf "$tmp"
}

install_tendermint_034
install_cometbft cometbft-v0.37 "$CB037"
install_cometbft cometbft-v1.0 "$CB100"
for n in cometbft-v0.34 cometbft-v0.37 cometbft-v1.0; do
    echo "$n: $("$bin/$n" version | head -n1)"
done
