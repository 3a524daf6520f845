package scale

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// median returns the median of xs, or -1 for none.
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

// spread is "median (min–max)" in format, or the one value.
func spread(xs []float64, format string) string {
	if len(xs) == 0 {
		return "–"
	}
	s := slices.Sorted(slices.Values(xs))
	m := fmt.Sprintf(format, median(xs))
	if len(s) == 1 || s[0] == s[len(s)-1] {
		return m
	}
	return m + " (" + fmt.Sprintf(format, s[0]) + "–" + fmt.Sprintf(format, s[len(s)-1]) + ")"
}

func collect(rs []Result, f func(Result) float64) []float64 {
	out := make([]float64, 0, len(rs))
	for _, r := range rs {
		out = append(out, f(r))
	}
	return out
}

// afterDeadline is a time after the taint made a time after the pods fell due.
func afterDeadline(r Result, t float64) float64 {
	if t < 0 {
		return t
	}
	return t - r.Deadline
}

// group is the results of one shape, budget and variant, by side.
type group struct {
	shape   Shape
	budget  Budget
	variant string
	sides   map[string][]Result
}

func groups(results []Result) []*group {
	type key struct {
		shape   Shape
		budget  Budget
		variant string
	}
	by := map[key]*group{}
	var keys []key
	for _, r := range results {
		k := key{r.Shape, r.Budget, r.Variant}
		if by[k] == nil {
			by[k] = &group{shape: r.Shape, budget: r.Budget, variant: r.Variant, sides: map[string][]Result{}}
			keys = append(keys, k)
		}
		by[k].sides[r.Side] = append(by[k].sides[r.Side], r)
	}
	slices.SortStableFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.shape.Pods(), b.shape.Pods()), cmp.Compare(a.budget.QPS, b.budget.QPS), cmp.Compare(variantRank(a.variant), variantRank(b.variant)))
	})
	out := make([]*group, len(keys))
	for i, k := range keys {
		out[i] = by[k]
	}
	return out
}

func variantRank(v string) int {
	return slices.Index([]string{VariantOutage, VariantBrake, VariantRestart, VariantFailover, VariantBrakeRestart}, v)
}

func sideOrder(sides map[string][]Result) []string {
	return slices.SortedFunc(maps.Keys(sides), func(a, b string) int {
		rank := func(s string) int {
			return slices.Index([]string{"kube/alone", "kube", "ours", "ours/mode=evict", "flood", "flood/mode=evict"}, s)
		}
		return cmp.Compare(rank(a), rank(b))
	})
}

// Report writes the Markdown tables of results: for each size, budget and variant, the
// sides side by side (medians of their runs, with the range).
func Report(w io.Writer, results []Result) {
	for _, g := range groups(results) {
		due := 0
		for _, rs := range g.sides {
			for _, r := range rs {
				due = max(due, r.Outage.Due)
			}
		}
		fmt.Fprintf(w, "\n#### %s: %v (%d pods), %s; zone a: %d due, toleration %.0f s\n\n", g.variant, g.shape, g.shape.Pods(), g.budget, due, g.shape.Toleration.Seconds())
		kubeLast := median(collect(g.sides["kube"], func(r Result) float64 { return afterDeadline(r, r.Outage.Last) }))
		fmt.Fprintln(w, "| side | runs | ready (s) | first decision (s) | RSS, steady (MB) | CPU, quiet (cores) | first / median / last removal after the deadline (s) | kube ÷ side, last | requests per eviction | API server CPU per eviction (ms) | etcd (ms) | side's CPU (s) | correct | load |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---|---:|---|---:|---:|---:|---|---:|")
		for _, s := range sideOrder(g.sides) {
			rs := g.sides[s]
			last := median(collect(rs, func(r Result) float64 { return afterDeadline(r, r.Outage.Last) }))
			ratio := "–"
			if s != "kube" && kubeLast > 0 && last > 0 {
				ratio = fmt.Sprintf("%.2fx", kubeLast/last)
			}
			if s == "kube/alone" {
				fmt.Fprintf(w, "| %s | %d | %s | %s of the start's %d pods removed | %s | %s | %s of the %d due removed 15 s past the deadline | – | – | – | – | – | – | %s |\n",
					sideLabel(s), len(rs), spread(collect(rs, func(r Result) float64 { return r.Ready }), "%.2f"),
					spread(collect(rs, func(r Result) float64 { return float64(r.StartRemoved) }), "%.0f"), rs[0].StartDue,
					spread(collect(rs, func(r Result) float64 { return r.RSSMB }), "%.0f"),
					spread(collect(rs, func(r Result) float64 { return r.QuietCPU }), "%.3f"),
					spread(collect(rs, func(r Result) float64 { return float64(r.Outage.Removed) }), "%.0f"), rs[0].Outage.Due,
					spread(collect(rs, func(r Result) float64 { return (r.Load[0] + r.Load[1]) / 2 }), "%.1f"))
				continue
			}
			perEviction := func(f func(Result) float64) string {
				return spread(collect(rs, func(r Result) float64 { return 1000 * f(r) / float64(max(1, r.Outage.Due)) }), "%.2f")
			}
			fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s / %s / %s | %s | %s | %s | %s | %s | %s | %s |\n",
				sideLabel(s), len(rs),
				spread(collect(rs, func(r Result) float64 { return r.Ready }), "%.2f"),
				spread(collect(rs, func(r Result) float64 { return r.Decision }), "%.2f"),
				spread(collect(rs, func(r Result) float64 { return r.RSSMB }), "%.0f"),
				spread(collect(rs, func(r Result) float64 { return r.QuietCPU }), "%.3f"),
				spread(collect(rs, func(r Result) float64 { return afterDeadline(r, r.Outage.First) }), "%.2f"),
				spread(collect(rs, func(r Result) float64 { return afterDeadline(r, r.Outage.Half) }), "%.1f"),
				spread(collect(rs, func(r Result) float64 { return afterDeadline(r, r.Outage.Last) }), "%.2f"),
				ratio, requestsPerEviction(rs),
				perEviction(func(r Result) float64 { return r.APIServerCPU }), perEviction(func(r Result) float64 { return r.EtcdCPU }),
				spread(collect(rs, func(r Result) float64 { return r.SideCPU }), "%.1f"),
				correctness(rs), spread(collect(rs, func(r Result) float64 { return (r.Load[0] + r.Load[1]) / 2 }), "%.1f"))
		}
		variantTable(w, g)
	}
}

// variantTable writes what a variant adds: the restart's or failover's resumption, the
// brake's hold, the what-if.
func variantTable(w io.Writer, g *group) {
	var lines []string
	for _, s := range sideOrder(g.sides) {
		rs := g.sides[s]
		switch g.variant {
		case VariantRestart, VariantFailover:
			lines = append(lines, fmt.Sprintf("| %s | killed at +%s s | next removal %s s after the kill |", sideLabel(s),
				spread(collect(rs, func(r Result) float64 { return r.Killed }), "%.1f"), spread(collect(rs, func(r Result) float64 { return r.Resume }), "%.2f")))
		case VariantBrake, VariantBrakeRestart:
			lines = append(lines, fmt.Sprintf("| %s | removals while held: %s | let go at +%s s | last removal %s s after the let-go |", sideLabel(s),
				spread(collect(rs, func(r Result) float64 { return float64(r.HeldRemovals) }), "%.0f"),
				spread(collect(rs, func(r Result) float64 { return r.LetGo }), "%.1f"),
				spread(collect(rs, func(r Result) float64 { return r.Outage.Last - r.LetGo }), "%.2f")))
		}
		if fl := g.sides[strings.Replace(s, "ours", "flood", 1)]; strings.HasPrefix(s, "ours") && len(fl) > 0 {
			last := func(rs []Result) float64 {
				return median(collect(rs, func(r Result) float64 { return afterDeadline(r, r.Outage.Last) }))
			}
			lines = append(lines, fmt.Sprintf("| %s | last removal after the deadline ÷ the flood's in the same mode: %.2f | the flood's %.2f s, %d runs |",
				sideLabel(s), last(rs)/last(fl), last(fl), len(fl)))
		}
		if ws := collect(rs, func(r Result) float64 { return r.WhatIf }); median(ws) > 0 {
			cpu := func(i int) string {
				return spread(collect(rs, func(r Result) float64 { return r.WhatIfCPU[i] }), "%.1f")
			}
			lines = append(lines, fmt.Sprintf("| %s | what-if of zone a, in all: %s s | %s; CPU s: plugin %s, kube-apiserver %s, etcd %s |",
				sideLabel(s), spread(ws, "%.2f"), rs[0].WhatIfTimings, cpu(0), cpu(1), cpu(2)))
		}
	}
	var all []Result
	for _, rs := range g.sides {
		all = append(all, rs...)
	}
	if mb := collect(all, func(r Result) float64 { return r.APIServerRSSMB }); median(mb) > 0 {
		lines = append(lines, fmt.Sprintf("| the control plane, steady | kube-apiserver RSS %s MB, %s cores | etcd RSS %s MB, %s cores |",
			spread(mb, "%.0f"), spread(collect(all, func(r Result) float64 { return r.APIServerIdle }), "%.3f"),
			spread(collect(all, func(r Result) float64 { return r.EtcdRSSMB }), "%.0f"), spread(collect(all, func(r Result) float64 { return r.EtcdIdle }), "%.3f")))
	}
	if len(lines) > 0 {
		fmt.Fprintln(w)
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	}
}

func sideLabel(s string) string {
	switch s {
	case "kube/alone":
		return "kube-controller-manager, taint-eviction-controller alone"
	case "kube":
		return "kube-controller-manager"
	case "ours/mode=evict":
		return "taintevict `-mode=evict`"
	case "flood":
		return "the flood, delete requests"
	case "flood/mode=evict":
		return "the flood, evictions"
	}
	return "taintevict"
}

// requestsPerEviction is the medians of the side's requests per due pod, by verb and
// resource, with error codes.
func requestsPerEviction(rs []Result) string {
	whats := map[string]bool{}
	for _, r := range rs {
		for w := range r.Outage.Requests {
			whats[w] = true
		}
	}
	var parts []string
	for _, w := range slices.Sorted(maps.Keys(whats)) {
		parts = append(parts, fmt.Sprintf("%s %.2f", w, median(collect(rs, func(r Result) float64 {
			return float64(r.Outage.Requests[w]) / float64(max(1, r.Outage.Due))
		}))))
	}
	out := strings.Join(parts, ", ")
	codes := map[int]bool{}
	for _, r := range rs {
		for c := range r.Outage.Errors {
			codes[c] = true
		}
	}
	for _, c := range slices.Sorted(maps.Keys(codes)) {
		out += fmt.Sprintf("; code %d: %.0f", c, median(collect(rs, func(r Result) float64 { return float64(r.Outage.Errors[c]) })))
	}
	return out
}

// correctness is "yes" when every run was correct, else what went wrong, run by run.
func correctness(rs []Result) string {
	var bad []string
	for _, r := range rs {
		var what []string
		o := r.Outage
		if r.Side == "kube/alone" {
			continue // not a controller one would run: see Side.Alone
		}
		if o.Removed+o.Unacked != o.Due {
			what = append(what, fmt.Sprintf("%d of %d removed", o.Removed+o.Unacked, o.Due))
		}
		if o.RemovedTwice > 0 {
			what = append(what, fmt.Sprintf("%d removed twice", o.RemovedTwice))
		}
		if o.Early > 0 {
			what = append(what, fmt.Sprintf("%d before their deadline", o.Early))
		}
		if o.TouchedSpared > 0 {
			what = append(what, fmt.Sprintf("%d other pods written to", o.TouchedSpared))
		}
		if r.HeldRemovals > 0 {
			what = append(what, fmt.Sprintf("%d removed while the brake held", r.HeldRemovals))
		}
		if !r.StartCorrect {
			what = append(what, fmt.Sprintf("the start's pods wrong (%d removed twice)", r.StartTwice))
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

// Problems lists what went wrong in results, for a test: every run must be correct, but
// for kube-controller-manager's second removals of the start's pods: it deletes a pod that
// tolerates none of its node's taints again on each update of the pod (its own status
// PATCH, its own DELETE), a known fault of kube's (see BENCHMARKS.md), not the harness's.
func Problems(results []Result) []string {
	var out []string
	for _, r := range results {
		if r.Side == "kube" && r.StartTwice > 0 && r.Outage.Removed > 0 {
			r.StartCorrect = true
		}
		if c := correctness([]Result{r}); c != "yes" {
			out = append(out, fmt.Sprintf("%s %s: %s", r.Side, r.Variant, c))
		}
	}
	return out
}
