package rss

import (
	"testing"
	"time"
)

func TestSamplerChargesAnAllocationMadeDuringThePhase(t *testing.T) {
	s := Start(10 * time.Millisecond)
	buf := make([]byte, 64<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	time.Sleep(50 * time.Millisecond)
	p := s.Stop()
	if p.Engine() < 60<<20 {
		t.Fatalf("64 MiB touched during the phase, charged %d bytes (%+v)", p.Engine(), p)
	}
	if p.PeakAnon < 60<<20 || p.Baseline <= 0 {
		t.Fatalf("readings look wrong: %+v", p)
	}
	if buf[4096] != 1 {
		t.Fatal("unreachable")
	}
	if MemAvailable() <= 0 {
		t.Fatal("MemAvailable unreadable")
	}
}
