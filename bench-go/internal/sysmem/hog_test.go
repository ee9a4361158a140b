package sysmem

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	memhogOnce sync.Once
	memhogDir  string
	memhogPath string
	memhogErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if memhogDir != "" {
		os.RemoveAll(memhogDir)
	}
	os.Exit(code)
}

// memhog builds cmd/memhog once for the tests of this package.
func memhog(t *testing.T) string {
	t.Helper()
	memhogOnce.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			memhogErr = err
			return
		}
		if memhogDir, err = os.MkdirTemp("", "sysmem-memhog-"); err != nil {
			memhogErr = err
			return
		}
		memhogPath = filepath.Join(memhogDir, "memhog")
		out, err := exec.Command(goBin, "build", "-o", memhogPath, "settbench/cmd/memhog").CombinedOutput()
		if err != nil {
			memhogErr = &buildError{err, string(out)}
		}
	})
	if memhogErr != nil {
		t.Fatalf("building memhog: %v", memhogErr)
	}
	return memhogPath
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

// exited reports whether pid is gone or a zombie.
func exited(pid int) bool {
	data, err := os.ReadFile(procPath(pid, "stat"))
	if err != nil {
		return true
	}
	s := string(data)
	rest := s[strings.LastIndexByte(s, ')')+1:]
	f := strings.Fields(rest)
	return len(f) == 0 || f[0] == "Z" || f[0] == "X"
}

// pcpBytes sums the free pages held on per-CPU lists (/proc/zoneinfo
// "count:" under pagesets).
func pcpBytes(t *testing.T) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/zoneinfo")
	if err != nil {
		t.Fatal(err)
	}
	var pages int64
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "count:" {
			n, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatalf("/proc/zoneinfo: %q", line)
			}
			pages += n
		}
	}
	return pages * int64(os.Getpagesize())
}

func TestHogLowersMemAvailableAndStopGivesItBack(t *testing.T) {
	bin := memhog(t)
	// Other processes move MemAvailable by up to a few hundred MiB while the hog
	// starts (a cargo or go build beside the test), hence 1 GiB and 400 MiB slack:
	// a hog that held nothing still fails by far.
	const target, slack = 1 << 30, 400 << 20
	pcpBefore := pcpBytes(t)
	_, before, err := MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	if before < 2*target {
		t.Skipf("only %d MiB available", before>>20)
	}
	h, err := StartHog(before-target, time.Minute, bin)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Stop()
	t.Log(h)
	if h.Locked() < target-slack || h.Locked() > target+slack {
		t.Errorf("Locked() = %d MiB, want about %d MiB", h.Locked()>>20, target>>20)
	}
	if !h.Alive() || h.Pid() == 0 {
		t.Fatalf("Alive() = %v, Pid() = %d right after StartHog", h.Alive(), h.Pid())
	}
	rss, err := RSS(h.Pid())
	if err != nil {
		t.Fatal(err)
	}
	if rss < h.Locked() {
		t.Errorf("memhog VmRSS %d MiB < %d MiB it says it holds", rss>>20, h.Locked()>>20)
	}
	_, during, err := MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	pcpDuring := pcpBytes(t)
	// Free pages parked on per-CPU lists are not in MemFree, and the hog's
	// first pages come from them, so they are counted as free on both sides.
	drop := before - during
	freeDrop := before + pcpBefore - during - pcpDuring
	t.Logf("MemAvailable fell by %d MiB for %d MiB held (%.3f per MiB); counting per-CPU free lists (%d MiB before, %d MiB during) it fell by %d MiB (%.3f per MiB)",
		drop>>20, h.Locked()>>20, float64(drop)/float64(h.Locked()), pcpBefore>>20, pcpDuring>>20, freeDrop>>20, float64(freeDrop)/float64(h.Locked()))
	if freeDrop < h.Locked()-slack {
		t.Errorf("MemAvailable (with per-CPU free lists) fell by only %d MiB while the hog held %d MiB", freeDrop>>20, h.Locked()>>20)
	}

	pid := h.Pid()
	if err := h.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := h.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if h.Alive() {
		t.Error("Alive() after Stop")
	}
	if !exited(pid) {
		t.Errorf("memhog pid %d still running after Stop", pid)
	}
	// Other processes move MemAvailable too, so allow it a moment to settle;
	// freed pages land on the per-CPU lists first.
	var after, pcpAfter int64
	for range 30 {
		pcpAfter = pcpBytes(t)
		if _, after, err = MemInfo(); err != nil {
			t.Fatal(err)
		}
		if diff := after + pcpAfter - before - pcpBefore; diff > -slack && diff < slack {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("MemAvailable: %d MiB before, %d MiB during, %d MiB after (per-CPU free lists %d, %d, %d MiB)",
		before>>20, during>>20, after>>20, pcpBefore>>20, pcpDuring>>20, pcpAfter>>20)
	if diff := after + pcpAfter - before - pcpBefore; diff <= -slack || diff >= slack {
		t.Errorf("MemAvailable (with per-CPU free lists) %d MiB after Stop, want within 400 MiB of %d MiB", (after+pcpAfter)>>20, (before+pcpBefore)>>20)
	}
}

func TestHogLocksNothingWhenLeaveExceedsAvailable(t *testing.T) {
	total, _, err := MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	// A binary that does not exist proves nothing is started.
	h, err := StartHog(2*total, time.Minute, "/nonexistent/memhog")
	if err != nil {
		t.Fatal(err)
	}
	if h.Locked() != 0 || h.Pid() != 0 || h.Alive() {
		t.Errorf("Locked() = %d, Pid() = %d, Alive() = %v; want 0, 0, false", h.Locked(), h.Pid(), h.Alive())
	}
	if !strings.Contains(h.String(), "nothing locked") {
		t.Errorf("String() = %q does not say nothing is locked", h.String())
	}
	if err := h.Stop(); err != nil {
		t.Errorf("Stop: %v", err)
	}
}

func TestStartHogReportsAChildThatDiesBeforeReady(t *testing.T) {
	script := filepath.Join(t.TempDir(), "failing-hog")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho 'memhog: cannot have it' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, avail, err := MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	h, err := StartHog(avail-(16<<20), time.Minute, script)
	if err == nil {
		h.Stop()
		t.Fatal("StartHog succeeded with a child that exits at once")
	}
	t.Log(err)
	for _, want := range []string{"exited before READY", "exit status 3", "cannot have it"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("StartHog took %v to notice", d)
	}
}

func TestHogStopReportsAHogThatDiedEarly(t *testing.T) {
	bin := memhog(t)
	_, avail, err := MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	// --max-seconds 1: the hog leaves by itself before Stop.
	h, err := StartHog(avail-(16<<20), time.Second, bin)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for h.Alive() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if h.Alive() {
		h.Stop()
		t.Fatal("hog with maxDuration 1 s still alive after 5 s")
	}
	if err := h.Stop(); err == nil || !strings.Contains(err.Error(), "had exited before Stop") {
		t.Errorf("Stop of a hog that already left = %v, want an error saying so", err)
	}
}

func TestHogStopKillsAChildThatIgnoresSIGTERM(t *testing.T) {
	// exec keeps the ignored SIGTERM and leaves no grandchild holding stdout.
	script := filepath.Join(t.TempDir(), "stubborn-hog")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntrap '' TERM\necho READY 4096\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, avail, err := MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	h, err := StartHog(avail-(16<<20), time.Minute, script)
	if err != nil {
		t.Fatal(err)
	}
	if h.Locked() != 4096 {
		t.Errorf("Locked() = %d, want the 4096 of the READY line", h.Locked())
	}
	start := time.Now()
	err = h.Stop()
	d := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "ignored SIGTERM") {
		t.Errorf("Stop = %v, want an error saying SIGTERM was ignored", err)
	}
	if d < 5*time.Second || d > 7*time.Second {
		t.Errorf("Stop took %v, want SIGKILL 5 s after SIGTERM", d)
	}
	if h.Alive() || !exited(h.Pid()) {
		t.Errorf("child pid %d still running after Stop", h.Pid())
	}
}
