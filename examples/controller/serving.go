package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
)

// How long the answers of the API server about a scraper are kept, and how long one review
// may take: kube-controller-manager's defaults (--authentication-token-webhook-cache-ttl,
// --authorization-webhook-cache-authorized-ttl and -unauthorized-ttl, 10 s each). A
// Prometheus that scrapes every few seconds costs one TokenReview and one
// SubjectAccessReview per 10 s, not two calls a scrape.
const (
	tokenCacheTTL = 10 * time.Second
	allowCacheTTL = 10 * time.Second
	denyCacheTTL  = 10 * time.Second
	reviewTimeout = 10 * time.Second
)

// openPaths are served to anyone who reaches the port, as kube-controller-manager's
// --authorization-always-allow-paths: the kubelet's probes carry no token.
var openPaths = []string{"/healthz", "/readyz"}

// tokenHeader carries a caller's bearer token when the API server's service proxy stands
// between: the proxy takes the Authorization header for itself and does not forward it
// (kubectl-taintevict explain puts the same token in both). It is reviewed exactly as an
// Authorization header is, and only when there is none.
const tokenHeader = "X-Taintevict-Authorization"

// servingFlags are the command line's choices of how -metrics-addr is served.
type servingFlags struct {
	secure   bool
	certFile string
	keyFile  string
}

// define defines the serving flags on fs, with their defaults.
func (s *servingFlags) define(fs *flag.FlagSet) {
	fs.BoolVar(&s.secure, "metrics-secure", true, "with -kubeconfig, serve -metrics-addr over HTTPS, and /metrics only to a bearer token that the API server's TokenReview accepts and its SubjectAccessReview allows to get the non-resource URL /metrics (as kube-controller-manager does; /healthz and /readyz stay open). -metrics-secure=false serves plain HTTP with no authentication: anyone who can reach the port can then read the metrics. The in-memory demo always serves plain HTTP: it has no API server to ask")
	fs.StringVar(&s.certFile, "tls-cert-file", "", "with -metrics-secure, the PEM certificate (chain) to serve; with -tls-private-key-file. Read once at the start. Default: a self-signed certificate made in memory at the start")
	fs.StringVar(&s.keyFile, "tls-private-key-file", "", "with -metrics-secure, the PEM private key of -tls-cert-file")
}

// validate checks the serving flags against the rest of the command line.
func (s servingFlags) validate(kubeconfig, metricsAddr string) error {
	files := s.certFile != "" || s.keyFile != ""
	switch {
	case !files:
		return nil
	case s.certFile == "" || s.keyFile == "":
		return errors.New("-tls-cert-file and -tls-private-key-file go together")
	case !s.secure:
		return errors.New("-tls-cert-file contradicts -metrics-secure=false")
	case kubeconfig == "":
		return errors.New("-tls-cert-file needs -kubeconfig: the in-memory demo serves plain HTTP")
	case metricsAddr == "":
		return errors.New("-tls-cert-file needs -metrics-addr")
	}
	return nil
}

// tlsConfig returns the TLS configuration of the listener: the certificate of the flags'
// files, else a self-signed one made now, in memory (the image's root file system is
// read-only, and nothing needs it on disk).
func (s servingFlags) tlsConfig() (*tls.Config, error) {
	var cert tls.Certificate
	var err error
	if s.certFile != "" {
		cert, err = tls.LoadX509KeyPair(s.certFile, s.keyFile)
		if err != nil {
			return nil, fmt.Errorf("-tls-cert-file, -tls-private-key-file: %w", err)
		}
	} else {
		cert, err = selfSigned()
		if err != nil {
			return nil, fmt.Errorf("self-signed serving certificate: %w", err)
		}
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		// HTTP/1.1 only: scrapers and probes need nothing more, and HTTP/2's stream handling
		// (rapid reset, CVE-2023-44487) is attack surface that a metrics port has no use for.
		NextProtos: []string{"http/1.1"},
	}, nil
}

// selfSigned makes a certificate for the host name (the pod's name in a pod), localhost
// and the loopback addresses, signed by a CA made for it, as kube-controller-manager does
// when it is given no certificate.
func selfSigned() (tls.Certificate, error) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKeyWithOptions(certutil.SelfSignedCertKeyOptions{
		Host:         host,
		AlternateIPs: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		AlternateDNS: []string{"localhost"},
	})
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// reviewClient returns the client of the TokenReviews and SubjectAccessReviews: rc's, with
// a rate limiter of its own, so that a scrape never waits behind evictions for a token of
// -kube-api-qps, and no eviction waits behind a scrape. Its budget is that of the client
// kube's delegated authentication makes (k8s.io/apiserver: QPS 200, burst 400); the caches
// keep the calls far below it.
func reviewClient(rc *rest.Config) (kubernetes.Interface, error) {
	c := rest.CopyConfig(rc)
	c.QPS, c.Burst, c.RateLimiter = 200, 400, nil
	c.Timeout = reviewTimeout
	return kubernetes.NewForConfig(c)
}

// reviewBackoff is how a review is retried when the API server fails it: kube's
// DefaultAuthWebhookRetryBackoff (k8s.io/apiserver/pkg/server/options).
func reviewBackoff() *wait.Backoff {
	return &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
}

// guard returns h behind the API server's delegated authentication and authorization,
// as kube-controller-manager serves its port: the paths of openPaths go through as they
// are; any other request needs a bearer token that a TokenReview accepts (else 401
// Unauthorized) for a user whom a SubjectAccessReview allows the request's verb on its
// path as a non-resource URL, e.g. get /metrics (else 403 Forbidden; 500 when the review
// fails). A request without an Authorization header may carry the token in tokenHeader
// instead, as one that came through the API server's service proxy does. The answers are
// cached (tokenCacheTTL, allowCacheTTL, denyCacheTTL). The
// handler is safe for concurrent use; a request waits for its reviews reviewTimeout at
// most. It starts no goroutine that outlives a request but the token cache's shared
// lookup, which ends with its TokenReview (reviewTimeout, then the retries of
// reviewBackoff).
func guard(h http.Handler, reviews kubernetes.Interface) (http.Handler, error) {
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		// No anonymous user: a request without a token is 401, not a review of
		// system:anonymous.
		Anonymous:                nil,
		TokenAccessReviewClient:  reviews.AuthenticationV1(),
		TokenAccessReviewTimeout: reviewTimeout,
		WebhookRetryBackoff:      reviewBackoff(),
		CacheTTL:                 tokenCacheTTL,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("delegated authentication: %w", err)
	}
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: reviews.AuthorizationV1(),
		AllowCacheTTL:             allowCacheTTL,
		DenyCacheTTL:              denyCacheTTL,
		WebhookRetryBackoff:       reviewBackoff(),
	}.New()
	if err != nil {
		return nil, fmt.Errorf("delegated authorization: %w", err)
	}
	return &guarded{next: h, authn: authn, authz: authz}, nil
}

// guarded is the handler guard returns.
type guarded struct {
	next  http.Handler
	authn authenticator.Request
	authz authorizer.Authorizer
}

func (g *guarded) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for _, p := range openPaths {
		if r.URL.Path == p {
			g.next.ServeHTTP(w, r)
			return
		}
	}
	if r.Header.Get("Authorization") == "" {
		if auth := r.Header.Get(tokenHeader); auth != "" {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", auth)
		}
	}
	r.Header.Del(tokenHeader)
	ctx, cancel := context.WithTimeout(r.Context(), reviewTimeout)
	defer cancel()
	logger := klog.FromContext(ctx)
	resp, ok, err := g.authn.AuthenticateRequest(r.WithContext(ctx))
	if err != nil {
		// As kube-apiserver and kube-controller-manager answer: 401, whether the token is
		// refused or could not be reviewed. The log tells the two apart.
		logger.Error(err, "Reviewing a scraper's token", "path", r.URL.Path)
	}
	if err != nil || !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="taintevict-controller"`)
		http.Error(w, "Unauthorized: a bearer token that the API server accepts is needed", http.StatusUnauthorized)
		return
	}
	attrs := authorizer.AttributesRecord{
		User:            resp.User,
		Verb:            strings.ToLower(r.Method),
		Path:            r.URL.Path,
		ResourceRequest: false,
	}
	decision, reason, err := g.authz.Authorize(ctx, attrs)
	switch {
	case decision == authorizer.DecisionAllow:
		g.next.ServeHTTP(w, r)
	case err != nil:
		logger.Error(err, "Reviewing a scraper's access", "user", resp.User.GetName(), "path", r.URL.Path)
		http.Error(w, "Internal Server Error: the API server could not review the access", http.StatusInternalServerError)
	default:
		msg := fmt.Sprintf("Forbidden: user %q cannot %s path %q", resp.User.GetName(), attrs.Verb, attrs.Path)
		if reason != "" {
			msg += ": " + reason
		}
		http.Error(w, msg, http.StatusForbidden)
	}
}

// listen serves h on addr, over TLS when tc is not nil, until the returned stop is called,
// which waits for the server. flag names addr in errors and logs ("metrics-addr").
func listen(ctx context.Context, flag, addr string, h http.Handler, tc *tls.Config) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-%s: %w", flag, err)
	}
	if tc != nil {
		ln = tls.NewListener(ln, tc)
	}
	srv := &http.Server{
		Handler: h, ReadHeaderTimeout: 10 * time.Second, TLSConfig: tc,
		ErrorLog: log.New(serverLog{klog.FromContext(ctx).WithValues("flag", flag)}, "", 0),
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "Serving", "flag", flag)
		}
	})
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		wg.Wait()
	}, nil
}

// serverLog takes the net/http server's messages into klog. A failed TLS handshake (a port
// scanner, a scraper that does not trust the certificate, a plain-HTTP request) is logged
// at -v=4 only, as kube's secure serving does: anyone can cause one.
type serverLog struct{ logger logr.Logger }

func (l serverLog) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	if strings.Contains(msg, "TLS handshake error") {
		l.logger.V(4).Info("Serving", "error", msg)
	} else {
		l.logger.Info("Serving", "error", msg)
	}
	return len(p), nil
}
