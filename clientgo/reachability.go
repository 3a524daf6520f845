package clientgo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// DefaultProbeInterval is the ProbeInterval that zero means.
const DefaultProbeInterval = time.Second

// ReachabilityOptions configures a [Reachability]. The zero value is ready to use.
type ReachabilityOptions struct {
	// ProbeInterval is how long Run waits before each probe; negative is an error.
	ProbeInterval time.Duration
}

// Reachability tells whether the API server answers, from the outcomes of the requests a
// client makes anyway ([Reachability.Wrap] goes into its [k8s.io/client-go/rest.Config]):
// a request that fails without an answer (a refused, reset or broken connection, a TLS
// failure), and a watch whose stream breaks, make the server unreachable; an answer with
// a status below 500 makes it reachable again; a 5xx, and a request whose caller gave up,
// change nothing. [Reachability.Err] says so for a readiness probe; [Reachability.Run],
// while the server is unreachable, probes it and tells the caller each time it comes
// back. One Reachability serves every controller of a client.
//
// Its methods are safe for concurrent use. The zero Reachability is not usable: create one
// with [NewReachability].
type Reachability struct {
	interval time.Duration

	down atomic.Bool // read on every request; written under mu

	mu      sync.Mutex
	since   time.Time          // when the server became unreachable; zero until a Run saw it
	clock   clock.PassiveClock // the first Run's
	last    error              // the failure that made or kept the server unreachable
	returns uint64             // the comebacks
	changed chan struct{}      // closed, and replaced, to wake every Run
	probing bool               // a Run probes
}

// NewReachability returns a Reachability that counts the server reachable until a request
// fails. It fails for a negative ProbeInterval.
func NewReachability(opts ReachabilityOptions) (*Reachability, error) {
	if opts.ProbeInterval < 0 {
		return nil, fmt.Errorf("clientgo: ReachabilityOptions.ProbeInterval must not be negative, got %v", opts.ProbeInterval)
	}
	if opts.ProbeInterval == 0 {
		opts.ProbeInterval = DefaultProbeInterval
	}
	return &Reachability{interval: opts.ProbeInterval, changed: make(chan struct{})}, nil
}

// Err returns nil while the API server is reachable, and otherwise an error that says why
// and, once a Run has seen it, since when it has not answered. It does not block.
func (r *Reachability) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case !r.down.Load():
		return nil
	case r.since.IsZero():
		return fmt.Errorf("clientgo: the API server does not answer: %w", r.last)
	}
	return fmt.Errorf("clientgo: the API server has not answered for %s (since %s): %w",
		r.clock.Since(r.since).Round(time.Second), r.since.Format(time.RFC3339), r.last)
}

// Wrap returns rt with every request's outcome recorded, for the Wrap method of a client's
// [k8s.io/client-go/rest.Config]. It is safe for concurrent use when rt is.
func (r *Reachability) Wrap(rt http.RoundTripper) http.RoundTripper {
	return &reachTransport{r: r, rt: rt}
}

type reachTransport struct {
	r  *Reachability
	rt http.RoundTripper
}

func (t *reachTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err != nil {
		if req.Context().Err() == nil {
			t.r.failed(err)
		}
		return resp, err
	}
	if resp.StatusCode < 500 {
		t.r.answered()
	}
	if isWatch(req) && resp.Body != nil {
		resp.Body = &watchBody{ReadCloser: resp.Body, r: t.r, ctx: req.Context()}
	}
	return resp, nil
}

// WrappedRoundTripper returns the wrapped RoundTripper, as client-go's own wrappers do.
func (t *reachTransport) WrappedRoundTripper() http.RoundTripper { return t.rt }

// watchBody is a watch's stream: one that breaks, other than by its end or its caller's
// leaving, counts as a failure.
type watchBody struct {
	io.ReadCloser
	r      *Reachability
	ctx    context.Context
	closed atomic.Bool
}

func (b *watchBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && b.ctx.Err() == nil && !b.closed.Load() {
		b.r.failed(fmt.Errorf("watch stream: %w", err))
	}
	return n, err
}

// Close marks the stream closed first, so that the read it interrupts is not counted.
func (b *watchBody) Close() error {
	b.closed.Store(true)
	return b.ReadCloser.Close()
}

func (r *Reachability) failed(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = err
	if r.down.Load() {
		return
	}
	r.since = time.Time{}
	if r.clock != nil {
		r.since = r.clock.Now()
	}
	r.down.Store(true)
	r.poke()
}

func (r *Reachability) answered() {
	if !r.down.Load() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.down.Load() {
		return
	}
	r.down.Store(false)
	r.returns++
	r.poke()
}

// poke wakes every Run; under mu.
func (r *Reachability) poke() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// Run watches the server's reachability until ctx is done, then returns ctx's error. clk
// (nil: the real clock) times the probes and, the first Run's, tells since when the server
// has not answered. While the server is unreachable Run calls probe (if not nil) every
// ProbeInterval after the last probe ended, bounded by that interval or 5 s, whichever is
// longer; one that returns nil makes the server reachable. Each time the server comes back
// (and at its start, if it came back before), Run calls returned, if not nil, in its own
// goroutine; it must not block for long. Run may be called several times at once, one per
// controller: each is told every comeback while it runs, and one at a time probes.
func (r *Reachability) Run(ctx context.Context, clk clock.Clock, probe func(context.Context) error, returned func()) error {
	if clk == nil {
		clk = clock.RealClock{}
	}
	var seen uint64 // comebacks told to returned
	probing := false
	var timer clock.Timer
	var tc <-chan time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
		if probing {
			r.stopProbing()
		}
	}()
	for {
		returns, wake := r.look(clk, probe != nil, &probing)
		if returns != seen {
			seen = returns
			if returned != nil {
				returned()
			}
		}
		switch {
		case probing && timer == nil:
			timer = clk.NewTimer(r.interval)
			tc = timer.C()
		case !probing && timer != nil:
			timer.Stop()
			timer, tc = nil, nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
		case <-tc:
			if r.probe(ctx, clk, probe) == nil {
				r.answered()
			}
			timer.Reset(r.interval) // it fired: the next probe an interval after this one
		}
	}
}

// look takes the probing over or gives it up, and returns the comebacks so far and the
// channel that the next change closes.
func (r *Reachability) look(clk clock.PassiveClock, canProbe bool, probing *bool) (returns uint64, wake <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.clock == nil {
		r.clock = clk
	}
	down := r.down.Load()
	if down && r.since.IsZero() {
		r.since = r.clock.Now() // it failed before any Run ran
	}
	switch {
	case down && canProbe && !*probing && !r.probing:
		r.probing, *probing = true, true
	case !down && *probing:
		r.probing, *probing = false, false
	}
	return r.returns, r.changed
}

// stopProbing gives up the probing of a Run that returns, so that another may take over.
func (r *Reachability) stopProbing() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.probing = false
	r.poke()
}

// probe calls probe with a context that the clock cancels after the interval or 5 s,
// whichever is longer.
func (r *Reachability) probe(ctx context.Context, clk clock.Clock, probe func(context.Context) error) error {
	pctx, cancel := context.WithCancel(ctx)
	timer := clk.NewTimer(max(r.interval, 5*time.Second))
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-timer.C():
		case <-pctx.Done():
		}
		cancel()
	})
	err := probe(pctx)
	cancel()
	wg.Wait()
	timer.Stop()
	return err
}

// IsUnreachable reports whether err, from a client-go request, says that the API server
// gave no answer (a *url.Error): not the caller's own context ending, nor an answer.
func IsUnreachable(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// ReadyzProbe returns the probe for [Reachability.Run] that asks client's API server
// whether it is back: GET /readyz, which any authenticated user may make; nil for a client
// with no REST client (a fake clientset's).
func ReadyzProbe(client kubernetes.Interface) func(context.Context) error {
	rc := client.Discovery().RESTClient()
	if rc == nil {
		return nil
	}
	return func(ctx context.Context) error { return rc.Get().AbsPath("/readyz").Do(ctx).Error() }
}

// isWatch reports whether req asks for a watch, as client-go does.
func isWatch(req *http.Request) bool {
	w := req.URL.Query().Get("watch")
	return w == "true" || w == "1"
}
