package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/pflag"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TokenHeader carries the caller's bearer token through the API server's service proxy, which
// strips the Authorization header from what it forwards. The controller reviews it as it
// reviews an Authorization header (TokenReview, then SubjectAccessReview).
const TokenHeader = "X-Taintevict-Authorization"

// askTimeout bounds the question to the controller.
const askTimeout = 10 * time.Second

// controllerFlags say how explain reaches the controller's /debug/pending.
type controllerFlags struct {
	url      string
	service  string
	insecure bool
	caFile   string
}

// defaultService is the controller's metrics Service of deploy/metrics.yaml, with its port.
const defaultService = "taintevict-system/taintevict-controller-metrics:https-metrics"

func (c *controllerFlags) define(fs *pflag.FlagSet) {
	fs.StringVar(&c.url, "controller", "", "ask the controller at this URL (https://HOST:PORT, its -metrics-addr), instead of through the API server's service proxy; \"none\": do not ask")
	fs.StringVar(&c.service, "controller-service", defaultService, "ask the controller through the API server's proxy to this Service, NAMESPACE/NAME:PORT (the port's name or number; the scheme is https)")
	fs.BoolVar(&c.insecure, "controller-insecure", false, "with --controller: do not verify the controller's certificate (it makes a self-signed one unless given -tls-cert-file)")
	fs.StringVar(&c.caFile, "controller-ca", "", "with --controller: the CA file to verify the controller's certificate with")
}

// ControllerState is what the controller answered about the pod, or why it could not be
// asked.
type ControllerState struct {
	// Via says how it was asked: the URL, or the service proxy.
	Via string `json:"via"`
	// Reached says whether it answered; Error why not.
	Reached bool   `json:"reached"`
	Error   string `json:"error,omitempty"`
	// Evictions are its open evictions of the pod (its node side, its device side).
	Evictions []PendingEviction `json:"evictions,omitempty"`
	// Text says it in a sentence.
	Text string `json:"text"`
}

// PendingEviction is one open eviction the controller holds for a pod, as its
// /debug/pending?pod=NAMESPACE/NAME answers (examples/controller, debug.go).
type PendingEviction struct {
	Controller string     `json:"controller"`
	Holder     string     `json:"holder"`
	UID        string     `json:"uid,omitempty"`
	At         *time.Time `json:"at,omitempty"`
	Delayed    string     `json:"delayed,omitempty"`
	Budget     string     `json:"budget,omitempty"`
	Running    bool       `json:"running,omitempty"`
	Attempts   int        `json:"attempts"`
	LastError  string     `json:"lastError,omitempty"`
	LastFailed *time.Time `json:"lastFailed,omitempty"`
}

// pendingAnswer is the body of /debug/pending.
type pendingAnswer struct {
	Pod       string            `json:"pod"`
	Evictions []PendingEviction `json:"evictions"`
}

// ask asks the controller what it holds for pod, and says it as of now; it never fails:
// what went wrong is in the state's Error and Text. It returns nil when asked not to ask.
func (c controllerFlags) ask(ctx context.Context, cl *clients, pod *v1.Pod, now time.Time) *ControllerState {
	if c.url == "none" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, askTimeout)
	defer cancel()
	key := pod.Namespace + "/" + pod.Name
	var body []byte
	var st ControllerState
	var err error
	if c.url != "" {
		st.Via = c.url
		body, err = c.direct(ctx, cl, key)
	} else {
		st.Via = "the API server's proxy to service " + c.service
		body, err = c.proxied(ctx, cl, key)
	}
	if err == nil {
		var a pendingAnswer
		if err = json.Unmarshal(body, &a); err == nil {
			st.Reached, st.Evictions = true, a.Evictions
		} else {
			err = fmt.Errorf("its answer is not what /debug/pending answers: %w", err)
		}
	}
	if err != nil {
		st.Error = err.Error()
	}
	st.Text = st.text(now)
	return &st
}

// nodeDeadline returns when the controller's node side has the pod due because of node,
// or nil when it holds no such eviction (or was not asked, or did not answer).
func (st *ControllerState) nodeDeadline(node string) *time.Time {
	if st == nil {
		return nil
	}
	for _, e := range st.Evictions {
		if e.Controller == "node" && e.Holder == node && e.At != nil {
			return e.At
		}
	}
	return nil
}

// text says what the controller answered, or why it could not be asked.
func (st ControllerState) text(now time.Time) string {
	if !st.Reached {
		return fmt.Sprintf("The controller could not be asked (via %s): %s.", st.Via, strings.TrimSuffix(st.Error, "."))
	}
	if len(st.Evictions) == 0 {
		return "The controller holds no pending eviction of this pod."
	}
	var parts []string
	for _, e := range st.Evictions {
		s := fmt.Sprintf("The controller (%s side) holds an eviction of this pod because of %s", e.Controller, e.Holder)
		switch {
		case e.Running:
			s += ", under way now"
		case e.At != nil && e.Delayed != "":
			s += fmt.Sprintf(", due since %s, waiting for %s", e.At.UTC().Format(time.RFC3339), cmpOr(e.Budget, e.Delayed))
		case e.At != nil && e.At.After(now):
			s += fmt.Sprintf(", due at %s (in %s)", e.At.UTC().Format(time.RFC3339), e.At.Sub(now).Round(time.Second))
		case e.At != nil:
			s += fmt.Sprintf(", due since %s", e.At.UTC().Format(time.RFC3339))
		}
		switch e.Attempts {
		case 0:
			s += "; no attempt yet."
		case 1:
			s += "; 1 attempt so far"
		default:
			s += fmt.Sprintf("; %d attempts so far", e.Attempts)
		}
		if e.LastError != "" {
			s += ", the last failed: " + e.LastError + "."
		} else if e.Attempts > 0 {
			s += "."
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// direct GETs /debug/pending at the URL of --controller, with the kubeconfig's credentials
// (its bearer token, from a file or an exec plugin as kubectl gets it); the TLS settings are
// the flags', not the API server's.
func (c controllerFlags) direct(ctx context.Context, cl *clients, key string) ([]byte, error) {
	if cl.rest == nil {
		return nil, fmt.Errorf("no kubeconfig to take a bearer token from")
	}
	u, err := url.Parse(c.url)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("--controller %q is not a URL like https://HOST:PORT", c.url)
	}
	rc := rest.AnonymousClientConfig(cl.rest)
	rc.BearerToken, rc.BearerTokenFile, rc.ExecProvider, rc.AuthProvider = cl.rest.BearerToken, cl.rest.BearerTokenFile, cl.rest.ExecProvider, cl.rest.AuthProvider
	rc.TLSClientConfig = rest.TLSClientConfig{Insecure: c.insecure, CAFile: c.caFile}
	if rc.BearerToken == "" && rc.BearerTokenFile == "" && rc.ExecProvider == nil && rc.AuthProvider == nil {
		return nil, fmt.Errorf("the kubeconfig has no bearer token, and the controller authenticates callers by the tokens it reviews (a client certificate does not reach it)")
	}
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, err
	}
	u = u.JoinPath("/debug/pending")
	u.RawQuery = url.Values{"pod": {key}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// proxied GETs /debug/pending through the API server's proxy to the Service of
// --controller-service. The API server takes the Authorization header for itself; the same
// token goes on in TokenHeader, for the controller to review.
func (c controllerFlags) proxied(ctx context.Context, cl *clients, key string) ([]byte, error) {
	ns, rest0, ok := strings.Cut(c.service, "/")
	name, port, ok2 := strings.Cut(rest0, ":")
	if !ok || !ok2 || ns == "" || name == "" || port == "" {
		return nil, fmt.Errorf("--controller-service %q: want NAMESPACE/NAME:PORT", c.service)
	}
	if cl.rest == nil {
		return nil, fmt.Errorf("no API server to go through")
	}
	rc := rest.CopyConfig(cl.rest)
	rc.Wrap(copyToken) // innermost: it sees the Authorization header the credentials set
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	body, err := kube.CoreV1().RESTClient().Get().Namespace(ns).Resource("services").Name("https:"+name+":"+port).
		SubResource("proxy").Suffix("debug", "pending").Param("pod", key).Do(ctx).Raw()
	switch {
	case err == nil:
		return body, nil
	case apierrors.IsNotFound(err) && strings.Contains(apiMessage(err), `services "`+name+`" not found`):
		err = fmt.Errorf("there is no Service %s/%s (is the controller deployed from deploy/?)", ns, name)
	case apierrors.IsNotFound(err):
		err = fmt.Errorf("the controller behind Service %s/%s does not serve /debug/pending (a version before it?)", ns, name)
	case apierrors.IsForbidden(err):
		err = fmt.Errorf("forbidden: RBAC must allow get on services/proxy %s in namespace %s (deploy/explain.yaml's Role)", "https:"+name+":"+port, ns)
	default:
		err = errors.New(oneLine(apiMessage(err)))
	}
	return nil, fmt.Errorf("%w; give --controller URL to ask it directly, or --controller=none", err)
}

// copyToken copies each request's Authorization header to TokenHeader.
func copyToken(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if auth := req.Header.Get("Authorization"); auth != "" && req.Header.Get(TokenHeader) == "" {
			req = req.Clone(req.Context())
			req.Header.Set(TokenHeader, auth)
		}
		return rt.RoundTrip(req)
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// oneLine puts a message on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
