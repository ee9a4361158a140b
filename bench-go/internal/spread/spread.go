// Package spread is the median and range of one figure over the runs of a
// benchmark cell, and the verdict every report gives with it: ahead or behind
// only where the ranges do not overlap, a tie otherwise.
package spread

import (
	"fmt"
	"sort"
)

// Spread is the median and range of one figure over the runs of a cell.
type Spread struct {
	Med, Lo, Hi float64
	// N is how many runs had the figure; Want how many runs the cell had.
	N, Want int
}

// Of leaves out zeros (a phase that did not run has none) and keeps how many
// runs there were, so that a median over fewer runs says so.
func Of(vals []float64) Spread {
	var v []float64
	for _, x := range vals {
		if x > 0 {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return Spread{Want: len(vals)}
	}
	sort.Float64s(v)
	med := v[len(v)/2]
	if len(v)%2 == 0 {
		med = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return Spread{Med: med, Lo: v[0], Hi: v[len(v)-1], N: len(v), Want: len(vals)}
}

func (s Spread) String() string {
	return s.Format(func(x float64) string { return fmt.Sprintf("%.0f", x) })
}

// Format writes "median [low–high]", the median alone for one run or no
// spread, "—" for none, and says when fewer runs than the cell's had it.
func (s Spread) Format(f func(float64) string) string {
	if s.N == 0 {
		return "—"
	}
	short := ""
	if s.N < s.Want {
		short = fmt.Sprintf(" (%d of %d runs)", s.N, s.Want)
	}
	if s.N == 1 || s.Lo == s.Hi {
		return f(s.Med) + short
	}
	return fmt.Sprintf("%s [%s–%s]%s", f(s.Med), f(s.Lo), f(s.Hi), short)
}

// Verdict compares s with o: "ahead" or "behind" only where the ranges do
// not overlap, "tie" otherwise; a single run needs a 25% margin, and a
// figure missing on either side gives "—".
func Verdict(s, o Spread, lowerBetter bool) string {
	if s.N == 0 || o.N == 0 {
		return "—"
	}
	better := func(a, b float64) bool { // a strictly better than b
		if lowerBetter {
			return a < b
		}
		return a > b
	}
	if s.N < 2 || o.N < 2 {
		r := s.Med / o.Med
		if !lowerBetter {
			r = o.Med / s.Med
		}
		switch {
		case r <= 1/1.25:
			return "ahead"
		case r >= 1.25:
			return "behind"
		}
		return "tie"
	}
	sWorst, oBest := s.Hi, o.Lo
	sBest, oWorst := s.Lo, o.Hi
	if !lowerBetter {
		sWorst, oBest, sBest, oWorst = s.Lo, o.Hi, s.Hi, o.Lo
	}
	switch {
	case better(sWorst, oBest):
		return "ahead"
	case better(oWorst, sBest):
		return "behind"
	}
	return "tie"
}
