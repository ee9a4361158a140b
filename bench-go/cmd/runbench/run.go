package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"settbench/internal/keys"
	"settbench/internal/rss"
	"settbench/internal/sysmem"
	"settbench/stores"
)

// cell is one engine at one value size in one run.
type cell struct {
	Engine  string
	ValSize int
	Run     int
	KeysMil float64
	Killed  string // set when a phase's process died of a signal (the OOM killer)

	Keys          int64
	PopSeconds    float64
	PopKeysPerSec float64
	RawBytes      int64
	DiskApparent  int64
	DiskAllocated int64
	PopWritten    int64 // bytes the device wrote during populate
	PopRSS        int64 // engine peak RSS during populate
	PopAnon       int64 // the same for anonymous memory (no mapped files)

	Version string // the engine's version, as the bench process read it at run time

	// Settle: from the open after populate until the engine reported idle for
	// good, the unsettled read phase running at its start.
	SettleSeconds          float64
	SettleIdle             bool
	SettleWritten          int64 // bytes the device wrote during it
	SettledApparent        int64 // disk use once settled
	SettledAllocated       int64
	WaitSeconds            float64 // what the later phases still waited before their clocks
	WaitIdle               bool
	Backlog                string
	FreshReadNs            float64 // random reads at once after populate, beside the settle
	FreshReadUsPerReader   float64
	FreshReads, FreshFound int64
	DigestCount            int64
	DigestHash             string

	ReadNs, ReadUsPerReader float64
	Reads, Found, FoundPre  int64
	ReadDevOps              int64 // device reads completed during the read phase
	ReadDevBytes            int64
	ReadRSS                 int64
	ReadAnon                int64 // anonymous memory only: not the mapped files

	// MultiGet: one caller, batches of 32 keys; the same caller's 32 point
	// reads one after another in batches alternating with them.
	MGetUs, MGetGetsUs float64 // µs per batch
	MGetBatches        int64

	IterKeysNs, IterKeysMBs     float64
	IterValuesNs, IterValuesMBs float64
	IterKeysDevBytes            int64
	IterValuesDevBytes          int64
	IterKeysRSS, IterValuesRSS  int64
	IterAnon                    int64

	MinMemAvailable int64
}

type runner struct {
	cfg      config
	commit   string // read when the run starts: the tree may change while it runs
	start    time.Time
	dev      *sysmem.Device
	devErr   string
	hog      *sysmem.Hog
	memStart int64
	cells    []*cell
	failures []string
	checks   []string
}

func (r *runner) run() error {
	c := &r.cfg
	_, r.memStart, _ = sysmem.MemInfo()
	if c.large {
		hog, err := sysmem.StartHog(int64(c.memGiB*(1<<30)), 4*time.Hour, c.memhog)
		if err != nil {
			return fmt.Errorf("memory helper: %w", err)
		}
		r.hog = hog
		_, avail, _ := sysmem.MemInfo()
		fmt.Printf("memory helper holds %.1f GiB; MemAvailable %.1f GiB before, %.1f GiB now\n",
			float64(hog.Locked())/(1<<30), float64(r.memStart)/(1<<30), float64(avail)/(1<<30))
		if fell := r.memStart - avail; float64(fell) < 0.8*float64(hog.Locked()) {
			r.failures = append(r.failures, fmt.Sprintf("memory helper locked %.0f MiB but MemAvailable fell by %.0f MiB only", mib(hog.Locked()), mib(fell)))
		} else {
			r.checks = append(r.checks, fmt.Sprintf("memory helper: locked %.0f MiB, MemAvailable fell by %.0f MiB", mib(hog.Locked()), mib(fell)))
		}
	}
	if c.deviceMiB > 0 {
		size := int64(c.deviceMiB) << 20
		readDur := 2 * time.Second
		if c.large {
			size = max(size, int64(c.memGiB*(1<<30))+1<<30)
			readDur = 10 * time.Second
		}
		d, err := sysmem.ProbeDevice(c.base, size, c.readersOrDefault(), readDur)
		if err != nil {
			r.devErr = err.Error()
			fmt.Println("device probe failed:", err)
		} else {
			r.dev = &d
			fmt.Println("device:", d)
		}
	}
	for _, valsz := range c.sizes {
		list := c.enginesFor(valsz)
		for run := 0; run < c.runs; run++ {
			var group []*cell
			for i := range list {
				e := list[(i+run)%len(list)] // rotate the order each run
				cl, err := r.runCell(e, valsz, run)
				if err != nil {
					return fmt.Errorf("%s at %d B, run %d: %w", e, valsz, run+1, err)
				}
				r.cells = append(r.cells, cl)
				group = append(group, cl)
				if cl.Killed != "" {
					r.failures = append(r.failures, fmt.Sprintf("%s at %d B, run %d did not finish: %s", e, valsz, run+1, cl.Killed))
				}
				if r.hog != nil && !r.hog.Alive() {
					return fmt.Errorf("the memory helper died during this cell (%s): the memory left was not held", r.hog)
				}
				r.writeReport() // a partial report survives an interrupted run
			}
			r.crossCheck(valsz, run, group)
		}
	}
	return nil
}

func (c *config) readersOrDefault() int {
	if c.readers > 0 {
		return c.readers
	}
	return max(2, numCPU())
}

func (r *runner) finish() {
	if r.hog != nil {
		_, during, _ := sysmem.MemInfo()
		if err := r.hog.Stop(); err != nil {
			r.failures = append(r.failures, "stopping the memory helper: "+err.Error())
		}
		time.Sleep(500 * time.Millisecond)
		_, after, _ := sysmem.MemInfo()
		if back := after - during; float64(back) < 0.8*float64(r.hog.Locked()) {
			r.failures = append(r.failures, fmt.Sprintf("memory helper stopped but MemAvailable rose by %.0f MiB of the %.0f MiB it held", mib(back), mib(r.hog.Locked())))
		} else {
			r.checks = append(r.checks, fmt.Sprintf("memory helper stopped: MemAvailable rose by %.0f MiB", mib(back)))
		}
	}
	r.writeReport()
}

func (r *runner) writeReport() {
	c := &r.cfg
	md := report(r)
	must(os.WriteFile(c.out+"/"+c.reportName()+".md", []byte(md), 0o644))
	must(os.WriteFile(c.out+"/"+c.reportName()+".csv", []byte(csvReport(r.cells)), 0o644))
}

// runCell populates one engine, checks its data, and runs the read phases.
func (r *runner) runCell(engine string, valsz, run int) (*cell, error) {
	c := &r.cfg
	mil := c.keysMil(valsz)
	cl := &cell{Engine: engine, ValSize: valsz, Run: run + 1, KeysMil: mil, MinMemAvailable: 1 << 62}
	raw := int64(mil*1e6) * int64(valsz+22)
	if err := freeCheck(c.base, raw); err != nil {
		return nil, err
	}
	fmt.Printf("\n== %s, %d-byte values, %.3fM keys, run %d of %d (%s elapsed)\n", engine, valsz, mil, run+1, c.runs, time.Since(r.start).Round(time.Second))
	dir := keys.Dir(c.base, engine, valsz)
	defer os.RemoveAll(dir)

	batch := 1000
	if valsz >= 16384 {
		batch = c.batch16k
	}
	args := []string{"--kv", engine, "--valsz", strconv.Itoa(valsz), "--keys_mil", fmt.Sprint(mil), "--dir", c.base,
		"--cache_mib", fmt.Sprint(c.cacheMiB), "--batch", strconv.Itoa(batch)}
	if c.sync {
		args = append(args, "--sync")
	}
	if c.compression != "none" {
		args = append(args, "--compression", c.compression)
	}
	isSett := engine == "sett" || engine == "sett-enc"
	if c.settThreshold > 0 && isSett {
		args = append(args, "--sett_value_threshold", strconv.Itoa(c.settThreshold))
	}
	if c.settOptions != "" && isSett {
		args = append(args, "--sett_options", c.settOptions)
	}
	out, ph, err := r.phase(cl, "populate", c.populate, args)
	cl.PopWritten = ph.dev.WriteBytes()
	if ph.killed != "" {
		cl.Killed = "populate: " + ph.killed
		return cl, nil
	}
	if err != nil {
		return nil, fmt.Errorf("populate: %w", err)
	}
	var pr struct {
		Keys          int64     `json:"keys"`
		Seconds       float64   `json:"seconds"`
		KeysPerSec    float64   `json:"keys_per_sec"`
		DiskApparent  int64     `json:"disk_apparent"`
		DiskAllocated int64     `json:"disk_allocated"`
		PeakRSS       int64     `json:"peak_rss"`
		RawBytes      int64     `json:"raw_bytes"`
		RSS           rss.Phase `json:"rss"`
	}
	if err := tagged(out, "RESULT", &pr); err != nil {
		return nil, fmt.Errorf("populate: %w", err)
	}
	cl.Keys, cl.PopSeconds, cl.PopKeysPerSec = pr.Keys, pr.Seconds, pr.KeysPerSec
	cl.DiskApparent, cl.DiskAllocated, cl.PopRSS, cl.RawBytes = pr.DiskApparent, pr.DiskAllocated, pr.PeakRSS, pr.RawBytes
	cl.PopAnon = pr.RSS.EngineAnon()

	common := []string{"--keys_mil", fmt.Sprint(mil), "--valsz", strconv.Itoa(valsz), "--dir", c.base,
		"--cache_mib", fmt.Sprint(c.cacheMiB), "--readers", strconv.Itoa(c.readersOrDefault())}
	if c.settOptions != "" && isSett {
		common = append(common, "--sett_options", c.settOptions)
	}
	name := benchName[engine]
	readBudget := []string{"-test.benchtime", fmt.Sprintf("%dx", c.reads)}
	if c.large {
		readBudget = []string{"-test.benchtime", "1x", "--read_seconds", fmt.Sprint(c.readSeconds)}
	}

	// Random reads at once after populate, what a user who reads right away sees,
	// then the wait until the engine has settled: both in one process, on one clock
	// from its open (settle is on the clock: populate's verdict uses populate + settle).
	freshArgs := append([]string{"-test.run", "^$", "-test.bench", "^BenchmarkReadRandom" + name + "$",
		"--settle_timeout", "0", "--settle_after", c.settle.String()}, common...)
	m, ph, err := r.benchPhase(cl, "read unsettled + settle", append(freshArgs, readBudget...))
	if err != nil || ph.killed != "" {
		return cl, err
	}
	cl.FreshReadNs, cl.FreshReadUsPerReader = m["ns/read"], m["us/read/reader"]
	cl.FreshReads, cl.FreshFound = int64(m["reads"]), int64(m["found"])
	cl.SettleWritten = ph.dev.WriteBytes()
	var st struct {
		Since   float64 `json:"since_open_s"`
		Idle    bool    `json:"idle"`
		Backlog string  `json:"backlog"`
	}
	if err := tagged(ph.out, "SETTLED", &st); err != nil {
		return nil, fmt.Errorf("settle: %w", err)
	}
	cl.SettleSeconds, cl.SettleIdle, cl.Backlog = st.Since, st.Idle, st.Backlog
	if cl.SettledApparent, cl.SettledAllocated, err = stores.DiskUsage(dir); err != nil {
		return nil, fmt.Errorf("disk use after settle: %w", err)
	}
	common = append(common, "--settle_timeout", c.settle.String())

	// The data check runs first, and waits for the backlog populate left.
	if c.digest != "none" {
		out, ph, err := r.phase(cl, "digest", c.benchBin, append([]string{"-test.run", "^TestDigest$", "--digest", c.digest, "--engine", engine}, common...))
		if ph.killed != "" {
			cl.Killed = "digest: " + ph.killed
			return cl, nil
		}
		if err != nil {
			return nil, fmt.Errorf("digest: %w\n%s", err, tail(out))
		}
		var d struct {
			Count int64  `json:"count"`
			Hash  string `json:"hash"`
		}
		if err := tagged(out, "DIGEST", &d); err != nil {
			return nil, err
		}
		cl.DigestCount, cl.DigestHash = d.Count, d.Hash
		r.waitInfo(cl, out)
	}

	readArgs := append(append([]string{"-test.run", "^$", "-test.bench", "^BenchmarkReadRandom" + name + "$"}, common...), readBudget...)
	m, ph, err = r.benchPhase(cl, "read", readArgs)
	if err != nil || ph.killed != "" {
		return cl, err
	}
	cl.ReadNs, cl.ReadUsPerReader = m["ns/read"], m["us/read/reader"]
	cl.Reads, cl.Found, cl.FoundPre = int64(m["reads"]), int64(m["found"]), int64(m["found-prefix"])
	cl.ReadDevOps, cl.ReadDevBytes, cl.ReadRSS, cl.ReadAnon = int64(ph.dev.ReadsCompleted), ph.dev.ReadBytes(), ph.rss, ph.anon

	mgetArgs := append([]string{"-test.run", "^$", "-test.bench", "^BenchmarkMultiGet" + name + "$"}, common...)
	if c.large {
		mgetArgs = append(mgetArgs, "-test.benchtime", "1x", "--mget_seconds", fmt.Sprint(c.mgetSeconds))
	} else {
		mgetArgs = append(mgetArgs, "-test.benchtime", fmt.Sprintf("%dx", c.mgets))
	}
	m, ph, err = r.benchPhase(cl, "multiget", mgetArgs)
	if err != nil || ph.killed != "" {
		return cl, err
	}
	cl.MGetUs, cl.MGetGetsUs, cl.MGetBatches = m["us/multiget"], m["us/gets"], int64(m["batches"])

	nIter := c.iter
	if valsz >= 16384 {
		nIter /= 10
	}
	for _, keysOnly := range []bool{true, false} {
		mode := "WithValues"
		if keysOnly {
			mode = "OnlyKeys"
		}
		args := append([]string{"-test.run", "^$", "-test.bench", "^BenchmarkIterate" + name + mode + "$"}, common...)
		if c.large {
			args = append(args, "-test.benchtime", "1x", "--iter_seconds", fmt.Sprint(c.iterSeconds))
		} else {
			args = append(args, "-test.benchtime", fmt.Sprintf("%dx", nIter))
		}
		m, ph, err := r.benchPhase(cl, "iterate "+mode, args)
		if err != nil || ph.killed != "" {
			return cl, err
		}
		if keysOnly {
			cl.IterKeysNs, cl.IterKeysMBs, cl.IterKeysDevBytes, cl.IterKeysRSS = m["ns/item"], m["MB/s"], ph.dev.ReadBytes(), ph.rss
			cl.IterAnon = max(cl.IterAnon, ph.anon)
		} else {
			cl.IterValuesNs, cl.IterValuesMBs, cl.IterValuesDevBytes, cl.IterValuesRSS = m["ns/item"], m["MB/s"], ph.dev.ReadBytes(), ph.rss
			cl.IterAnon = max(cl.IterAnon, ph.anon)
		}
	}
	return cl, nil
}

var benchName = map[string]string{"sett": "Sett", "sett-enc": "SettEnc", "rocksdb": "Rocks", "badger": "Badger", "rocksdb-blob": "RocksBlob", "pebble": "Pebble"}

// benchPhase runs one benchmark of the bench binary in its own process (in the
// large regime after evicting the engine's files from the page cache) and
// returns its metrics.
func (r *runner) benchPhase(cl *cell, what string, args []string) (map[string]float64, phaseInfo, error) {
	if r.cfg.large {
		files, n, err := sysmem.EvictFiles(keys.Dir(r.cfg.base, cl.Engine, cl.ValSize))
		if err != nil {
			return nil, phaseInfo{}, fmt.Errorf("evicting %s's files: %w", cl.Engine, err)
		}
		fmt.Printf("  evicted %d files (%.0f MiB) of %s from the page cache\n", files, mib(n), cl.Engine)
	}
	out, ph, err := r.phase(cl, what, r.cfg.benchBin, args)
	ph.out = out
	if ph.killed != "" {
		cl.Killed = what + ": " + ph.killed
		return nil, ph, nil
	}
	if err != nil {
		return nil, ph, fmt.Errorf("%s: %w\n%s", what, err, tail(out))
	}
	r.waitInfo(cl, out)
	var p rss.Phase
	if err := tagged(out, "PHASE_RSS", &p); err == nil {
		ph.rss, ph.anon = p.Engine(), p.EngineAnon()
	}
	m := benchMetrics(out)
	if len(m) == 0 {
		return nil, ph, fmt.Errorf("%s printed no benchmark line:\n%s", what, tail(out))
	}
	return m, ph, nil
}

// waitInfo keeps the longest wait a phase still had before its clock (the
// engine should be settled by then), its version, and a backlog that remained.
func (r *runner) waitInfo(cl *cell, out string) {
	var s struct {
		Version string  `json:"version"`
		Waited  float64 `json:"waited_s"`
		Idle    bool    `json:"idle"`
		Backlog string  `json:"backlog"`
	}
	if tagged(out, "SETTLE", &s) != nil {
		return
	}
	if s.Version != "" {
		cl.Version = s.Version
	}
	if s.Waited >= cl.WaitSeconds {
		cl.WaitSeconds, cl.WaitIdle = s.Waited, s.Idle
		if !s.Idle {
			cl.Backlog = s.Backlog
		}
	}
}

// phaseInfo is what the runner saw of one child process from outside.
type phaseInfo struct {
	out    string
	dev    sysmem.DiskCounters // device counters over the phase
	killed string
	rss    int64 // engine peak, from the child's PHASE_RSS line
	anon   int64 // the same for anonymous memory
}

// phase runs bin, echoing its output, sampling its memory, MemAvailable and the
// device every second, and printing a progress line every 10 s.
func (r *runner) phase(cl *cell, what, bin string, args []string) (string, phaseInfo, error) {
	var ph phaseInfo
	before, derr := sysmem.DiskStats(r.cfg.base)
	cmd := exec.Command(bin, args...)
	var buf bytes.Buffer
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return "", ph, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return "", ph, err
	}
	// The hog cannot lower its own OOM score without CAP_SYS_RESOURCE; the
	// engine's process raising its own needs no privilege, so that an engine past
	// the memory left is the one the kernel kills.
	if r.cfg.large {
		if err := sysmem.SetOOMScoreAdj(cmd.Process.Pid, 1000); err != nil {
			fmt.Println("  could not raise the OOM score of the engine's process:", err)
		}
	}
	start := time.Now()
	var timedOut atomic.Bool
	if r.cfg.phaseTimeout > 0 {
		t := time.AfterFunc(r.cfg.phaseTimeout, func() {
			timedOut.Store(true)
			// By pid: the process this phase started, nothing else.
			_ = cmd.Process.Kill()
		})
		defer t.Stop()
	}
	stop := make(chan struct{})
	var mu sync.Mutex
	var hwm int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		last := before
		lastAt := time.Now()
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			_, avail, _ := sysmem.MemInfo()
			cur, _ := sysmem.RSS(cmd.Process.Pid)
			peak, _ := sysmem.PeakRSS(cmd.Process.Pid)
			mu.Lock()
			hwm = max(hwm, peak)
			if avail > 0 && avail < cl.MinMemAvailable {
				cl.MinMemAvailable = avail
			}
			mu.Unlock()
			if i%10 == 0 && (r.cfg.large || what != "populate") {
				now, _ := sysmem.DiskStats(r.cfg.base)
				d := now.Sub(last)
				secs := time.Since(lastAt).Seconds()
				fmt.Printf("  [%s %s %d B: %.0fs] RSS %.0f MiB, MemAvailable %.0f MiB, device %.0f reads/s %.1f MB/s read, %.1f MB/s written\n",
					what, cl.Engine, cl.ValSize, time.Since(start).Seconds(), mib(cur), mib(avail),
					float64(d.ReadsCompleted)/secs, float64(d.ReadBytes())/1e6/secs, float64(d.WriteBytes())/1e6/secs)
				last, lastAt = now, time.Now()
			}
		}
	}()
	sc := bufio.NewScanner(pipe)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "RESULT ") {
			fmt.Println("  " + line)
		}
		buf.WriteString(line + "\n")
	}
	err = cmd.Wait()
	close(stop)
	wg.Wait()
	if derr == nil {
		if after, err := sysmem.DiskStats(r.cfg.base); err == nil {
			ph.dev = after.Sub(before)
		}
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			why := fmt.Sprintf("killed by %v", ws.Signal())
			if timedOut.Load() {
				why = fmt.Sprintf("stopped by the runner at the phase timeout (--phase-timeout %v)", r.cfg.phaseTimeout)
			}
			mu.Lock()
			ph.killed = fmt.Sprintf("%s after %.0f s (peak RSS seen %.0f MiB, MemAvailable low %.0f MiB)",
				why, time.Since(start).Seconds(), mib(hwm), mib(cl.MinMemAvailable))
			mu.Unlock()
			fmt.Println("  " + ph.killed)
		}
	}
	return buf.String(), ph, err
}

// tagged decodes the JSON after the last line starting with tag.
func tagged(out, tag string, v any) error {
	found := ""
	for _, line := range strings.Split(out, "\n") {
		if j, ok := strings.CutPrefix(line, tag+" "); ok {
			found = j
		}
	}
	if found == "" {
		return fmt.Errorf("no %s line in the output:\n%s", tag, tail(out))
	}
	return json.Unmarshal([]byte(found), v)
}

// benchMetrics parses "BenchmarkX-2  1  123 ns/op  4.5 unit ..." lines.
func benchMetrics(out string) map[string]float64 {
	m := map[string]float64{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		for i := 2; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				m[f[i+1]] = v
			}
		}
	}
	return m
}

func tail(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

// crossCheck compares the engines of one size and run: the same digest, and the
// same found count over the fixed read sequence.
func (r *runner) crossCheck(valsz, run int, group []*cell) {
	var ref *cell
	for _, cl := range group {
		if cl.Killed != "" {
			continue
		}
		if ref == nil {
			ref = cl
			continue
		}
		label := fmt.Sprintf("%d B run %d", valsz, run+1)
		if r.cfg.digest != "none" && (cl.DigestCount != ref.DigestCount || cl.DigestHash != ref.DigestHash) {
			r.failures = append(r.failures, fmt.Sprintf("%s: data differ: %s holds %d keys (digest %s), %s holds %d keys (digest %s)",
				label, ref.Engine, ref.DigestCount, ref.DigestHash, cl.Engine, cl.DigestCount, cl.DigestHash))
		}
		if cl.FoundPre != ref.FoundPre {
			r.failures = append(r.failures, fmt.Sprintf("%s: %s found %d of the first reads of the fixed sequence, %s found %d",
				label, ref.Engine, ref.FoundPre, cl.Engine, cl.FoundPre))
		}
		if !r.cfg.large && (cl.FreshFound != ref.FreshFound || cl.FreshReads != ref.FreshReads) {
			r.failures = append(r.failures, fmt.Sprintf("%s: unsettled reads: %s found %d of %d, %s found %d of %d",
				label, ref.Engine, ref.FreshFound, ref.FreshReads, cl.Engine, cl.FreshFound, cl.FreshReads))
		}
		if !r.cfg.large && (cl.Found != ref.Found || cl.Reads != ref.Reads) {
			r.failures = append(r.failures, fmt.Sprintf("%s: %s found %d of %d reads, %s found %d of %d",
				label, ref.Engine, ref.Found, ref.Reads, cl.Engine, cl.Found, cl.Reads))
		}
	}
	if ref != nil {
		r.checks = append(r.checks, fmt.Sprintf("%d B run %d: %d engines, %d keys each (digest %s, %s), %d of the first reads found by each",
			valsz, run+1, len(group), ref.DigestCount, ref.DigestHash, r.cfg.digest, ref.FoundPre))
	}
}
