package eviction_test

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/eviction"
)

// syncable is what synced tells: an *eviction.Manager or an *engine.Engine.
type syncable interface{ Synced() }

// synced tells x that it has been told of every node and pod (holder and target) its Cache
// has, as a Controller does once its informers' handlers have synced. It is the one place
// the tests of this package say so.
func synced(x syncable) { x.Synced() }

// TestManagerBudgetsHoldAfterRestart: a Manager started in the middle of an outage, and fed
// the cluster as informers feed a new leader (in any order, each update processed before
// the next arrives), deletes nothing while the Brake's rule, or Confirm's, holds for the
// outage in the Cache. 6 of 10 nodes were tainted unreachable 10 minutes ago, and their
// pods tolerate that for 300 s: long past due. Once told it has seen everything (synced),
// it holds them as the Manager it replaced did; until then it lets nothing through.
func TestManagerBudgetsHoldAfterRestart(t *testing.T) {
	orders := []struct {
		name  string
		order []string // "n3": node n3's add; "p3": pod p3's (on n3)
	}{
		{"pods first", append(names("p", 0, 10), names("n", 0, 10)...)},
		{"each pod before its node", alternate(names("p", 0, 10), names("n", 0, 10))},
		{"healthy nodes first", append(names("n", 6, 10), alternate(names("n", 0, 6), names("p", 0, 10))...)},
		{"tainted nodes last", append(alternate(names("n", 6, 10), names("p", 0, 10)), names("n", 0, 6)...)},
	}
	budgets := []struct {
		name   string
		opts   eviction.Options
		reason eviction.Reason
	}{
		{"Brake", eviction.Options{Brake: eviction.Brake{Fraction: 0.5}}, eviction.ReasonPaused},
		{"Confirm", eviction.Options{Confirm: eviction.Confirm{Fraction: 0.5}}, eviction.ReasonUnconfirmed},
	}
	for _, b := range budgets {
		for _, o := range orders {
			synctestRunManager(t, b.name+"/"+o.name, func(t *testing.T) {
				h := runUnsynced(t, b.opts) // Run first, as a Controller does
				h.removeOnDelete()
				for i := range 10 {
					n := newNode(fmt.Sprint("n", i))
					if i < 6 {
						n = newNode(n.Name, noExecute(unreachable, t0.Add(-10*time.Minute)))
					}
					h.cache.SetNode(n)
					h.cache.SetPod(newPod(fmt.Sprint("p", i), n.Name, withTolerations(tolFor(unreachable, 300))))
				}
				for _, name := range o.order {
					if name[0] == 'n' {
						n, _ := h.cache.Node(name)
						h.m.NodeUpdated(nil, n)
					} else {
						p, _ := h.cache.Pod(ns, name)
						h.m.PodUpdated(nil, p)
					}
					synctest.Wait() // processed before the next update arrives
				}
				synced(h.m.(*eviction.Manager))
				h.wait()
				h.step(time.Minute)
				h.expectDeleted()
				var held []string
				for _, p := range h.m.Pending() {
					if p.Delayed == b.reason {
						held = append(held, p.Target.Name)
					}
				}
				if want := names("p", 0, 6); !slices.Equal(held, want) {
					t.Errorf("held %v with %s, want %v; pending %v", held, b.reason, want, h.m.Pending())
				}
				// 4 of 10 nodes tainted: the rule lets go, and what it held goes. Both nodes are
				// in the Cache before the Manager hears of either: Confirm lets go at 5 of 10
				// already, and p1 would go if n1 were still tainted then.
				olds := []*v1.Node{}
				for _, name := range []string{"n0", "n1"} {
					old, _ := h.cache.Node(name)
					olds = append(olds, old)
					h.cache.SetNode(newNode(name))
				}
				for i, name := range []string{"n0", "n1"} {
					n, _ := h.cache.Node(name)
					h.m.NodeUpdated(olds[i], n)
				}
				h.wait()
				h.expectDeleted("p2@+1m0s", "p3@+1m0s", "p4@+1m0s", "p5@+1m0s")
			})
		}
	}
}

// names returns prefix+i for i in [from, to).
func names(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprint(prefix, i))
	}
	return out
}

// alternate returns a[0], b[0], a[1], b[1]... then the rest of the longer.
func alternate(a, b []string) []string {
	var out []string
	for i := 0; i < len(a) || i < len(b); i++ {
		if i < len(a) {
			out = append(out, a[i])
		}
		if i < len(b) {
			out = append(out, b[i])
		}
	}
	return out
}
