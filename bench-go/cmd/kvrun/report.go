package main

import (
	"fmt"
	"strconv"
	"strings"

	"settbench/internal/spread"
	"settbench/stores"
)

// runsSentence says how the report's figures were made.
func runsSentence(runs int, dur string) string {
	if runs == 1 {
		return fmt.Sprintf("one %s run per cell: differences of a few percent are ties", dur)
	}
	return fmt.Sprintf("%d runs of %s per cell, the stores in turn within each run; every figure is the median [min–max] of the runs, "+
		"and sett is ahead or behind another store only where their ranges do not overlap", runs, dur)
}

// cell is one store at one fsync setting: its rows, one per run.
type cell struct {
	store, fsync string
	rows         []map[string]string
}

func (c *cell) spread(col string) spread.Spread {
	vals := make([]float64, len(c.rows))
	for i, r := range c.rows {
		vals[i] = f(r, col)
	}
	return spread.Of(vals)
}

// cells are the CSV's rows grouped by store and fsync, in the order the
// stores first ran.
type cells []*cell

func group(rows []map[string]string) cells {
	var out cells
	for _, r := range rows {
		var c *cell
		for _, o := range out {
			if o.store == r["store"] && o.fsync == r["fsync"] {
				c = o
			}
		}
		if c == nil {
			c = &cell{store: r["store"], fsync: r["fsync"]}
			out = append(out, c)
		}
		c.rows = append(c.rows, r)
	}
	return out
}

func (cs cells) at(fsync string) []*cell {
	var out []*cell
	for _, c := range cs {
		if c.fsync == fsync {
			out = append(out, c)
		}
	}
	return out
}

// medians are one row per store with the median of every metric, what the
// index ranking is computed from. A store without a figure (the in-memory
// baselines' disk) has 0 there.
func (cs cells) medians(fsync string) []map[string]string {
	var out []map[string]string
	for _, c := range cs.at(fsync) {
		m := map[string]string{"store": c.store}
		for _, mt := range metrics {
			m[mt.col] = strconv.FormatFloat(c.spread(mt.col).Med, 'f', -1, 64)
		}
		out = append(out, m)
	}
	return out
}

// ops formats operations per second to three significant figures or so.
func ops(x float64) string {
	switch {
	case x >= 1e5:
		return fmt.Sprintf("%.0fk", x/1e3)
	case x >= 1e4:
		return fmt.Sprintf("%.1fk", x/1e3)
	case x >= 1e3:
		return fmt.Sprintf("%.2fk", x/1e3)
	}
	return fmt.Sprintf("%.0f", x)
}

// formatOf is how each metric's figures are written.
func formatOf(col string) func(float64) string {
	switch col {
	case "batchwrite_s":
		return func(x float64) string { return fmt.Sprintf("%.3f", x) }
	case "mem_bytes", "disk_allocated", "disk_apparent":
		return func(x float64) string { return fmt.Sprintf("%.1f", x/(1<<20)) }
	}
	return ops
}

// table is the throughput table of one fsync setting: medians [min–max].
func table(cs cells, fsync string) string {
	var b strings.Builder
	b.WriteString("| store | BatchWrite s | MemUsage MiB | DiskUsage MiB (apparent / allocated) | Prefix op/s | Set op/s | Get op/s | Setmixed op/s | Getmixed op/s | Del op/s |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, c := range cs.at(fsync) {
		disk := "—"
		if a, l := c.spread("disk_apparent"), c.spread("disk_allocated"); a.N > 0 || l.N > 0 {
			disk = formatOf("disk_apparent")(a.Med) + " / " + formatOf("disk_allocated")(l.Med)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |", c.store, c.spread("batchwrite_s").Format(formatOf("batchwrite_s")),
			c.spread("mem_bytes").Format(formatOf("mem_bytes")), disk)
		for _, col := range []string{"prefix_ops", "set_ops", "get_ops", "setmixed_ops", "getmixed_ops", "del_ops"} {
			fmt.Fprintf(&b, " %s |", c.spread(col).Format(ops))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// standing is, per column, sett against the best other persistent store (by
// median): ahead, a tie, or behind by spread.Verdict.
func standing(cs cells, fsync string) string {
	var sett *cell
	for _, c := range cs.at(fsync) {
		if c.store == "sett" {
			sett = c
		}
	}
	if sett == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("sett against the best other persistent store in each column (by median; ahead or behind only where the ranges do not overlap):\n\n")
	b.WriteString("| column | sett | best other | its figure | sett is |\n|---|---:|---|---:|---|\n")
	for _, m := range metrics {
		var best *cell
		for _, c := range cs.at(fsync) {
			if c == sett || !stores.Persistent(c.store) || c.spread(m.col).N == 0 {
				continue
			}
			if best == nil || better(c.spread(m.col).Med, best.spread(m.col).Med, m.higher) {
				best = c
			}
		}
		if best == nil {
			continue
		}
		s, o := sett.spread(m.col), best.spread(m.col)
		word := map[string]string{"ahead": "first", "tie": "tied for first", "behind": "behind", "—": "—"}[spread.Verdict(s, o, !m.higher)]
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", m.name, s.Format(formatOf(m.col)), best.store, o.Format(formatOf(m.col)), word)
	}
	return b.String()
}

func better(a, b float64, higher bool) bool {
	if higher {
		return a > b
	}
	return a < b
}

// redisResult is one redis-benchmark run at one pipeline depth: SET req/s,
// p50 ms, p99 ms, then the same for GET.
type redisResult struct {
	pipeline int
	figures  [6]float64
}

// redisRows are a store's rows of the redis-benchmark table: per pipeline
// depth, the median [min–max] of the requests per second over the runs and
// the median of each latency.
func redisRows(store string, runs [][]redisResult) string {
	var b strings.Builder
	if len(runs) == 0 {
		return ""
	}
	for i, first := range runs[0] {
		fmt.Fprintf(&b, "| %s | %d |", store, first.pipeline)
		for k := range first.figures {
			vals := make([]float64, 0, len(runs))
			for _, r := range runs {
				if i < len(r) {
					vals = append(vals, r[i].figures[k])
				}
			}
			s := spread.Of(vals)
			if k%3 == 0 {
				b.WriteString(" " + s.Format(func(x float64) string { return fmt.Sprintf("%.0f", x) }) + " |")
			} else {
				b.WriteString(" " + fmt.Sprintf("%.3f", s.Med) + " |")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
