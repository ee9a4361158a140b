// Command runbench runs the badger-bench matrix — populate, random reads and
// iteration for sett, RocksDB and Badger at several value sizes — and writes
// results/badger-bench.md and .csv with sett's ratio to each other engine and
// the device limits measured on the spot. `make bench` builds and runs it.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"settbench/internal/keys"
	"settbench/stores"
)

type result struct {
	Engine        string  `json:"engine"`
	ValSize       int     `json:"valsz"`
	Keys          int64   `json:"keys"`
	Seconds       float64 `json:"seconds"`
	KeysPerSec    float64 `json:"keys_per_sec"`
	DiskApparent  int64   `json:"disk_apparent"`
	DiskAllocated int64   `json:"disk_allocated"`
	PeakRSS       int64   `json:"peak_rss"`
	RawBytes      int64   `json:"raw_bytes"`
	ReadNs        float64
	IterKeysNs    float64
	IterValuesNs  float64
}

// Default key counts (millions) per value size: each data set is a few hundred
// MB at most, so that the whole matrix finishes in minutes on 2 cores.
var defaultKeysMil = map[int]float64{16: 1, 128: 1, 1024: 0.25, 16384: 0.03}

var benchName = map[string]string{"sett": "Sett", "rocksdb": "Rocks", "badger": "Badger", "rocksdb-blob": "RocksBlob"}

func main() {
	populate := flag.String("populate", "", "populate binary")
	benchBin := flag.String("bench", "", "compiled bench test binary (go test -c)")
	dir := flag.String("dir", "", "data directory (default: a new temporary directory, removed at the end)")
	out := flag.String("out", "results", "directory for badger-bench.md and .csv")
	sizes := flag.String("sizes", "16,128,1024,16384", "value sizes")
	scale := flag.Float64("scale", 1, "multiplies the default key counts (1M, 1M, 0.25M, 0.03M)")
	engines := flag.String("engines", "sett,rocksdb,badger", "engines")
	blob := flag.Bool("blob", true, "add RocksDB BlobDB (min_blob_size = value threshold) for sizes at or above it")
	reads := flag.Int("reads", 300000, "random reads per engine and size")
	iter := flag.Int("iter", 1000000, "items iterated per engine, size and mode (a tenth of it at 16 KiB)")
	syncW := flag.Bool("sync", false, "durable writes, for every engine")
	deviceMiB := flag.Int("device-mib", 256, "size of the device probe file; 0 skips the probe")
	flag.Parse()
	if *populate == "" || *benchBin == "" {
		fail(fmt.Errorf("--populate and --bench are required"))
	}
	base := *dir
	if base == "" {
		d, err := os.MkdirTemp("", "badger-bench-")
		if err != nil {
			fail(err)
		}
		base = d
		defer os.RemoveAll(d)
	}
	var dev *Device
	if *deviceMiB > 0 {
		d, err := measureDevice(base, *deviceMiB)
		if err != nil {
			fmt.Println("device probe failed:", err)
		} else {
			dev = &d
			fmt.Println("device:", d)
		}
	}
	var all []result
	for _, s := range strings.Split(*sizes, ",") {
		valsz, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			fail(fmt.Errorf("bad size %q", s))
		}
		mil, ok := defaultKeysMil[valsz]
		if !ok {
			mil = 0.25 * 1024 / float64(valsz)
		}
		mil *= *scale
		nIter := *iter
		if valsz >= 16384 {
			nIter /= 10
		}
		list := strings.Split(*engines, ",")
		if *blob && valsz >= stores.ValueThreshold {
			list = append(list, "rocksdb-blob")
		}
		for _, e := range list {
			e = strings.TrimSpace(e)
			r, err := runOne(*populate, *benchBin, base, e, valsz, mil, *reads, nIter, *syncW)
			if err != nil {
				fail(fmt.Errorf("%s at %d B: %w", e, valsz, err))
			}
			all = append(all, r)
		}
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fail(err)
	}
	md := report(all, dev, *syncW, *scale)
	fmt.Println()
	fmt.Print(md)
	must(os.WriteFile(filepath.Join(*out, "badger-bench.md"), []byte(md), 0o644))
	must(os.WriteFile(filepath.Join(*out, "badger-bench.csv"), []byte(csv(all)), 0o644))
	fmt.Printf("\nwrote %s and %s\n", filepath.Join(*out, "badger-bench.md"), filepath.Join(*out, "badger-bench.csv"))
}

var nsRe = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op`)

func runOne(populate, benchBin, base, engine string, valsz int, mil float64, reads, iters int, syncW bool) (result, error) {
	var r result
	fmt.Printf("\n== %s, %d-byte values, %.3fM keys\n", engine, valsz, mil)
	args := []string{"--kv", engine, "--valsz", strconv.Itoa(valsz), "--keys_mil", fmt.Sprint(mil), "--dir", base}
	if syncW {
		args = append(args, "--sync")
	}
	outp, err := stream(populate, args...)
	if err != nil {
		return r, fmt.Errorf("populate: %w", err)
	}
	for _, line := range strings.Split(outp, "\n") {
		if j, ok := strings.CutPrefix(line, "RESULT "); ok {
			if err := json.Unmarshal([]byte(j), &r); err != nil {
				return r, err
			}
		}
	}
	if r.Keys == 0 {
		return r, fmt.Errorf("populate printed no RESULT line")
	}
	name := benchName[engine]
	common := []string{"-test.run", "^$", "--keys_mil", fmt.Sprint(mil), "--valsz", strconv.Itoa(valsz), "--dir", base}
	ns, err := benchNs(benchBin, append(common, "-test.bench", "^BenchmarkReadRandom"+name+"$", "-test.benchtime", fmt.Sprintf("%dx", reads)))
	if err != nil {
		return r, err
	}
	r.ReadNs = ns["BenchmarkReadRandom"+name]
	ns, err = benchNs(benchBin, append(common, "-test.bench", "^BenchmarkIterate"+name+"(OnlyKeys|WithValues)$", "-test.benchtime", fmt.Sprintf("%dx", iters)))
	if err != nil {
		return r, err
	}
	r.IterKeysNs = ns["BenchmarkIterate"+name+"OnlyKeys"]
	r.IterValuesNs = ns["BenchmarkIterate"+name+"WithValues"]
	if r.ReadNs == 0 || r.IterKeysNs == 0 || r.IterValuesNs == 0 {
		return r, fmt.Errorf("missing benchmark figures: %+v", ns)
	}
	return r, os.RemoveAll(keys.Dir(base, engine, valsz))
}

// stream runs a command, echoing its output, and returns it.
func stream(bin string, args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	var buf bytes.Buffer
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", err
	}
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "RESULT ") {
			fmt.Println("  " + line)
		}
		buf.WriteString(line + "\n")
	}
	return buf.String(), cmd.Wait()
}

func benchNs(bin string, args []string) (map[string]float64, error) {
	outp, err := stream(bin, args...)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	ns := map[string]float64{}
	for _, line := range strings.Split(outp, "\n") {
		if m := nsRe.FindStringSubmatch(line); m != nil {
			v, _ := strconv.ParseFloat(m[2], 64)
			ns[m[1]] = v
		}
	}
	return ns, nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

func report(all []result, dev *Device, syncW bool, scale float64) string {
	var b strings.Builder
	host, _ := os.Hostname()
	fmt.Fprintf(&b, "# badger-bench: sett vs RocksDB vs Badger\n\n")
	fmt.Fprintf(&b, "Run %s on %s (%d cores, Go %s), `make bench` with scale %g.\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), host, runtime.NumCPU(), runtime.Version(), scale)
	fmt.Fprintf(&b, "Settings: sync writes %v for every engine; 32 writers, 1000-entry batches; random incompressible values; no compression anywhere. ", syncW)
	fmt.Fprintf(&b, "sett %s through its C ABI (value threshold %d B). RocksDB 7.8.3 (Debian librocksdb-dev) through its C API: bloom filter 10 bits/key, %d MiB LRU block cache, `rocksdb-blob` rows with BlobDB (min_blob_size %d B). Badger v4.9.6: ValueThreshold %d B, WriteBatch, default caches.\n\n",
		settVersion(), stores.ValueThreshold, stores.BlockCacheBytes>>20, stores.ValueThreshold, stores.ValueThreshold)
	if dev != nil {
		fmt.Fprintf(&b, "Device under the data directory: %s.\n\n", dev)
	}
	b.WriteString("Random read: parallel readers (GOMAXPROCS), ~63% of keys exist, value copied; ns/op is wall time per read. Iterate: forward scan, key and value copied; ns per item.\n\n")
	b.WriteString("| value size | engine | keys written | populate s | populate keys/s | populate MB/s | random read ns/op | iterate keys-only ns/item | iterate with values ns/item | disk apparent MiB | disk allocated MiB | disk / raw | peak RSS MiB |\n")
	b.WriteString("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range all {
		fmt.Fprintf(&b, "| %d B | %s | %d | %.2f | %.0f | %.1f | %.0f | %.0f | %.0f | %.1f | %.1f | %.2f | %.0f |\n",
			r.ValSize, r.Engine, r.Keys, r.Seconds, r.KeysPerSec, float64(r.RawBytes)/1e6/r.Seconds, r.ReadNs, r.IterKeysNs, r.IterValuesNs,
			mib(r.DiskApparent), mib(r.DiskAllocated), float64(r.DiskAllocated)/float64(r.RawBytes), mib(r.PeakRSS))
	}
	b.WriteString("\n## sett against each engine\n\nSpeed columns: the other engine's time ÷ sett's (above 1: sett is faster). Disk and RSS: sett ÷ the other (below 1: sett is smaller).\n\n")
	b.WriteString("| value size | vs | populate | random read | iterate keys-only | iterate with values | disk | peak RSS |\n|---:|---|---:|---:|---:|---:|---:|---:|\n")
	var losses []string
	for _, s := range all {
		if s.Engine != "sett" {
			continue
		}
		for _, o := range all {
			if o.ValSize != s.ValSize || o.Engine == "sett" {
				continue
			}
			pop, rd, ik, iv := o.Seconds/s.Seconds, o.ReadNs/s.ReadNs, o.IterKeysNs/s.IterKeysNs, o.IterValuesNs/s.IterValuesNs
			disk, rss := float64(s.DiskAllocated)/float64(o.DiskAllocated), float64(s.PeakRSS)/float64(o.PeakRSS)
			fmt.Fprintf(&b, "| %d B | %s | %.2fx | %.2fx | %.2fx | %.2fx | %.2f | %.2f |\n", s.ValSize, o.Engine, pop, rd, ik, iv, disk, rss)
			for _, c := range []struct {
				what string
				v    float64
			}{{"populate", pop}, {"random read", rd}, {"iterate keys-only", ik}, {"iterate with values", iv}} {
				if c.v < 1 {
					losses = append(losses, fmt.Sprintf("%s at %d B: %s is %.2fx faster", c.what, s.ValSize, o.Engine, 1/c.v))
				}
			}
		}
	}
	b.WriteString("\n## Where sett is not the fastest\n\n")
	if len(losses) == 0 {
		b.WriteString("Nowhere in this run.\n")
	}
	for _, l := range losses {
		b.WriteString("- " + l + "\n")
	}
	return b.String()
}

func csv(all []result) string {
	var b strings.Builder
	b.WriteString("valsz,engine,keys,populate_s,populate_keys_per_s,read_ns,iter_keys_ns,iter_values_ns,disk_apparent_bytes,disk_allocated_bytes,raw_bytes,peak_rss_bytes\n")
	for _, r := range all {
		fmt.Fprintf(&b, "%d,%s,%d,%.3f,%.0f,%.1f,%.1f,%.1f,%d,%d,%d,%d\n", r.ValSize, r.Engine, r.Keys, r.Seconds, r.KeysPerSec,
			r.ReadNs, r.IterKeysNs, r.IterValuesNs, r.DiskApparent, r.DiskAllocated, r.RawBytes, r.PeakRSS)
	}
	return b.String()
}

func settVersion() string {
	v := settLibVersion()
	return fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100)
}

func must(err error) {
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "runbench:", err)
	os.Exit(1)
}
