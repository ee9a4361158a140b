package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"time"

	"settbench/internal/spread"
	"settbench/stores"
)

func numCPU() int { return runtime.NumCPU() }

// metric is one column of the report.
type metric struct {
	name        string
	get         func(*cell) float64
	lowerBetter bool
	format      func(float64) string
	compare     bool // appears in the comparison table
}

func f0(x float64) string { return fmt.Sprintf("%.0f", x) }
func f1(x float64) string { return fmt.Sprintf("%.1f", x) }
func f2(x float64) string { return fmt.Sprintf("%.2f", x) }
func fmib(x float64) string {
	return fmt.Sprintf("%.0f", x/(1<<20))
}

func metricsFor(large bool) []metric {
	ms := []metric{
		{"populate s", func(c *cell) float64 { return c.PopSeconds }, true, f2, false},
		{"settle s", func(c *cell) float64 { return c.SettleSeconds }, true, f2, false},
		{"populate + settle s", func(c *cell) float64 { return popSettle(c) }, true, f2, true},
	}
	if large {
		ms = append(ms,
			metric{"populate + settle MB/s", func(c *cell) float64 { return safeDiv(float64(c.RawBytes)/1e6, popSettle(c)) }, false, f0, false},
			metric{"device bytes written ÷ raw, through settle", func(c *cell) float64 {
				return safeDiv(float64(c.PopWritten+c.SettleWritten), float64(c.RawBytes))
			}, true, f2, false},
			metric{"random read at once µs per read per reader", func(c *cell) float64 { return c.FreshReadUsPerReader }, true, f1, true},
			metric{"random read settled µs per read per reader", func(c *cell) float64 { return c.ReadUsPerReader }, true, f1, true},
			metric{"device KiB read per lookup", func(c *cell) float64 { return safeDiv(float64(c.ReadDevBytes)/1024, float64(c.Reads)) }, true, f1, false},
			// A found key costs at least one device read unless the page cache or the engine's
			// cache holds it: engines level here are bound by the device, not by their code.
			metric{"device reads per found key", func(c *cell) float64 { return safeDiv(float64(c.ReadDevOps), float64(c.Found)) }, true, f2, false},
			metric{"MultiGet of 32 keys µs", func(c *cell) float64 { return c.MGetUs }, true, f0, true},
			metric{"MultiGet ÷ its 32 gets one after another", func(c *cell) float64 { return safeDiv(c.MGetUs, c.MGetGetsUs) }, true, f2, false},
			metric{"iterate keys-only ns/item", func(c *cell) float64 { return c.IterKeysNs }, true, f0, true},
			metric{"iterate with values MB/s", func(c *cell) float64 { return c.IterValuesMBs }, false, f1, true},
			metric{"iterate with values ns/item", func(c *cell) float64 { return c.IterValuesNs }, true, f0, false},
		)
	} else {
		ms = append(ms,
			metric{"random read at once ns/op", func(c *cell) float64 { return c.FreshReadNs }, true, f0, true},
			metric{"random read settled ns/op", func(c *cell) float64 { return c.ReadNs }, true, f0, true},
			metric{"MultiGet of 32 keys µs", func(c *cell) float64 { return c.MGetUs }, true, f1, true},
			metric{"MultiGet ÷ its 32 gets one after another", func(c *cell) float64 { return safeDiv(c.MGetUs, c.MGetGetsUs) }, true, f2, false},
			metric{"iterate keys-only ns/item", func(c *cell) float64 { return c.IterKeysNs }, true, f0, true},
			metric{"iterate with values ns/item", func(c *cell) float64 { return c.IterValuesNs }, true, f0, true},
		)
	}
	ms = append(ms,
		metric{"disk allocated MiB, settled", func(c *cell) float64 { return float64(c.SettledAllocated) }, true, fmib, true},
		metric{"peak RSS MiB populate", func(c *cell) float64 { return float64(c.PopRSS) }, true, fmib, true},
		metric{"peak RSS MiB reads", func(c *cell) float64 { return float64(c.ReadRSS) }, true, fmib, true},
		metric{"peak RSS MiB iterate", func(c *cell) float64 { return float64(max(c.IterValuesRSS, c.IterKeysRSS)) }, true, fmib, true},
		metric{"peak anonymous MiB populate", func(c *cell) float64 { return float64(c.PopAnon) }, true, fmib, true},
		metric{"peak anonymous MiB reads", func(c *cell) float64 { return float64(c.ReadAnon) }, true, fmib, true},
		metric{"peak anonymous MiB iterate", func(c *cell) float64 { return float64(c.IterAnon) }, true, fmib, true},
	)
	return ms
}

// popSettle is populate's time with the settle that followed it (0 if either is missing).
func popSettle(c *cell) float64 {
	if c.PopSeconds == 0 || (c.SettleSeconds == 0 && !c.SettleIdle) {
		return 0
	}
	return c.PopSeconds + c.SettleSeconds
}

// readsValuesInKeysOnly: RocksDB has no keys-only iterator, so where sett keeps
// values apart (from the value threshold) its keys-only scan does work that
// sett's does not, and that column gets no verdict against it.
func readsValuesInKeysOnly(engine string, valsz int) bool {
	return strings.HasPrefix(engine, "rocksdb") && valsz >= stores.ValueThreshold
}

func safeDiv(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func commit() string {
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown (not a git checkout)"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		c += " with uncommitted changes"
	}
	return c
}

func report(r *runner) string {
	c := &r.cfg
	var b strings.Builder
	host, _ := os.Hostname()
	title := "badger-bench: sett against RocksDB, BlobDB, Pebble and Badger, data in memory"
	if c.large {
		title = "badger-bench, the seed's regime: data several times larger than the memory left"
	}
	fmt.Fprintf(&b, "# %s\n\n", title)
	fmt.Fprintf(&b, "Run %s on %s (%d cores, Go %s), commit %s, %s elapsed. Command: `%s`.\n\n",
		r.start.UTC().Format("2006-01-02 15:04 UTC"), host, runtime.NumCPU(), runtime.Version(), r.commit,
		time.Since(r.start).Round(time.Second), strings.Join(os.Args, " "))
	if c.large {
		locked := int64(0)
		if r.hog != nil {
			locked = r.hog.Locked()
		}
		fmt.Fprintf(&b, "Memory: a helper process (cmd/memhog) locked %.1f GiB so that %.1f GiB were left to the engine and the page cache (MemAvailable before it started: %.1f GiB; the lowest MemAvailable seen during each cell is in the CSV). Data: %.1fx that figure, raw, per engine. Before each read phase the engine's own files were evicted from the page cache (fdatasync + POSIX_FADV_DONTNEED on each file). Random reads for %.0f s, each scan for %.0f s, %d readers.\n\n",
			float64(locked)/(1<<30), c.memGiB, float64(r.memStart)/(1<<30), c.ratio, c.readSeconds, c.iterSeconds, c.readersOrDefault())
	}
	if r.dev != nil {
		fmt.Fprintf(&b, "Device under the data directory (measured on the spot, O_DIRECT): %s.\n\n", r.dev)
	} else if r.devErr != "" {
		fmt.Fprintf(&b, "Device probe failed: %s.\n\n", r.devErr)
	}
	b.WriteString("## Settings\n\n")
	fmt.Fprintf(&b, "- Every engine: memory budget %d MiB for its own caches; sync writes %v; 32 writers, 1000-entry batches", c.cacheMiB, c.sync)
	if c.batch16k != 1000 {
		fmt.Fprintf(&b, " (%d-entry batches at 16 KiB)", c.batch16k)
	}
	if c.compression == "none" {
		b.WriteString("; values are a function of their key, random and incompressible; no compression anywhere.")
	} else {
		b.WriteString("; values are a function of their key, random and incompressible; sett's and RocksDB's table data blocks are compressed with " + c.compression + " on every level (Badger: none), which these values do not let shrink.")
	}
	b.WriteString(" Populate's clock stops after close: every engine has flushed its memtables into tables and synced its logs. Then settle is on the clock: a fresh process opens the engine, runs the random reads at once (\"random read at once\", what a user who reads right after loading sees, beside the engine's background work), and waits until the engine has reported no pending flushes and compactions, sett's value-log GC backlog included, for " + stores.QuietPeriod.String() + " in a row (up to " + c.settle.String() + "). Settle s is the time from that open until the engine reported idle for good, watched from the open on beside the reads (every 100 ms), so that an engine that settles before the reads end is timed when it settled, not when they end; populate's verdict uses populate + settle, device bytes written count through settle, and disk use is measured once settled. Each later read phase is a fresh process that waits the same way before its clock (what it still waited is in the CSV). Every value read is checked by its length and its first and last 8 bytes, and one in 64 byte by byte" + map[bool]string{true: "; the digest compares every key across the engines (keys mode)", false: "; the digest compares every key and every value byte across the engines"}[c.digest == "keys"] + ". Every engine hands the benchmark loop borrowed slices that the loop copies; the cgo engines pay one cgo call per read and one per batch of scanned items (RocksDB through a small C helper, as sett's C ABI does); Badger and Pebble are pure Go.")
	if c.phaseTimeout > 0 {
		b.WriteString(" A phase still running after " + c.phaseTimeout.String() + " is stopped (by its pid) and its engine's row says so, so that one slow engine cannot push the run past its budget.")
	}
	b.WriteString("\n")
	for _, e := range append(append([]string(nil), c.engines...), "rocksdb-blob") {
		if e == "rocksdb-blob" && !c.blob {
			continue
		}
		fmt.Fprintf(&b, "- %s: %s.\n", e, stores.Settings(e, stores.Options{CacheBytes: c.cacheMiB << 20, Compression: c.compression, ValueThreshold: c.settThreshold, SettOptions: c.settOptions}))
	}
	var versions []string
	for _, e := range c.engines {
		versions = append(versions, e+": "+versionOf(r, e))
	}
	b.WriteString("- Versions, as each bench process read them at run time (the library's own version call for sett and RocksDB, the build's module list for the Go engines): " + strings.Join(versions, "; ") + ".\n")
	if out := leftOut(c); len(out) > 0 {
		b.WriteString("- **Left out of this run by flag**: " + strings.Join(out, "; ") + ".\n")
	}
	b.WriteString("- Memory: peak RSS is the process's peak (VmHWM, and VmRSS sampled every 100 ms) less what it held before the engine was opened (the harness's buffers), per phase, each phase in its own process; the read and iterate phases count from the moment the engine has settled (the settle wait's own peaks are in each phase's SETTLE line of the log). It counts the pages of mapped files that the engine touched: Badger reads its tables through mappings; sett reads its tables and value-log files with positional reads, as RocksDB does (a scan only asks the kernel to read ahead through a mapping, which maps no page into the process), and its WAL is a shared mapping whose pages count while it is written (at most one WAL, twice the memtable size); RocksDB reads into its block cache and the page cache, which its RSS does not show; the anonymous columns leave mapped files out (heap, memtables, caches, indexes and filters).\n")
	fmt.Fprintf(&b, "- Runs: %d per cell, engine order rotated each run; figures are the median [min–max].\n", c.runs)
	if c.large {
		b.WriteString("- MultiGet: one caller looks up 32 keys of the same fixed sequence at a time, alternating a batch of 32 point reads one after another with one MultiGet of the next 32 keys, on a cold cache (files evicted before the phase), so that both kinds of batch meet the same cache; µs per MultiGet of 32 keys, and its time ÷ the 32 point reads' (below 1: the batched read keeps more than one device read in flight). sett: get_many; RocksDB: its batched MultiGet (rocksdb_batched_multi_get_pinned_cf) in one cgo call; Badger and Pebble have no batched read, so theirs is a loop of point reads in one read view.\n")
		b.WriteString("- Random read: one fixed sequence of keys (about 63% exist), µs per read per reader (wall time × readers ÷ reads), comparable with the device's random-read latency at the same number of readers. Iterate: a forward scan from the first key on a cold cache; keys-only reads no value (every engine has a keys-only mode here, RocksDB's iterator reading its inline values with the key where values are not separated).\n\n")
	} else {
		b.WriteString("- MultiGet: one caller looks up 32 keys of the same fixed sequence at a time, alternating a batch of 32 point reads one after another with one MultiGet of the next 32 keys, so that both kinds of batch meet the same cache; µs per MultiGet of 32 keys, and its time ÷ the 32 point reads' (below 1: the batched read gains). sett: get_many; RocksDB: its batched MultiGet (rocksdb_batched_multi_get_pinned_cf) in one cgo call; Badger and Pebble have no batched read, so theirs is a loop of point reads in one read view.\n")
		b.WriteString("- Random read: one fixed sequence of keys (about 63% exist), ns per read in wall time with the readers in parallel. Iterate: forward scan from the first key, key and value copied, ns per item. Keys-only: sett, Badger and Pebble do not read separated values; RocksDB has no keys-only iterator, so its keys-only scan still reads every inline value (and, for rocksdb-blob, every blob): from the value threshold up that column compares a keys-only scan with a scan that reads values, and gets no verdict against RocksDB (n/a).\n\n")
	}

	b.WriteString("## Checks\n\n")
	if len(r.failures) == 0 {
		b.WriteString("Every check passed:\n")
	} else {
		b.WriteString("**FAILED**:\n")
		for _, f := range r.failures {
			b.WriteString("- " + f + "\n")
		}
		b.WriteString("\nPassed:\n")
	}
	for _, s := range r.checks {
		b.WriteString("- " + s + "\n")
	}
	for _, cl := range r.cells {
		if cl.Killed != "" {
			fmt.Fprintf(&b, "- %s at %d B, run %d: %s\n", cl.Engine, cl.ValSize, cl.Run, cl.Killed)
		}
		if cl.Killed == "" && (!cl.SettleIdle || (cl.WaitSeconds > 0 && !cl.WaitIdle)) {
			fmt.Fprintf(&b, "- %s at %d B, run %d: still had a backlog after the settle wait (%.0f s), reads ran beside it: %s\n", cl.Engine, cl.ValSize, cl.Run, cl.SettleSeconds, cl.Backlog)
		}
	}
	b.WriteString("\n## Results\n\n")
	t := tabulate(r.cells, c.large)
	b.WriteString(t.results)
	b.WriteString("\n## sett against each engine\n\n" + comparisonIntro(c.runs) + "\n\n")
	b.WriteString(t.comparison)
	b.WriteString("\n## Where sett is behind\n\n")
	if len(t.behind) == 0 {
		b.WriteString("Nowhere in this run (ties are listed in the table above).\n")
	}
	for _, l := range t.behind {
		b.WriteString("- " + l + "\n")
	}
	return b.String()
}

// comparisonIntro explains the comparison table's ratios and words.
func comparisonIntro(runs int) string {
	s := "Ratio of medians: for times, the other engine's ÷ sett's (above 1: sett is faster); for MB/s, sett's ÷ the other's; for disk and memory, sett's ÷ the other's (below 1: sett is smaller). The word says whether the ranges of the runs overlap: **ahead** or **behind** only where they do not, otherwise tie"
	if runs < 2 {
		s += " (with one run there is no range: a difference under 25% is called a tie)"
	}
	return s + ". The sett-enc row compares sett with itself with encryption at rest on: its ratios are what encryption costs (for times, above 1: encryption is slower by that factor), and it is not counted where sett is behind."
}

// tables is the rendered results and comparison tables of a set of cells.
type tables struct {
	results, comparison string
	behind              []string
}

// tabulate renders the per-engine results and sett's comparison with each
// engine, by the harness's rule (verdict); the report and the standing share it.
func tabulate(cells []*cell, large bool) tables {
	var t tables
	var b strings.Builder
	ms := metricsFor(large)
	b.WriteString("| value size | engine | keys written |")
	for _, m := range ms {
		b.WriteString(" " + m.name + " |")
	}
	b.WriteString("\n|---:|---|---:|" + strings.Repeat("---:|", len(ms)) + "\n")
	type key struct {
		valsz  int
		engine string
	}
	groups := map[key][]*cell{}
	var order []key
	for _, cl := range cells {
		k := key{cl.ValSize, cl.Engine}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], cl)
	}
	sort.SliceStable(order, func(i, j int) bool {
		if order[i].valsz != order[j].valsz {
			return order[i].valsz < order[j].valsz
		}
		return engineRank(order[i].engine) < engineRank(order[j].engine)
	})
	spreads := map[key][]spread.Spread{}
	for _, k := range order {
		cells := groups[k]
		fmt.Fprintf(&b, "| %d B | %s | %d |", k.valsz, k.engine, cells[0].Keys)
		for _, m := range ms {
			var vals []float64
			for _, cl := range cells {
				vals = append(vals, m.get(cl))
			}
			s := spread.Of(vals)
			spreads[k] = append(spreads[k], s)
			b.WriteString(" " + s.Format(m.format) + " |")
		}
		b.WriteString("\n")
	}
	t.results = b.String()
	b.Reset()
	b.WriteString("| value size | vs |")
	// A column no cell has a figure for (a report of a harness without that
	// phase) is left out rather than shown as a row of dashes.
	var cmp []int
	for i, m := range ms {
		measured := false
		for _, k := range order {
			measured = measured || spreads[k][i].N > 0
		}
		if m.compare && measured {
			cmp = append(cmp, i)
			b.WriteString(" " + m.name + " |")
		}
	}
	b.WriteString("\n|---:|---|" + strings.Repeat("---|", len(cmp)) + "\n")
	for _, k := range order {
		if k.engine != "sett" {
			continue
		}
		for _, o := range order {
			if o.valsz != k.valsz || o.engine == "sett" {
				continue
			}
			fmt.Fprintf(&b, "| %d B | %s |", k.valsz, o.engine)
			for _, i := range cmp {
				m, s, os := ms[i], spreads[k][i], spreads[o][i]
				if s.N == 0 || os.N == 0 {
					b.WriteString(" — |")
					continue
				}
				ratio := s.Med / os.Med
				if !strings.Contains(m.name, "MiB") && m.lowerBetter {
					ratio = os.Med / s.Med
				}
				v := spread.Verdict(s, os, m.lowerBetter)
				if strings.Contains(m.name, "keys-only") && readsValuesInKeysOnly(o.engine, k.valsz) {
					v = "n/a (it reads values)"
				}
				fmt.Fprintf(&b, " %.2fx %s |", ratio, v)
				// sett-enc is sett itself with encryption on: its row is the cost of
				// encryption, not a standing against another engine.
				if v == "behind" && o.engine != "sett-enc" {
					t.behind = append(t.behind, fmt.Sprintf("%s at %d B: behind %s (%s vs %s)", m.name, k.valsz, o.engine, s.Format(m.format), os.Format(m.format)))
				}
			}
			b.WriteString("\n")
		}
	}
	t.comparison = b.String()
	return t
}

// versionOf is what the run's bench processes printed as engine e's version.
func versionOf(r *runner, e string) string {
	for _, cl := range r.cells {
		if cl.Engine == e && cl.Version != "" {
			return cl.Version
		}
	}
	return "not run yet"
}

// leftOut names the suite's engines that flags kept out of this run.
func leftOut(c *config) []string {
	var out []string
	for _, k := range stores.Kinds {
		found := false
		for _, e := range c.engines {
			found = found || e == k
		}
		if !found {
			out = append(out, k+" (--engines)")
		}
	}
	if !c.blob {
		out = append(out, "rocksdb-blob (--blob=false)")
	}
	return out
}

func engineRank(e string) int {
	for i, x := range []string{"sett", "sett-enc", "rocksdb", "rocksdb-blob", "pebble", "badger"} {
		if x == e {
			return i
		}
	}
	return 9
}

func csvReport(cells []*cell) string {
	var b strings.Builder
	b.WriteString("valsz,engine,run,keys,populate_s,populate_keys_per_s,raw_bytes,disk_apparent_bytes,disk_allocated_bytes,populate_device_written_bytes,populate_rss_bytes," +
		"settle_s,settle_idle,digest_count,digest_hash,read_ns,read_us_per_reader,reads,found,found_prefix,read_device_reads,read_device_bytes,read_rss_bytes," +
		"iter_keys_ns,iter_keys_mb_s,iter_keys_device_bytes,iter_keys_rss_bytes,iter_values_ns,iter_values_mb_s,iter_values_device_bytes,iter_values_rss_bytes,read_anon_bytes,iter_anon_bytes,min_mem_available_bytes,killed,populate_anon_bytes," +
		"settle_device_written_bytes,settled_disk_apparent_bytes,settled_disk_allocated_bytes,wait_s,fresh_read_ns,fresh_read_us_per_reader,fresh_reads,fresh_found,version,mget_us,mget_gets_us,mget_batches\n")
	for _, c := range cells {
		minAvail := c.MinMemAvailable
		if minAvail == 1<<62 {
			minAvail = 0
		}
		fmt.Fprintf(&b, "%d,%s,%d,%d,%.3f,%.0f,%d,%d,%d,%d,%d,%.2f,%v,%d,%s,%.1f,%.2f,%d,%d,%d,%d,%d,%d,%.1f,%.1f,%d,%d,%.1f,%.1f,%d,%d,%d,%d,%d,%q,%d,%d,%d,%d,%.1f,%.1f,%.2f,%d,%d,%q,%.2f,%.2f,%d\n",
			c.ValSize, c.Engine, c.Run, c.Keys, c.PopSeconds, c.PopKeysPerSec, c.RawBytes, c.DiskApparent, c.DiskAllocated, c.PopWritten, c.PopRSS,
			c.SettleSeconds, c.SettleIdle, c.DigestCount, c.DigestHash, c.ReadNs, c.ReadUsPerReader, c.Reads, c.Found, c.FoundPre, c.ReadDevOps, c.ReadDevBytes, c.ReadRSS,
			c.IterKeysNs, c.IterKeysMBs, c.IterKeysDevBytes, c.IterKeysRSS, c.IterValuesNs, c.IterValuesMBs, c.IterValuesDevBytes, c.IterValuesRSS, c.ReadAnon, c.IterAnon, minAvail, c.Killed, c.PopAnon,
			c.SettleWritten, c.SettledApparent, c.SettledAllocated, c.WaitSeconds, c.FreshReadNs, c.FreshReadUsPerReader, c.FreshReads, c.FreshFound, c.Version, c.MGetUs, c.MGetGetsUs, c.MGetBatches)
	}
	return b.String()
}
