package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cellsFor makes three runs of sett and of another engine at one size, sett
// faster by factor on every time.
func cellsFor(valsz int, other string, factor float64) []*cell {
	var cells []*cell
	for run := 1; run <= 3; run++ {
		jitter := 1 + 0.01*float64(run)
		for _, e := range []string{"sett", other} {
			f := 1.0
			if e != "sett" {
				f = factor
			}
			cells = append(cells, &cell{
				Engine: e, ValSize: valsz, Run: run, Keys: 1000, KeysMil: 0.001,
				PopSeconds: 1 * f * jitter, SettleSeconds: 0.5 * f * jitter, SettleIdle: true,
				FreshReadNs: 900 * f * jitter, ReadNs: 800 * f * jitter,
				IterKeysNs: 100 * f * jitter, IterValuesNs: 200 * f * jitter,
				SettledAllocated: 10 << 20, PopRSS: 50 << 20, ReadRSS: 40 << 20, IterKeysRSS: 30 << 20,
				PopAnon: 20 << 20, ReadAnon: 10 << 20, IterAnon: 10 << 20, MinMemAvailable: 1 << 62,
			})
		}
	}
	return cells
}

func writeReport(t *testing.T, dir string, cells []*cell) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "badger-bench.csv"), []byte(csvReport(cells)), 0o644); err != nil {
		t.Fatal(err)
	}
	md := "# badger-bench\n\nRun 2026-12-02 on vm, commit 0123456789ab, 1m elapsed.\n\n- Runs: 3 per cell, engine order rotated.\n"
	if err := os.WriteFile(filepath.Join(dir, "badger-bench.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The standing is rendered from a report's CSV by the report's own rule: what
// csvReport writes reads back into the same verdicts, with the commit and runs
// of the report's header.
func TestStandingRendersTheReportsVerdictsFromItsCSV(t *testing.T) {
	dir := t.TempDir()
	cells := append(cellsFor(128, "rocksdb", 2), cellsFor(1024, "rocksdb", 1.01)...)
	writeReport(t, dir, cells)
	got, err := standing(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "3 run(s) per cell, commit 0123456789ab") {
		t.Fatalf("no header line naming the report's runs and commit:\n%s", got)
	}
	if want := tabulate(cells, false).comparison; !strings.Contains(got, want) {
		t.Fatalf("the standing's table differs from the report's:\n%s\nwant:\n%s", got, want)
	}
	row128 := lineWith(got, "| 128 B | rocksdb |")
	if !strings.Contains(row128, "2.00x ahead") || strings.Contains(row128, "behind") {
		t.Fatalf("sett twice as fast with ranges apart must be ahead: %q", row128)
	}
	row1k := lineWith(got, "| 1024 B | rocksdb |")
	if !strings.Contains(row1k, "tie") || strings.Contains(row1k, "ahead") {
		t.Fatalf("overlapping ranges must be a tie: %q", row1k)
	}
	if !strings.Contains(row1k, "n/a (it reads values)") {
		t.Fatalf("keys-only against RocksDB at 1 KiB must have no verdict: %q", row1k)
	}
	if strings.Contains(row128, "n/a") {
		t.Fatalf("at 128 B every engine keeps values inline: a keys-only verdict is due: %q", row128)
	}
}

// README's block must be what the reports give, or the check fails.
func TestStandingCheckRefusesAReadmeThatDiffers(t *testing.T) {
	dir := t.TempDir()
	writeReport(t, dir, cellsFor(128, "badger", 2))
	block, err := standing(dir)
	if err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join(dir, "README.md")
	write := func(body string) {
		if err := os.WriteFile(readme, []byte("# x\n<!-- standing:begin -->\n"+body+"<!-- standing:end -->\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(block)
	if have, err := readmeBlock(readme); err != nil || have != block {
		t.Fatalf("the block read back differs: %v", err)
	}
	write(strings.Replace(block, "ahead", "behind", 1))
	if have, _ := readmeBlock(readme); have == block {
		t.Fatal("an edited block reads as the rendered one")
	}
	if err := os.WriteFile(readme, []byte("# no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readmeBlock(readme); err == nil {
		t.Fatal("a README without the markers passed")
	}
}

// A report of an older harness (no settle columns) is refused, not read as zeros.
func TestStandingRefusesACSVWithoutTheSettleColumns(t *testing.T) {
	dir := t.TempDir()
	old := "valsz,engine,run,keys,populate_s\n128,sett,1,1000,1.0\n"
	if err := os.WriteFile(filepath.Join(dir, "badger-bench.csv"), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := standing(dir); err == nil || !strings.Contains(err.Error(), "settle_s") {
		t.Fatalf("an old CSV: %v", err)
	}
}

func lineWith(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}
