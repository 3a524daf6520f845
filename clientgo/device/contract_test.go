package device

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// TestObserverContract runs the engine's Observer contract (evictiontest.CheckContract)
// over the reports of this instantiation: random sequences of a driver tainting and
// untainting its devices, DeviceTaintRules created, changed and deleted, and time passing,
// with pods that tolerate some taints for a while; the controller deletes pods through
// the fake clientset, as it would through an API server.
func TestObserverContract(t *testing.T) {
	succeeded, cancelled := 0, 0
	defer func() {
		if succeeded == 0 || cancelled == 0 {
			t.Errorf("the runs reported %d Succeeded and %d Cancelled: want some of each", succeeded, cancelled)
		}
	}()
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := rand.New(rand.NewPCG(seed, 3))
				obs := &evictiontest.Observer{}
				var objs []runtime.Object
				for i, id := range []string{"p1/d0", "p1/d1", "p2/d0", "p2/d1"} {
					name := fmt.Sprint("w", i)
					tols := []resourcev1.DeviceToleration{tolerate("a", int64(r.IntN(120)))}
					objs = append(objs, claim("c-"+name, []dev{{id: id, tols: tols}}, name), pod(name, "c-"+name))
				}
				rg := newRig(t, Options{Observers: []engine.Observer{obs}}, objs...)
				rules := map[string]bool{}
				var trace []string
				for range 25 {
					switch r.IntN(5) {
					case 0, 1:
						pool := fmt.Sprint("p", 1+r.IntN(2))
						taints := map[string][]resourcev1.DeviceTaint{"d0": nil, "d1": nil}
						for _, d := range []string{"d0", "d1"} {
							if r.IntN(2) == 0 {
								taints[d] = []resourcev1.DeviceTaint{noExecute([]string{"a", "b"}[r.IntN(2)], at(0))}
							}
						}
						s := slice(pool, taints)
						if rules["slice "+pool] {
							rg.update(s)
						} else {
							rg.create(s)
							rules["slice "+pool] = true
						}
						trace = append(trace, fmt.Sprintf("slice %s %v", pool, taints))
					case 2:
						name := fmt.Sprint("r", r.IntN(2))
						rl := rule(name, device(fmt.Sprint("p", 1+r.IntN(2)), fmt.Sprint("d", r.IntN(2))), noExecute("a", at(0)))
						if rules[name] {
							rg.deleteRule(name)
							delete(rules, name)
							trace = append(trace, "delete rule "+name)
						} else {
							rg.create(rl)
							rules[name] = true
							trace = append(trace, "rule "+name)
						}
					default:
						d := time.Duration(r.IntN(90)) * time.Second
						rg.sleep(d)
						trace = append(trace, "sleep "+d.String())
					}
				}
				rg.sleep(5 * time.Minute)
				events := obs.Events()
				succeeded += len(obs.Of(evictiontest.Succeeded))
				cancelled += len(obs.Of(evictiontest.Cancelled))
				for _, key := range evictiontest.Targets(events) {
					if _, err := evictiontest.CheckContract(evictiontest.EventsOf(events, key), false); err != nil {
						t.Errorf("%s: %v\nsteps %q\nreports %v", key, err, trace, evictiontest.EventsOf(events, key))
					}
				}
			})
		})
	}
}
