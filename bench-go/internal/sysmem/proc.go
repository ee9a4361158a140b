// Package sysmem holds what the benchmark runner needs for the large regime,
// where data is several times larger than the memory left to the engines:
// reading memory figures, taking memory away with the memhog helper, evicting
// an engine's own files from the page cache, reading the block device's
// counters and probing the device's limits with direct I/O. Linux only.
package sysmem

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// MemInfo returns MemTotal and MemAvailable from /proc/meminfo, in bytes.
func MemInfo() (total, available int64, err error) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, 0, err
	}
	total, err = kbField(data, "MemTotal:")
	if err != nil {
		return 0, 0, fmt.Errorf("/proc/meminfo: %w", err)
	}
	available, err = kbField(data, "MemAvailable:")
	if err != nil {
		return 0, 0, fmt.Errorf("/proc/meminfo: %w", err)
	}
	return total, available, nil
}

// RSS returns VmRSS of pid (0 = this process), in bytes.
func RSS(pid int) (int64, error) { return statusField(pid, "VmRSS:") }

// PeakRSS returns VmHWM, the peak resident set, of pid (0 = this process), in bytes.
func PeakRSS(pid int) (int64, error) { return statusField(pid, "VmHWM:") }

// OOMScoreAdj returns /proc/<pid>/oom_score_adj (pid 0 = this process).
func OOMScoreAdj(pid int) (int, error) {
	data, err := os.ReadFile(procPath(pid, "oom_score_adj"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

// SetOOMScoreAdj writes /proc/<pid>/oom_score_adj (pid 0 = this process).
// Raising it needs no privilege, so an engine's process can make itself the
// OOM killer's first pick when memhog could not lower its own (lowering needs
// CAP_SYS_RESOURCE).
func SetOOMScoreAdj(pid, adj int) error {
	return os.WriteFile(procPath(pid, "oom_score_adj"), []byte(strconv.Itoa(adj)), 0)
}

func procPath(pid int, name string) string {
	if pid == 0 {
		return "/proc/self/" + name
	}
	return fmt.Sprintf("/proc/%d/%s", pid, name)
}

func statusField(pid int, name string) (int64, error) {
	path := procPath(pid, "status")
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := kbField(data, name)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// kbField parses a "Name:   123 kB" line into bytes.
func kbField(data []byte, name string) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[0] != name {
			continue
		}
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || len(f) != 3 || f[2] != "kB" {
			return 0, fmt.Errorf("unexpected line %q", sc.Text())
		}
		return v << 10, nil
	}
	return 0, fmt.Errorf("no %s line", strings.TrimSuffix(name, ":"))
}
