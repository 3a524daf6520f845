package engine_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/eviction/evictiontest"
)

// simServer is an API server and a client, simulated on synctest's clock: each actuator
// call makes requests requests; each request first waits for a token of the client's rate
// limiter (qps, burst; qps 0: none), then for one of the server's servers (servers in
// parallel, each request held for service). So the latency of a call grows with load once
// either the client's budget or the server's capacity binds.
type simServer struct {
	simConfig

	mu       sync.Mutex
	tokens   float64
	last     time.Time
	slots    chan struct{}
	calls    int
	inflight int
	peak     int
}

// simConfig is what a simServer simulates.
type simConfig struct {
	qps      float64
	burst    int
	servers  int
	service  time.Duration
	requests int
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
	for range s.requests {
		s.token()
		s.slots <- struct{}{}
		time.Sleep(s.service)
		<-s.slots
	}
	s.mu.Lock()
	s.inflight--
	s.mu.Unlock()
	return nil
}

// TestConcurrencyFollowsTheBottleneck evicts 2,000 targets due at once through simulated
// clients and servers, on synctest's clock, and checks how long it takes against what the
// bottleneck allows, and how many calls ran at once. With the default (ActWorkers 0) the
// number of act workers follows the latency: it grows while nothing waits, so that a client
// budget of 1,000 requests a second is used up (8 workers would make 8 calls per 48 ms,
// 333 evictions a second); and it stays near what the bottleneck serves when that is the
// API server, far below the cap, with a few calls waiting there rather than a hundred.
func TestConcurrencyFollowsTheBottleneck(t *testing.T) {
	const targets = 2000
	for _, tc := range []struct {
		name string
		sim  simConfig
		opts engine.Options
		// The least time the bottleneck allows, and how much longer it may take.
		floor time.Duration
		slack float64
		// The most calls that may run at once.
		maxInflight int
	}{
		{
			// The client's budget binds: (2 × 2,000 - 2,000 burst) / 1,000 a second = 2 s.
			name:  "qps 1000, burst 2000, 24 ms a request",
			sim:   simConfig{qps: 1000, burst: 2000, servers: 1000, service: 24 * time.Millisecond, requests: 2},
			floor: 2 * time.Second, slack: 0.2, maxInflight: engine.DefaultMaxActWorkers,
		},
		{
			// At 50 a second the budget binds whatever the workers: (4,000 - 100) / 50. The
			// burst's 50 calls go with no wait, and the limit grows by one with each (slow
			// start), a little more while the first calls to wait are not seen waiting yet;
			// once the budget binds it comes back down.
			name:  "qps 50, burst 100",
			sim:   simConfig{qps: 50, burst: 100, servers: 1000, service: 24 * time.Millisecond, requests: 2},
			floor: 78 * time.Second, slack: 0.02, maxInflight: engine.MinActWorkers + 100/2 + 2*6,
		},
		{
			// The server binds: 16 servers of 10 ms a request serve 800 calls a second:
			// 2.5 s. More calls than about 16 only wait there.
			name:  "server-bound: 16 servers, 10 ms a request",
			sim:   simConfig{servers: 16, service: 10 * time.Millisecond, requests: 2},
			floor: 2500 * time.Millisecond, slack: 0.2, maxInflight: 16 + 2*6 + 8,
		},
		{
			// Pinned: 8 workers, 48 ms a call: 2,000 / 8 × 48 ms = 12 s, whatever the budget.
			name:  "pinned at 8",
			sim:   simConfig{qps: 1000, burst: 2000, servers: 1000, service: 24 * time.Millisecond, requests: 2},
			opts:  engine.Options{ActWorkers: 8},
			floor: 12 * time.Second, slack: 0.05, maxInflight: 8,
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
				h := engine.Holder{Name: "h", Taints: []v1.Taint{{Key: "down", Effect: v1.TaintEffectNoExecute}}}
				src.SetHolder(h)
				e.HolderUpdated(h)
				if err := e.WaitIdle(ctx); err != nil {
					t.Fatal(err)
				}
				took := time.Since(start)
				if sim.calls != targets {
					t.Fatalf("got %d actuator calls, want %d", sim.calls, targets)
				}
				if took < tc.floor || took > time.Duration(float64(tc.floor)*(1+tc.slack)) {
					t.Errorf("took %v, want %v to %v", took, tc.floor, time.Duration(float64(tc.floor)*(1+tc.slack)))
				}
				if sim.peak > tc.maxInflight {
					t.Errorf("got %d calls at once, want at most %d", sim.peak, tc.maxInflight)
				}
				// Settled: no more workers than the bottleneck keeps busy with a few waiting.
				if got := e.ActWorkers(); got > 32 && tc.opts.ActWorkers == 0 {
					t.Errorf("got %d act workers at the end, want at most 32", got)
				}
				t.Logf("took %v; at most %d calls at once; %d act workers at the end", took, sim.peak, e.ActWorkers())
			})
		})
	}
}
