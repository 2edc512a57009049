# feth: the two set-up commands of the README, plus helpers.
.PHONY: setup setup-test demo test lint fmt

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
test: setup-test lint
	$(CARGO) bench --workspace --no-run --profile dev
	$(CARGO) build --workspace --bins
	$(CARGO) test --workspace --no-fail-fast -- --include-ignored --test-threads 1

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all
