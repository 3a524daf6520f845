package main

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/taintevict/taintevict/bench/apparatus"
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

// TestSummarizeFloor checks the floor's figures: its median, and the medians of the
// per-run ratios kube/floor and taintevict/floor, and that the Markdown shows them in a
// second table only when the floor was measured.
func TestSummarizeFloor(t *testing.T) {
	var all []sample
	for run, secs := range [][3]float64{{10, 2, 1}, {20, 4, 2}, {30, 3, 0.5}} {
		all = append(all,
			sample{run, outage.Result{Impl: "kube", Pods: 100, Seconds: secs[0]}},
			sample{run, outage.Result{Impl: "taintevict", Pods: 100, Seconds: secs[1]}},
			sample{run, outage.Result{Impl: "floor", Pods: 100, Seconds: secs[2], Requests: apparatus.Counts{Events: 40}}})
	}
	tab := summarize(all, []int{100})
	// kube/floor per run: 10, 10, 60; taintevict/floor: 2, 2, 6; floor: 1, 2, 0.5.
	if got, want := tab.floor[100][0], (floorCell{floor: 1, kubeOver: 10, teOver: 2}); got != want {
		t.Errorf("floor cell: got %+v, want %+v", got, want)
	}
	if got, want := tab.cells[100][0], (cell{kube: 20, te: 3, ratio: 0.2}); got != want {
		t.Errorf("kube/taintevict cell: got %+v, want %+v", got, want)
	}
	md := tab.markdown()
	for _, want := range []string{
		"| floor | kube/floor | taintevict/floor |",
		"| 100 | time to evict every untolerating pod (s) | 1.000 | 10 | 2 |",
		"| 100 | Events written when the outage settled | 40 | 0 | 0 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	if got := strings.Count(md, "Events written"); got != 1 {
		t.Errorf("rows of Events written: got %d, want 1, in the floor's table only:\n%s", got, md)
	}

	withoutFloor := slices.DeleteFunc(all, func(s sample) bool { return s.res.Impl == "floor" })
	tab = summarize(withoutFloor, []int{100})
	if tab.floor != nil || strings.Contains(tab.markdown(), "floor") {
		t.Errorf("without the floor: got a floor table:\n%s", tab.markdown())
	}
}

func TestParseImpls(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{"kube,taintevict", []string{"kube", "taintevict"}, false},
		{"kube, taintevict, floor", []string{"kube", "taintevict", "floor"}, false},
		{"floor,taintevict,kube", []string{"floor", "taintevict", "kube"}, false},
		{"kube,floor", nil, true},
		{"kube,taintevict,kube", nil, true},
		{"kube,taintevict,nope", nil, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseImpls(tc.in)
			if (err != nil) != tc.wantErr || !slices.Equal(got, tc.want) {
				t.Errorf("parseImpls(%q): got %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// TestRotate checks that every side runs first once in as many runs as there are sides,
// and that two sides alternate as they always have: kube first in odd runs.
func TestRotate(t *testing.T) {
	three := []string{"kube", "taintevict", "floor"}
	var firsts []string
	for r := range 3 {
		firsts = append(firsts, rotate(three, r)[0])
	}
	if !slices.Equal(firsts, three) {
		t.Errorf("first sides of runs 1 to 3: got %v, want %v", firsts, three)
	}
	two := []string{"kube", "taintevict"}
	for r, want := range [][]string{two, {"taintevict", "kube"}, two} {
		if got := rotate(two, r); !slices.Equal(got, want) {
			t.Errorf("rotate(%v, %d): got %v, want %v", two, r, got, want)
		}
	}
	if !slices.Equal(three, []string{"kube", "taintevict", "floor"}) {
		t.Errorf("rotate changed its argument: %v", three)
	}
}
