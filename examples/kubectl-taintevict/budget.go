package main

import (
	"flag"

	"github.com/spf13/pflag"

	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/examples/internal/budgetflags"
)

// budgetFlags are the controller's settings a what-if simulates: its budgets against mass
// eviction, with the controller's own flags (examples/internal/budgetflags: -eviction-rate,
// -in-flight, -namespace-limit, -confirm-fraction and the others, here with two dashes),
// where its countdowns start, whether Lt and Gt match, and its mode. The defaults are the
// controller's.
type budgetFlags struct {
	budgets        budgetflags.Flags
	deadlineSource string
	comparison     bool
	mode           string
}

// define defines the flags on fs; withMode adds --mode (what-if's: explain has no
// PodDisruptionBudgets to look at).
func (b *budgetFlags) define(fs *pflag.FlagSet, withMode bool) {
	controller := flag.NewFlagSet("budgets", flag.ContinueOnError)
	b.budgets.Define(controller)
	fs.AddGoFlagSet(controller)
	fs.StringVar(&b.deadlineSource, "deadline-source", "time-added", "where countdowns start: time-added (the taint's TimeAdded, the controller's default) or observation (when the controller first sees it, kube-controller-manager's rule: counted from now)")
	fs.BoolVar(&b.comparison, "comparison-operators", false, "let tolerations with the operators Lt and Gt match (the controller's -comparison-operators)")
	b.mode = "delete"
	if !withMode {
		return
	}
	fs.StringVar(&b.mode, "mode", "delete", "the controller's -mode: delete, or evict, to also tell which evictions a PodDisruptionBudget would refuse at that moment (needs list on poddisruptionbudgets)")
}

// options returns the engine options the flags describe, or a usage error that names the
// flag.
func (b budgetFlags) options() (engine.Options, error) {
	var o engine.Options
	if err := b.budgets.Validate(); err != nil {
		return o, usageError("%v", oneLine(err.Error()))
	}
	switch {
	case b.mode != "delete" && b.mode != "evict":
		return o, usageError("--mode must be delete or evict, got %q", b.mode)
	case b.deadlineSource == "observation":
		o.DeadlineSource = engine.FromObservation
	case b.deadlineSource != "time-added":
		return o, usageError("--deadline-source must be time-added or observation, got %q", b.deadlineSource)
	}
	b.budgets.Apply(&o)
	o.Tolerations.ComparisonOperators = b.comparison
	return o, nil
}

// caveats says where a simulation with o cannot be exact, and which way the controller
// differs; for devices too, what is not simulated there.
func caveats(o engine.Options, devices bool) []string {
	var out []string
	if o.InFlight != (engine.InFlight{}) {
		out = append(out, "--in-flight: an evicted pod counts in flight until the end of its grace period (its terminationGracePeriodSeconds, from when the API server takes the eviction, which the what-if takes to be at once), as on an unreachable node whose kubelet never confirms: exact there, to the second the API server keeps deletionTimestamp to; on a healthy node the kubelet confirms sooner, and the controller goes sooner than this timeline")
	}
	if o.LoopDamping.Window > 0 {
		out = append(out, "--loop-window: the what-if re-creates no evicted pod, so it damps none; a workload that re-creates its pods where they are evicted again is damped")
	}
	if devices && o.Confirm.Fraction > 0 {
		out = append(out, "--confirm-fraction is not simulated for devices: the controller holds a DeviceTaintRule that would evict too many pods, and says so in the rule's status")
	}
	return out
}
