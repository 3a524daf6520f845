package main

import (
	"math"
	"strings"
	"testing"

	"github.com/taintevict/taintevict/bench/outage"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []float64
		want float64
	}{
		{"empty", nil, 0},
		{"odd", []float64{5, 1, 3}, 3},
		{"even", []float64{4, 1, 3, 2}, 2.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := median(tc.in); got != tc.want {
				t.Errorf("median(%v): got %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

// TestSummarizeRatios checks that a ratio is the median of the per-run ratios, not the
// ratio of the medians.
func TestSummarizeRatios(t *testing.T) {
	var all []sample
	for run, secs := range [][2]float64{{10, 1}, {20, 4}, {40, 2}} {
		all = append(all,
			sample{run, outage.Result{Impl: "kube", Pods: 100, Seconds: secs[0]}},
			sample{run, outage.Result{Impl: "taintevict", Pods: 100, Seconds: secs[1]}})
	}
	c := summarize(all, []int{100}).cells[100][0]
	if c.kube != 20 || c.te != 2 || c.ratio != 0.1 {
		t.Errorf("got kube %v, taintevict %v, ratio %v; want 20, 2, 0.1", c.kube, c.te, c.ratio)
	}
}

func TestLogScale(t *testing.T) {
	if got := logScale(100, 10, 1000, 0, 200); math.Abs(got-100) > 1e-9 {
		t.Errorf("logScale(100) on [10, 1000] -> [0, 200]: got %v, want 100", got)
	}
	for _, tc := range []struct{ lo, hi, wantLo, wantHi float64 }{
		{1000, 150000, 1000, 200000},
		{0.013, 16, 0.01, 20},
		{3, 40, 2, 50},
		{0.6, 0.9, 0.5, 1},
	} {
		if lo, hi := decades(tc.lo, tc.hi); lo != tc.wantLo || hi != tc.wantHi {
			t.Errorf("decades(%v, %v): got %v, %v, want %v, %v", tc.lo, tc.hi, lo, hi, tc.wantLo, tc.wantHi)
		}
	}
}

func TestWriteSVG(t *testing.T) {
	p := Plot{Title: "t", XLabel: "x", YLabel: "y", Series: []Series{
		{Name: "a", Color: "red", Points: [][2]float64{{1000, 0.1}, {150000, 20}}},
		{Name: "b<c", Color: "blue", Points: [][2]float64{{1000, 0.01}, {150000, 2}}},
	}}
	var b strings.Builder
	if err := p.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	for _, want := range []string{"<svg", "</svg>", "b&lt;c", ">1k<", ">200k<", ">0.01<", ">20<"} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	if got := strings.Count(svg, "<polyline"); got != 2 {
		t.Errorf("polylines: got %d, want 2", got)
	}
	if err := (Plot{Series: []Series{{Points: [][2]float64{{0, 1}}}}}).WriteSVG(&b); err == nil {
		t.Error("WriteSVG with x = 0: got no error, want one")
	}
}
