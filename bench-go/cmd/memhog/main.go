// Command memhog takes all memory but what the benchmark leaves to the
// engines, so that the "large regime" runs with data several times larger than
// the memory they may use.
//
//	memhog --bytes N [--max-seconds S] [--chunk-mib 256]
//
// It locks N bytes of anonymous memory (mlock, or plain touched pages when it
// may not raise RLIMIT_MEMLOCK), prints exactly one line "READY <bytes>" on
// stdout and then holds the memory until SIGTERM/SIGINT, until its parent
// dies, or until --max-seconds elapse, whichever comes first. Progress and
// errors go to stderr. It exits non-zero if it cannot get the memory.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// reserve is what memhog never takes of MemAvailable: a request that would
// leave less is a mistake, and with locked pages and oom_score_adj -1000 it
// would make the OOM killer take everything else on the machine.
const reserve = 64 << 20

func main() {
	// Set first so that no window exists in which the parent may die unseen;
	// ppid is read before so that a parent gone before the prctl is caught.
	ppid := os.Getppid()
	noPdeathsig := hasFlag(os.Args[1:], "no-pdeathsig")
	if !noPdeathsig {
		if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0); err != nil {
			fatalf("prctl(PR_SET_PDEATHSIG): %v", err)
		}
	}
	if os.Getppid() != ppid {
		fatalf("parent exited before memhog started")
	}

	fs := flag.NewFlagSet("memhog", flag.ContinueOnError)
	n := fs.Int64("bytes", -1, "bytes of memory to take (required)")
	maxSeconds := fs.Int64("max-seconds", 10800, "exit after this many seconds in any case")
	chunkMiB := fs.Int64("chunk-mib", 256, "map and lock memory in chunks of this many MiB")
	fs.Bool("no-pdeathsig", false, "skip PR_SET_PDEATHSIG, leaving the ppid poll alone (for tests of that guard)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if *n < 0 || *maxSeconds <= 0 || *chunkMiB <= 0 || fs.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: memhog --bytes N [--max-seconds S] [--chunk-mib 256]")
		os.Exit(2)
	}
	deadline := time.Now().Add(time.Duration(*maxSeconds) * time.Second)
	// Caught from here on, so that a stop right after READY, or while the
	// memory is being taken, ends memhog cleanly.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)

	avail, err := memAvailable()
	if err != nil {
		fatalf("%v", err)
	}
	if *n > avail-reserve {
		fatalf("refusing to take %d MiB: MemAvailable is %d MiB and %d MiB must stay free", *n>>20, avail>>20, reserve>>20)
	}

	raised := true
	inf := unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &inf); err != nil {
		// CAP_IPC_LOCK alone lifts the limit, so mlock may still work.
		raised = false
		logf("cannot raise RLIMIT_MEMLOCK (%v): trying mlock anyway", err)
	}

	got, err := take(*n, *chunkMiB<<20, raised, sig)
	if err != nil {
		fatalf("got %d MiB of %d MiB requested: %v", got>>20, *n>>20, err)
	}

	// Only now, so that an over-large request above gets memhog killed rather
	// than an engine; from here on the engine is the one to go.
	if err := os.WriteFile("/proc/self/oom_score_adj", []byte("-1000"), 0); err != nil {
		logf("cannot set oom_score_adj to -1000 (%v): as the largest process memhog is the OOM killer's first pick unless the engine raises its own oom_score_adj", err)
	}

	fmt.Printf("READY %d\n", got)
	os.Stdout.Sync()

	os.Exit(hold(ppid, deadline, sig))
}

// take maps n bytes in chunks and locks each one. If the first mlock fails
// and RLIMIT_MEMLOCK could not be raised, it falls back to touched, unlocked
// pages; a later failure is a real shortage.
func take(n, chunk int64, raised bool, sig <-chan os.Signal) (int64, error) {
	page := int64(os.Getpagesize())
	chunk = (chunk + page - 1) / page * page
	lock := true
	var got int64
	start := time.Now()
	lastLog := start
	for got < n {
		select {
		case s := <-sig:
			return got, fmt.Errorf("stopped by %v", s)
		default:
		}
		size := min(chunk, (n-got+page-1)/page*page)
		mem, err := unix.Mmap(-1, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
		if err != nil {
			return got, fmt.Errorf("mmap of %d MiB: %w", size>>20, err)
		}
		if lock {
			if err := unix.Mlock(mem); err != nil {
				if raised || got > 0 {
					unix.Munmap(mem)
					return got, fmt.Errorf("mlock of %d MiB: %w", size>>20, err)
				}
				// Without swap, touched anonymous pages cannot be reclaimed
				// either, so they hold the memory as well.
				lock = false
				note := "no swap is active, so the pages stay resident"
				if swapOn() {
					note = "WARNING: swap is active, so the kernel may swap these pages out"
				}
				logf("mlock refused (%v): holding touched, unlocked anonymous memory instead; %s", err, note)
			}
		}
		if !lock {
			// MAP_POPULATE already faults the pages in for writing; a write
			// per page makes sure no shared zero page stands in for them.
			for i := int64(0); i < size; i += page {
				mem[i] = 1
			}
		}
		got += size
		if time.Since(lastLog) >= time.Second || got >= n {
			lastLog = time.Now()
			how := "locked"
			if !lock {
				how = "touched"
			}
			logf("%d / %d MiB %s (%.1f s)", got>>20, n>>20, how, time.Since(start).Seconds())
		}
	}
	return got, nil
}

// hold sleeps until a stop signal, the parent's death or the deadline, and
// returns the exit code.
func hold(ppid int, deadline time.Time, sig <-chan os.Signal) int {
	// The second guard: PR_SET_PDEATHSIG follows the parent thread, and a
	// poll catches any parent death it would miss.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for {
		select {
		case s := <-sig:
			logf("%v: releasing memory", s)
			return 0
		case <-timer.C:
			logf("--max-seconds elapsed: releasing memory")
			return 0
		case <-tick.C:
			if os.Getppid() != ppid {
				logf("parent %d exited: releasing memory", ppid)
				return 1
			}
		}
	}
}

func memAvailable() (int64, error) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemAvailable:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/meminfo: %q: %w", sc.Text(), err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("/proc/meminfo has no MemAvailable line")
}

// swapOn reports whether /proc/swaps lists any swap area.
func swapOn() bool {
	data, err := os.ReadFile("/proc/swaps")
	if err != nil {
		return false
	}
	return len(strings.Split(strings.TrimSpace(string(data)), "\n")) > 1
}

// hasFlag reports whether the boolean flag name is set in args; it is read
// before flag parsing because the prctl must come first.
func hasFlag(args []string, name string) bool {
	for _, a := range args {
		switch a {
		case "-" + name, "--" + name, "-" + name + "=true", "--" + name + "=true":
			return true
		}
	}
	return false
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "memhog: "+format+"\n", args...)
}

func fatalf(format string, args ...any) {
	logf(format, args...)
	os.Exit(1)
}
