package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// In the parent-death test this test binary is re-run as the intermediate
// parent: it starts memhog, passes on its READY line and pid, and waits to
// be killed (or gives up after 30 s).
const intermediateEnv = "MEMHOG_TEST_INTERMEDIATE"

func TestMain(m *testing.M) {
	if args := os.Getenv(intermediateEnv); args != "" {
		os.Exit(intermediate(strings.Split(args, "\x1f")))
	}
	os.Exit(m.Run())
}

func intermediate(args []string) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	fmt.Printf("PID %d %s", cmd.Process.Pid, line)
	time.Sleep(30 * time.Second)
	return 0
}

// build compiles memhog into a temporary directory.
func build(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "memhog")
	if out, err := exec.Command(goBin, "build", "-o", bin, "settbench/cmd/memhog").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// state returns pid's state letter from /proc, or "" if it is gone.
func state(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// exitedWithin waits up to d for pid to be gone or a zombie.
func exitedWithin(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if s := state(pid); s == "" || s == "Z" || s == "X" {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// killIfOurs kills pid if it is still the memhog built at bin, so that a
// failing test leaves nothing behind and never hits a reused pid.
func killIfOurs(pid int, bin string) {
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err == nil && exe == bin {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// stderrFile gives a child a file for stderr: unlike a buffer it can be read
// while the child runs, and Wait does not wait for grandchildren holding it.
func stderrFile(t *testing.T) (*os.File, func() string) {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, func() string {
		data, _ := os.ReadFile(f.Name())
		return string(data)
	}
}

func statusKB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field+":" {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			return v
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

func TestReadyLineAfterTakingTheMemoryAndCleanExitOnSIGTERM(t *testing.T) {
	bin := build(t)
	const n = 64 << 20
	cmd := exec.Command(bin, "--bytes", strconv.Itoa(n), "--max-seconds", "60", "--chunk-mib", "16")
	var stderr func() string
	cmd.Stderr, stderr = stderrFile(t)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	defer killIfOurs(pid, bin)
	r := bufio.NewReader(out)
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading READY: %v; stderr: %s", err, stderr())
	}
	if line != fmt.Sprintf("READY %d\n", n) {
		t.Errorf("first line %q, want %q", line, fmt.Sprintf("READY %d\n", n))
	}
	held := statusKB(t, pid, "VmLck")
	if !strings.Contains(stderr(), "mlock refused") && held < n>>10 {
		t.Errorf("VmLck %d kB after READY, want at least %d kB", held, n>>10)
	}
	if rss := statusKB(t, pid, "VmRSS"); rss < n>>10 {
		t.Errorf("VmRSS %d kB after READY, want at least %d kB", rss, n>>10)
	}
	adj, err := os.ReadFile(fmt.Sprintf("/proc/%d/oom_score_adj", pid))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(adj)) != "-1000" && !strings.Contains(stderr(), "cannot set oom_score_adj") {
		t.Errorf("oom_score_adj %s and no warning on stderr", adj)
	}
	t.Logf("VmLck %d kB, oom_score_adj %s", held, strings.TrimSpace(string(adj)))

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		s, _ := r.ReadString(0) // up to EOF, which the exit brings
		rest <- s
		done <- cmd.Wait()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v; stderr: %s", err, stderr())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("memhog still running 5 s after SIGTERM")
	}
	if s := <-rest; s != "" {
		t.Errorf("more on stdout after READY: %q", s)
	}
}

func TestExitsWhenItsParentDies(t *testing.T) {
	bin := build(t)
	for _, tc := range []struct {
		name   string
		flags  []string
		within time.Duration
	}{
		{"pdeathsig", nil, 2 * time.Second},
		{"ppid-poll", []string{"--no-pdeathsig"}, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{bin, "--bytes", strconv.Itoa(16 << 20), "--max-seconds", "60"}, tc.flags...)
			parent := exec.Command(os.Args[0])
			parent.Env = append(os.Environ(), intermediateEnv+"="+strings.Join(args, "\x1f"))
			var stderr func() string
			parent.Stderr, stderr = stderrFile(t)
			out, err := parent.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := parent.Start(); err != nil {
				t.Fatal(err)
			}
			defer parent.Process.Kill()
			line, err := bufio.NewReader(out).ReadString('\n')
			f := strings.Fields(line)
			if err != nil || len(f) != 4 || f[0] != "PID" || f[2] != "READY" {
				t.Fatalf("intermediate said %q (%v); stderr: %s", line, err, stderr())
			}
			pid, _ := strconv.Atoi(f[1])
			defer killIfOurs(pid, bin)
			if s := state(pid); s == "" || s == "Z" {
				t.Fatalf("memhog pid %d not running before its parent died", pid)
			}

			if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			parent.Wait()
			start := time.Now()
			if !exitedWithin(pid, tc.within) {
				t.Fatalf("memhog pid %d still running %v after its parent was killed; stderr: %s", pid, tc.within, stderr())
			}
			t.Logf("memhog gone %v after its parent", time.Since(start).Round(time.Millisecond))
		})
	}
}

func TestExitsAfterMaxSeconds(t *testing.T) {
	bin := build(t)
	cmd := exec.Command(bin, "--bytes", strconv.Itoa(16<<20), "--max-seconds", "1")
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer killIfOurs(cmd.Process.Pid, bin)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		d := time.Since(start)
		if err != nil || d < time.Second {
			t.Errorf("exit %v after %v, want a clean exit after 1 s", err, d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("memhog --max-seconds 1 still running after 5 s")
	}
}

func TestRefusesToTakeMoreThanIsAvailable(t *testing.T) {
	bin := build(t)
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	var totalKB int64
	fmt.Sscanf(string(data), "MemTotal: %d kB", &totalKB)
	if totalKB <= 0 {
		t.Fatalf("no MemTotal in %q", data[:min(len(data), 80)])
	}
	cmd := exec.Command(bin, "--bytes", strconv.FormatInt(2*totalKB<<10, 10), "--max-seconds", "10")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("exit %v, want exit status 1", err)
	}
	if stdout.Len() != 0 || !strings.Contains(stderr.String(), "refusing") {
		t.Errorf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("refusal took %v", d)
	}
}

func TestUsageErrors(t *testing.T) {
	bin := build(t)
	for _, args := range [][]string{{}, {"--bytes", "-5"}, {"--bytes", "1", "--chunk-mib", "0"}, {"--bytes", "x"}} {
		err := exec.Command(bin, args...).Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Errorf("memhog %v: %v, want exit status 2", args, err)
		}
	}
}
