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

# Tiny runs of the main job and of every CLI command, and the bank test with 4 threads.
smoke: deps
	$(CARGO) build -q -p sett-cli
	./target/debug/sett bench --valsz 128,4096 --keys 20000,2000 --reads 2000 --writers 4 --batch 100
	./target/debug/sett bank --seconds 5 --threads 4
	set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	./target/debug/sett bench --valsz 2048 --keys 3000 --reads 100 --writers 2 --batch 100 --dir "$$tmp" --keep >/dev/null; \
	./target/debug/sett info "$$tmp/vsz2048"; \
	./target/debug/sett backup "$$tmp/vsz2048" "$$tmp/full.backup"; \
	./target/debug/sett restore "$$tmp/restored" "$$tmp/full.backup"; \
	./target/debug/sett flatten "$$tmp/restored"; \
	./target/debug/sett gc "$$tmp/vsz2048" --ratio 0.1; \
	./target/debug/sett info "$$tmp/restored"
	./target/debug/sett bench-load --keys 20000 --valsz 128

test: fmt-check lint unit smoke
	@echo "make test: all checks passed"
