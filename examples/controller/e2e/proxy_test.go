package e2e

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// proxy stands between a controller process and the API server, as the controller's
// server. It forwards every request with the credentials of a user of the test's choosing,
// and lets a test act on the server before a request of the controller reaches it (to force
// a race), answer a request in the server's place (a fault), or cut the controller off (a
// network partition).
type proxy struct {
	srv     *httptest.Server
	blocked atomic.Bool
}

// proxyHooks are what a test does with the requests that pass a proxy; a nil hook does
// nothing. Each runs in the request's goroutine, in this order.
type proxyHooks struct {
	// before runs before the request is forwarded (or answered by fault).
	before func(*http.Request)
	// fault, if it returns not nil, answers the request with that fault instead of
	// forwarding it: the API server never sees it.
	fault func(*http.Request) *fault
	// after runs on each of the server's responses (its status and headers; a watch's body
	// still streams) before it is forwarded.
	after func(*http.Response)
}

// newProxy starts a proxy that forwards as the user of upstream, and stops it at the end of
// the test. before, if not nil, runs before each request is forwarded, in the request's
// goroutine.
func newProxy(t *testing.T, upstream *rest.Config, before func(*http.Request)) *proxy {
	t.Helper()
	return newProxyAfter(t, upstream, before, nil)
}

// newProxyAfter is newProxy with after, if not nil, run on each of the server's responses
// (its status and headers; a watch's body still streams) before it is forwarded.
func newProxyAfter(t *testing.T, upstream *rest.Config, before func(*http.Request), after func(*http.Response)) *proxy {
	t.Helper()
	return newProxyHooks(t, upstream, proxyHooks{before: before, after: after})
}

// newProxyHooks starts a proxy that forwards as the user of upstream with the hooks h, and
// stops it at the end of the test.
func newProxyHooks(t *testing.T, upstream *rest.Config, h proxyHooks) *proxy {
	t.Helper()
	rt, err := rest.TransportFor(upstream)
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	target, err := url.Parse(upstream.Host)
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	p := &proxy{}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport:     rt,
		FlushInterval: -1, // watches stream
	}
	if h.after != nil {
		rp.ModifyResponse = func(r *http.Response) error { h.after(r); return nil }
	}
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.blocked.Load() {
			http.Error(w, "partitioned by the test", http.StatusServiceUnavailable)
			return
		}
		if h.before != nil {
			h.before(r)
		}
		if h.fault != nil {
			if f := h.fault(r); f != nil {
				f.write(w)
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	p.srv.StartTLS()
	t.Cleanup(func() {
		p.srv.CloseClientConnections()
		p.srv.Close()
	})
	return p
}

// config is the client configuration that reaches the API server through the proxy.
func (p *proxy) config() *rest.Config {
	cert := p.srv.Certificate()
	return &rest.Config{
		Host:            p.srv.URL,
		TLSClientConfig: rest.TLSClientConfig{CAData: certPEM(cert.Raw)},
	}
}

func certPEM(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// fault is an answer the proxy gives in the API server's place, written as the server
// writes it: 429 as API Priority and Fairness rejects a request (a line of text, with
// Retry-After), any other code as a metav1.Status with the code's reason (500:
// InternalError, as for a failed etcd write). retryAfter, if not 0, is sent as Retry-After,
// in seconds.
type fault struct {
	code       int
	retryAfter int
}

func (f fault) String() string {
	if f.retryAfter > 0 {
		return fmt.Sprintf("%d (Retry-After %d)", f.code, f.retryAfter)
	}
	return strconv.Itoa(f.code)
}

func (f fault) write(w http.ResponseWriter) {
	contentType, body := f.body()
	if f.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(f.retryAfter))
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(f.code)
	_, _ = w.Write(body)
}

// replace makes resp, the server's answer, the fault instead: the server did the request,
// the client hears that it failed.
func (f fault) replace(resp *http.Response) {
	contentType, body := f.body()
	resp.Body.Close()
	resp.StatusCode, resp.Status = f.code, fmt.Sprintf("%d %s", f.code, http.StatusText(f.code))
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	resp.Header = http.Header{"Content-Type": {contentType}}
	if f.retryAfter > 0 {
		resp.Header.Set("Retry-After", strconv.Itoa(f.retryAfter))
	}
}

func (f fault) body() (contentType string, body []byte) {
	if f.code == http.StatusTooManyRequests {
		return "text/plain; charset=utf-8", []byte("Too many requests, please try again later.\n")
	}
	reason := apierrors.NewGenericServerResponse(f.code, "", schema.GroupResource{}, "", "", 0, false).ErrStatus.Reason
	body, _ = json.Marshal(metav1.Status{ // a Status always encodes
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Code:     int32(f.code),
		Reason:   reason,
		Message:  http.StatusText(f.code) + ": injected by the e2e proxy",
	})
	return "application/json", body
}

// podWrite returns what r does to a pod of namespace ns, named as the audit log names it
// ("patch pods/status", "delete pods", "create pods/eviction"), and the pod's name; what is
// "" for any other request.
func podWrite(r *http.Request, ns string) (what, name string) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/api/v1/namespaces/"+ns+"/pods/")
	if !ok || rest == "" {
		return "", ""
	}
	name, sub, _ := strings.Cut(rest, "/")
	switch {
	case r.Method == http.MethodDelete && sub == "":
		return "delete pods", name
	case (r.Method == http.MethodPatch || r.Method == http.MethodPut) && sub == "status":
		return strings.ToLower(r.Method) + " pods/status", name
	case r.Method == http.MethodPost && sub == "eviction":
		return "create pods/eviction", name
	}
	return "", ""
}

// faultInjector holds a proxy's hooks that fail a controller's pod writes in one
// namespace: fault answers a fraction (rate) of them in the server's place with one of
// faults; lose replaces the server's answer to a fraction (loseRate) of the DELETEs it
// did with a 500 (the pod is deleted, the controller hears it failed: an etcd commit that
// timed out, a connection cut after the write). Each draw comes from a seeded generator:
// the same seed injects the same sequence, whatever the order of the requests. It counts
// the writes it saw and what it injected, by kind of write. Its methods are safe for
// concurrent use.
type faultInjector struct {
	ns       string
	rate     float64 // in [0, 1]; 0 rejects nothing
	faults   []fault // each rejection is one of them, at random
	loseRate float64 // in [0, 1]; 0 loses no answer

	mu       sync.Mutex
	rng      *rand.Rand
	writes   map[string]int // by kind ("delete pods")
	injected map[string]int // by kind and fault ("delete pods 500")
	lost     int            // answers of DELETEs replaced
}

func newFaultInjector(ns string, rate float64, seed uint64, faults ...fault) *faultInjector {
	return &faultInjector{
		ns: ns, rate: rate, faults: faults,
		rng:    rand.New(rand.NewPCG(seed, seed)),
		writes: map[string]int{}, injected: map[string]int{},
	}
}

func (fi *faultInjector) fault(r *http.Request) *fault {
	what, _ := podWrite(r, fi.ns)
	if what == "" {
		return nil
	}
	fi.mu.Lock()
	defer fi.mu.Unlock()
	fi.writes[what]++
	if fi.rate == 0 || fi.rng.Float64() >= fi.rate {
		return nil
	}
	f := fi.faults[fi.rng.IntN(len(fi.faults))]
	fi.injected[what+" "+strconv.Itoa(f.code)]++
	return &f
}

func (fi *faultInjector) lose(resp *http.Response) {
	if what, _ := podWrite(resp.Request, fi.ns); what != "delete pods" || resp.StatusCode != http.StatusOK {
		return
	}
	fi.mu.Lock()
	lose := fi.loseRate > 0 && fi.rng.Float64() < fi.loseRate
	if lose {
		fi.lost++
	}
	fi.mu.Unlock()
	if lose {
		fault{code: http.StatusInternalServerError}.replace(resp)
	}
}

// counts returns copies of the writes seen and the faults injected, and the number of
// answers lost.
func (fi *faultInjector) counts() (writes, injected map[string]int, lost int) {
	fi.mu.Lock()
	defer fi.mu.Unlock()
	return maps.Clone(fi.writes), maps.Clone(fi.injected), fi.lost
}

// injectedWith sums the faults injected with code, of every kind.
func injectedWith(injected map[string]int, code int) int {
	n := 0
	for k, v := range injected {
		if strings.HasSuffix(k, " "+strconv.Itoa(code)) {
			n += v
		}
	}
	return n
}
