package e2e

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"
)

// proxy stands between a controller process and the API server, as the controller's
// server. It forwards every request with the credentials of a user of the test's choosing,
// and lets a test act on the server before a request of the controller reaches it (to force
// a race), or cut the controller off (a network partition).
type proxy struct {
	srv     *httptest.Server
	before  func(*http.Request)  // nil: none
	after   func(*http.Response) // nil: none
	blocked atomic.Bool
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
	rt, err := rest.TransportFor(upstream)
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	target, err := url.Parse(upstream.Host)
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	p := &proxy{before: before, after: after}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport:     rt,
		FlushInterval: -1, // watches stream
	}
	if after != nil {
		rp.ModifyResponse = func(r *http.Response) error { after(r); return nil }
	}
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.blocked.Load() {
			http.Error(w, "partitioned by the test", http.StatusServiceUnavailable)
			return
		}
		if p.before != nil {
			p.before(r)
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
