package sysmem

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Hog is a running memhog process holding memory away from the engines.
type Hog struct {
	cmd       *exec.Cmd
	pid       int
	locked    int64
	available int64 // MemAvailable when StartHog ran
	leave     int64
	oomAdj    string

	done    chan struct{} // closed once the child is reaped
	waitErr error
	stderr  *tail

	stopOnce sync.Once
	stopErr  error
}

// StartHog starts memhogBinary (cmd/memhog) to take MemAvailable − leaveBytes
// and returns once the child has printed READY. If that figure is ≤ 0 it
// starts nothing, says so on stderr and returns a Hog that holds 0 bytes.
// The child exits by itself after maxDuration (≤ 0: 3 h) or when this
// process dies; its stderr is passed on to ours.
func StartHog(leaveBytes int64, maxDuration time.Duration, memhogBinary string) (*Hog, error) {
	if leaveBytes < 0 {
		return nil, fmt.Errorf("sysmem: StartHog: negative leaveBytes %d", leaveBytes)
	}
	_, avail, err := MemInfo()
	if err != nil {
		return nil, err
	}
	h := &Hog{available: avail, leave: leaveBytes, oomAdj: "unknown", done: make(chan struct{})}
	want := avail - leaveBytes
	if want <= 0 {
		close(h.done)
		fmt.Fprintf(os.Stderr, "sysmem: %s\n", h)
		return h, nil
	}
	if maxDuration <= 0 {
		maxDuration = 3 * time.Hour
	}
	secs := int64((maxDuration + time.Second - 1) / time.Second)

	ready := make(chan int64, 1)
	h.stderr = &tail{pass: os.Stderr}
	out := &readyWriter{ready: ready, other: &tail{}}
	h.cmd = exec.Command(memhogBinary, "--bytes", strconv.FormatInt(want, 10), "--max-seconds", strconv.FormatInt(secs, 10))
	h.cmd.Stdout = out
	h.cmd.Stderr = h.stderr
	h.cmd.WaitDelay = 5 * time.Second

	// PR_SET_PDEATHSIG fires when the thread that forked the child exits, not
	// the process, so the fork happens on a thread kept for as long as the
	// child lives: this goroutine stays locked to it until Wait returns.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := h.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		h.waitErr = h.cmd.Wait()
		close(h.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("sysmem: starting memhog %s: %w", memhogBinary, err)
	}
	h.pid = h.cmd.Process.Pid

	// Faulting in and locking ran at about 0.3 GB/s on this project's VM
	// (21 GiB took 70 s); allow 10 s per GiB for that and for reclaiming page
	// cache on the way.
	timeout := 30*time.Second + time.Duration(want>>30)*10*time.Second
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case n := <-ready:
		h.locked = n
	case <-h.done:
		return nil, fmt.Errorf("sysmem: memhog (pid %d) asked to take %d MiB exited before READY (%v); stderr: %s%s",
			h.pid, want>>20, h.waitErr, h.stderr.String(), out.other.String())
	case <-timer.C:
		h.cmd.Process.Signal(syscall.SIGKILL)
		<-h.done
		return nil, fmt.Errorf("sysmem: memhog (pid %d) asked to take %d MiB did not print READY within %v; killed; stderr: %s",
			h.pid, want>>20, timeout, h.stderr.String())
	}
	if data, err := os.ReadFile(procPath(h.pid, "oom_score_adj")); err == nil {
		h.oomAdj = strings.TrimSpace(string(data))
	}
	return h, nil
}

// Locked returns the bytes the hog holds (0 if it started nothing).
func (h *Hog) Locked() int64 { return h.locked }

// Pid returns the memhog process id (0 if it started nothing).
func (h *Hog) Pid() int { return h.pid }

// Alive reports whether the memhog process is still running; the runner
// checks it after each phase, since an OOM kill of the hog would silently
// hand its memory to the engine.
func (h *Hog) Alive() bool {
	select {
	case <-h.done:
		return false
	default:
		return true
	}
}

// String describes the hog in one line for the run's log.
func (h *Hog) String() string {
	if h.cmd == nil {
		return fmt.Sprintf("no memhog: MemAvailable %d MiB ≤ %d MiB to leave, nothing locked", h.available>>20, h.leave>>20)
	}
	return fmt.Sprintf("memhog pid %d holds %d MiB (MemAvailable was %d MiB, %d MiB left to the engines), oom_score_adj %s",
		h.pid, h.locked>>20, h.available>>20, h.leave>>20, h.oomAdj)
}

// Stop ends the child: SIGTERM, SIGKILL after 5 s, then waits for it. It
// returns an error if the child had already exited (the memory was not held
// for the whole run) or did not exit cleanly. Later calls return the same.
func (h *Hog) Stop() error {
	h.stopOnce.Do(func() { h.stopErr = h.stop() })
	return h.stopErr
}

func (h *Hog) stop() error {
	if h.cmd == nil {
		return nil
	}
	select {
	case <-h.done:
		return fmt.Errorf("sysmem: memhog (pid %d) had exited before Stop (%v); stderr: %s", h.pid, exitStatus(h.waitErr), h.stderr.String())
	default:
	}
	// Signal goes through the process handle, which cannot hit a reused pid.
	if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("sysmem: SIGTERM to memhog (pid %d): %w", h.pid, err)
	}
	select {
	case <-h.done:
		if h.waitErr != nil {
			return fmt.Errorf("sysmem: memhog (pid %d) after SIGTERM: %v", h.pid, h.waitErr)
		}
		return nil
	case <-time.After(5 * time.Second):
	}
	h.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-h.done:
		return fmt.Errorf("sysmem: memhog (pid %d) ignored SIGTERM for 5 s; killed", h.pid)
	case <-time.After(60 * time.Second):
		return fmt.Errorf("sysmem: memhog (pid %d) still running 60 s after SIGKILL", h.pid)
	}
}

func exitStatus(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// readyWriter takes the child's stdout and reports the first READY line.
type readyWriter struct {
	mu    sync.Mutex
	buf   []byte
	ready chan<- int64
	sent  bool
	other *tail // anything else, for error messages
}

func (w *readyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		line := string(w.buf[:i])
		w.buf = w.buf[i+1:]
		if rest, ok := strings.CutPrefix(line, "READY "); ok && !w.sent {
			if n, err := strconv.ParseInt(rest, 10, 64); err == nil && n >= 0 {
				w.sent = true
				w.ready <- n
				continue
			}
		}
		w.other.Write([]byte(line + "\n"))
	}
	return len(p), nil
}

// tail keeps the last 4 KiB written, passing everything on to pass if set.
type tail struct {
	mu   sync.Mutex
	pass *os.File
	buf  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pass != nil {
		t.pass.Write(p)
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > 4096 {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-4096:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}
