package realapiserver

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// median returns the median of xs (the mean of the middle two for an even count), or -1
// for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return -1
	}
	s := slices.Sorted(slices.Values(xs))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// spread is "median (min–max)" of xs with the format of one value.
func spread(xs []float64, format string) string {
	if len(xs) == 0 {
		return "–"
	}
	s := slices.Sorted(slices.Values(xs))
	m := fmt.Sprintf(format, median(xs))
	if len(s) == 1 {
		return m
	}
	return m + " (" + fmt.Sprintf(format, s[0]) + "–" + fmt.Sprintf(format, s[len(s)-1]) + ")"
}

// budget names a client budget.
type budget struct {
	qps   float32
	burst int
}

func (b budget) String() string { return fmt.Sprintf("qps %g, burst %d", b.qps, b.burst) }

// collect applies f to each result and returns the values.
func collect(rs []Result, f func(Result) float64) []float64 {
	out := make([]float64, 0, len(rs))
	for _, r := range rs {
		out = append(out, f(r))
	}
	return out
}

// removalRequests is the side's pod requests (not its Events) per eviction: the requests
// that go through its client's rate limiter for each eviction (kube's Events go through it
// too, but almost all after its last DELETE).
func removalRequests(r Result) float64 {
	n := 0
	for what, c := range r.Requests {
		if strings.HasSuffix(what, " pods") || strings.Contains(what, " pods/") {
			n += c
		}
	}
	return float64(n) / float64(r.Evictions)
}

// removalRate is the side's pod requests (refused ones included) per second, from its first
// removal to its last: how much of the API server it used once it had started (the flood
// starts later than the controllers, when its watch shows it a tainted node).
func removalRate(r Result) float64 {
	if r.Last <= r.First {
		return 0
	}
	return removalRequests(r) * float64(r.Evictions) / (r.Last - r.First)
}

// floor is the earliest the last removal can come through a token bucket of the budget:
// (evictions × removal requests per eviction − burst) / qps, 0 if the burst covers them.
func floor(r Result) float64 {
	return max(0, (removalRequests(r)*float64(r.Evictions)-float64(r.Burst))/float64(r.QPS))
}

// Report writes, for each budget, the Markdown tables of the side-by-side: the times of
// the removals (medians of the runs, with their range) against kube's, and what each
// eviction cost.
func Report(w io.Writer, results []Result) {
	byBudget := map[budget][]Result{}
	for _, r := range results {
		b := budget{r.QPS, r.Burst}
		byBudget[b] = append(byBudget[b], r)
	}
	budgets := slices.SortedFunc(maps.Keys(byBudget), func(a, b budget) int { return cmp.Compare(a.qps, b.qps) })
	for _, b := range budgets {
		rs := byBudget[b]
		var sides []string
		bySide := map[string][]Result{}
		for _, r := range rs {
			if _, ok := bySide[r.Side]; !ok {
				sides = append(sides, r.Side)
			}
			bySide[r.Side] = append(bySide[r.Side], r)
		}
		slices.SortStableFunc(sides, func(a, b string) int { return sideRank(a) - sideRank(b) })
		kubeLast := median(collect(bySide["kube"], func(r Result) float64 { return r.Last }))
		first := rs[0]
		fmt.Fprintf(w, "\n#### %s (%d nodes × %d pods, %d untolerating; %s)\n\n", b, first.Nodes, first.PodsPerNode, first.Evictions, first.ContentType)
		// The flood's rate in each mode (the best of its in-flight counts): the API
		// server's capacity for those requests.
		capacity := map[bool]float64{}
		for _, s := range sides {
			if strings.HasPrefix(s, "flood") {
				evict := strings.Contains(s, "mode=evict")
				capacity[evict] = max(capacity[evict], median(collect(bySide[s], removalRate)))
			}
		}
		fmt.Fprintln(w, "| side | runs | first removal (s) | half (s) | last (s) | last, kube ÷ side | floor (s) | last ÷ floor | removal requests/s | ÷ the flood's |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, s := range sides {
			sr := bySide[s]
			rate := median(collect(sr, removalRate))
			vsCapacity := "–"
			if c, ok := capacity[strings.Contains(s, "mode=evict")]; ok && c > 0 {
				vsCapacity = fmt.Sprintf("%.2f", rate/c)
			}
			last := median(collect(sr, func(r Result) float64 { return r.Last }))
			// The flood has no client budget: no ratio to kube's, no floor.
			flood := strings.HasPrefix(s, "flood")
			ratio := "–"
			if kubeLast > 0 && last > 0 && s != "kube" && !flood {
				ratio = fmt.Sprintf("%.2fx", kubeLast/last)
			}
			fl := median(collect(sr, floor))
			flStr, vsFloor := fmt.Sprintf("%.1f", fl), "–"
			if flood {
				flStr = "–"
			} else if fl > 0 {
				vsFloor = fmt.Sprintf("%.2f", last/fl)
			}
			fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", sideLabel(s), len(sr),
				spread(collect(sr, func(r Result) float64 { return r.First }), "%.2f"),
				spread(collect(sr, func(r Result) float64 { return r.Half }), "%.1f"),
				spread(collect(sr, func(r Result) float64 { return r.Last }), "%.2f"),
				ratio, flStr, vsFloor, spread(collect(sr, removalRate), "%.0f"), vsCapacity)
		}
		fmt.Fprintln(w)
		apiPer := func(r Result) float64 { return 1000 * r.APIServerCPU / float64(r.Evictions) }
		apiNet := func(r Result) float64 {
			return 1000 * (r.APIServerCPU - r.APIServerIdle*r.Window) / float64(r.Evictions)
		}
		kubeAPI, kubeNet := median(collect(bySide["kube"], apiPer)), median(collect(bySide["kube"], apiNet))
		fmt.Fprintln(w, "| side | requests per eviction, from the first taint | Events written before the last removal | Events written (all) | CPU window (s) | API server CPU per eviction (ms) | net of idle (ms) | side ÷ kube, gross; net | etcd CPU per eviction (ms) | side's CPU (s) | served at | correct | load |")
		fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|")
		for _, s := range sides {
			sr := bySide[s]
			vsKube := "–"
			if s != "kube" && kubeAPI > 0 && kubeNet > 0 {
				vsKube = fmt.Sprintf("%.2f; %.2f", median(collect(sr, apiPer))/kubeAPI, median(collect(sr, apiNet))/kubeNet)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", sideLabel(s), requestsPerEviction(sr),
				spread(collect(sr, func(r Result) float64 { return float64(r.EventsBeforeLast) }), "%.0f"),
				spread(collect(sr, func(r Result) float64 { return float64(r.Events) }), "%.0f"),
				spread(collect(sr, func(r Result) float64 { return r.Window }), "%.0f"),
				spread(collect(sr, apiPer), "%.2f"), spread(collect(sr, apiNet), "%.2f"), vsKube,
				spread(collect(sr, func(r Result) float64 { return 1000 * r.EtcdCPU / float64(r.Evictions) }), "%.2f"),
				spread(collect(sr, func(r Result) float64 { return r.ControllerCPU }), "%.2f"),
				levelsOf(sr), correctness(sr),
				spread(collect(sr, func(r Result) float64 { return (r.Load[0] + r.Load[1]) / 2 }), "%.1f"))
		}
	}
}

// sideRank orders the sides: kube first, then ours by mode and workers.
func sideRank(s string) int {
	switch {
	case s == "kube":
		return 0
	case strings.HasPrefix(s, "flood"):
		return 3 + sideRank(strings.TrimPrefix(s, "flood"))
	case strings.Contains(s, "mode=evict"):
		return 2
	}
	return 1
}

// sideLabel is a side as the command's flags say it.
func sideLabel(s string) string {
	if s == "kube" {
		return "kube-controller-manager's"
	}
	out := []string{"ours"}
	if strings.HasPrefix(s, "flood") {
		out[0] = "the flood (capacity)"
	}
	for _, opt := range strings.Split(s, "/")[1:] {
		out = append(out, "`-"+opt+"`")
	}
	if len(out) == 1 && out[0] == "ours" {
		return "ours, defaults"
	}
	return strings.Join(out, " ")
}

// requestsPerEviction is the medians of the side's requests per eviction, by verb and
// resource, with any error codes.
func requestsPerEviction(rs []Result) string {
	whats := map[string]bool{}
	codes := map[int]bool{}
	for _, r := range rs {
		for w := range r.Requests {
			whats[w] = true
		}
		for c := range r.Errors {
			codes[c] = true
		}
	}
	var parts []string
	total := make([]float64, len(rs))
	for _, w := range slices.Sorted(maps.Keys(whats)) {
		per := make([]float64, len(rs))
		for i, r := range rs {
			per[i] = float64(r.Requests[w]) / float64(r.Evictions)
			total[i] += per[i]
		}
		parts = append(parts, fmt.Sprintf("%s %.2f", w, median(per)))
	}
	out := fmt.Sprintf("**%.2f**: %s", median(total), strings.Join(parts, ", "))
	for _, c := range slices.Sorted(maps.Keys(codes)) {
		out += fmt.Sprintf("; code %d: %.0f", c, median(collect(rs, func(r Result) float64 { return float64(r.Errors[c]) })))
	}
	return out
}

// levelsOf names the priority levels the side's responses were served at.
func levelsOf(rs []Result) string {
	names := map[string]bool{}
	for _, r := range rs {
		for n := range r.Levels {
			names[n] = true
		}
	}
	return strings.Join(slices.Sorted(maps.Keys(names)), ", ")
}

// correctness says "yes" when every run removed each untolerating pod once, touched no
// tolerating pod and wrote every Event, and otherwise what went wrong, run by run.
func correctness(rs []Result) string {
	var bad []string
	for _, r := range rs {
		var what []string
		if r.Removed != r.Evictions {
			what = append(what, fmt.Sprintf("%d of %d removed", r.Removed, r.Evictions))
		}
		if r.RemovedTwice > 0 {
			what = append(what, fmt.Sprintf("%d removed twice", r.RemovedTwice))
		}
		if r.TouchedTolerating > 0 {
			what = append(what, fmt.Sprintf("%d tolerating pods touched", r.TouchedTolerating))
		}
		if r.Events < r.Evictions && !strings.HasPrefix(r.Side, "flood") {
			what = append(what, fmt.Sprintf("%d of %d Events", r.Events, r.Evictions))
		}
		if len(what) > 0 {
			bad = append(bad, fmt.Sprintf("run %d: %s", r.Run+1, strings.Join(what, ", ")))
		}
	}
	if len(bad) == 0 {
		return "yes"
	}
	return strings.Join(bad, "; ")
}

// StartupReport writes the Markdown table of the start-up measurement, by encoding.
func StartupReport(w io.Writer, results []StartupResult) {
	var cts []string
	by := map[string][]StartupResult{}
	for _, r := range results {
		if _, ok := by[r.ContentType]; !ok {
			cts = append(cts, r.ContentType)
		}
		by[r.ContentType] = append(by[r.ContentType], r)
	}
	pods := 0
	if len(results) > 0 {
		pods = results[0].Pods
	}
	fmt.Fprintf(w, "\n#### Start to ready with %d pods\n\n", pods)
	fmt.Fprintln(w, "| encoding | runs | ready (s), from main | from exec | controller CPU (s) | peak RSS (MB) | API server CPU (s) | etcd CPU (s) | load |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, ct := range cts {
		rs := by[ct]
		f := func(g func(StartupResult) float64, format string) string {
			xs := make([]float64, len(rs))
			for i, r := range rs {
				xs[i] = g(r)
			}
			return spread(xs, format)
		}
		fmt.Fprintf(w, "| `%s` | %d | %s | %s | %s | %s | %s | %s | %s |\n", ct, len(rs),
			f(func(r StartupResult) float64 { return r.Synced }, "%.2f"),
			f(func(r StartupResult) float64 { return r.Wall }, "%.2f"),
			f(func(r StartupResult) float64 { return r.CPU }, "%.2f"),
			f(func(r StartupResult) float64 { return r.MaxRSSMB }, "%.0f"),
			f(func(r StartupResult) float64 { return r.APIServerCPU }, "%.2f"),
			f(func(r StartupResult) float64 { return r.EtcdCPU }, "%.2f"),
			f(func(r StartupResult) float64 { return r.Load }, "%.1f"))
	}
}
