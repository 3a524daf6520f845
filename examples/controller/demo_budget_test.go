package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/taintevict/taintevict/clientgo"
)

// TestDemoBudgets runs the scenario with the eviction budgets on: the script's waits must
// end (a pod the brake holds is not waited for; one a rate limit holds is), and the output
// says why an eviction waited.
func TestDemoBudgets(t *testing.T) {
	for _, tc := range []struct {
		name          string
		flags         []string
		evicted, kept []string
		lines         []string
	}{{
		name:  "brake: node-1 is half the nodes, more than 0.4",
		flags: []string{"-brake-fraction=0.4"},
		kept:  []string{"shop/web-1", "batch/train-1", "shop/api-1", "shop/cache-1"},
		lines: []string{"delayed    shop/web-1 on node-1: Paused", "== shop/web-1 is paused by the brake: going on", "== shop/api-1 is paused by the brake: going on", "Pausing deletion of Pod shop/web-1: " + clientgo.PausedMessage},
	}, {
		name:    "rate: one eviction a second",
		flags:   []string{"-eviction-rate=1", "-eviction-burst=1"},
		evicted: []string{"shop/web-1", "batch/train-1", "shop/api-1"},
		kept:    []string{"shop/cache-1"},
		lines:   []string{": RateLimited", "Marking for deletion Pod shop/api-1", "Cancelling deletion of Pod shop/cache-1"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			client := NewDemoClientset(1)
			ctx, cancel := context.WithTimeout(t.Context(), failAfter)
			defer cancel()
			var out bytes.Buffer
			require.NoError(t, RunDemo(ctx, client, &out, DemoOptions{Seconds: 1, Config: flagsOf(t, tc.flags...)}))
			t.Log("\n" + out.String())
			exists := func(pod string) bool {
				ns, name, _ := strings.Cut(pod, "/")
				_, err := client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
				return !apierrors.IsNotFound(err)
			}
			for _, p := range tc.evicted {
				assert.Falsef(t, exists(p), "%s: want it evicted", p)
			}
			for _, p := range tc.kept {
				assert.Truef(t, exists(p), "%s: want it kept", p)
			}
			for _, l := range tc.lines {
				assert.Contains(t, out.String(), l)
			}
		})
	}
}
