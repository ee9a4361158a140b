// Command kvrun runs KVBench over every store, each in its own process, with
// and without fsync, then starts cmd/kvserver on each store and drives it with
// redis-benchmark (-t set,get at -P 1 and -P 64), and writes results/kvbench.md
// (throughput table, index ranking, redis-benchmark table) and kvbench.csv.
package main

import (
	"bufio"
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"settbench/stores"
)

func main() {
	kvbench := flag.String("kvbench", "", "kvbench binary")
	kvserver := flag.String("kvserver", "", "kvserver binary")
	out := flag.String("out", "results", "output directory")
	storesFlag := flag.String("stores", strings.Join(stores.KVKinds, ","), "stores")
	cacheMiB := flag.Int64("cache-mib", stores.DefaultCacheBytes>>20, "memory budget, in MiB, that every store gets for its own cache")
	dur := flag.String("d", "2s", "duration of each kvbench case")
	conc := flag.Int("c", 4, "kvbench concurrency")
	size := flag.Int("size", 256, "value size")
	set := flag.Int("set", 100000, "entries of the batch-write case")
	fsyncSet := flag.Int("fsync-set", 20000, "entries of the batch-write case with fsync")
	redisN := flag.Int("redis-n", 100000, "requests per redis-benchmark test (0 skips the server runs)")
	redisStores := flag.String("redis-stores", "", "stores driven by redis-benchmark (default: all)")
	runs := flag.Int("runs", 3, "runs of every store and case; the report gives medians and ranges")
	flag.Parse()
	if *kvbench == "" || *kvserver == "" {
		fail(fmt.Errorf("--kvbench and --kvserver are required"))
	}
	list := strings.Split(*storesFlag, ",")
	if err := checkStores(list); err != nil {
		fail(err)
	}
	if *cacheMiB < 1 {
		fail(fmt.Errorf("-cache-mib %d: the budget is at least 1 MiB", *cacheMiB))
	}
	if *runs < 1 {
		fail(fmt.Errorf("-runs %d: at least one run", *runs))
	}
	// The commit is read before the runs: the report's own files change during them.
	rev := "unknown (not a git checkout)"
	if out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output(); err == nil {
		rev = strings.TrimSpace(string(out))
		if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
			rev += " with uncommitted changes"
		}
	}
	must(os.MkdirAll(*out, 0o755))
	csvPath := filepath.Join(*out, "kvbench.csv")
	_ = os.Remove(csvPath)
	for run := 1; run <= *runs; run++ {
		for _, fsync := range []bool{false, true} {
			n := *set
			if fsync {
				n = *fsyncSet
			}
			for _, s := range list {
				args := []string{"-s", s, "-d", *dur, "-c", strconv.Itoa(*conc), "-size", strconv.Itoa(*size),
					"-set", strconv.Itoa(n), "-cache-mib", strconv.FormatInt(*cacheMiB, 10), "-save", csvPath, "-run", strconv.Itoa(run)}
				if fsync {
					args = append(args, "-fsync")
				}
				cmd := exec.Command(*kvbench, args...)
				cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
				if err := cmd.Run(); err != nil {
					fail(fmt.Errorf("kvbench %s fsync=%v run %d: %w", s, fsync, run, err))
				}
			}
		}
	}
	rows := readCSV(csvPath)
	var md strings.Builder
	host, _ := os.Hostname()
	others := len(list)
	for _, st := range list {
		if st == "sett" {
			others--
		}
	}
	fmt.Fprintf(&md, "# KVBench: sett against %d other stores\n\nRun %s on %s (%d cores), commit %s (%s). Command: `%s`. Each store in its own process; value size %d B for every case; concurrency %d; %s per timed case; batch write of %d entries (%d with fsync) in 1000-entry batches, timed until every entry is durable: each store's Flush at the end (what it does is in the table below). Keys exist for Get, Getmixed and Del (hit rates in the CSV); every prefix call returns 10 keys from every store. MemUsage is the peak RSS of the process; DiskUsage is the footprint of the batch-written entries, measured after close (apparent / allocated). `map` and `btree` are in-memory baselines without their append-only file here.\n\n",
		others, time.Now().UTC().Format("2006-01-02 15:04 UTC"), host, runtime.NumCPU(), rev, runsSentence(*runs, *dur), strings.Join(os.Args, " "), *size, *conc, *dur, *set, *fsyncSet)
	md.WriteString(settingsTable(list, *cacheMiB))
	groups := group(rows)
	for _, fsync := range []string{"false", "true"} {
		fmt.Fprintf(&md, "## fsync %s\n\n", fsync)
		md.WriteString(table(groups, fsync))
		md.WriteString("\n" + ranking(groups.medians(fsync)) + "\n")
		md.WriteString(standing(groups, fsync) + "\n")
	}
	if *redisN > 0 {
		rl := list
		if *redisStores != "" {
			rl = strings.Split(*redisStores, ",")
		}
		fmt.Fprintf(&md, "## redis-benchmark against kvserver\n\n`redis-benchmark -t set,get -n %d -d %d -P {1,64}` (redis-tools %s), fsync off, %d runs of every store (stores in turn within each run): medians [min–max] of the requests per second, medians of the latencies; any error reply fails the run.\n\n",
			*redisN, *size, redisVersion(), *runs)
		md.WriteString("| store | pipeline | SET req/s | SET p50 ms | SET p99 ms | GET req/s | GET p50 ms | GET p99 ms |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
		got := map[string][][]redisResult{} // store -> run -> pipeline
		for run := 1; run <= *runs; run++ {
			for _, s := range rl {
				res, err := redisRun(*kvserver, s, *redisN, *size, *cacheMiB)
				if err != nil {
					fail(fmt.Errorf("run %d: %w", run, err))
				}
				got[s] = append(got[s], res)
			}
		}
		for _, s := range rl {
			md.WriteString(redisRows(s, got[s]))
		}
	}
	must(os.WriteFile(filepath.Join(*out, "kvbench.md"), []byte(md.String()), 0o644))
	fmt.Println()
	fmt.Print(md.String())
}

// checkStores refuses a store KVBench does not have before anything runs,
// with the reason when it is one of the seed's absent stores.
func checkStores(list []string) error {
	for _, s := range list {
		if why, ok := stores.AbsentKV[s]; ok {
			return fmt.Errorf("store %s is absent: %s", s, why)
		}
		if !slices.Contains(stores.KVKinds, s) {
			return fmt.Errorf("unknown store %q (want some of %s)", s, strings.Join(stores.KVKinds, ","))
		}
	}
	return nil
}

// settingsTable is the report's account of the stores: the one cache budget,
// then per store its engine, what it does with the budget, what its Flush
// does and anything else its numbers need; then the seed's stores that are
// absent, and why. All of it comes from package stores' table, which the
// stores' code and doc follow.
func settingsTable(list []string, cacheMiB int64) string {
	var b strings.Builder
	o := stores.KVOptions{CacheBytes: cacheMiB << 20}
	fmt.Fprintf(&b, "Cache budget: **%d MiB for every store** (`-cache-mib`), given to each as its own cache where it has one; "+
		"what each does with it, and what its Flush does:\n\n", cacheMiB)
	b.WriteString("| store | engine | cache | Flush | notes |\n|---|---|---|---|---|\n")
	cell := func(s string) string { return strings.ReplaceAll(s, "|", "\\|") }
	for _, s := range list {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", s, cell(stores.KVEngine(s)), cell(stores.KVCacheSetting(s, o)),
			cell(stores.FlushMeaning(s)), cell(stores.KVNote(s)))
	}
	b.WriteString("\n")
	absent := make([]string, 0, len(stores.AbsentKV))
	for s := range stores.AbsentKV {
		absent = append(absent, s)
	}
	sort.Strings(absent)
	for _, s := range absent {
		fmt.Fprintf(&b, "%s is absent: %s\n\n", s, stores.AbsentKV[s])
	}
	return b.String()
}

func f(r map[string]string, k string) float64 {
	v, _ := strconv.ParseFloat(r[k], 64)
	return v
}

// metrics of the ranking: name, column, higher is better.
var metrics = []struct {
	name, col string
	higher    bool
}{
	{"BatchWrite", "batchwrite_s", false}, {"MemUsage", "mem_bytes", false}, {"DiskUsage", "disk_allocated", false},
	{"Prefix", "prefix_ops", true}, {"Set", "set_ops", true}, {"Get", "get_ops", true},
	{"Setmixed", "setmixed_ops", true}, {"Getmixed", "getmixed_ops", true}, {"Del", "del_ops", true},
}

// ranking is KVBench's "Index ranking": each store's value as a percentage of
// the best store's in each column (100 = best), and their mean.
func ranking(rows []map[string]string) string {
	type scored struct {
		store string
		idx   []float64
		mean  float64
	}
	var all []scored
	for _, r := range rows {
		s := scored{store: r["store"]}
		for _, m := range metrics {
			best := 0.0
			for _, o := range rows {
				v := f(o, m.col)
				if m.col == "disk_allocated" && v == 0 {
					continue // in-memory baselines have no disk: not ranked on it
				}
				if best == 0 || (m.higher && v > best) || (!m.higher && v < best) {
					best = v
				}
			}
			v := f(r, m.col)
			idx := 0.0
			switch {
			case m.col == "disk_allocated" && v == 0:
				idx = 100
			case m.higher && best > 0:
				idx = 100 * v / best
			case !m.higher && v > 0:
				idx = 100 * best / v
			}
			s.idx = append(s.idx, idx)
			s.mean += idx / float64(len(metrics))
		}
		all = append(all, s)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].mean > all[j].mean })
	var b strings.Builder
	b.WriteString("Index ranking, of the medians (100 = best store in the column; BatchWrite, MemUsage and DiskUsage: lower is better):\n\n| rank | store |")
	for _, m := range metrics {
		b.WriteString(" " + m.name + " |")
	}
	b.WriteString(" mean |\n|---:|---|" + strings.Repeat("---:|", len(metrics)+1) + "\n")
	for i, s := range all {
		fmt.Fprintf(&b, "| %d | %s |", i+1, s.store)
		for _, v := range s.idx {
			fmt.Fprintf(&b, " %.0f |", v)
		}
		fmt.Fprintf(&b, " %.0f |\n", s.mean)
	}
	return b.String()
}

func readCSV(path string) []map[string]string {
	fh, err := os.Open(path)
	must(err)
	defer fh.Close()
	recs, err := csv.NewReader(fh).ReadAll()
	must(err)
	var rows []map[string]string
	for _, rec := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			m[h] = rec[i]
		}
		rows = append(rows, m)
	}
	return rows
}

func redisVersion() string {
	out, _ := exec.Command("redis-benchmark", "--version").Output()
	fields := strings.Fields(string(out))
	if len(fields) >= 2 {
		return fields[1]
	}
	return "?"
}

// redisRun starts kvserver on store, runs redis-benchmark at -P 1 and -P 64 and
// returns its figures; any error reply fails the whole run. kvserver binds a
// port the kernel picks and prints it; it gets SIGTERM if kvrun dies.
func redisRun(kvserver, store string, n, size int, cacheMiB int64) ([]redisResult, error) {
	dir, err := os.MkdirTemp("", "kvserver-"+store+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	srv := exec.Command(kvserver, "-s", store, "-addr", "127.0.0.1:0", "-dir", dir, "-cache-mib", strconv.FormatInt(cacheMiB, 10))
	srv.Stderr = os.Stderr
	srv.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	// An os.Pipe rather than StdoutPipe: the copy below may still read after Wait.
	stdout, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer stdout.Close()
	srv.Stdout = w
	err = srv.Start()
	w.Close()
	if err != nil {
		return nil, err
	}
	defer func() {
		_ = srv.Process.Signal(os.Interrupt)
		_ = srv.Wait()
	}()
	// "kvserver: STORE on ADDR (data in DIR)", printed once it listens.
	lines := bufio.NewReader(stdout)
	first, err := lines.ReadString('\n')
	fields := strings.Fields(first)
	if err != nil || len(fields) < 4 || fields[2] != "on" {
		return nil, fmt.Errorf("kvserver %s did not start: %q (%v)", store, first, err)
	}
	_, portText, err := net.SplitHostPort(fields[3])
	if err != nil {
		return nil, fmt.Errorf("kvserver %s printed no address: %q", store, first)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return nil, fmt.Errorf("kvserver %s printed no port: %q", store, first)
	}
	fmt.Print(first)
	go func() { _, _ = io.Copy(os.Stdout, lines) }()
	var rows []redisResult
	for _, p := range []int{1, 64} {
		out, err := exec.Command("redis-benchmark", "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "set,get",
			"-n", strconv.Itoa(n), "-d", strconv.Itoa(size), "-r", strconv.Itoa(n), "-P", strconv.Itoa(p), "--csv").CombinedOutput()
		text := string(out)
		// redis-benchmark 7 stops at the first error reply and prints it.
		if err != nil || strings.Contains(text, "ERR") || strings.Contains(text, "Error from server") {
			return nil, fmt.Errorf("redis-benchmark against %s (-P %d) failed: %v\n%s", store, p, err, text)
		}
		res := map[string][]string{}
		sc := bufio.NewScanner(strings.NewReader(text))
		for sc.Scan() {
			rec, err := csv.NewReader(strings.NewReader(sc.Text())).Read()
			if err == nil && len(rec) >= 7 && (rec[0] == "SET" || rec[0] == "GET") {
				res[rec[0]] = rec
			}
		}
		s, g := res["SET"], res["GET"]
		if s == nil || g == nil {
			return nil, fmt.Errorf("redis-benchmark against %s printed no SET/GET result:\n%s", store, text)
		}
		fmt.Printf("redis-benchmark %s -P %d: SET %s req/s, GET %s req/s\n", store, p, s[1], g[1])
		r := redisResult{pipeline: p}
		for i, text := range []string{s[1], s[4], s[6], g[1], g[4], g[6]} {
			if r.figures[i], err = strconv.ParseFloat(text, 64); err != nil {
				return nil, fmt.Errorf("redis-benchmark against %s (-P %d): figure %q: %w", store, p, text, err)
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

func must(err error) {
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "kvrun:", err)
	os.Exit(1)
}
