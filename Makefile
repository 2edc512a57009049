# feth: the two set-up commands of the README, plus helpers.
.PHONY: setup setup-test demo test lint fmt fuzz

CARGO ?= cargo

## setup: what the demo needs (redis-server, the pinned CometBFT)
setup:
	bash scripts/setup.sh

## setup-test: also the CometBFT versions only the etl tests run
setup-test:
	bash scripts/setup.sh --test

## demo: the main job end to end on a local devnet
demo: setup
	$(CARGO) build --release --workspace --bins
	bash scripts/demo.sh

## test: lint, bench builds and every test, against real CometBFT and Redis
# Benches are built (not run) in the dev profile, which shares the tests'
# compiled dependencies: they cannot rot, and CI builds no release tree.
# One test at a time: on two cores, devnet tests run side by side starve each
# other (and a test that pins busy loops to a core starves the rest), so
# their behaviour under load, not the code, would decide them.
# Disk: no incremental state (a one-shot build does not reuse it, and it
# doubled target/ to 7 GB), and no separate `cargo build --bins`: the tests'
# build makes every binary the tests run (target/debug/feth, abcid) with
# the same features, where a plain build compiled them a second time.
test: export CARGO_INCREMENTAL = 0
test: setup-test lint
	$(CARGO) bench --workspace --no-run --profile dev
	$(CARGO) test --workspace --no-fail-fast -- --include-ignored --test-threads 1

## fuzz: each cargo-fuzz target for FUZZ_SECONDS (needs `cargo install
# cargo-fuzz` and a nightly toolchain; `make test` runs the same bodies over
# fixed-seed inputs instead)
FUZZ_SECONDS ?= 60
fuzz:
	cd etl && $(CARGO) +nightly fuzz run parse_line -- -max_total_time=$(FUZZ_SECONDS)
	cd abci-patches && $(CARGO) +nightly fuzz run check_tx -- -max_total_time=$(FUZZ_SECONDS)

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all
