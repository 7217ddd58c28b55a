# The two commands of the README: `make demo` and `make test`.
CARGO    ?= cargo
FEATURES ?= --features dpdk
export PATH := $(HOME)/.cargo/bin:$(PATH)

.PHONY: deps build demo test lint bench fuzz clean-runtime install-mtcp

deps:
	@bash ci/install-deps.sh

build: deps
	$(CARGO) build --release -p apps $(FEATURES)

## Builds, installs missing packages, runs the demo topology and prints its results; then
## short runs of `bench echo` (AccelTCP Table 3's rows, 64 and 1024 bytes), `bench kv`
## (Table 4's shape) and `bench proxy` (Table 2's shape) on the in-memory wire: their tables, plots and JSON under
## target/nicemu-bench/.
DEMO_BENCH ?= --seconds 1 --rounds 1 --warmup 0.2 --conns 256
demo: build
	./target/release/nicemu demo --dpdk-seconds 2
	@echo; echo "== nicemu bench echo: short connections, the server closes (AccelTCP Table 3's rows) =="
	./target/release/nicemu bench echo --per-conn 1 --server-closes --sizes 64,1024 \
	  --servers nicemu,nicemu-setup,nicemu-offload,nicemu-quasi $(DEMO_BENCH) \
	  --plot-dir target/nicemu-bench/echo --json target/nicemu-bench/echo.json
	@echo; echo "== nicemu bench kv: Redis SET/GET, one request per connection and persistent (AccelTCP Table 4's shape) =="
	./target/release/nicemu bench kv $(DEMO_BENCH) \
	  --plot-dir target/nicemu-bench/kv --json target/nicemu-bench/kv.json
	@echo; echo "== nicemu bench proxy: the L7 proxy, splice on the NIC vs relay on the host (AccelTCP Table 2's shape) =="
	./target/release/nicemu bench proxy --sizes 64 --per-conn 1,8,128 --conns 128 \
	  --seconds 0.5 --warmup 0.2 --plot-dir target/nicemu-bench/proxy --json target/nicemu-bench/proxy.json

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets $(FEATURES) -- -D warnings

## Installs, builds, runs the whole test suite (one process per test, cargo nextest).
test: deps lint
	$(CARGO) build -p apps $(FEATURES)
	$(CARGO) nextest run --workspace $(FEATURES); rc=$$?; bash ci/cleanup.sh; exit $$rc

## Every fuzz target (fuzzing/, see docs/fuzzing.md) under libFuzzer for FUZZ_SECONDS each,
## from the targets' seeds; needs nightly Rust and cargo-fuzz (installed when missing). A
## finding stops the run and leaves its input under fuzz/artifacts/<target>/.
FUZZ_SECONDS ?= 60
fuzz:
	@command -v cargo-fuzz >/dev/null || $(CARGO) install cargo-fuzz --locked
	@rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
	$(CARGO) run -q -p nicemu-fuzzing --example seeds fuzz/corpus
	cd fuzz && for t in $$($(CARGO) +nightly fuzz list); do \
	  echo "== fuzz $$t ($(FUZZ_SECONDS) s)"; \
	  $(CARGO) +nightly fuzz run -O $$t corpus/$$t -- -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -print_final_stats=1 || exit 1; \
	done

## The nicemu-vs-testpmd forwarding benchmark of BENCHMARKS.md.
bench: build
	bash ci/bench-fwd.sh

## libmtcp (mTCP's C API over nicemu): libmtcp.so/.a, mtcp_api.h, mtcp_epoll.h and mtcp.pc
## under PREFIX (docs/c-api.md).
PREFIX ?= /usr/local
install-mtcp: deps
	bash ci/install-mtcp.sh $(PREFIX)

clean-runtime:
	bash ci/cleanup.sh
