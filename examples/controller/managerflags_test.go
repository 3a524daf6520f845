package main

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/eviction/evictiontest"
	"github.com/taintevict/taintevict/tolerations"
)

func TestManagerFlags(t *testing.T) {
	defaultBackoff := eviction.Backoff{Base: 100 * time.Millisecond, Cap: 2 * time.Minute, Jitter: 0.2}
	for _, tc := range []struct {
		name string
		args []string
		want eviction.Options // the fields the flags set
	}{
		{name: "none: eviction.Options' defaults, spelled out", want: eviction.Options{Backoff: defaultBackoff, ActTimeout: engine.DefaultActTimeout}},
		{name: "a delete timeout", args: []string{"-delete-timeout=5s"},
			want: eviction.Options{Backoff: defaultBackoff, ActTimeout: 5 * time.Second}},
		{name: "a backoff",
			args: []string{"-backoff-base=1s", "-backoff-cap=5m", "-backoff-jitter=0.5"},
			want: eviction.Options{Backoff: eviction.Backoff{Base: time.Second, Cap: 5 * time.Minute, Jitter: 0.5}}},
		{name: "no jitter: the Backoff's negative Jitter",
			args: []string{"-backoff-jitter=0"},
			want: eviction.Options{Backoff: eviction.Backoff{Base: 100 * time.Millisecond, Cap: 2 * time.Minute, Jitter: -1}}},
		{name: "a cap equal to the base: every wait the same",
			args: []string{"-backoff-base=3s", "-backoff-cap=3s"},
			want: eviction.Options{Backoff: eviction.Backoff{Base: 3 * time.Second, Cap: 3 * time.Second, Jitter: 0.2}}},
		{name: "deadlines from observation", args: []string{"-deadline-source=observation"},
			want: eviction.Options{Backoff: defaultBackoff, DeadlineSource: eviction.FromObservation}},
		{name: "deadlines from TimeAdded, said", args: []string{"-deadline-source=time-added"},
			want: eviction.Options{Backoff: defaultBackoff, DeadlineSource: eviction.FromTimeAdded}},
		{name: "comparison operators", args: []string{"-comparison-operators"},
			want: eviction.Options{Backoff: defaultBackoff, Tolerations: tolerations.Options{ComparisonOperators: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := flagsOf(t, tc.args...).controllerOptions().Manager
			got := eviction.Options{Backoff: m.Backoff, ActTimeout: m.ActTimeout, DeadlineSource: m.DeadlineSource, Tolerations: m.Tolerations}
			if tc.want.ActTimeout == 0 {
				tc.want.ActTimeout = engine.DefaultActTimeout
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			// What the flags accept, the Manager accepts.
			m.DryRun = true
			if _, err := eviction.New(nil, &evictiontest.Cache{}, m); err != nil {
				t.Errorf("eviction.New: got %v, want no error", err)
			}
		})
	}
}

func TestBadManagerFlags(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-backoff-base=0s"}, "-backoff-base must be positive, got 0s"},
		{[]string{"-backoff-base=-1s"}, "-backoff-base must be positive, got -1s"},
		{[]string{"-backoff-base=soon"}, `invalid value "soon" for flag -backoff-base`},
		{[]string{"-backoff-base=10s", "-backoff-cap=1s"}, "-backoff-cap (1s) must not be less than -backoff-base (10s)"},
		{[]string{"-backoff-jitter=1.5"}, "-backoff-jitter must be in [0, 1], got 1.5"},
		{[]string{"-backoff-jitter=-0.1"}, "-backoff-jitter must be in [0, 1], got -0.1"},
		{[]string{"-backoff-jitter=NaN"}, "-backoff-jitter must be in [0, 1], got NaN"},
		{[]string{"-delete-timeout=0s"}, "-delete-timeout must be positive, got 0s"},
		{[]string{"-deadline-source=now"}, `invalid value "now" for flag -deadline-source: want time-added or observation`},
		{[]string{"-comparison-operators=maybe"}, `invalid boolean value "maybe" for -comparison-operators`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if got := run(tc.args, &stdout, &stderr); got != 2 {
				t.Errorf("exit code: got %d, want 2", got)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout: got %q, want nothing", stdout.String())
			}
			if n := strings.Count(stderr.String(), "\n"); n != 1 {
				t.Errorf("stderr: got %d lines (%q), want one", n, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr: got %q, want it to contain %q", stderr.String(), tc.want)
			}
		})
	}
}
