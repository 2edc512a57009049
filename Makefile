# feth: the two set-up commands of the README, plus helpers.
.PHONY: setup demo test lint fmt

CARGO ?= cargo

setup:
	bash scripts/setup.sh

## demo: the main job end to end on a local devnet
demo: setup
	$(CARGO) build --release --workspace --bins
	bash scripts/demo.sh

## test: every test, against real CometBFT and Redis
test: setup
	$(CARGO) build --workspace --bins
	$(CARGO) test --workspace --no-fail-fast -- --include-ignored

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all
