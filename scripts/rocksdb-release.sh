#!/usr/bin/env bash
# Builds the RocksDB that every suite compares against: a release build (CMake's Release
# type: -O2 and NDEBUG, so no assertions), static, with snappy, LZ4, zstd and zlib, from
# the source that the crate rust-librocksdb-sys ships (crates.io; the newest RocksDB
# release a registry here serves). Installs it once under target/rocksdb/<version> and
# writes target/pkgconfig/rocksdb-release.pc, which bench-go's cgo reads (the Makefile's
# GO_ENV puts target/pkgconfig on PKG_CONFIG_PATH). A second run finds the install and
# only rewrites the .pc file.
#
# usage: scripts/rocksdb-release.sh [ROOT]   (ROOT defaults to the repository)
set -euo pipefail

root=$(cd "${1:-$(dirname "$0")/..}" && pwd)
crate=rust-librocksdb-sys
crate_version=0.49.0+11.12.0
version=${crate_version#*+}
prefix=$root/target/rocksdb/$version
pcdir=$root/target/pkgconfig

write_pc() {
	mkdir -p "$pcdir"
	# Static: the programs carry this build, so no runtime search can find Debian's.
	cat > "$pcdir/rocksdb-release.pc" <<-EOF
	prefix=$prefix
	Name: rocksdb-release
	Description: RocksDB $version, release build (NDEBUG), static
	Version: $version
	Cflags: -I\${prefix}/include
	Libs: \${prefix}/lib/librocksdb.a -lstdc++ -lm -lpthread -ldl -lsnappy -llz4 -lzstd -lz -lbz2
	EOF
}

if [ -f "$prefix/lib/librocksdb.a" ] && [ -f "$prefix/.complete" ]; then
	write_pc
	exit 0
fi

missing=""
for pkg in ninja-build libsnappy-dev liblz4-dev libzstd-dev zlib1g-dev libbz2-dev g++; do
	dpkg -s "$pkg" >/dev/null 2>&1 || missing="$missing $pkg"
done
if [ -n "$missing" ]; then
	echo "rocksdb-release: installing$missing" >&2
	apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing
fi

# The crate's source through cargo itself, so that a registry mirror or CARGO_HOME applies.
fetch=$root/target/rocksdb/fetch
mkdir -p "$fetch/src"
cat > "$fetch/Cargo.toml" <<-EOF
[package]
name = "rocksdb-source"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
$crate = { version = "=$crate_version", default-features = false }

[workspace]
EOF
echo 'fn main() {}' > "$fetch/src/main.rs"
cargo fetch -q --manifest-path "$fetch/Cargo.toml"
manifest=$(cargo metadata -q --format-version 1 --manifest-path "$fetch/Cargo.toml" |
	python3 -c 'import json, sys
for p in json.load(sys.stdin)["packages"]:
    if p["name"] == sys.argv[1]:
        print(p["manifest_path"])' "$crate")
crate_dir=$(dirname "$manifest")
src=$crate_dir/rocksdb
found=$(awk '/#define ROCKSDB_(MAJOR|MINOR|PATCH) /{v = v (v == "" ? "" : ".") $3} END {print v}' \
	"$src/include/rocksdb/version.h")
[ "$found" = "$version" ] || { echo "rocksdb-release: $src holds RocksDB $found, not $version" >&2; exit 1; }

# The crate ships the library's sources and its list (rocksdb_lib_sources.txt), not
# RocksDB's CMake modules or build_tools, so this writes a ninja file of its own: every
# listed source (util/build_version.cc is generated from git upstream; the crate's
# build_version.cc stands in), with the defines RocksDB's build_detect_platform sets on
# Linux with glibc, -O2 and NDEBUG as in its release build (DEBUG_LEVEL=0), and
# -march=native, the default of both its Makefile (PORTABLE=0) and CMake build.
build=$root/target/rocksdb/build-$version
mkdir -p "$build"
defines="-DNDEBUG -DROCKSDB_PLATFORM_POSIX -DROCKSDB_LIB_IO_POSIX -DOS_LINUX \
-DROCKSDB_FALLOCATE_PRESENT -DROCKSDB_RANGESYNC_PRESENT -DROCKSDB_SCHED_GETCPU_PRESENT \
-DROCKSDB_AUXV_GETAUXVAL_PRESENT -DROCKSDB_PTHREAD_ADAPTIVE_MUTEX -DROCKSDB_MALLOC_USABLE_SIZE \
-DROCKSDB_BACKTRACE -DHAVE_ALIGNED_NEW -DHAVE_UINT128_EXTENSION \
-DSNAPPY -DLZ4 -DZSTD -DZLIB -DBZIP2"
# The CPU features build_detect_platform probes, where this CPU has them.
for f in sse4_2:HAVE_SSE42 pclmulqdq:HAVE_PCLMUL avx2:HAVE_AVX2 bmi1:HAVE_BMI abm:HAVE_LZCNT; do
	grep -qw "${f%%:*}" /proc/cpuinfo && defines="$defines -D${f#*:}"
done
{
	echo "cxxflags = -std=c++20 -O2 -march=native -fno-builtin-memcmp -fno-omit-frame-pointer -momit-leaf-frame-pointer -fno-rtti -w -include cstdint $defines -I$src/include -I$src"
	echo "rule cxx"
	echo "  command = g++ \$cxxflags -MMD -MF \$out.d -c \$in -o \$out"
	echo "  depfile = \$out.d"
	echo "  description = CXX \$in"
	echo "rule ar"
	echo "  command = rm -f \$out && ar rcs \$out \$in"
	echo "  description = AR \$out"
	objs=""
	while read -r f; do
		[ -z "$f" ] || [ "$f" = util/build_version.cc ] && continue
		echo "build obj/${f%.cc}.o: cxx $src/$f"
		objs="$objs obj/${f%.cc}.o"
	done < "$crate_dir/rocksdb_lib_sources.txt"
	echo "build obj/build_version.o: cxx $crate_dir/build_version.cc"
	echo "build librocksdb.a: ar$objs obj/build_version.o"
} > "$build/build.ninja"

start=$(date +%s)
echo "rocksdb-release: building RocksDB $version (release, static) into $prefix; about 15 min on 2 cores the first time" >&2
ninja -C "$build" -j "$(nproc)" librocksdb.a
rm -rf "$prefix" && mkdir -p "$prefix/lib"
cp -r "$src/include" "$prefix/include"
cp "$build/librocksdb.a" "$prefix/lib/"
echo "$defines" > "$prefix/defines"
touch "$prefix/.complete"
rm -rf "$build"
echo "rocksdb-release: built in $(( $(date +%s) - start )) s" >&2
write_pc
