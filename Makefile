# The two commands of the README: `make demo` and `make test`.
CARGO    ?= cargo
FEATURES ?= --features dpdk
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: deps build demo test lint bench clean-runtime

deps:
	@bash ci/install-deps.sh

build: deps
	$(CARGO) build --release -p apps $(FEATURES)

## Builds, installs missing packages, runs the demo topology and prints its results.
demo: build
	./target/release/nicemu demo --dpdk-seconds 2

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets $(FEATURES) -- -D warnings

## Installs, builds, runs the whole test suite (one process per test, cargo nextest).
test: deps lint
	$(CARGO) build -p apps $(FEATURES)
	$(CARGO) nextest run --workspace $(FEATURES); rc=$$?; bash ci/cleanup.sh; exit $$rc

## The nicemu-vs-testpmd forwarding benchmark of BENCHMARKS.md.
bench: build
	bash ci/bench-fwd.sh

clean-runtime:
	bash ci/cleanup.sh
