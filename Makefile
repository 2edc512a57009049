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

## test: lint, bench builds, every test against real CometBFT and Redis,
# then each fuzz target briefly
# Benches are built (not run) in the dev profile, which shares the tests'
# compiled dependencies: they cannot rot, and CI builds no release tree.
# One test at a time: on two cores, devnet tests run side by side starve each
# other (and a test that pins busy loops to a core starves the rest), so
# their behaviour under load, not the code, would decide them.
# Disk: no incremental state (a one-shot build does not reuse it, and it
# doubled target/ to 7 GB), and no separate `cargo build --bins`: the tests'
# build makes every binary the tests run (target/debug/feth, abcid) with
# the same features, where a plain build compiled them a second time.
# Lint in the same build: the workspace's own crates are compiled by
# clippy-driver, as `cargo clippy` runs it (RUSTC_WORKSPACE_WRAPPER, and its
# CLIPPY_ARGS for -D warnings), so the benches' and tests' build reports and
# fails on every lint `make lint` would, over the same targets (lib, bins,
# examples, tests, benches), without `cargo clippy`'s own check-only pass
# over every dependency (8.5 min here).
CLIPPY_BUILD = CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__ \
	RUSTC_WORKSPACE_WRAPPER="$$(command -v clippy-driver)"
test: export CARGO_INCREMENTAL = 0
test: setup-test
	$(CARGO) fmt --all -- --check
	command -v clippy-driver >/dev/null || { echo "clippy-driver missing: rustup component add clippy" >&2; exit 1; }
	$(CLIPPY_BUILD) $(CARGO) bench --workspace --no-run --profile dev
	$(CLIPPY_BUILD) $(CARGO) test --workspace --no-fail-fast -- --include-ignored --test-threads 1
	$(MAKE) fuzz FUZZ_SECONDS=10 FUZZ_FLAGS=--dev

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
