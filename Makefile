# feth: the two set-up commands of the README, plus helpers.
.PHONY: setup setup-test demo test lint fmt fuzz

CARGO ?= cargo

## setup: what the demo needs (redis-server, the pinned CometBFT)
setup:
	bash scripts/setup.sh

## setup-test: also what only the tests use (their Debian packages, geth,
# the older CometBFTs the etl tests run): scripts/install-test-tools.sh
setup-test:
	bash scripts/setup.sh --test

## demo: the main job end to end on a local devnet
demo: setup
	$(CARGO) build --release --workspace --bins
	bash scripts/demo.sh

## test: the installs, lint, bench builds, every test against real CometBFT
# and Redis (the machine-measuring ones first, alone), each fuzz target
# briefly, beside the other tests: the order and why are in scripts/test.sh.
test:
	CARGO="$(CARGO)" MAKE="$(MAKE)" bash scripts/test.sh

## fuzz: every cargo-fuzz target for FUZZ_SECONDS each (`make test` runs
# them for 10 s). cargo-fuzz is installed (pinned) when missing. Its flags
# (-Z, sanitizer coverage) are nightly-only: RUSTC_BOOTSTRAP=1 lets the
# stable compiler take them, so no nightly toolchain is needed. No
# sanitizer: the targets look for panics and disagreements in safe Rust.
# The fuzz crates build into one folder (their common dependencies once).
# `make test`'s 10 s runs build them unoptimised (FUZZ_FLAGS=--dev: abcid's
# fuzz build took 236 s here against 419 s for cargo-fuzz's release build,
# one codegen unit); longer runs keep the faster release build.
FUZZ_SECONDS ?= 60
FUZZ_FLAGS ?=
CARGO_FUZZ_VERSION = 0.13.2
FUZZ_RUN = RUSTC_BOOTSTRAP=1 $(CARGO) fuzz run --sanitizer none $(FUZZ_FLAGS) \
	--target-dir $(CURDIR)/target/fuzz
fuzz:
	command -v cargo-fuzz >/dev/null 2>&1 || $(CARGO) install cargo-fuzz --version $(CARGO_FUZZ_VERSION) --locked
	cd etl && $(FUZZ_RUN) parse_line -- -max_total_time=$(FUZZ_SECONDS)
	cd abci-patches && $(FUZZ_RUN) check_tx -- -max_total_time=$(FUZZ_SECONDS)
	cd abci-patches && $(FUZZ_RUN) web3_params -- -max_total_time=$(FUZZ_SECONDS)

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all
