package clientgo_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	testclock "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/clientgo"
)

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// answer returns a response of code with body.
func answer(code int, body io.ReadCloser) func(*http.Request) (*http.Response, error) {
	return func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: code, Body: body}, nil
	}
}

func refused(*http.Request) (*http.Response, error) {
	return nil, &url.Error{Op: "Get", URL: "https://api", Err: syscall.ECONNREFUSED}
}

// brokenBody reads some bytes, then fails with err.
type brokenBody struct {
	data string
	err  error
}

func (b *brokenBody) Read(p []byte) (int, error) {
	if b.data == "" {
		return 0, b.err
	}
	n := copy(p, b.data)
	b.data = b.data[n:]
	return n, nil
}

func (b *brokenBody) Close() error { return nil }

func newReachability(t *testing.T) *clientgo.Reachability {
	t.Helper()
	r, err := clientgo.NewReachability(clientgo.ReachabilityOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestReachabilityOutcomes: each kind of outcome, after a server that answered (up) or one
// that did not (down), leaves it as the table says.
func TestReachabilityOutcomes(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name     string
		ctx      context.Context
		rt       func(*http.Request) (*http.Response, error)
		query    string
		from     bool // down before the request
		wantDown bool
	}{
		{name: "refused makes it down", rt: refused, wantDown: true},
		{name: "refused keeps it down", rt: refused, from: true, wantDown: true},
		{name: "200 brings it back", rt: answer(200, http.NoBody), from: true},
		{name: "404 brings it back", rt: answer(404, http.NoBody), from: true},
		{name: "429 brings it back", rt: answer(429, http.NoBody), from: true},
		{name: "503 keeps it down", rt: answer(503, http.NoBody), from: true, wantDown: true},
		{name: "500 keeps it up", rt: answer(500, http.NoBody)},
		{name: "the caller's cancel keeps it up", ctx: cancelled, rt: refused},
		{name: "the caller's cancel keeps it down", ctx: cancelled, rt: answer(503, http.NoBody), from: true, wantDown: true},
		{name: "a broken watch makes it down", query: "watch=true", rt: answer(200, &brokenBody{data: "{}", err: io.ErrUnexpectedEOF}), wantDown: true},
		{name: "a watch that ends keeps it up", query: "watch=true", rt: answer(200, &brokenBody{data: "{}", err: io.EOF})},
		{name: "a broken list body is not counted", rt: answer(200, &brokenBody{data: "{}", err: io.ErrUnexpectedEOF})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReachability(t)
			down := r.Wrap(roundTripFunc(refused))
			if tt.from {
				req, _ := http.NewRequest("GET", "https://api/api/v1/pods", nil)
				_, _ = down.RoundTrip(req)
			}
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			req, _ := http.NewRequestWithContext(ctx, "GET", "https://api/api/v1/pods?"+tt.query, nil)
			resp, err := r.Wrap(roundTripFunc(tt.rt)).RoundTrip(req)
			if err == nil {
				_, _ = io.ReadAll(resp.Body)
			}
			if got := r.Err() != nil; got != tt.wantDown {
				t.Errorf("got down %v (%v), want %v", got, r.Err(), tt.wantDown)
			}
		})
	}
}

// TestReachabilityErrSays: the readiness error says why and, once a Run has seen the
// outage (on its clock), since when and for how long; a failure seen while a Run runs is
// dated at once.
func TestReachabilityErrSays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
		clk := testclock.NewFakeClock(start)
		r := newReachability(t)
		req, _ := http.NewRequest("GET", "https://api/version", nil)
		fail := r.Wrap(roundTripFunc(refused))
		_, _ = fail.RoundTrip(req)
		says := func(want ...string) {
			t.Helper()
			err := r.Err()
			if err == nil {
				t.Fatal("got nil, want an error")
			}
			for _, w := range want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to contain %q", err, w)
				}
			}
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("got %v, want it to wrap ECONNREFUSED", err)
			}
		}
		says("clientgo: the API server does not answer", "connection refused") // no Run yet

		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- r.Run(ctx, clk, nil, nil) }()
		synctest.Wait()
		clk.Step(7 * time.Second)
		says("clientgo: ", "for 7s", "since 2030-01-01T10:00:00Z", "connection refused")

		_, _ = r.Wrap(roundTripFunc(answer(200, http.NoBody))).RoundTrip(req)
		clk.Step(time.Minute)
		_, _ = fail.RoundTrip(req)
		clk.Step(2 * time.Second)
		says("for 2s", "since 2030-01-01T10:01:07Z")
		cancel()
		<-done
	})
}

// TestReachabilityRun: Run probes nothing while the server answers; once it does not, it
// probes every ProbeInterval until a probe succeeds, then calls returned once and stops
// probing; a comeback seen through another request is told too.
func TestReachabilityRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := testclock.NewFakeClock(time.Now())
		r := newReachability(t)
		var probes, returns atomic.Int32
		var back atomic.Bool
		probe := func(context.Context) error {
			probes.Add(1)
			if back.Load() {
				return nil
			}
			return errors.New("refused")
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- r.Run(ctx, clk, probe, func() { returns.Add(1) }) }()
		step := func(d time.Duration) {
			synctest.Wait()
			clk.Step(d)
			synctest.Wait()
		}
		for range 10 {
			step(time.Second)
		}
		if got := probes.Load(); got != 0 {
			t.Fatalf("got %d probes while the server answered, want 0", got)
		}

		rt := r.Wrap(roundTripFunc(refused))
		req, _ := http.NewRequest("GET", "https://api/version", nil)
		_, _ = rt.RoundTrip(req)
		for range 3 {
			step(time.Second)
		}
		if got := probes.Load(); got != 3 {
			t.Errorf("got %d probes in 3 s down, want 3", got)
		}
		back.Store(true)
		step(time.Second)
		if r.Err() != nil || returns.Load() != 1 {
			t.Errorf("after a successful probe: got Err %v and %d comebacks, want nil and 1", r.Err(), returns.Load())
		}
		for range 5 {
			step(time.Second)
		}
		if got := probes.Load(); got != 4 {
			t.Errorf("got %d probes, want 4 (none once back)", got)
		}

		// Down and back through the transport alone, between two ticks.
		_, _ = rt.RoundTrip(req)
		_, _ = r.Wrap(roundTripFunc(answer(200, http.NoBody))).RoundTrip(req)
		synctest.Wait()
		if got := returns.Load(); got != 2 {
			t.Errorf("got %d comebacks, want 2", got)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run: got %v, want context.Canceled", err)
		}
	})
}

// TestReachabilityRunsForTwo: two Runs of one Reachability (two controllers of one client)
// are each told every comeback; while the server does not answer, one of them at a time
// probes, and the other takes over when it returns.
func TestReachabilityRunsForTwo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := testclock.NewFakeClock(time.Now())
		r := newReachability(t)
		var back atomic.Bool
		var probes, returns [2]atomic.Int32
		var cancels [2]context.CancelFunc
		var done [2]chan error
		for i := range 2 {
			ctx, cancel := context.WithCancel(context.Background())
			cancels[i], done[i] = cancel, make(chan error, 1)
			probe := func(context.Context) error {
				probes[i].Add(1)
				if back.Load() {
					return nil
				}
				return errors.New("refused")
			}
			go func() { done[i] <- r.Run(ctx, clk, probe, func() { returns[i].Add(1) }) }()
		}
		step := func(d time.Duration) {
			synctest.Wait()
			clk.Step(d)
			synctest.Wait()
		}
		rt := r.Wrap(roundTripFunc(refused))
		req, _ := http.NewRequest("GET", "https://api/version", nil)
		_, _ = rt.RoundTrip(req)
		for range 4 {
			step(time.Second)
		}
		if got := probes[0].Load() + probes[1].Load(); got != 4 {
			t.Errorf("got %d probes in 4 s down, want 4: one Run probes", got)
		}
		back.Store(true)
		step(time.Second)
		if r.Err() != nil || returns[0].Load() != 1 || returns[1].Load() != 1 {
			t.Errorf("after a successful probe: got Err %v and comebacks %d, %d; want nil, 1 and 1", r.Err(), returns[0].Load(), returns[1].Load())
		}

		// Down again: the Run that probes returns, and the other takes over.
		back.Store(false)
		_, _ = rt.RoundTrip(req)
		before := [2]int32{probes[0].Load(), probes[1].Load()}
		step(time.Second)
		prober := 0
		if probes[1].Load() > before[1] {
			prober = 1
		}
		other := 1 - prober
		cancels[prober]()
		if err := <-done[prober]; !errors.Is(err, context.Canceled) {
			t.Errorf("Run: got %v, want context.Canceled", err)
		}
		before[other] = probes[other].Load()
		for range 3 {
			step(time.Second)
		}
		if got := probes[other].Load() - before[other]; got != 3 {
			t.Errorf("the other Run probed %d times in 3 s once the first returned, want 3", got)
		}
		cancels[other]()
		if err := <-done[other]; !errors.Is(err, context.Canceled) {
			t.Errorf("Run: got %v, want context.Canceled", err)
		}
	})
}

func TestNewReachabilityRejectsNegativeInterval(t *testing.T) {
	_, err := clientgo.NewReachability(clientgo.ReachabilityOptions{ProbeInterval: -time.Second})
	if err == nil || !strings.HasPrefix(err.Error(), "clientgo: ") {
		t.Errorf("got %v, want an error prefixed clientgo:", err)
	}
}

func TestIsUnreachable(t *testing.T) {
	refusedErr := &url.Error{Op: "Delete", URL: "https://api", Err: syscall.ECONNREFUSED}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "nil", err: nil, want: false},
		{name: "refused", err: refusedErr, want: true},
		{name: "refused, wrapped", err: fmt.Errorf("clientgo: deleting pod: %w", refusedErr), want: true},
		{name: "broken", err: &url.Error{Op: "Delete", URL: "https://api", Err: io.ErrUnexpectedEOF}, want: true},
		{name: "the caller's timeout", err: &url.Error{Op: "Delete", URL: "https://api", Err: context.Canceled}, want: false},
		{name: "the caller's deadline", err: &url.Error{Op: "Delete", URL: "https://api", Err: context.DeadlineExceeded}, want: false},
		{name: "an answer", err: apierrors.NewInternalError(errors.New("etcd")), want: false},
		{name: "forbidden", err: apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web", errors.New("no")), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := clientgo.IsUnreachable(tt.err); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestReachabilityWatchClosedByClient: client-go stops a watch by closing its body
// (StreamWatcher.Stop, after a 410 Expired event or a resync error) while its receive loop
// reads on, with the request's context still live. The read then fails with "read on closed
// response body", which is the client's doing, not the server's: the server stays reachable.
func TestReachabilityWatchClosedByClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, `{"type":"ADDED"}`)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	r := newReachability(t)
	c := &http.Client{Transport: r.Wrap(http.DefaultTransport)}
	resp, err := c.Get(srv.URL + "/api/v1/pods?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if _, err := resp.Body.Read(buf); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()                              // the client stops the watch
	if _, err := resp.Body.Read(buf); err == nil { // its receive loop's next read
		t.Fatal("a read after Close succeeded, want an error")
	}
	if err := r.Err(); err != nil {
		t.Errorf("got Err %v after the client closed a watch it was done with, want nil", err)
	}
}
