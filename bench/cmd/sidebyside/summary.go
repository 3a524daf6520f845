package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/taintevict/taintevict/bench/outage"
)

// sample is one child's result and the run it belongs to.
type sample struct {
	run int
	res outage.Result
}

// metric is one figure of a result, and how the table shows it.
type metric struct {
	name   string
	format string
	get    func(outage.Result) float64
}

var metrics = []metric{
	{"time to evict every untolerating pod (s)", "%.3f", func(r outage.Result) float64 { return r.Seconds }},
	{"peak goroutines", "%.0f", func(r outage.Result) float64 { return float64(r.GoroutinesPeak) }},
	{"heap growth (MB)", "%.1f", func(r outage.Result) float64 { return r.HeapGrowthMB }},
	{"peak heap above the start (MB)", "%.1f", func(r outage.Result) float64 { return r.HeapPeakMB }},
	{"peak RSS of the process (MB)", "%.0f", func(r outage.Result) float64 { return r.RSSPeakMB }},
	{"pod API requests per eviction", "%.2f", func(r outage.Result) float64 { return r.RequestsPerEviction }},
}

// floorMetrics are the metrics of the floor's table: those of the main table, and the
// Events written by the time the outage settled. client-go's event broadcaster drops Events
// when its queues are full, and the floor, which makes them fastest, loses the most: its
// figures are those of the Events that got through.
var floorMetrics = append(slices.Clip(metrics),
	metric{"Events written when the outage settled", "%.0f", func(r outage.Result) float64 { return float64(r.Requests.Events) }})

// cell is one metric at one size: the median of each side over the runs, and the median of
// the per-run ratios taintevict/kube.
type cell struct {
	kube, te, ratio float64
}

// floorCell is one metric at one size for the floor: its median over the runs, and the
// medians of the per-run ratios kube/floor and taintevict/floor.
type floorCell struct {
	floor, kubeOver, teOver float64
}

type table struct {
	sizes []int
	runs  int
	cells map[int][]cell // by size, one per metric
	// floor is, by size and floor metric, the floor's figures; nil when no run measured it.
	floor map[int][]floorCell
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// runs holds the results at one size, by run and side.
type runs map[int]map[string]outage.Result

// compare returns the medians of metric m of sides a and b over the runs that measured
// both, and the median of the per-run ratios b/a (runs where a is 0 are left out of it).
func (rs runs) compare(m metric, a, b string) (ma, mb, ratio float64) {
	var va, vb, vr []float64
	for _, byImpl := range rs {
		ra, ok1 := byImpl[a]
		rb, ok2 := byImpl[b]
		if !ok1 || !ok2 {
			continue
		}
		va, vb = append(va, m.get(ra)), append(vb, m.get(rb))
		if m.get(ra) != 0 {
			vr = append(vr, m.get(rb)/m.get(ra))
		}
	}
	return median(va), median(vb), median(vr)
}

// group returns the results at size n, by run and side.
func group(all []sample, n int) runs {
	byRun := runs{}
	for _, s := range all {
		if s.res.Pods != n {
			continue
		}
		if byRun[s.run] == nil {
			byRun[s.run] = map[string]outage.Result{}
		}
		byRun[s.run][s.res.Impl] = s.res
	}
	return byRun
}

// summarize takes the medians of every metric at every size, and of the ratios of two
// sides within each run: taintevict/kube, and, when the floor was measured, kube/floor and
// taintevict/floor.
func summarize(all []sample, sizes []int) table {
	t := table{sizes: sizes, cells: map[int][]cell{}}
	hasFloor := slices.ContainsFunc(all, func(s sample) bool { return s.res.Impl == "floor" })
	if hasFloor {
		t.floor = map[int][]floorCell{}
	}
	for _, n := range sizes {
		byRun := group(all, n)
		t.runs = max(t.runs, len(byRun))
		for _, m := range metrics {
			var c cell
			c.kube, c.te, c.ratio = byRun.compare(m, "kube", "taintevict")
			t.cells[n] = append(t.cells[n], c)
		}
		for _, m := range floorMetrics {
			if !hasFloor {
				break
			}
			var f floorCell
			f.floor, _, f.kubeOver = byRun.compare(m, "floor", "kube")
			_, _, f.teOver = byRun.compare(m, "floor", "taintevict")
			t.floor[n] = append(t.floor[n], f)
		}
	}
	return t
}

// markdown writes the table: a row per size and metric; and, when the floor was measured,
// a second table of its figures and of the controllers' over them.
func (t table) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "| pods | figure (median of %d) | kube | taintevict | taintevict/kube |\n|---:|---|---:|---:|---:|\n", t.runs)
	for _, n := range t.sizes {
		for i, m := range metrics {
			c := t.cells[n][i]
			fmt.Fprintf(&b, "| %d | %s | "+m.format+" | "+m.format+" | %.3g |\n", n, m.name, c.kube, c.te, c.ratio)
		}
	}
	if t.floor == nil {
		return b.String()
	}
	fmt.Fprintf(&b, "\n| pods | figure (median of %d) | floor | kube/floor | taintevict/floor |\n|---:|---|---:|---:|---:|\n", t.runs)
	for _, n := range t.sizes {
		for i, m := range floorMetrics {
			c := t.floor[n][i]
			fmt.Fprintf(&b, "| %d | %s | "+m.format+" | %.3g | %.3g |\n", n, m.name, c.floor, c.kubeOver, c.teOver)
		}
	}
	return b.String()
}

// plot is the time to evict against cluster size, both sides, on log axes.
func (t table) plot() Plot {
	p := Plot{
		Title:  "Zone outage: time until every untolerating pod's DELETE arrived",
		XLabel: "pods in the cluster (30 per node, half tolerating the taint for 300 s)",
		YLabel: fmt.Sprintf("seconds (median of %d runs)", t.runs),
		Series: []Series{{Name: "kube-controller-manager v1.37.2 (tainteviction)", Color: "#d62728"},
			{Name: "taintevict (eviction.Manager)", Color: "#1f77b4"}},
	}
	for _, n := range t.sizes {
		c := t.cells[n][0]
		p.Series[0].Points = append(p.Series[0].Points, [2]float64{float64(n), c.kube})
		p.Series[1].Points = append(p.Series[1].Points, [2]float64{float64(n), c.te})
	}
	return p
}
