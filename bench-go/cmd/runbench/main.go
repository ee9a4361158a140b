// Command runbench runs the badger-bench matrix — populate, random reads and
// iteration for sett, RocksDB and Badger at several value sizes — and writes a
// report (Markdown and CSV) that a RocksDB or Badger engineer can check:
//
//   - every engine gets the same memory budget and its documented settings,
//     written in the report's settings section;
//   - populate's clock stops when every engine has flushed and synced; each read
//     phase runs in a fresh process, after the engine's pending compactions;
//   - a digest of every key (and value) must match across the engines of a
//     cell, and so must the found count of the same sequence of random reads;
//     every value read is checked against the value its key must hold;
//   - each cell runs --runs times with the engine order rotated; the report gives
//     the median and the range, and calls a difference a win or a loss only
//     where the ranges do not overlap;
//   - memory is measured per phase, the harness's own buffers excluded.
//
// `make bench` runs the in-memory regime (data sets of a few hundred MB). With
// --large (`make bench-large`) it runs the seed's regime: a helper process
// (cmd/memhog) takes all memory but --mem-gib, data sets are at least --ratio
// times that, each engine's own files are evicted from the page cache before
// each read phase, and phases run for a time instead of a count.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"settbench/internal/sysmem"
	"settbench/stores"
)

// config is everything a run was asked to do; the report prints it.
type config struct {
	populate, benchBin, memhog string
	base, out                  string
	sizes                      []int
	engines                    []string
	blob                       bool
	scale                      float64
	runs                       int
	reads, iter                int
	readSeconds, iterSeconds   float64
	mgets                      int
	mgetSeconds                float64
	sync                       bool
	cacheMiB                   int64
	digest                     string
	large                      bool
	memGiB, ratio              float64
	readers                    int
	deviceMiB                  int
	settle                     time.Duration
	phaseTimeout               time.Duration
	batch16k                   int
	compression                string
	settThreshold              int
	settOptions                string
}

// Default key counts (millions) per value size in the in-memory regime: each
// data set is a few hundred MB at most, so that the matrix finishes in minutes.
var defaultKeysMil = map[int]float64{16: 1, 128: 1, 1024: 0.25, 16384: 0.03}

func main() {
	var c config
	var sizes, engines string
	flag.StringVar(&c.populate, "populate", "", "populate binary")
	flag.StringVar(&c.benchBin, "bench", "", "compiled bench test binary (go test -c)")
	flag.StringVar(&c.memhog, "memhog", "", "memhog binary (--large)")
	flag.StringVar(&c.base, "dir", "", "data directory (default: a new temporary directory, removed at the end)")
	flag.StringVar(&c.out, "out", "results", "directory for the report")
	flag.StringVar(&sizes, "sizes", "", "value sizes (default 16,128,1024,16384; with --large 128,1024,16384)")
	flag.Float64Var(&c.scale, "scale", 1, "multiplies the key counts")
	flag.StringVar(&engines, "engines", strings.Join(stores.Kinds, ","), "engines (sett-enc: sett with encryption at rest; rocksdb-blob joins at sizes from the value threshold unless --blob=false)")
	flag.BoolVar(&c.blob, "blob", true, "add RocksDB BlobDB (min_blob_size = value threshold) for sizes at or above it")
	flag.IntVar(&c.runs, "runs", 0, "runs of each cell, engine order rotated (default 3; with --large 2)")
	flag.IntVar(&c.reads, "reads", 300000, "random reads per engine and size (in-memory regime)")
	flag.IntVar(&c.iter, "iter", 1000000, "items iterated per engine, size and mode (a tenth of it at 16 KiB; in-memory regime)")
	flag.Float64Var(&c.readSeconds, "read-seconds", 60, "--large: seconds of random reads per engine")
	flag.Float64Var(&c.iterSeconds, "iter-seconds", 20, "--large: seconds of each scan per engine")
	flag.IntVar(&c.mgets, "mgets", 5000, "MultiGet phase: pairs of batches (32 point reads, then a MultiGet of 32 keys) per engine and size (in-memory regime)")
	flag.Float64Var(&c.mgetSeconds, "mget-seconds", 20, "--large: seconds of the MultiGet phase per engine")
	flag.BoolVar(&c.sync, "sync", false, "durable writes, for every engine")
	flag.IntVar(&c.settThreshold, "sett-value-threshold", 0, "sett's value threshold in bytes (0: the suite's, the same as Badger's and BlobDB's); values below it stay in sett's tables")
	flag.StringVar(&c.settOptions, "sett-options", "", "sett and sett-enc: a JSON object of sett.Options fields (Go names) laid over the suite's settings, for option screens; the report's settings line names them")
	flag.StringVar(&c.compression, "compression", "none", "codec of table data blocks for sett and RocksDB: none, lz4 or zstd (values stay random: what a codec costs on data it cannot shrink; bench-go/cmd/compressbench compares them on compressible data)")
	flag.Int64Var(&c.cacheMiB, "cache-mib", stores.DefaultCacheBytes>>20, "memory budget for each engine's own caches, MiB")
	flag.StringVar(&c.digest, "digest", "", "cross-engine data check: full (every key and value), keys, or none (default full; with --large keys)")
	flag.BoolVar(&c.large, "large", false, "the seed's regime: data several times larger than the memory left")
	flag.Float64Var(&c.memGiB, "mem-gib", 4, "--large: memory left to the engine and the page cache, GiB")
	flag.Float64Var(&c.ratio, "ratio", 3.2, "--large: raw data size as a multiple of --mem-gib")
	flag.IntVar(&c.readers, "readers", 0, "concurrent readers (default GOMAXPROCS)")
	flag.IntVar(&c.deviceMiB, "device-mib", 256, "size of the device probe file in MiB (with --large: at least the memory left); 0 skips the probe")
	flag.DurationVar(&c.settle, "settle-timeout", 0, "longest wait for each engine's pending compactions (default 2m; with --large 15m)")
	flag.DurationVar(&c.phaseTimeout, "phase-timeout", -1, "longest time one phase (populate, digest, a read or scan) may run before it is stopped and its cell reported as stopped; 0: no limit (default none; with --large 20m, so that one slow engine cannot push the run past its budget)")
	flag.IntVar(&c.batch16k, "batch-16k", 0, "entries per batch at 16 KiB (default 1000; with --large 100, so that 32 writers hold 50 MB, not 500 MB, of the memory left)")
	standingDir := flag.String("standing", "", "print README's performance block rendered from the reports under this folder, and exit")
	standingCheck := flag.String("standing-check", "", "with --standing: fail unless this README's block is what the reports give")
	flag.Parse()
	if *standingDir != "" {
		block, err := standing(*standingDir)
		if err != nil {
			fail(err)
		}
		if *standingCheck == "" {
			fmt.Print(block)
			return
		}
		have, err := readmeBlock(*standingCheck)
		if err != nil {
			fail(err)
		}
		if have != block {
			fail(fmt.Errorf("%s's performance block is not what the reports under %s give: run make standing and paste its output between the standing markers", *standingCheck, *standingDir))
		}
		fmt.Printf("%s's performance block matches the reports under %s\n", *standingCheck, *standingDir)
		return
	}
	if *standingCheck != "" {
		// Without --standing this would be a benchmark run, which rewrites
		// the reports under --out: refuse before anything is written.
		fail(fmt.Errorf("--standing-check needs --standing DIR (the reports to check README against); it runs no benchmark"))
	}
	if c.populate == "" || c.benchBin == "" {
		fail(fmt.Errorf("--populate and --bench are required"))
	}
	if err := stores.CheckCompression(c.compression); err != nil {
		fail(err)
	}
	if c.compression == "" {
		c.compression = "none"
	}
	defaults(&c, sizes, engines)

	if c.base == "" {
		d, err := os.MkdirTemp("", "badger-bench-")
		if err != nil {
			fail(err)
		}
		c.base = d
		defer os.RemoveAll(d)
	}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		fail(err)
	}
	r := &runner{cfg: c, start: time.Now(), commit: commit()}
	if err := r.run(); err != nil {
		r.finish()
		fail(err)
	}
	r.finish()
	if len(r.failures) > 0 {
		fail(fmt.Errorf("%d check(s) failed: %s", len(r.failures), strings.Join(r.failures, "; ")))
	}
}

func defaults(c *config, sizes, engines string) {
	if sizes == "" {
		sizes = "16,128,1024,16384"
		if c.large {
			sizes = "128,1024,16384"
		}
	}
	for _, s := range strings.Split(sizes, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || v <= 0 {
			fail(fmt.Errorf("bad size %q", s))
		}
		c.sizes = append(c.sizes, v)
	}
	for _, e := range strings.Split(engines, ",") {
		c.engines = append(c.engines, strings.TrimSpace(e))
	}
	if c.runs <= 0 {
		c.runs = 3
		if c.large {
			c.runs = 2
		}
	}
	if c.digest == "" {
		c.digest = "full"
		if c.large {
			c.digest = "keys"
		}
	}
	if c.digest != "full" && c.digest != "keys" && c.digest != "none" {
		fail(fmt.Errorf("--digest %q: want full, keys or none", c.digest))
	}
	if c.phaseTimeout < 0 {
		c.phaseTimeout = 0
		if c.large {
			c.phaseTimeout = 20 * time.Minute
		}
	}
	if c.settle == 0 {
		c.settle = 2 * time.Minute
		if c.large {
			c.settle = 15 * time.Minute
		}
	}
	if c.batch16k == 0 {
		c.batch16k = 1000
		if c.large {
			c.batch16k = 100
		}
	}
	if c.large && c.memhog == "" {
		fail(fmt.Errorf("--large needs --memhog"))
	}
}

// keysMil is the number of keys (millions) for value size valsz.
func (c *config) keysMil(valsz int) float64 {
	if c.large {
		raw := c.ratio * c.memGiB * (1 << 30)
		return raw / float64(valsz+22) / 1e6 * c.scale
	}
	mil, ok := defaultKeysMil[valsz]
	if !ok {
		mil = 0.25 * 1024 / float64(valsz)
	}
	return mil * c.scale
}

func (c *config) enginesFor(valsz int) []string {
	list := append([]string(nil), c.engines...)
	if c.blob && valsz >= stores.ValueThreshold {
		list = append(list, "rocksdb-blob")
	}
	return list
}

// reportName: one report per value size in the large regime, which may be run
// one size at a time (the whole matrix takes longer than one sitting).
func (c *config) reportName() string {
	if c.large {
		name := "badger-bench-large"
		for _, s := range c.sizes {
			name += "-" + strconv.Itoa(s)
		}
		return name
	}
	return "badger-bench"
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func must(err error) {
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "runbench:", err)
	os.Exit(1)
}

// freeCheck fails with what is needed when the data directory lacks the space
// for one engine's data set of raw bytes (twice raw: compaction rewrites, logs).
func freeCheck(dir string, raw int64) error {
	free, err := sysmem.FreeBytes(dir)
	if err != nil {
		return err
	}
	need := 2*raw + 1<<30
	if free < need {
		return fmt.Errorf("%s has %.1f GiB free; a data set of %.1f GiB raw needs about %.1f GiB (twice raw for compaction and logs, plus 1 GiB): free space or lower --scale/--mem-gib",
			dir, float64(free)/(1<<30), float64(raw)/(1<<30), float64(need)/(1<<30))
	}
	return nil
}

var _ = filepath.Join
