package main

import (
	"flag"
	"fmt"
	"math"
	"time"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
)

// The -deadline-source values.
const (
	deadlineTimeAdded   = "time-added"
	deadlineObservation = "observation"
)

// managerFlags are the command line's choices of the Manager's behaviour beyond its
// workers and budgets: how it retries, where countdowns start, and whether the Lt and Gt
// toleration operators match. Their defaults are eviction.Options' own.
type managerFlags struct {
	backoffBase         time.Duration
	backoffCap          time.Duration
	backoffJitter       float64
	deleteTimeout       time.Duration
	deadlineSource      eviction.DeadlineSource
	comparisonOperators bool
}

// define defines the Manager's flags on fs, with eviction.Options' defaults.
func (m *managerFlags) define(fs *flag.FlagSet) {
	fs.DurationVar(&m.backoffBase, "backoff-base", 100*time.Millisecond, "after a failed eviction, wait this long before the first retry, then twice as long each time")
	fs.DurationVar(&m.backoffCap, "backoff-cap", 2*time.Minute, "the longest wait between two retries of an eviction")
	fs.Float64Var(&m.backoffJitter, "backoff-jitter", 0.2, "take away at random up to this fraction of each wait, in [0, 1] (0: no jitter)")
	fs.DurationVar(&m.deleteTimeout, "delete-timeout", engine.DefaultActTimeout, "give up on an eviction's API calls after this long, and retry them after the backoff (a stalled etcd holds a delete until it resumes)")
	fs.Func("deadline-source", "where a countdown starts: "+deadlineTimeAdded+" (the taint's TimeAdded: a restart or a new leader keeps deadlines) or "+deadlineObservation+" (when the controller first sees the pod, as kube-controller-manager does) (default "+deadlineTimeAdded+")", func(s string) error {
		switch s {
		case deadlineTimeAdded:
			m.deadlineSource = eviction.FromTimeAdded
		case deadlineObservation:
			m.deadlineSource = eviction.FromObservation
		default:
			return fmt.Errorf("want %s or %s", deadlineTimeAdded, deadlineObservation)
		}
		return nil
	})
	fs.BoolVar(&m.comparisonOperators, "comparison-operators", false, "let tolerations with the operators Lt and Gt match taints whose values compare as integers (kube's TaintTolerationComparisonOperators feature)")
}

// validate checks the values the flag package cannot.
func (m managerFlags) validate() error {
	switch {
	case m.backoffBase <= 0:
		return fmt.Errorf("-backoff-base must be positive, got %s", m.backoffBase)
	case m.backoffCap < m.backoffBase:
		return fmt.Errorf("-backoff-cap (%s) must not be less than -backoff-base (%s)", m.backoffCap, m.backoffBase)
	case m.deleteTimeout <= 0:
		return fmt.Errorf("-delete-timeout must be positive, got %s", m.deleteTimeout)
	case !(m.backoffJitter >= 0 && m.backoffJitter <= 1) || math.IsNaN(m.backoffJitter):
		return fmt.Errorf("-backoff-jitter must be in [0, 1], got %g", m.backoffJitter)
	}
	return nil
}

// apply sets the Manager's options that m chooses.
func (m managerFlags) apply(o *eviction.Options) {
	jitter := m.backoffJitter
	if jitter == 0 {
		jitter = -1 // eviction.Backoff's "off"; its 0 means the default 0.2
	}
	o.Backoff = eviction.Backoff{Base: m.backoffBase, Cap: m.backoffCap, Jitter: jitter}
	o.ActTimeout = m.deleteTimeout
	o.DeadlineSource = m.deadlineSource
	o.Tolerations.ComparisonOperators = m.comparisonOperators
}
