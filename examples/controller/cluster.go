package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/clientgo/lease"
	"github.com/taintevict/taintevict/clientgo/metrics"
)

// preflightTimeout bounds the checks made before the controller starts.
const preflightTimeout = 15 * time.Second

// runCluster runs the controller against the cluster of cfg.kubeconfig until ctx is done.
func runCluster(ctx context.Context, cfg config, out, stderr io.Writer) error {
	rc, err := restConfig(cfg.kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", cfg.kubeconfig, err)
	}
	rc.UserAgent = clientgo.Component
	rc.QPS, rc.Burst = float32(cfg.qps), cfg.burst
	// Every request reports whether the API server answered: /readyz fails while it does
	// not, and the deletes that failed meanwhile are retried as soon as it answers again.
	if cfg.reach, err = clientgo.NewReachability(clientgo.ReachabilityOptions{}); err != nil {
		return err
	}
	rc.Wrap(cfg.reach.Wrap)
	erc := cfg.clients.configure(rc)
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", cfg.kubeconfig, err)
	}
	events, err := kubernetes.NewForConfig(erc)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", cfg.kubeconfig, err)
	}
	reviews, err := reviewClient(rc)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", cfg.kubeconfig, err)
	}
	return serveWith(ctx, client, events, reviews, rc.Host, cfg, out, stderr)
}

// serve is serveWith with the reviews of scrapers through client.
func serve(ctx context.Context, client, events kubernetes.Interface, host string, cfg config, out, stderr io.Writer) error {
	return serveWith(ctx, client, events, client, host, cfg, out, stderr)
}

// serveWith checks that the API server answers and allows what the controller needs, then
// runs a Controller over client until ctx is done, with its probes and metrics on
// cfg.metricsAddr. The Events go through events (nil: through client); with
// -metrics-secure, the TokenReviews and SubjectAccessReviews of the scrapers through
// reviews.
func serveWith(ctx context.Context, client, events, reviews kubernetes.Interface, host string, cfg config, out, stderr io.Writer) error {
	// The certificate first: a file that does not load fails the start before any call to
	// the API server.
	var tc *tls.Config
	if cfg.metricsAddr != "" && cfg.serving.secure {
		var err error
		if tc, err = cfg.serving.tlsConfig(); err != nil {
			return err
		}
	}
	var certs *certReloader
	if cfg.admission.addr != "" {
		var err error
		if certs, err = newCertReloader(cfg.admission.certFile, cfg.admission.keyFile); err != nil {
			return err
		}
	}
	if err := preflight(ctx, client, host, cfg, stderr); err != nil {
		return err
	}
	reg := prometheus.NewRegistry() // ours alone: never the global one
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	c, err := newControllers(ctx, client, events, cfg, metrics.NewMeter(reg), &lineObserver{out: out})
	if err != nil {
		return err
	}
	if cfg.metricsAddr != "" {
		h := withDebug(c.Handler(metrics.Handler(reg)), c.sides)
		if tc != nil {
			if h, err = guard(h, reviews); err != nil {
				return err
			}
		}
		stop, err := listen(ctx, "metrics-addr", cfg.metricsAddr, h, tc)
		if err != nil {
			return err
		}
		defer stop()
	}
	if certs != nil {
		stop, err := listenAdmission(ctx, cfg, c, certs)
		if err != nil {
			return err
		}
		defer stop()
	}
	say := "EVICTING pods for real (use -mode=dry-run to only report)"
	switch cfg.mode {
	case clientgo.ModeDryRun:
		say = "dry run: reporting only, changing nothing"
	case clientgo.ModeEvict:
		say = "EVICTING pods for real through the Eviction API"
	}
	fmt.Fprintf(out, "cluster %s: %s (controllers: %s); stop with Ctrl-C\n", host, say, strings.Join(cfg.device.controllers, ","))
	runCtx, cancel := context.WithCancel(ctx)
	released := giveBackListing(runCtx, c.node)
	err = c.Run(runCtx)
	cancel()
	<-released
	if errors.Is(err, clientgo.ErrLeaseLost) {
		return errors.New("lost the leader election Lease: exiting, so that this replica restarts as a standby")
	}
	return err
}

// permission is one thing the controller does on the API server.
type permission struct {
	group, resource, subresource, verb, namespace, name string
}

func (p permission) String() string {
	r := p.resource
	if p.subresource != "" {
		r += "/" + p.subresource
	}
	if p.group != "" {
		r += "." + p.group
	}
	if p.name != "" {
		r += " " + p.name
	}
	if p.namespace != "" {
		return fmt.Sprintf("%s %s in namespace %s", r, p.verb, p.namespace)
	}
	return r + " " + p.verb
}

// needs lists what cfg needs RBAC to allow.
func needs(cfg config) []permission {
	p := []permission{{resource: "pods", verb: "list"}, {resource: "pods", verb: "watch"}}
	if cfg.device.runs(controllerNode) {
		p = append(p, permission{resource: "nodes", verb: "list"}, permission{resource: "nodes", verb: "watch"})
	}
	if cfg.device.runs(controllerDevice) {
		p = append(p, deviceNeeds(cfg)...)
	}
	deletes := cfg.mode == clientgo.ModeDelete || cfg.mode == clientgo.ModeEvict && cfg.pdbTimeout > 0
	if deletes {
		p = append(p, permission{resource: "pods", subresource: "status", verb: "patch"}, permission{resource: "pods", verb: "delete"})
	}
	if cfg.mode == clientgo.ModeEvict {
		p = append(p, permission{resource: "pods", subresource: "eviction", verb: "create"})
	}
	if cfg.mode != clientgo.ModeDryRun {
		p = append(p, permission{resource: "events", verb: "create"}, permission{resource: "events", verb: "patch"})
	}
	if cfg.metricsAddr != "" && cfg.serving.secure {
		// Who scrapes /metrics, and whether they may (delegated authentication and
		// authorization, as kube-controller-manager's; the ClusterRole
		// system:auth-delegator grants both).
		p = append(p,
			permission{group: "authentication.k8s.io", resource: "tokenreviews", verb: "create"},
			permission{group: "authorization.k8s.io", resource: "subjectaccessreviews", verb: "create"})
	}
	if cfg.leaderElect {
		// Created once by any name; then read and renewed under its own name only.
		lp := permission{group: "coordination.k8s.io", resource: "leases", namespace: cfg.leNamespace}
		for _, v := range []string{"get", "create", "update"} {
			lp.verb, lp.name = v, lease.DefaultName
			if v == "create" {
				lp.name = ""
			}
			p = append(p, lp)
		}
	}
	return p
}

// preflight fails with one line when the API server cannot be reached, or when RBAC
// forbids something the controller needs ("forbidden: pods/eviction create"). If the
// server does not let it ask (SelfSubjectAccessReview), it says so on stderr and goes on.
func preflight(ctx context.Context, client kubernetes.Interface, host string, cfg config, stderr io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	if err := ping(ctx, client); err != nil {
		return fmt.Errorf("cannot reach the API server at %s: %s", host, oneLine(err))
	}
	var missing []string
	for _, p := range needs(cfg) {
		review, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: p.namespace, Verb: p.verb, Group: p.group, Resource: p.resource, Subresource: p.subresource, Name: p.name,
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			fmt.Fprintf(stderr, "controller: warning: cannot check permissions (%v); going on\n", oneLine(err))
			return nil
		}
		if !review.Status.Allowed {
			missing = append(missing, p.String())
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("forbidden: %s (see deploy/rbac.yaml)", strings.Join(missing, ", "))
	}
	return nil
}

// ping asks the API server for its version, within ctx.
func ping(ctx context.Context, client kubernetes.Interface) error {
	rc := client.Discovery().RESTClient()
	if rc == nil { // a fake clientset's
		_, err := client.Discovery().ServerVersion()
		return err
	}
	return rc.Get().AbsPath("/version").Do(ctx).Error()
}

// oneLine puts a multi-line error message on one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", " ")), " ")
}

// giveBackListing returns the heap of the initial listing to the operating system once
// node's caches have synced (nil node: nothing to wait for), and closes the channel it
// returns when done, or when ctx ends first. The listing decodes every pod and node whole
// before the informers' transform (clientgo.Trim) keeps the little a taint eviction reads;
// Go's scavenger gives the rest back slowly (bench/scale found the resident set still at the
// listing's peak 40 s after the sync), and until then the resident set, what an operator
// sees of the controller, shows the listing, not what the controller keeps.
func giveBackListing(ctx context.Context, node *clientgo.Controller) <-chan struct{} {
	done := make(chan struct{})
	if node == nil {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		select {
		case <-node.Synced():
			debug.FreeOSMemory()
		case <-ctx.Done():
		}
	}()
	return done
}
