// Package rss measures a benchmark process's memory by phase: the resident set
// (VmRSS, split into anonymous and file-backed pages) sampled while the phase
// runs, and the kernel's own peak (VmHWM), less a baseline taken before the
// engine was opened so that the harness's buffers are not charged to it.
package rss

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"time"
)

// Status is one reading of /proc/self/status, in bytes.
type Status struct {
	RSS, Anon, File, HWM int64
}

// Read returns the current reading (zeros if /proc is unavailable).
func Read() Status {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return Status{}
	}
	return Status{
		RSS:  field(data, "VmRSS:"),
		Anon: field(data, "RssAnon:"),
		File: field(data, "RssFile:"),
		HWM:  field(data, "VmHWM:"),
	}
}

func field(data []byte, name string) int64 {
	i := bytes.Index(data, []byte(name))
	if i < 0 {
		return 0
	}
	rest := data[i+len(name):]
	if j := bytes.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	kb, err := strconv.ParseInt(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte("kB")))), 10, 64)
	if err != nil {
		return 0
	}
	return kb * 1024
}

// Phase is what Sampler.Stop reports: peaks over the phase and the baseline.
type Phase struct {
	Baseline int64 `json:"baseline"`  // VmRSS when the sampler started
	BaseAnon int64 `json:"base_anon"` // RssAnon when the sampler started
	PeakHWM  int64 `json:"peak_hwm"`  // VmHWM at the end (the kernel's peak, whole process)
	PeakRSS  int64 `json:"peak_rss"`  // largest sampled VmRSS
	PeakAnon int64 `json:"peak_anon"` // largest sampled RssAnon
	PeakFile int64 `json:"peak_file"` // largest sampled RssFile (mapped files, shared libraries)
}

// Engine is the peak charged to the engine: the process's peak less the baseline.
func (p Phase) Engine() int64 {
	peak := max(p.PeakHWM, p.PeakRSS)
	if peak < p.Baseline {
		return 0
	}
	return peak - p.Baseline
}

// EngineAnon is the engine's peak of anonymous memory (heap, memtables, caches;
// not its mapped files, which the page cache can take back).
func (p Phase) EngineAnon() int64 {
	return max(p.PeakAnon-p.BaseAnon, 0)
}

// Sampler samples Read every interval until Stop.
type Sampler struct {
	mu    sync.Mutex
	phase Phase
	gen   uint64 // bumped by Restart; guarded by mu
	stop  chan struct{}
	done  chan struct{}
}

// Start takes the baseline now and samples every interval.
func Start(interval time.Duration) *Sampler {
	s := &Sampler{stop: make(chan struct{}), done: make(chan struct{})}
	st := Read()
	s.phase.Baseline = st.RSS
	s.phase.BaseAnon = st.Anon
	s.observe(st)
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				gen := s.generation()
				s.observeIf(Read(), gen)
			}
		}
	}()
	return s
}

func (s *Sampler) generation() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

// observeIf merges a reading taken in generation gen, and drops it if Restart
// began a new phase while it was read: a reading from before the restart
// would charge the old peak to the new phase.
func (s *Sampler) observeIf(st Status, gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if gen != s.gen {
		return
	}
	s.merge(st)
}

func (s *Sampler) observe(st Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.merge(st)
}

// merge requires s.mu.
func (s *Sampler) merge(st Status) {
	s.phase.PeakRSS = max(s.phase.PeakRSS, st.RSS)
	s.phase.PeakAnon = max(s.phase.PeakAnon, st.Anon)
	s.phase.PeakFile = max(s.phase.PeakFile, st.File)
	s.phase.PeakHWM = max(s.phase.PeakHWM, st.HWM)
}

// Restart returns the phase so far and starts the peaks again from now,
// keeping the baselines: the peaks then cover what follows (a benchmark's
// measured work) and not what came before it (an engine settling its
// background work after open). The kernel's VmHWM is reset through
// /proc/self/clear_refs; where that is refused the old peak stays in
// PeakHWM, which only overstates.
func (s *Sampler) Restart() Phase {
	before := s.Current()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	st := Read()
	s.mu.Lock()
	s.gen++
	s.phase.PeakRSS, s.phase.PeakAnon, s.phase.PeakFile, s.phase.PeakHWM = st.RSS, st.Anon, st.File, st.HWM
	s.mu.Unlock()
	return before
}

// Current is the phase so far (for progress lines).
func (s *Sampler) Current() Phase {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.phase
}

// Stop ends sampling and returns the phase, with a last reading.
func (s *Sampler) Stop() Phase {
	close(s.stop)
	<-s.done
	s.observe(Read())
	return s.Current()
}

// MemAvailable is the system's MemAvailable in bytes (0 if unreadable).
func MemAvailable() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	return field(data, "MemAvailable:")
}
