package sysmem

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// DiskCounters are the /proc/diskstats counters of one block device (or
// partition). All but IOsInProgress only grow.
type DiskCounters struct {
	Device          string // name in /proc/diskstats, e.g. "vda" or "nvme0n1p2"
	Major, Minor    uint32
	ReadsCompleted  uint64
	SectorsRead     uint64 // 512-byte sectors, whatever the device's block size
	ReadMs          uint64
	WritesCompleted uint64
	SectorsWritten  uint64
	WriteMs         uint64
	IOsInProgress   uint64 // a gauge, not a counter
}

// Sub returns the counters' growth since prev. IOsInProgress, a gauge, keeps
// c's value; a counter that went backwards (device re-added) gives 0.
func (c DiskCounters) Sub(prev DiskCounters) DiskCounters {
	d := func(a, b uint64) uint64 {
		if a < b {
			return 0
		}
		return a - b
	}
	return DiskCounters{
		Device:          c.Device,
		Major:           c.Major,
		Minor:           c.Minor,
		ReadsCompleted:  d(c.ReadsCompleted, prev.ReadsCompleted),
		SectorsRead:     d(c.SectorsRead, prev.SectorsRead),
		ReadMs:          d(c.ReadMs, prev.ReadMs),
		WritesCompleted: d(c.WritesCompleted, prev.WritesCompleted),
		SectorsWritten:  d(c.SectorsWritten, prev.SectorsWritten),
		WriteMs:         d(c.WriteMs, prev.WriteMs),
		IOsInProgress:   c.IOsInProgress,
	}
}

// ReadBytes returns SectorsRead in bytes.
func (c DiskCounters) ReadBytes() int64 { return int64(c.SectorsRead) * 512 }

// WriteBytes returns SectorsWritten in bytes.
func (c DiskCounters) WriteBytes() int64 { return int64(c.SectorsWritten) * 512 }

// DiskStats returns the counters of the block device holding path: the
// device (or partition) whose major:minor is the file system's st_dev.
// File systems with no single block device under them (tmpfs, overlayfs,
// btrfs, NFS: anonymous major 0) and device-mapper devices are errors.
func DiskStats(path string) (DiskCounters, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return DiskCounters{}, fmt.Errorf("sysmem: stat %s: %w", path, err)
	}
	major, minor := unix.Major(st.Dev), unix.Minor(st.Dev)
	if major == 0 {
		return DiskCounters{}, fmt.Errorf("sysmem: %s is on device %d:%d, an anonymous device (tmpfs, overlayfs, btrfs, NFS…) with no block device counters", path, major, minor)
	}
	data, err := os.ReadFile("/proc/diskstats")
	if err != nil {
		return DiskCounters{}, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 14 || f[0] != strconv.FormatUint(uint64(major), 10) || f[1] != strconv.FormatUint(uint64(minor), 10) {
			continue
		}
		if strings.HasPrefix(f[2], "dm-") {
			return DiskCounters{}, fmt.Errorf("sysmem: %s is on device-mapper device %s (%d:%d), which is not supported: the disks under it are in /sys/block/%s/slaves", path, f[2], major, minor, f[2])
		}
		c := DiskCounters{Device: f[2], Major: major, Minor: minor}
		for i, p := range []*uint64{&c.ReadsCompleted, nil, &c.SectorsRead, &c.ReadMs, &c.WritesCompleted, nil, &c.SectorsWritten, &c.WriteMs, &c.IOsInProgress} {
			if p == nil {
				continue // merged requests
			}
			if *p, err = strconv.ParseUint(f[3+i], 10, 64); err != nil {
				return DiskCounters{}, fmt.Errorf("sysmem: /proc/diskstats line %q: %w", sc.Text(), err)
			}
		}
		return c, nil
	}
	return DiskCounters{}, fmt.Errorf("sysmem: %s is on device %d:%d, which /proc/diskstats does not list", path, major, minor)
}

// FreeBytes returns the bytes of the file system holding path that an
// unprivileged user may still allocate (statfs f_bavail): root may use the
// reserved blocks on top of it, so this is the conservative figure.
func FreeBytes(path string) (int64, error) {
	var s unix.Statfs_t
	if err := unix.Statfs(path, &s); err != nil {
		return 0, fmt.Errorf("sysmem: statfs %s: %w", path, err)
	}
	return int64(s.Bavail) * s.Bsize, nil
}
