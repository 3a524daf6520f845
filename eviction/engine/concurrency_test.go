package engine_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// simServer is an API server and a client, simulated on synctest's clock: each actuator
// call makes requests requests; each request first waits for a token of the client's rate
// limiter (qps, burst; qps 0: none), then for one of the server's servers (servers in
// parallel, each request held for service). So the latency of a call grows with load once
// either the client's budget or the server's capacity binds, and the server's throughput
// stops rising once its servers are busy (its knee). A request that finds more than
// refuseAbove requests at the server (0: no bound) is refused with a 429 after a tenth of a
// request's service time, as API Priority and Fairness refuses one when its queues are
// full, and the call fails.
type simServer struct {
	simConfig

	mu       sync.Mutex
	tokens   float64
	last     time.Time
	slots    chan struct{}
	calls    int
	refused  int
	inflight int
	atServer int
	peak     int
	// lastServed is when the last call that was not refused ended.
	lastServed time.Time
}

// served is the calls that were not refused.
func (s *simServer) served() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls - s.refused
}

// simConfig is what a simServer simulates.
type simConfig struct {
	qps         float64
	burst       int
	servers     int
	service     time.Duration
	requests    int
	refuseAbove int
}

func (s *simServer) init() {
	s.tokens, s.last = float64(s.burst), time.Now()
	s.slots = make(chan struct{}, s.servers)
}

// token waits for a token of the client's rate limiter, as client-go's does: it takes one
// now, going into debt, and sleeps until the debt is paid.
func (s *simServer) token() {
	if s.qps == 0 {
		return
	}
	s.mu.Lock()
	now := time.Now()
	s.tokens = min(float64(s.burst), s.tokens+now.Sub(s.last).Seconds()*s.qps)
	s.last = now
	s.tokens--
	wait := time.Duration(0)
	if s.tokens < 0 {
		wait = time.Duration(-s.tokens / s.qps * float64(time.Second))
	}
	s.mu.Unlock()
	time.Sleep(wait)
}

func (s *simServer) act(ctx context.Context, _ engine.Ref) error {
	s.mu.Lock()
	s.calls++
	s.inflight++
	s.peak = max(s.peak, s.inflight)
	s.mu.Unlock()
	refused := false
	defer func() {
		s.mu.Lock()
		s.inflight--
		if !refused {
			s.lastServed = time.Now()
		}
		s.mu.Unlock()
	}()
	for range s.requests {
		s.token()
		s.mu.Lock()
		if s.refuseAbove > 0 && s.atServer >= s.refuseAbove {
			s.refused++
			refused = true
			s.mu.Unlock()
			time.Sleep(s.service / 10) // the round trip of a refusal
			return apierrors.NewTooManyRequests("too many requests, please try again later", 1)
		}
		s.atServer++
		s.mu.Unlock()
		s.slots <- struct{}{}
		time.Sleep(s.service)
		<-s.slots
		s.mu.Lock()
		s.atServer--
		s.mu.Unlock()
	}
	return nil
}

// TestConcurrencyFollowsTheBottleneck evicts thousands of targets due at once through
// simulated clients and servers, on synctest's clock, and checks how long it takes against
// what the bottleneck allows, how many calls ran at once, and how many the server refused.
// With the default (ActWorkers 0) the number of act workers follows the throughput: it
// grows while more calls in flight complete more calls a second, so that a client budget
// of 1,000 requests a second is used up (8 workers would make 8 calls per 48 ms, 333
// evictions a second) and a server is kept at its knee; it stops growing where the
// throughput stops rising, whether a server or the client's rate limiter binds; and it
// backs off when the server refuses calls for load.
func TestConcurrencyFollowsTheBottleneck(t *testing.T) {
	for _, tc := range []struct {
		name    string
		targets int
		sim     simConfig
		opts    engine.Options
		// The least time the bottleneck allows, and how much longer it may take.
		floor time.Duration
		slack float64
		// The most calls that may run at once (0: no bound, where the start-up may reach
		// the cap), and act workers at the end.
		maxInflight, maxWorkers int
	}{
		{
			// The client's budget binds: (2 × 2,000 - 2,000 burst) / 1,000 a second = 2 s.
			name: "qps 1000, burst 2000, 24 ms a request", targets: 2000,
			sim:   simConfig{qps: 1000, burst: 2000, servers: 1000, service: 24 * time.Millisecond, requests: 2},
			floor: 2 * time.Second, slack: 0.1, maxWorkers: engine.DefaultMaxActWorkers,
		},
		{
			// At 50 a second the budget binds whatever the workers: (4,000 - 100) / 50.
			// The burst's rate makes the limit double a few times, up to the cap for an
			// epoch (a doubling that bought little is tried once more); once the budget binds,
			// more calls buy nothing, and once the burst's rate is out of the window of
			// recent rates it comes down, a fifth at a time, towards the floor.
			name: "qps 50, burst 100", targets: 2000,
			sim:   simConfig{qps: 50, burst: 100, servers: 1000, service: 24 * time.Millisecond, requests: 2},
			floor: 78 * time.Second, slack: 0.02, maxWorkers: 2 * engine.MinActWorkers, // on the way down to the floor
		},
		{
			// The server binds: 16 servers of 10 ms a request serve 800 calls a second:
			// 6.25 s for 5,000. More calls than about 16 only wait there. The start-up
			// may double past them up to the cap (a doubling that buys little is tried
			// once more), the probes bring the limit back down, and try a quarter more
			// and a fifth less now and then: the whole burst within 15%.
			name: "server-bound: 16 servers, 10 ms a request", targets: 5000,
			sim:   simConfig{servers: 16, service: 10 * time.Millisecond, requests: 2},
			floor: 6250 * time.Millisecond, slack: 0.15, maxWorkers: 48,
		},
		{
			// The same server, one request a call (1,600 a second: 6.25 s for 10,000),
			// refusing requests once 48 are there: the start-up's doubling finds the
			// refusals, and the limit backs off below them and probes no higher for a while.
			name: "server-bound, refusing past 48", targets: 10000,
			sim:   simConfig{servers: 16, service: 10 * time.Millisecond, requests: 1, refuseAbove: 48},
			floor: 6250 * time.Millisecond, slack: 0.15, maxInflight: 64, maxWorkers: 48,
		},
		{
			// Pinned: 8 workers, 48 ms a call: 2,000 / 8 × 48 ms = 12 s, whatever the budget.
			name: "pinned at 8", targets: 2000,
			sim:   simConfig{qps: 1000, burst: 2000, servers: 1000, service: 24 * time.Millisecond, requests: 2},
			opts:  engine.Options{ActWorkers: 8},
			floor: 12 * time.Second, slack: 0.05, maxInflight: 8, maxWorkers: 8,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sim := &simServer{simConfig: tc.sim}
				sim.init()
				src := &evictiontest.Source{}
				opts := tc.opts
				e, err := engine.New(engine.ActuatorFunc(sim.act), engine.Source[engine.Target](src), opts)
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- e.Run(ctx) }()
				defer func() { cancel(); <-done }()
				targets := tc.targets
				for i := range targets {
					tg := engine.Target{Key: types.NamespacedName{Namespace: "ns", Name: fmt.Sprint("t", i)}, UID: types.UID(fmt.Sprint("u", i)),
						Bindings: []engine.Binding{{Holder: "h"}}}
					src.SetTarget(tg)
					e.TargetUpdated(tg)
				}
				if err := e.WaitIdle(ctx); err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				var trace []int
				tctx, tstop := context.WithCancel(ctx)
				traced := make(chan struct{})
				go func() {
					defer close(traced)
					for tctx.Err() == nil {
						trace = append(trace, e.ActWorkers())
						time.Sleep(100 * time.Millisecond)
					}
				}()
				h := engine.Holder{Name: "h", Taints: []v1.Taint{{Key: "down", Effect: v1.TaintEffectNoExecute}}}
				src.SetHolder(h)
				e.HolderUpdated(h)
				// WaitIdle does not wait for retries in their backoff: wait for them too.
				for {
					if err := e.WaitIdle(ctx); err != nil {
						t.Fatal(err)
					}
					if sim.served() >= targets {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
				took := sim.lastServed.Sub(start)
				tstop()
				<-traced
				if got := sim.served(); got != targets {
					t.Fatalf("got %d actuator calls served, want %d", got, targets)
				}
				if sim.refused*100 > sim.calls {
					t.Errorf("got %d of %d calls refused, want at most 1%%", sim.refused, sim.calls)
				}
				if took < tc.floor || took > time.Duration(float64(tc.floor)*(1+tc.slack)) {
					t.Errorf("took %v, want %v to %v", took, tc.floor, time.Duration(float64(tc.floor)*(1+tc.slack)))
				}
				if tc.maxInflight > 0 && sim.peak > tc.maxInflight {
					t.Errorf("got %d calls at once, want at most %d", sim.peak, tc.maxInflight)
				}
				if got := e.ActWorkers(); got > tc.maxWorkers {
					t.Errorf("got %d act workers at the end, want at most %d", got, tc.maxWorkers)
				}
				t.Logf("took %v; at most %d calls at once; %d act workers at the end; %d refused; workers every 100 ms: %v", took, sim.peak, e.ActWorkers(), sim.refused, trace)
			})
		})
	}
}
