# The commands the README names. `make bench` runs the main job; `make test` runs every test.
# Recipes run in bash with pipefail: a failing command in a pipeline fails the recipe.
# (So no pipeline may end early on purpose: grep reads its whole input, no grep -q
# or head behind a pipe, whose early exit would kill the writer with SIGPIPE.)
SHELL := bash
.SHELLFLAGS := -o pipefail -ec
CARGO ?= cargo
BENCH_ARGS ?=
CBINDGEN_VERSION := 0.29.4
ROOT := $(CURDIR)
VERSION := $(shell sed -n '/^version = "/{s/^version = "\(.*\)"/\1/p;q}' Cargo.toml)
# SETT_SKIPPED_DIR: where ffi/tests/c/skip.h writes skip marks.
CFLAGS_TEST := -std=c11 -Wall -Wextra -Werror -g -DSETT_SKIPPED_DIR='"$(CURDIR)/target/tmp/skipped"'
CXXFLAGS_TEST := -std=c++17 -Wall -Wextra -Werror -g -DSETT_SKIPPED_DIR='"$(CURDIR)/target/tmp/skipped"'
VALGRIND := valgrind --quiet --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect

PYVENV := target/venv
PY_TEST_DEPS := maturin==1.16.0 pytest mypy ruff papermill ipykernel matplotlib rocksdict nbformat nbclient

.PHONY: bench-merge msrv miri bench-batch batch-build rocksdb-release standing standing-check check doc-check bench-compress server-test bench-server bench-replication install install-check mutation-check bench-large stress bench-memtable kvbench py pytest bench-rust bench-bindings bindings-build bindings-smoke go-build go-install-check gotest bench test deps fmt-check lint unit smoke header header-check lib ctest bench-gc

# Toolchain pieces the targets need; installed here so that a fresh machine works.
deps:
	@command -v $(CARGO) >/dev/null || { echo "cargo not found: install Rust (rustup) first" >&2; exit 1; }
	@if command -v rustup >/dev/null; then \
		rustup component list --installed 2>/dev/null | grep '^rustfmt' >/dev/null || rustup component add rustfmt; \
		rustup component list --installed 2>/dev/null | grep '^clippy' >/dev/null || rustup component add clippy; \
	fi
	@cbindgen --version 2>/dev/null | grep ' $(CBINDGEN_VERSION)$$' >/dev/null || $(CARGO) install cbindgen --version $(CBINDGEN_VERSION) --locked
	@missing=""; for t in valgrind pkg-config cc c++; do command -v $$t >/dev/null || missing="$$missing $$t"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing" >&2; apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q valgrind pkg-config gcc g++; \
	fi
	@command -v go >/dev/null || { echo "go not found: install Go first" >&2; exit 1; }

# Main job: the badger-bench matrix, sett against RocksDB (release build), BlobDB, Pebble v2
# and Badger at 16 B, 128 B, 1 KiB and 16 KiB values, data in a temporary folder, 3 runs per
# cell with the engine order rotated, the data cross-checked; writes results/badger-bench.md
# and .csv.
# BENCH_ARGS="--scale 10" for larger data sets (see bench-go/cmd/runbench).
bench: go-build
	./target/go/runbench --populate target/go/populate --bench target/go/bench.test --out results $(BENCH_ARGS)

# The seed's regime: a helper process takes all memory but LARGE_MEM_GIB, data sets 3.2x
# that at each of LARGE_SIZES, cold reads, 2 runs per cell; one report per size,
# results/badger-bench-large-SIZE.md and .csv. 2 GiB keeps the whole matrix (five engines,
# three sizes, two runs) within about two hours on 2 cores; the data is still 3.2x what
# the engine and the page cache may hold. Needs root (mlock) and about 2x the raw data
# size free under LARGE_DIR.
LARGE_MEM_GIB ?= 2
LARGE_ARGS ?=
LARGE_DIR ?= /var/tmp
LARGE_SIZES ?= 128 1024 16384
bench-large: go-build
	for size in $(LARGE_SIZES); do \
		tmp=$$(mktemp -d $(LARGE_DIR)/badger-bench-large.XXXXXX); rc=0; \
		./target/go/runbench --large --memhog target/go/memhog --populate target/go/populate --bench target/go/bench.test \
			--dir "$$tmp" --out results --sizes $$size --mem-gib $(LARGE_MEM_GIB) $(LARGE_ARGS) || rc=$$?; rm -rf "$$tmp"; [ $$rc -eq 0 ] || exit $$rc; \
	done

# Go builds against the in-tree release libsett: the Go package (bindings-go) links
# through pkg-config, which finds the sett.pc that `make lib` writes to target/pkgconfig
# (its Libs carry an rpath to target/release, so the programs run without LD_LIBRARY_PATH).
# Go's build cache does not key on pkg-config's output: CGO_LDFLAGS names the library
# folder so that a package built against another prefix is not reused.
GO_ENV := PKG_CONFIG_PATH=$(ROOT)/target/pkgconfig CGO_LDFLAGS=-L$(ROOT)/target/release

# README's performance block, rendered from the committed reports (results/badger-bench*.csv)
# by the reports' own rule; make standing-check (in make test) fails when README's differs.
standing: go-build
	./target/go/runbench --standing results

standing-check: go-build
	./target/go/runbench --standing results --standing-check README.md

# The RocksDB every suite compares against: a release build (NDEBUG) of the newest RocksDB
# a registry here serves, built once into target/rocksdb (about 20 min on 2 cores the first
# time; then only target/pkgconfig/rocksdb-release.pc is rewritten).
rocksdb-release:
	scripts/rocksdb-release.sh

# The Go programs of the suites, against the release libsett and the release RocksDB.
go-build: lib rocksdb-release
	cd bench-go && export $(GO_ENV) && go build -o ../target/go/populate ./cmd/populate && \
		go test -c -o ../target/go/bench.test . && go build -o ../target/go/runbench ./cmd/runbench && \
		go build -o ../target/go/kvbench ./cmd/kvbench && go build -o ../target/go/kvserver ./cmd/kvserver && \
		go build -o ../target/go/kvrun ./cmd/kvrun && go build -o ../target/go/memhog ./cmd/memhog && \
		go build -o ../target/go/compressbench ./cmd/compressbench

# Compression on JSON-like records (issue 16): sett-bench engine with each codec, then
# sett against RocksDB with the same codec (bench-go/cmd/compressbench).
# Figures in docs/compression.md.
COMPRESS_KEYS ?= 200000
bench-compress: go-build
	cargo build --release -p sett-cli
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	for c in none lz4 zstd; do \
		./target/release/sett-bench engine --valsz 1024 --keys $(COMPRESS_KEYS) --values json --value-threshold 4096 \
			--compression $$c --settle --no-progress --dir "$$tmp/$$c" | grep '^| 1024' || exit 1; \
	done && \
	./target/go/compressbench -keys $(COMPRESS_KEYS) -valsz 1024 -reads $(COMPRESS_KEYS) -dir "$$tmp/cb"

# Disk space under 10x overwrites and deletes, background value-log GC on and off
# (issue 16): results/auto-gc.md and one curve per run in results/auto-gc-*.csv.
GC_ARGS ?=
bench-gc: deps
	cargo build --release -p sett-cli
	tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	for size in 1024 16384; do for ratio in 0.5 0; do \
		./target/release/sett-bench gc "$$tmp/db-$$size-$$ratio" --value-size $$size --gc-ratio $$ratio \
			--csv results/auto-gc-$$size-$$ratio.csv $(GC_ARGS) | tee -a "$$tmp/out" || exit 1; \
	done; done && python3 scripts/gc-report.py "$$tmp/out" > results/auto-gc.md && cat results/auto-gc.md

# A counter incremented from one thread by put, merge (sett.u64_add) and a read-write
# transaction, each on a fresh database, rounds alternating (issue 35):
# results/merge-counter.md.
MERGE_ARGS ?=
bench-merge: deps
	cargo build --release -p sett-cli
	./target/release/sett-bench merge --ops 2000000 --report results/merge-counter.md $(MERGE_ARGS)

# KVBench: every store in its own process with and without fsync, then redis-benchmark
# against kvserver on each store, all of it -runs times (default 3) for medians and ranges;
# writes results/kvbench.md and .csv. KVBENCH_ARGS for sizes, runs and the one cache
# budget of every store (-cache-mib, default 256).
KVBENCH_ARGS ?=
kvbench: go-build
	@command -v redis-benchmark >/dev/null || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q redis-tools; }
	./target/go/kvrun --kvbench target/go/kvbench --kvserver target/go/kvserver --out results $(KVBENCH_ARGS)

# The reliability suite for STRESS_SECONDS (default 1800) with a summary table.
stress: deps
	$(CARGO) build --release -p sett-cli
	@command -v bc >/dev/null || { apt-get update -q && apt-get install -y -q bc; }
	STRESS_SECONDS=$${STRESS_SECONDS:-1800} scripts/stress.sh

# Memtable ReadWrite/frac_0..10 (sett's memtable vs RwLock<BTreeMap>, criterion) and,
# in the same run, Go Badger's skl BenchmarkReadWrite from its module.
bench-memtable: deps
	$(CARGO) bench -p sett --bench memtable
	cd bench-go && go test github.com/dgraph-io/badger/v4/skl -run '^$$' -bench '^BenchmarkReadWrite$$' -benchtime 1s

# The Rust-only benchmark of the engine (no other engines): populate, reads, iteration.
bench-rust: deps
	$(CARGO) build --release -p sett-cli
	./target/release/sett-bench engine $(BENCH_ARGS)

# Point get, put, batch put and iteration through Rust, C, Go and Python on the same
# data (scripts/bench-bindings.sh); writes results/bindings.md. BINDINGS_N keys.
BINDINGS_N ?= 300000
BINDINGS_ROUNDS ?= 2
bench-bindings: lib py bindings-build
	scripts/bench-bindings.sh $(BINDINGS_N) $(BINDINGS_ROUNDS)

bindings-build: lib
	$(CARGO) build --release -p sett-cli
	mkdir -p target/bench target/go
	cc -O2 -std=c11 -Wall -Wextra -Werror -o target/bench/ops ffi/bench/ops.c $$(PKG_CONFIG_PATH=target/pkgconfig pkg-config --cflags --libs sett)
	cd bench-go && $(GO_ENV) go build -o ../target/go/opsbench ./cmd/opsbench

# The same programs on a tiny data set, so that make test keeps them working
# (after pytest has installed the wheel into the venv), and batchfill on one.
bindings-smoke: bindings-build batch-build
	test -x $(PYVENV)/bin/python || $(MAKE) py
	BATCH_OUT=target/batch-smoke.md scripts/bench-batch.sh 20000 1
	BINDINGS_OUT=target/bindings-smoke.md scripts/bench-bindings.sh 3000 1

# Single-thread batched writes against RocksDB's release build through both C APIs
# (ffi/bench/batchfill.c, db_bench's fillrandom --batch_size=1000; scripts/bench-batch.sh);
# writes results/batch-write.md. BATCH_N entries, BATCH_ROUNDS rounds. An idle machine.
BATCH_N ?= 2000000
BATCH_ROUNDS ?= 5
bench-batch: batch-build
	scripts/bench-batch.sh $(BATCH_N) $(BATCH_ROUNDS)

batch-build: lib rocksdb-release
	mkdir -p target/bench
	cc -O2 -std=c11 -Wall -Wextra -Werror -o target/bench/batchfill ffi/bench/batchfill.c $$(PKG_CONFIG_PATH=target/pkgconfig pkg-config --cflags --libs sett rocksdb-release)

# The fast gate before a commit: formatting, clippy, rustdoc with warnings denied and
# the engine's unit tests. No apt-get, no root, no network beyond crates already fetched.
check:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(MAKE) --no-print-directory doc-check
	$(CARGO) test -q -p sett --lib

# rustdoc of every library with warnings denied (sett-ffi's library is also named sett,
# so it is documented on its own).
doc-check:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc -q --no-deps --lib -p sett -p sett-server -p sett-cli -p sett-test-skip
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc -q --no-deps --lib -p sett-ffi

fmt-check: deps
	$(CARGO) fmt --all -- --check

lint: deps
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy -p sett --all-targets --features fault-injection -- -D warnings

# (sett-python is an extension module: it is tested through pytest, not cargo test;
# sett-server's tests start servers and proxies: make server-test runs them.)
# Skip marks: a test that cannot run here leaves target/tmp/skipped/<area>-<test>-<why>
# (Rust: sett-test-skip; C: ffi/tests/c/skip.h; Python: bindings-python/tests/conftest.py;
# Go: scripts/go-test-marks.py over go test -json), which make test's closing line
# counts. unit, the first target of make test to run tests, starts the folder afresh;
# the others clear their own marks (server-*, c-*, go-*, py-*) before they run.
unit: deps
	rm -rf target/tmp/skipped
	$(CARGO) test --workspace --exclude sett-python --exclude sett-server
	$(CARGO) test -p sett --features fault-injection --test fault

# sett-server (server/): its unit tests; every command against the binary through the redis
# crate and raw RESP (errors, limits, auth, SIGTERM and restart); the twemproxy recipe of
# server/examples (installs Debian's nutcracker if missing); cluster mode through raw RESP,
# redis-cli -c, redis-benchmark --cluster (redis-tools, installed if missing) and redis-py's
# RedisCluster (a virtualenv under target/tmp); replication between nodes, and failover by
# Debian's redis-sentinel (installed if missing) with writers, redis-py's Sentinel and
# go-redis's FailoverClient. A tool that cannot be installed makes its test leave a mark in
# target/tmp/skipped, which make test's closing line counts.
server-test: deps
	rm -f target/tmp/skipped/server-*
	$(CARGO) build -p sett-server
	$(CARGO) test -p sett-server

# redis-benchmark against sett-server and Debian's redis-server (installed if missing) at the
# same appendfsync, then a kill -9 loop in always mode; writes results/server.md.
bench-server: deps
	@command -v redis-server >/dev/null || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q redis-server; }
	$(CARGO) build --release -p sett-server
	server/bench/bench.sh results/server.md

# Replication lag, master throughput with 0-2 replicas at everysec and always, and failover
# time by Sentinel: sett-server against Debian's redis-server (both installed if missing);
# writes results/replication.md.
bench-replication: deps
	@command -v redis-server >/dev/null && command -v redis-sentinel >/dev/null && command -v redis-benchmark >/dev/null || \
		{ apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q redis-server redis-sentinel redis-tools; }
	$(CARGO) build --release -p sett-server
	@target/tmp/server-venv/bin/python -c 'import redis' 2>/dev/null || \
		{ python3 -m venv target/tmp/server-venv && target/tmp/server-venv/bin/pip install -q redis==8.1.0; }
	target/tmp/server-venv/bin/python server/bench/replication.py target/release/sett-server results/replication.md

# Tiny runs of the main job and of every CLI command, and the bank test with 4 threads.
smoke: deps
	$(CARGO) build -q -p sett-cli
	./target/debug/sett-bench engine --valsz 128,4096 --keys 20000,2000 --reads 2000 --writers 4 --batch 100
	./target/debug/sett-bench bank --seconds 5 --threads 4
	./target/debug/sett-bench crashloop --cycles 8 --sync
	./target/debug/sett-bench crashloop --cycles 8
	set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	./target/debug/sett-bench engine --valsz 2048 --keys 3000 --reads 100 --writers 2 --batch 100 --dir "$$tmp" --keep >/dev/null; \
	./target/debug/sett info "$$tmp/vsz2048"; \
	./target/debug/sett verify "$$tmp/vsz2048"; \
	./target/debug/sett backup "$$tmp/vsz2048" "$$tmp/full.backup"; \
	./target/debug/sett restore "$$tmp/restored" "$$tmp/full.backup"; \
	./target/debug/sett flatten "$$tmp/restored"; \
	./target/debug/sett gc "$$tmp/vsz2048" --ratio 0.1; \
	./target/debug/sett info "$$tmp/restored"
	./target/debug/sett-bench load --keys 20000 --valsz 128

# include/sett.h is generated from ffi/src by cbindgen and committed.
header: deps
	cbindgen --config ffi/cbindgen.toml --crate sett-ffi --output include/sett.h ffi

# Fails when the committed header is not what cbindgen makes of the code.
header-check: deps
	@tmp=$$(mktemp); cbindgen --quiet --config ffi/cbindgen.toml --crate sett-ffi --output $$tmp ffi && \
	if diff -u include/sett.h $$tmp; then rm -f $$tmp; echo "include/sett.h is fresh"; \
	else rm -f $$tmp; echo "include/sett.h is stale: run make header" >&2; exit 1; fi

# libsett.so (SONAME libsett.so.MAJOR), libsett.a and target/pkgconfig/sett.pc, in release mode.
lib: deps
	$(CARGO) build --release -p sett-ffi
	ln -sf libsett.so target/release/libsett.so.$(word 1,$(subst ., ,$(VERSION)))
	mkdir -p target/pkgconfig
	sed -e 's|@PREFIX@|$(ROOT)|' -e 's|@LIBDIR@|$(ROOT)/target/release|' -e 's|@VERSION@|$(VERSION)|' ffi/sett.pc.in > target/pkgconfig/sett.pc

# Installs the C library under PREFIX (default /usr/local; DESTDIR for staging):
# lib/libsett.so.VERSION with its SONAME link libsett.so.MAJOR and the link
# libsett.so, lib/libsett.a, include/sett.h and lib/pkgconfig/sett.pc.
PREFIX ?= /usr/local
MAJOR := $(word 1,$(subst ., ,$(VERSION)))
install: lib
	install -d $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include
	install -m 0755 target/release/libsett.so $(DESTDIR)$(PREFIX)/lib/libsett.so.$(VERSION)
	ln -sf libsett.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libsett.so.$(MAJOR)
	ln -sf libsett.so.$(MAJOR) $(DESTDIR)$(PREFIX)/lib/libsett.so
	install -m 0644 target/release/libsett.a $(DESTDIR)$(PREFIX)/lib/libsett.a
	install -m 0644 include/sett.h $(DESTDIR)$(PREFIX)/include/sett.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(PREFIX)/lib|' -e 's|@VERSION@|$(VERSION)|' \
		ffi/sett.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/sett.pc

# Installs into a temporary prefix, builds the C example there with pkg-config
# only (no path into this tree) and runs it, dynamically and statically linked.
install-check: deps
	set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(MAKE) --no-print-directory install PREFIX="$$tmp/prefix" >/dev/null; \
	export PKG_CONFIG_PATH="$$tmp/prefix/lib/pkgconfig" CGO_LDFLAGS="-L$$tmp/prefix/lib"; \
	cc -std=c11 -Wall -Wextra -Werror -o "$$tmp/example" examples/c/example.c $$(pkg-config --cflags --libs sett); \
	readelf -d "$$tmp/example" | grep 'NEEDED.*libsett.so.$(MAJOR)' >/dev/null; \
	"$$tmp/example" "$$tmp/db-dynamic" >/dev/null; \
	cc -std=c11 -Wall -Wextra -Werror -o "$$tmp/example-static" examples/c/example.c \
		$$(pkg-config --cflags sett) "$$tmp/prefix/lib/libsett.a" -lpthread -ldl -lm; \
	! readelf -d "$$tmp/example-static" | grep 'NEEDED.*libsett' >/dev/null; \
	"$$tmp/example-static" "$$tmp/db-static" >/dev/null; \
	echo "install-check: the example built and ran against an installed prefix (shared and static)"

# The C and C++ tests and the C example, against the debug library, under valgrind.
ctest: deps
	$(CARGO) build -p sett-ffi
	ln -sf libsett.so target/debug/libsett.so.$(word 1,$(subst ., ,$(VERSION)))
	mkdir -p target/ctest target/ctest/pkgconfig
	sed -e 's|@PREFIX@|$(ROOT)|' -e 's|@LIBDIR@|$(ROOT)/target/debug|' -e 's|@VERSION@|$(VERSION)|' ffi/sett.pc.in > target/ctest/pkgconfig/sett.pc
	rm -f target/tmp/skipped/c-* && mkdir -p target/tmp target/ctest/skip-selftest
	cc $(CFLAGS_TEST) -USETT_SKIPPED_DIR -DSETT_SKIPPED_DIR='"$(ROOT)/target/ctest/skip-selftest"' -o target/ctest/test_skip ffi/tests/c/test_skip.c
	target/ctest/test_skip
	cc $(CFLAGS_TEST) -Iinclude ffi/tests/c/test_sett.c -Ltarget/debug -Wl,-rpath,$(ROOT)/target/debug -lsett -lpthread -o target/ctest/test_sett
	cc $(CFLAGS_TEST) -Iinclude ffi/tests/c/test_feed.c -Ltarget/debug -Wl,-rpath,$(ROOT)/target/debug -lsett -o target/ctest/test_feed
	cc $(CFLAGS_TEST) -Iinclude ffi/tests/c/test_keyspace.c -Ltarget/debug -Wl,-rpath,$(ROOT)/target/debug -lsett -o target/ctest/test_keyspace
	cc $(CFLAGS_TEST) -Iinclude ffi/tests/c/test_merge.c -Ltarget/debug -Wl,-rpath,$(ROOT)/target/debug -lsett -o target/ctest/test_merge
	cc $(CFLAGS_TEST) -Iinclude ffi/tests/c/test_encryption.c -Ltarget/debug -Wl,-rpath,$(ROOT)/target/debug -lsett -o target/ctest/test_encryption
	c++ $(CXXFLAGS_TEST) -Iinclude ffi/tests/c/test_cpp.cpp -Ltarget/debug -Wl,-rpath,$(ROOT)/target/debug -lsett -o target/ctest/test_cpp
	cc $(CFLAGS_TEST) -o target/ctest/example examples/c/example.c $$(PKG_CONFIG_PATH=target/ctest/pkgconfig pkg-config --cflags --libs sett)
	readelf -d target/debug/libsett.so | grep 'SONAME.*libsett.so.$(word 1,$(subst ., ,$(VERSION)))' >/dev/null
	$(VALGRIND) target/ctest/test_sett
	$(VALGRIND) target/ctest/test_cpp
	$(VALGRIND) target/ctest/test_feed
	$(VALGRIND) target/ctest/test_keyspace
	$(VALGRIND) target/ctest/test_merge
	$(VALGRIND) target/ctest/test_encryption
	rm -rf target/ctest/example-db && $(VALGRIND) target/ctest/example target/ctest/example-db && rm -rf target/ctest/example-db

# The Go package (race detector, and cgocheck2 for every pointer it hands C), the benchmark
# module's tests, go vet, gofmt, the example built against an installed prefix, and a tiny
# run of the whole badger-bench suite. (server/tests/goredis, the go-redis program that
# server-test runs, is only formatted and vetted here.)
GO_DIRS := bindings-go bench-go examples/go-installed server/tests/goredis
gotest: go-build go-install-check
	@test -z "$$(gofmt -l $(GO_DIRS))" || { echo "gofmt would change:"; gofmt -l $(GO_DIRS); exit 1; }
	rm -f target/tmp/skipped/go-*
	cd server/tests/goredis && go vet .
	cd bindings-go && export $(GO_ENV) && go vet ./... && go test -json -race -count=1 ./... | ../scripts/go-test-marks.py race && \
		GOEXPERIMENT=cgocheck2 go test -json -count=1 ./... | ../scripts/go-test-marks.py cgocheck2
	# TestDigest is a tool of runbench (the smoke run below runs it with --digest): not run here.
	cd bench-go && export $(GO_ENV) && go vet ./... && go test -json -race -count=1 -skip '^TestDigest$$' ./... | ../scripts/go-test-marks.py race
	./target/go/runbench --populate target/go/populate --bench target/go/bench.test --sizes 128,1024 \
		--scale 0.005 --reads 2000 --iter 5000 --mgets 100 --runs 2 --device-mib 8 --out target/bench-smoke > target/bench-smoke.log 2>&1 || \
		{ tail -40 target/bench-smoke.log; exit 1; }
	@test "$$(wc -l < target/bench-smoke/badger-bench.csv)" -eq 23 || { echo "badger-bench smoke: expected 22 rows (11 cells x 2 runs)"; cat target/bench-smoke/badger-bench.csv; exit 1; }
	@grep -q "Every check passed" target/bench-smoke/badger-bench.md || { echo "badger-bench smoke: cross-engine checks failed"; exit 1; }
	@echo "badger-bench smoke run: results in target/bench-smoke/badger-bench.md"
	tmp=$$(mktemp -d /var/tmp/bench-large-smoke.XXXXXX) && trap 'rm -rf "$$tmp"' EXIT && \
	./target/go/runbench --large --memhog target/go/memhog --populate target/go/populate --bench target/go/bench.test \
		--mem-gib $$(awk '/MemAvailable/ {printf "%.2f", $$2/1048576 - 2}' /proc/meminfo) --ratio 0.02 --sizes 1024 \
		--read-seconds 1 --iter-seconds 1 --mget-seconds 1 --device-mib 0 --dir "$$tmp" --out target/bench-large-smoke > target/bench-large-smoke.log 2>&1 || \
		{ tail -40 target/bench-large-smoke.log; exit 1; }
	@grep -q "Every check passed" target/bench-large-smoke/badger-bench-large-1024.md || { echo "bench-large smoke: checks failed"; exit 1; }
	@echo "bench-large smoke run: results in target/bench-large-smoke/badger-bench-large-1024.md"
	@command -v redis-benchmark >/dev/null || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q redis-tools; }
	./target/go/kvrun --kvbench target/go/kvbench --kvserver target/go/kvserver --out target/kvbench-smoke \
		-runs 2 -d 200ms -set 5000 --fsync-set 2000 --redis-n 3000 --redis-stores sett > target/kvbench-smoke.log 2>&1 || \
		{ tail -40 target/kvbench-smoke.log; exit 1; }
	@test "$$(wc -l < target/kvbench-smoke/kvbench.csv)" -eq 49 || { echo "kvbench smoke: expected 48 rows (12 stores x fsync off/on x 2 runs)"; exit 1; }
	@grep -q "| Set | .* | .* | .* | \(first\|tied for first\|behind\) |" target/kvbench-smoke/kvbench.md || { echo "kvbench smoke: no standing of sett's Set"; exit 1; }
	@echo "kvbench smoke run: results in target/kvbench-smoke/kvbench.md"

# The example program (examples/go-installed, a module of its own) copied to a temporary
# folder and built against libsett installed under a temporary prefix, found through
# pkg-config only (the one path into this tree is the replace that points at bindings-go,
# which is not published); then run: open, write, read, iterate, value-log GC, backup, restore.
go-install-check: deps
	set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(MAKE) --no-print-directory install PREFIX="$$tmp/prefix" >/dev/null; \
	cp -r examples/go-installed "$$tmp/example"; cd "$$tmp/example"; \
	go mod edit -replace=github.com/sett-db/sett-go=$(ROOT)/bindings-go; \
	export PKG_CONFIG_PATH="$$tmp/prefix/lib/pkgconfig" CGO_LDFLAGS="-L$$tmp/prefix/lib"; \
	go vet . && go build -o "$$tmp/sett-installed" .; \
	readelf -d "$$tmp/sett-installed" | grep 'NEEDED.*libsett.so.$(MAJOR)' >/dev/null; \
	readelf -d "$$tmp/sett-installed" | grep "R.*PATH.*$$tmp/prefix/lib" >/dev/null; \
	if readelf -d "$$tmp/sett-installed" | grep "$(ROOT)" >/dev/null; then echo "go-install-check: the example links into $(ROOT)"; exit 1; fi; \
	"$$tmp/sett-installed" "$$tmp/run"

# A virtualenv with the test tools, and the real wheel installed by pip from bindings-python.
# (The distribution is sett-kv since issue 17; an older venv may still hold one named sett.)
py: deps
	test -x $(PYVENV)/bin/python || python3 -m venv $(PYVENV)
	$(PYVENV)/bin/pip install -q $(PY_TEST_DEPS)
	$(PYVENV)/bin/pip uninstall -q -y sett 2>/dev/null || true
	$(PYVENV)/bin/pip install -q --force-reinstall ./bindings-python

# The wheel a user installs: abi3 (one wheel for CPython >= 3.10), release build, stripped,
# linked by zig (pip's ziglang) against glibc 2.17 so that it is a real manylinux2014 /
# manylinux_2_17 wheel without docker; maturin's built-in auditwheel check verifies the
# glibc symbol versions before it tags it (a plain build on this Debian 12 host would need
# glibc 2.34). Written to target/wheels/sett_kv-VERSION-cp310-abi3-manylinux*_ARCH.whl.
.PHONY: wheel wheel-check
WHEEL_DIR := target/wheels
WHEEL_COMPAT ?= manylinux_2_17
wheel: deps
	test -x $(PYVENV)/bin/python || python3 -m venv $(PYVENV)
	$(PYVENV)/bin/pip install -q maturin==1.16.0 ziglang==0.17.1
	rm -f $(WHEEL_DIR)/sett_kv-*.whl
	PATH="$(ROOT)/$(PYVENV)/bin:$$PATH" $(PYVENV)/bin/maturin build --release --strip --zig \
		--compatibility $(WHEEL_COMPAT) -m bindings-python/Cargo.toml -i $(PYVENV)/bin/python -o $(WHEEL_DIR)
	@ls $(WHEEL_DIR)/sett_kv-$(VERSION)-cp310-abi3-*.whl

# Installs that wheel into a fresh virtualenv with every directory holding cargo or rustc
# taken off PATH (and checks that neither is reachable), then runs the API tests and
# tests/wheel_smoke.py (open, write, read, iterate, value-log GC, backup) against it.
wheel-check: wheel
	set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	wheel=$$(ls $(ROOT)/$(WHEEL_DIR)/sett_kv-$(VERSION)-cp310-abi3-*.whl); \
	python=$$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))'); \
	PATH=$$(printf '%s' "$$PATH" | tr ':' '\n' | while read -r d; do \
		[ -n "$$d" ] && [ ! -e "$$d/cargo" ] && [ ! -e "$$d/rustc" ] && printf '%s:' "$$d"; done; true); \
	export PATH="$${PATH%:}"; unset CARGO CARGO_HOME RUSTUP_HOME RUSTC; \
	if command -v cargo || command -v rustc; then echo "wheel-check: a Rust toolchain is still on PATH" >&2; exit 1; fi; \
	echo "wheel-check: neither cargo nor rustc is reachable (PATH=$$PATH)"; \
	"$$python" -m venv "$$tmp/venv"; \
	"$$tmp/venv/bin/pip" install -q --no-index --no-deps "$$wheel"; \
	"$$tmp/venv/bin/pip" install -q --only-binary=:all: pytest; \
	cd "$$tmp" && "$$tmp/venv/bin/python" $(ROOT)/bindings-python/tests/wheel_smoke.py "$$tmp/venv" && \
	"$$tmp/venv/bin/python" -m pytest -q -p no:cacheprovider $(ROOT)/bindings-python/tests && \
	echo "wheel-check: $$(basename $$wheel) installed and passed without a Rust toolchain on PATH"

# pytest, ruff, mypy --strict on a typed example, and every notebook run headless on tiny sizes.
pytest: py
	$(PYVENV)/bin/ruff check bindings-python server/tests server/bench
	$(PYVENV)/bin/ruff format --check bindings-python server/tests server/bench
	rm -f target/tmp/skipped/py-*
	$(PYVENV)/bin/python -m pytest -q bindings-python/tests
	$(PYVENV)/bin/mypy --strict bindings-python/tests/typed_example.py
	for nb in bindings-python/notebooks/*.ipynb; do \
		$(PYVENV)/bin/papermill --log-level WARNING "$$nb" "target/$$(basename $$nb)" --cwd bindings-python/notebooks \
			-y "{VALUE_SIZES: [16, 128, 1024, 16384], KEYS_PER_SIZE: [2000, 2000, 1000, 200]}" || exit 1; \
	done

# The declared minimum Rust (rust-version in Cargo.toml) builds every target of the
# workspace; rustup installs that toolchain if it is missing. Its own target folder
# keeps the two compilers from rebuilding each other's artifacts.
MSRV := $(shell sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
msrv: deps
	@command -v rustup >/dev/null || { echo "msrv: rustup is needed to build with Rust $(MSRV)" >&2; exit 1; }
	rustup toolchain list | grep "^$(MSRV)-" >/dev/null || rustup toolchain install $(MSRV) --profile minimal
	$(CARGO) +$(MSRV) check -q --workspace --all-targets --target-dir target/msrv
	@echo "msrv: the workspace builds with Rust $(MSRV)"

# Miri runs the unit tests of the code with the most `unsafe` (the memtable's arena and
# skiplist, key encoding, the block cache) and fails on undefined behaviour: aliasing
# violations, data races, out-of-bounds or uninitialised reads. Those tests take a tenth
# of their work under miri (cfg!(miri)). rustup installs the nightly toolchain with miri
# if it is missing.
MIRI_TESTS := memtable::tests key::tests cache::tests
miri: deps
	@command -v rustup >/dev/null || { echo "miri: rustup is needed for the nightly toolchain" >&2; exit 1; }
	rustup toolchain list | grep '^nightly-' >/dev/null || rustup toolchain install nightly --profile minimal
	rustup component list --toolchain nightly --installed | grep '^miri' >/dev/null || \
		rustup component add --toolchain nightly miri rust-src
	$(CARGO) +nightly miri test -q -p sett --lib -- $(MIRI_TESTS)
	@echo "miri: no undefined behaviour in $(MIRI_TESTS)"

# The power-loss test must fail on a build whose fsyncs (or directory fsyncs) do
# nothing, or whose recovery ignores the WAL link: proof that it would catch a
# missing one. A build error is not a pass.
mutation-check: deps
	@for f in unsafe-skip-fsync unsafe-skip-dir-sync; do \
		if $(CARGO) test -q -p sett --features $$f --test power_loss > target/mutation-$$f.log 2>&1; then \
			echo "mutation check: tests/power_loss.rs passed on a build with $$f: it cannot see that loss"; exit 1; \
		fi; \
		grep -q "acknowledged writes lost\|open after the cut failed\|the model after write" target/mutation-$$f.log || \
			{ echo "mutation check: the $$f build failed for another reason:"; tail -30 target/mutation-$$f.log; exit 1; }; \
		grep -q '^    power_cut_with_the_mapped_wal_keeps_every_acknowledged_synced_write$$' target/mutation-$$f.log || \
			{ echo "mutation check: the mapped-WAL power-loss test passed on a build with $$f: it cannot see that loss on Linux's default write path"; exit 1; }; \
		echo "mutation check: with $$f the power-loss test fails, as it must ($$(grep -c panicked target/mutation-$$f.log) failing tests)"; \
	done
	@f=unsafe-skip-wal-link; \
	if POWER_LOSS_SCALE=6 $(CARGO) test -q --release -p sett --features $$f --test power_loss -- without_sync_writes out_of_order > target/mutation-$$f.log 2>&1; then \
		echo "mutation check: tests/power_loss.rs passed on a build with $$f: it cannot see a WAL replayed past a cut in the one before"; exit 1; \
	fi; \
	grep -q "the model after write" target/mutation-$$f.log || \
		{ echo "mutation check: the $$f build failed for another reason:"; tail -30 target/mutation-$$f.log; exit 1; }; \
	echo "mutation check: with $$f the power-loss test fails, as it must ($$(grep -c panicked target/mutation-$$f.log) failing tests)"

test: fmt-check lint doc-check header-check msrv unit miri server-test mutation-check ctest install-check gotest standing-check pytest wheel-check smoke bindings-smoke
	@mkdir -p target/tmp/skipped; skipped=$$(ls target/tmp/skipped | tr '\n' ' '); \
	echo "make test: all checks passed ($$(ls target/tmp/skipped | wc -l) tests skipped$${skipped:+: $${skipped% }})"
