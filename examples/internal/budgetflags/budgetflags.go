package budgetflags

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
)

// Flags are the command line's budgets against mass eviction: the engine's
// Options.RateLimit, TaintRateLimits, Brake, InFlight, NamespaceLimit, OwnerLimit,
// LoopDamping and Confirm. Each controller that runs gets them, and counts its own: nodes
// and zones, or devices and pools. The zero value sets none; [Flags.Define] sets the
// flags' defaults.
type Flags struct {
	rate           float64
	burst          int
	taintRates     map[string]eviction.Limit
	brake          float64
	zoneBrake      float64
	brakeHolders   int
	zoneHolders    int
	fullDisruption eviction.FullDisruption
	inFlight       int
	inFlightShare  float64
	namespaceLimit eviction.Window
	ownerLimit     eviction.Window
	loopWindow     time.Duration
	loopBase       time.Duration
	loopCap        time.Duration
	confirm        float64
	confirmMin     int
}

// Define defines the budget flags on fs, with their defaults.
func (b *Flags) Define(fs *flag.FlagSet) {
	fs.Float64Var(&b.rate, "eviction-rate", 0, "evict at most this many pods a second, in all (0: no limit)")
	fs.IntVar(&b.burst, "eviction-burst", 0, "with -eviction-rate: how many pods may be evicted at once (default: the rate, rounded up)")
	fs.Func("taint-rate", "KEY=RATE[/BURST]: evict at most RATE pods a second because of NoExecute taints with KEY, BURST at once (default: RATE rounded up); repeat for more keys", b.addTaintRate)
	fs.Float64Var(&b.brake, "brake-fraction", 0, "pause the evictions a taint key causes while more than this fraction of the nodes (devices) carry it, until fewer do: in (0, 1] (0: off)")
	fs.Float64Var(&b.zoneBrake, "brake-zone-fraction", 0, "the same within each zone (the topology.kubernetes.io/zone label; a device's pool), for the pods on that zone's nodes (0: off)")
	fs.IntVar(&b.brakeHolders, "brake-holders", 0, "pause the evictions a taint key causes while at least this many nodes (devices) carry it, whatever their fraction (0: off)")
	fs.IntVar(&b.zoneHolders, "brake-zone-holders", 0, "the same within each zone (pool): a floor for small zones, whose fraction is coarse (0: off)")
	fs.Func("full-disruption", "what a zone (pool) all of whose nodes carry a taint key does with the evictions it causes, as kube's node lifecycle controller in a fully disrupted zone: pause, or RATE[/BURST] a second of its own (the zone's fraction and floor then do not hold it) (default: neither)", b.setFullDisruption)
	fs.IntVar(&b.inFlight, "in-flight", 0, "evict at most this many pods at once that are not gone yet (a Terminating pod counts until it is gone) (0: no limit)")
	fs.Float64Var(&b.inFlightShare, "in-flight-fraction", 0, "the same, as a fraction of the pods the controller keeps an eviction of (scheduled, due, or acted on and not gone), at least one: in (0, 1] (0: no limit)")
	fs.Func("namespace-limit", "N/DURATION: evict at most N pods of each namespace within any DURATION, e.g. 10/1m (default: no limit)", windowFlag(&b.namespaceLimit))
	fs.Func("owner-limit", "N/DURATION: evict at most N pods of each workload (a Deployment, a StatefulSet, a DaemonSet, a Job: the pod's controller) within any DURATION (default: no limit)", windowFlag(&b.ownerLimit))
	fs.DurationVar(&b.loopWindow, "loop-window", 0, "slow down eviction loops: a pod re-created by its workload's controller and due again within this long after the workload's backoff would end waits that backoff, which doubles each time up to -loop-backoff-cap (0: off)")
	fs.DurationVar(&b.loopBase, "loop-backoff-base", 10*time.Second, "with -loop-window: the first re-created pod's wait")
	fs.DurationVar(&b.loopCap, "loop-backoff-cap", 10*time.Minute, "with -loop-window: the longest wait")
	fs.Float64Var(&b.confirm, "confirm-fraction", 0, "hold a taint key (a DeviceTaintRule, a pool's taints) that would evict more than this fraction of all pods (of all pods that use devices) at once, until an operator confirms it with the annotation "+eviction.ConfirmAnnotation+"=KEY on the node (the rule, a slice of the pool), or it would evict fewer: in (0, 1] (0: off)")
	fs.IntVar(&b.confirmMin, "confirm-min-pods", 0, "with -confirm-fraction: a taint that would evict fewer pods is never held (0: 1)")
}

// addTaintRate parses one -taint-rate value, KEY=RATE or KEY=RATE/BURST.
func (b *Flags) addTaintRate(s string) error {
	key, value, ok := strings.Cut(s, "=")
	if !ok || key == "" {
		return errors.New("want KEY=RATE or KEY=RATE/BURST")
	}
	if _, dup := b.taintRates[key]; dup {
		return fmt.Errorf("%s given twice", key)
	}
	l, err := parseRate(value)
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	if b.taintRates == nil {
		b.taintRates = map[string]eviction.Limit{}
	}
	b.taintRates[key] = l
	return nil
}

// parseRate parses RATE or RATE/BURST, the burst a second's worth when not given.
func parseRate(s string) (eviction.Limit, error) {
	rateText, burstText, hasBurst := strings.Cut(s, "/")
	rate, err := strconv.ParseFloat(rateText, 64)
	if err != nil || !(rate > 0) || math.IsInf(rate, 0) {
		return eviction.Limit{}, fmt.Errorf("the rate must be a number above 0, got %q", rateText)
	}
	burst := defaultBurst(rate)
	if hasBurst {
		if burst, err = strconv.Atoi(burstText); err != nil || burst < 1 {
			return eviction.Limit{}, fmt.Errorf("the burst must be a whole number, at least 1, got %q", burstText)
		}
	}
	return eviction.Limit{PerSecond: rate, Burst: burst}, nil
}

// setFullDisruption parses -full-disruption: pause, or RATE[/BURST].
func (b *Flags) setFullDisruption(s string) error {
	if s == "pause" {
		b.fullDisruption = eviction.FullDisruption{Pause: true}
		return nil
	}
	l, err := parseRate(s)
	if err != nil {
		return fmt.Errorf("want pause or RATE[/BURST]: %w", err)
	}
	b.fullDisruption = eviction.FullDisruption{Rate: l}
	return nil
}

// windowFlag parses N/DURATION into w.
func windowFlag(w *eviction.Window) func(string) error {
	return func(s string) error {
		n, d, ok := strings.Cut(s, "/")
		max, err := strconv.Atoi(n)
		if !ok || err != nil || max < 1 {
			return fmt.Errorf("want N/DURATION with N at least 1, e.g. 10/1m, got %q", s)
		}
		per, err := time.ParseDuration(d)
		if err != nil || per <= 0 {
			return fmt.Errorf("want N/DURATION with a positive DURATION, e.g. 10/1m, got %q", s)
		}
		*w = eviction.Window{Max: max, Per: per}
		return nil
	}
}

// defaultBurst is the burst of a rate given without one: a second's worth, at least 1.
func defaultBurst(rate float64) int {
	return int(max(1, math.Ceil(min(rate, math.MaxInt32))))
}

// Validate checks the values the flag package cannot, and those the engine would refuse:
// each error names its flag.
func (b Flags) Validate() error {
	fraction := func(name string, v float64) error {
		if v != 0 && !(v > 0 && v <= 1) {
			return fmt.Errorf("%s must be in (0, 1], or 0 for off, got %g", name, v)
		}
		return nil
	}
	switch {
	case !(b.rate >= 0) || math.IsInf(b.rate, 0):
		return fmt.Errorf("-eviction-rate must be 0 (no limit) or a number above 0, got %g", b.rate)
	case b.burst < 0:
		return fmt.Errorf("-eviction-burst must not be negative, got %d", b.burst)
	case b.burst > 0 && b.rate == 0:
		return errors.New("-eviction-burst needs -eviction-rate")
	case b.brakeHolders < 0 || b.zoneHolders < 0:
		return fmt.Errorf("-brake-holders and -brake-zone-holders must not be negative, got %d and %d", b.brakeHolders, b.zoneHolders)
	case b.inFlight < 0:
		return fmt.Errorf("-in-flight must not be negative, got %d", b.inFlight)
	case b.loopWindow < 0:
		return fmt.Errorf("-loop-window must not be negative, got %s", b.loopWindow)
	case b.loopBase <= 0 || b.loopCap < b.loopBase:
		return fmt.Errorf("-loop-backoff-base (%s) must be positive and -loop-backoff-cap (%s) not less", b.loopBase, b.loopCap)
	case b.confirmMin < 0:
		return fmt.Errorf("-confirm-min-pods must not be negative, got %d", b.confirmMin)
	case b.confirmMin > 0 && b.confirm == 0:
		return errors.New("-confirm-min-pods needs -confirm-fraction")
	}
	return errors.Join(fraction("-brake-fraction", b.brake), fraction("-brake-zone-fraction", b.zoneBrake),
		fraction("-in-flight-fraction", b.inFlightShare), fraction("-confirm-fraction", b.confirm), b.checkRates())
}

// checkRates has the engine check what the rate flags and the loop backoff set, each
// alone, and names the flag that set what it refuses (a rate under its least, a burst that
// takes too long to refill): one copy of the engine's bounds.
func (b Flags) checkRates() error {
	var o eviction.Options
	b.Apply(&o)
	checks := []struct {
		flag string
		opts eviction.Options
	}{
		{"-eviction-rate and -eviction-burst", eviction.Options{RateLimit: o.RateLimit}},
		{"-full-disruption", eviction.Options{Brake: eviction.Brake{FullDisruption: o.Brake.FullDisruption}}},
		{"-loop-backoff-base and -loop-backoff-cap", eviction.Options{LoopDamping: o.LoopDamping}},
	}
	for _, key := range slices.Sorted(maps.Keys(o.TaintRateLimits)) {
		checks = append(checks, struct {
			flag string
			opts eviction.Options
		}{"-taint-rate " + key, eviction.Options{TaintRateLimits: map[string]eviction.Limit{key: o.TaintRateLimits[key]}}})
	}
	var errs []error
	for _, c := range checks {
		c.opts.DryRun = true
		if _, err := eviction.New(nil, noCache{}, c.opts); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.flag, err))
		}
	}
	return errors.Join(errs...)
}

// noCache is the empty Cache of the Managers checkRates makes, which never run.
type noCache struct{}

func (noCache) PodsOnNode(string) ([]*v1.Pod, error) { return nil, nil }
func (noCache) Pod(string, string) (*v1.Pod, error)  { return nil, nil }
func (noCache) Node(string) (*v1.Node, error)        { return nil, nil }

// Apply sets the budgets of o.
func (b Flags) Apply(o *eviction.Options) {
	if b.rate > 0 {
		o.RateLimit = eviction.Limit{PerSecond: b.rate, Burst: b.burst}
		if o.RateLimit.Burst == 0 {
			o.RateLimit.Burst = defaultBurst(b.rate)
		}
	}
	o.TaintRateLimits = b.taintRates
	o.Brake = eviction.Brake{Fraction: b.brake, ZoneFraction: b.zoneBrake, Holders: b.brakeHolders, ZoneHolders: b.zoneHolders, FullDisruption: b.fullDisruption}
	o.InFlight = eviction.InFlight{Max: b.inFlight, Fraction: b.inFlightShare}
	o.NamespaceLimit, o.OwnerLimit = b.namespaceLimit, b.ownerLimit
	if b.loopWindow > 0 {
		o.LoopDamping = eviction.LoopDamping{Window: b.loopWindow, Backoff: eviction.Backoff{Base: b.loopBase, Cap: b.loopCap}}
	}
	o.Confirm = eviction.Confirm{Fraction: b.confirm, MinTargets: b.confirmMin}
}

// Text names the budget an eviction waits at for reason, as the command line set it: the
// same flags budget every controller that runs, each counting its own holders.
func (b Flags) Text(reason engine.Reason) string {
	var parts []string
	add := func(on bool, format string, args ...any) {
		if on {
			parts = append(parts, fmt.Sprintf(format, args...))
		}
	}
	name := string(reason)
	switch reason {
	case engine.ReasonRateLimited:
		name = "the rate limit"
		burst := b.burst
		if burst == 0 {
			burst = defaultBurst(b.rate)
		}
		add(b.rate > 0, "-eviction-rate %g/s (burst %d)", b.rate, burst)
		for _, key := range slices.Sorted(maps.Keys(b.taintRates)) {
			l := b.taintRates[key]
			add(true, "-taint-rate %s=%g/%d", key, l.PerSecond, l.Burst)
		}
		add(b.fullDisruption.Rate.PerSecond > 0, "-full-disruption %g/%d", b.fullDisruption.Rate.PerSecond, b.fullDisruption.Rate.Burst)
	case engine.ReasonPaused:
		name = "the brake"
		add(b.brake > 0, "-brake-fraction %g", b.brake)
		add(b.zoneBrake > 0, "-brake-zone-fraction %g", b.zoneBrake)
		add(b.brakeHolders > 0, "-brake-holders %d", b.brakeHolders)
		add(b.zoneHolders > 0, "-brake-zone-holders %d", b.zoneHolders)
		add(b.fullDisruption.Pause, "-full-disruption pause")
	case engine.ReasonInFlight:
		name = "evictions in flight"
		add(b.inFlight > 0, "-in-flight %d", b.inFlight)
		add(b.inFlightShare > 0, "-in-flight-fraction %g", b.inFlightShare)
	case engine.ReasonNamespaceLimit:
		name = "the namespace limit"
		add(true, "-namespace-limit %d/%s", b.namespaceLimit.Max, b.namespaceLimit.Per)
	case engine.ReasonOwnerLimit:
		name = "the workload limit"
		add(true, "-owner-limit %d/%s", b.ownerLimit.Max, b.ownerLimit.Per)
	case engine.ReasonRecreated:
		name = "loop damping"
		add(true, "-loop-window %s, -loop-backoff-base %s, -loop-backoff-cap %s", b.loopWindow, b.loopBase, b.loopCap)
	case engine.ReasonUnconfirmed:
		name = "a hold until confirmed with the annotation " + eviction.ConfirmAnnotation
		add(true, "-confirm-fraction %g", b.confirm)
		add(b.confirmMin > 0, "-confirm-min-pods %d", b.confirmMin)
	}
	if len(parts) == 0 {
		return name
	}
	return name + ": " + strings.Join(parts, ", ")
}
