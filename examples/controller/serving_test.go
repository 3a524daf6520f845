package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	certutil "k8s.io/client-go/util/cert"
)

// Tokens the fake API server's TokenReviews know, and what they answer.
const (
	promToken   = "prom-token"   // system:serviceaccount:monitoring:prometheus, may get /metrics
	nosyToken   = "nosy-token"   // system:serviceaccount:default:nosy, may not
	brokenToken = "broken-token" // the TokenReview fails
	oopsToken   = "oops-token"   // user oops, whose SubjectAccessReview fails
	askToken    = "ask-token"    // system:serviceaccount:default:explainer, may get /debug/pending
)

// fakeReviews is an API server that answers TokenReviews and SubjectAccessReviews, and
// counts them per token and per user. (k8s.io/apiserver's reviewers post through the typed
// clients' REST clients, which a fake clientset does not have.)
type fakeReviews struct {
	mu     sync.Mutex
	tokens map[string]int // TokenReviews per token
	access map[string]int // SubjectAccessReviews per user
}

// reviewsServer starts a fakeReviews for the test, and returns it with a client of it.
func reviewsServer(t *testing.T) (*fakeReviews, kubernetes.Interface) {
	t.Helper()
	r := &fakeReviews{tokens: map[string]int{}, access: map[string]int{}}
	users := map[string]string{
		promToken: "system:serviceaccount:monitoring:prometheus",
		nosyToken: "system:serviceaccount:default:nosy",
		oopsToken: "oops",
		askToken:  "system:serviceaccount:default:explainer",
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /apis/authentication.k8s.io/v1/tokenreviews", func(w http.ResponseWriter, req *http.Request) {
		var tr authenticationv1.TokenReview
		if !decodeReview(w, req, &tr) {
			return
		}
		r.mu.Lock()
		r.tokens[tr.Spec.Token]++
		r.mu.Unlock()
		if tr.Spec.Token == brokenToken {
			// Not an error the reviewer retries (those wait 0.5 s and more).
			writeStatus(w, apierrors.NewBadRequest("the review broke"))
			return
		}
		if user, ok := users[tr.Spec.Token]; ok {
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: user}}
		}
		writeJSON(w, http.StatusCreated, &tr)
	})
	mux.HandleFunc("POST /apis/authorization.k8s.io/v1/subjectaccessreviews", func(w http.ResponseWriter, req *http.Request) {
		var sar authorizationv1.SubjectAccessReview
		if !decodeReview(w, req, &sar) {
			return
		}
		r.mu.Lock()
		r.access[sar.Spec.User]++
		r.mu.Unlock()
		if sar.Spec.User == "oops" {
			writeStatus(w, apierrors.NewForbidden(schema.GroupResource{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}, "", nil))
			return
		}
		na := sar.Spec.NonResourceAttributes
		path := map[string]string{users[promToken]: "/metrics", users[askToken]: "/debug/pending"}[sar.Spec.User]
		sar.Status.Allowed = path != "" && sar.Spec.ResourceAttributes == nil &&
			na != nil && na.Path == path && na.Verb == "get"
		writeJSON(w, http.StatusCreated, &sar)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	return r, client
}

func decodeReview(w http.ResponseWriter, req *http.Request, into any) bool {
	if err := json.NewDecoder(req.Body).Decode(into); err != nil {
		writeStatus(w, apierrors.NewBadRequest(err.Error()))
		return false
	}
	return true
}

func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	status := err.Status()
	status.APIVersion, status.Kind = "v1", "Status"
	writeJSON(w, int(status.Code), &status)
}

func writeJSON(w http.ResponseWriter, code int, obj any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(obj)
}

func (r *fakeReviews) counts(token, user string) (tokenReviews, accessReviews int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tokens[token], r.access[user]
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// scraper is an HTTP client without keep-alives (no connection, and no goroutine, outlives
// a request) that trusts any certificate: the tests check the certificate themselves.
var scraper = &http.Client{Transport: &http.Transport{
	DisableKeepAlives: true,
	TLSClientConfig:   &tls.Config{InsecureSkipVerify: true},
}}

// waitReadyz waits until base's /readyz answers 200: the port is served before the caches
// have synced.
func waitReadyz(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, _ := get(t, base+"/readyz", "")
		if resp.StatusCode == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/readyz: %s after 10 s", base, resp.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// get sends GET url with token as the bearer token ("" for none), and returns the response
// with its body read.
func get(t *testing.T, url, token string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := scraper.Do(req)
	require.NoError(t, err, "GET %s", url)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

// serveUntilDone runs the cluster mode over client, with the scrapers reviewed through
// reviews, with args until the test ends, and returns once the controller serves on its
// -metrics-addr, with what the controller writes.
func serveUntilDone(t *testing.T, client *fake.Clientset, reviews kubernetes.Interface, args ...string) *waitWriter {
	t.Helper()
	out := newWaitWriter()
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan error, 1)
	go func() {
		stopped <- serveWith(ctx, client, nil, reviews, "https://test", flagsOf(t, args...), out, io.Discard)
	}()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-stopped)
	})
	out.waitFor(t, "cluster https://test: ") // written once the port is served
	return out
}

// TestServeMetricsSecure: by default the port serves HTTPS with a self-signed certificate
// for localhost; the probes are open; /metrics needs a token that the API server accepts,
// for a user it allows to get /metrics (401 and 403 otherwise, 500 when the access review
// fails); the reviews are cached.
func TestServeMetricsSecure(t *testing.T) {
	reviews, reviewClient := reviewsServer(t)
	addr := freeAddr(t)
	serveUntilDone(t, taintedCluster(), reviewClient, "-kubeconfig=x", "-metrics-addr="+addr)
	base := "https://" + addr
	waitReadyz(t, base)

	tests := []struct {
		name, path, token string
		want              int
		body              string
	}{
		{"healthz without a token", "/healthz", "", http.StatusOK, "ok"},
		{"readyz without a token", "/readyz", "", http.StatusOK, "ok"},
		{"metrics without a token", "/metrics", "", http.StatusUnauthorized, "Unauthorized"},
		{"metrics with an unknown token", "/metrics", "who-knows", http.StatusUnauthorized, "Unauthorized"},
		{"metrics when the token review fails", "/metrics", brokenToken, http.StatusUnauthorized, "Unauthorized"},
		{"metrics of a user without the right", "/metrics", nosyToken, http.StatusForbidden, `Forbidden: user "system:serviceaccount:default:nosy" cannot get path "/metrics"`},
		{"metrics when the access review fails", "/metrics", oopsToken, http.StatusInternalServerError, "could not review"},
		{"another path of an allowed user", "/debug/pprof/", promToken, http.StatusForbidden, `cannot get path "/debug/pprof/"`},
		{"metrics of an allowed user", "/metrics", promToken, http.StatusOK, "taint_eviction_controller_pod_deletions_total"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := get(t, base+tc.path, tc.token)
			assert.Equal(t, tc.want, resp.StatusCode, "got status %d, want %d; body %q", resp.StatusCode, tc.want, body)
			assert.Contains(t, body, tc.body)
		})
	}

	t.Run("self-signed certificate", func(t *testing.T) {
		resp, _ := get(t, base+"/healthz", "")
		require.NotNil(t, resp.TLS)
		chain := resp.TLS.PeerCertificates
		require.Len(t, chain, 2, "the certificate and the CA made for it")
		roots := x509.NewCertPool()
		roots.AddCert(chain[1])
		for _, name := range []string{"localhost", "127.0.0.1"} {
			_, err := chain[0].Verify(x509.VerifyOptions{DNSName: name, Roots: roots})
			assert.NoError(t, err, "the certificate is valid for %s", name)
		}
	})

	t.Run("HTTP/1.1 only", func(t *testing.T) {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}})
		require.NoError(t, err)
		defer conn.Close()
		assert.Equal(t, "http/1.1", conn.ConnectionState().NegotiatedProtocol, "offered h2 and http/1.1")
	})

	t.Run("plain HTTP is refused", func(t *testing.T) {
		resp, body := get(t, "http://"+addr+"/healthz", "")
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "got %d %q, want Go's answer to HTTP on an HTTPS port", resp.StatusCode, body)
	})

	t.Run("reviews are cached", func(t *testing.T) {
		tokens0, access0 := reviews.counts(promToken, "system:serviceaccount:monitoring:prometheus")
		for range 3 {
			resp, _ := get(t, base+"/metrics", promToken)
			require.Equal(t, http.StatusOK, resp.StatusCode)
		}
		tokens, access := reviews.counts(promToken, "system:serviceaccount:monitoring:prometheus")
		// One of each for the allowed user's two paths above (one TokenReview, a
		// SubjectAccessReview per path), none for these scrapes, within the 10 s TTLs.
		assert.Equal(t, 1, tokens, "TokenReviews of the allowed token after %d scrapes", 5)
		assert.Equal(t, 2, access, "SubjectAccessReviews of the allowed user (/metrics and /debug/pprof/)")
		assert.Equal(t, tokens0, tokens, "TokenReviews made by the 3 scrapes")
		assert.Equal(t, access0, access, "SubjectAccessReviews made by the 3 scrapes")
		tokens, _ = reviews.counts("", "")
		assert.Zero(t, tokens, "a request without a token is not reviewed")
	})
}

// TestServeMetricsPlain: -metrics-secure=false serves plain HTTP, /metrics to anyone, and
// neither asks for the review rights at the start nor reviews anything.
func TestServeMetricsPlain(t *testing.T) {
	client := taintedCluster()
	reviews, reviewClient := reviewsServer(t)
	addr := freeAddr(t)
	serveUntilDone(t, client, reviewClient, "-kubeconfig=x", "-metrics-addr="+addr, "-metrics-secure=false")

	resp, body := get(t, "http://"+addr+"/metrics", "")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, "taint_eviction_controller_pod_deletions_total")
	tokens, access := reviews.counts("", "")
	assert.Zero(t, tokens+access, "reviews")
	for _, a := range client.Actions() {
		if obj, ok := a.(k8stesting.CreateAction); ok {
			if ssar, ok := obj.GetObject().(*authorizationv1.SelfSubjectAccessReview); ok {
				assert.NotContains(t, ssar.Spec.ResourceAttributes.Resource, "reviews", "the preflight asked for %s", ssar.Spec.ResourceAttributes.Resource)
			}
		}
	}
}

// writeCert writes a self-signed certificate for localhost and its key into dir, and
// returns their paths and the certificate's DER bytes.
func writeCert(t *testing.T, dir string) (certFile, keyFile string, der []byte) {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost", nil, nil)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	require.NoError(t, os.WriteFile(certFile, certPEM, 0o600))
	require.NoError(t, os.WriteFile(keyFile, keyPEM, 0o600))
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	return certFile, keyFile, pair.Certificate[0]
}

// TestServeCertificateFiles: -tls-cert-file and -tls-private-key-file are what the port
// serves; a pair that does not load stops the start with the flags' names, before any call
// to the API server.
func TestServeCertificateFiles(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, der := writeCert(t, dir)
	t.Run("served", func(t *testing.T) {
		_, reviewClient := reviewsServer(t)
		addr := freeAddr(t)
		serveUntilDone(t, taintedCluster(), reviewClient, "-kubeconfig=x", "-metrics-addr="+addr, "-tls-cert-file="+certFile, "-tls-private-key-file="+keyFile)
		resp, _ := get(t, "https://"+addr+"/readyz", "")
		require.NotNil(t, resp.TLS)
		assert.Equal(t, der, resp.TLS.PeerCertificates[0].Raw, "the served certificate is the file's")
	})

	garbage := filepath.Join(dir, "garbage.pem")
	require.NoError(t, os.WriteFile(garbage, []byte("not PEM"), 0o600))
	otherCert, _, _ := writeCert(t, t.TempDir())
	tests := []struct {
		name, cert, key, want string
	}{
		{"no such file", filepath.Join(dir, "nope.crt"), keyFile, "-tls-cert-file, -tls-private-key-file: open "},
		{"not PEM", garbage, keyFile, "-tls-cert-file, -tls-private-key-file: tls: failed to find any PEM data in certificate input"},
		{"key of another certificate", otherCert, keyFile, "-tls-cert-file, -tls-private-key-file: tls: private key does not match public key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := taintedCluster()
			err := serve(t.Context(), client, nil, "https://test",
				flagsOf(t, "-kubeconfig=x", "-metrics-addr="+freeAddr(t), "-tls-cert-file="+tc.cert, "-tls-private-key-file="+tc.key), io.Discard, io.Discard)
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), tc.want), "got %q, want it to start with %q", err, tc.want)
			assert.Empty(t, client.Actions(), "calls to the API server")
		})
	}
}

// TestServeForbiddenReviews: without the rights to review the scrapers (the ClusterRole
// system:auth-delegator), the controller refuses to start with -metrics-addr, and names
// them.
func TestServeForbiddenReviews(t *testing.T) {
	client := taintedCluster()
	allow(client, "tokenreviews create", "subjectaccessreviews create")
	err := serve(t.Context(), client, nil, "https://test", flagsOf(t, "-kubeconfig=x", "-metrics-addr="+freeAddr(t)), io.Discard, io.Discard)
	assert.EqualError(t, err, "forbidden: tokenreviews.authentication.k8s.io create, subjectaccessreviews.authorization.k8s.io create (see deploy/rbac.yaml)")
}
