# The commands the README names. `make bench` runs the main job; `make test` runs every test.
CARGO ?= cargo
BENCH_ARGS ?=

.PHONY: bench test deps fmt-check lint unit smoke

# Toolchain pieces the targets need; installed here so that a fresh machine works.
deps:
	@command -v $(CARGO) >/dev/null || { echo "cargo not found: install Rust (rustup) first" >&2; exit 1; }
	@if command -v rustup >/dev/null; then \
		rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt; \
		rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy; \
	fi

# Main job: populate, random reads and iteration at 128 B and 4 KiB values, data in a temporary folder.
bench: deps
	$(CARGO) build --release -p sett-cli
	./target/release/sett bench $(BENCH_ARGS)

fmt-check: deps
	$(CARGO) fmt --all -- --check

lint: deps
	$(CARGO) clippy --workspace --all-targets -- -D warnings

unit: deps
	$(CARGO) test --workspace

# A tiny run of the main job so that the benchmark itself cannot rot.
smoke: deps
	$(CARGO) run -q -p sett-cli -- bench --valsz 128,4096 --keys 20000,2000 --reads 2000 --writers 4 --batch 100

test: fmt-check lint unit smoke
	@echo "make test: all checks passed"
