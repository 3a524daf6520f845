package realapiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/kubernetes/pkg/controller/tainteviction"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/eviction"
)

// The encodings of -content-type.
const (
	ContentJSON     = "application/json"
	ContentProtobuf = "application/vnd.kubernetes.protobuf"
)

// Client is a side's client budget and encoding: both sides get the same.
type Client struct {
	QPS         float32
	Burst       int
	ContentType string
	// EventsQPS and EventsBurst are the budget of taintevict's Events, on a client of their
	// own (the command's -events-qps and -events-burst). Kube's Events share its client.
	EventsQPS   float32
	EventsBurst int
}

// ChildConfig is what a side's process runs.
type ChildConfig struct {
	Side       Side
	Kubeconfig string
	Client     Client
	// Start is when the process started, for the time to ready.
	Start time.Time
	// ExitWhenSynced makes the process exit once its caches have synced (the start-up
	// measurement) instead of running until its context ends.
	ExitWhenSynced bool
	// Profile, if not "", is a file to write a CPU profile of the side's process to, from
	// its caches' sync until it stops.
	Profile string
}

// ChildReport is a line the side's process writes, as JSON: one when its caches have
// synced, one when it has stopped.
type ChildReport struct {
	// Synced is the time from the process's start until the controller was ready: its
	// caches synced (for taintevict, every object handed to the Manager too).
	Synced float64 `json:"synced,omitempty"`
	// Done marks the last report.
	Done bool `json:"done,omitempty"`
	// CPU is the process's CPU time so far, in seconds; MaxRSSMB its peak resident set.
	CPU      float64 `json:"cpu"`
	MaxRSSMB float64 `json:"maxrss_mb"`
	// Levels counts the responses by the priority level (UID) the API server served them
	// at, from the X-Kubernetes-PF-PriorityLevel-UID header.
	Levels map[string]int `json:"levels,omitempty"`
	// Workers is, for taintevict, how many Deleter calls its Manager let run at once, at
	// each change after the caches synced: "+SECONDS:N ...", sampled every 10 ms.
	Workers string `json:"workers,omitempty"`
}

// levelCounter counts responses by priority level.
type levelCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (l *levelCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(r)
		if err == nil {
			pl := resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID)
			l.mu.Lock()
			l.n[pl]++
			l.mu.Unlock()
		}
		return resp, err
	})
}

func (l *levelCounter) get() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int, len(l.n))
	for k, v := range l.n {
		out[k] = v
	}
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// RunChild runs cfg's side against the cluster of cfg.Kubeconfig until ctx is done (or,
// with ExitWhenSynced, until it is ready), writing its reports to out.
func RunChild(ctx context.Context, cfg ChildConfig, out io.Writer) error {
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return fmt.Errorf("realapiserver: %w", err)
	}
	levels := &levelCounter{n: map[string]int{}}
	rc.Wrap(levels.wrap)
	rc.QPS, rc.Burst = cfg.Client.QPS, cfg.Client.Burst
	rc.ContentType = cfg.Client.ContentType
	if rc.ContentType == ContentProtobuf {
		rc.AcceptContentTypes = ContentProtobuf + "," + ContentJSON
	}
	rc.UserAgent = "taintevict"
	if cfg.Side.Kube {
		rc.UserAgent = "kube-controller-manager"
	}
	rc.UserAgent += "/taint-eviction-controller"
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var run func(context.Context)
	var synced func(context.Context) bool
	var workers func() int // nil for kube's
	switch {
	case cfg.Side.Kube:
		run, synced, err = kubeSide(ctx, client)
	case cfg.Side.Flood:
		run, synced, err = floodSide(ctx, rc, cfg)
	default:
		run, synced, workers, err = oursSide(ctx, client, rc, cfg)
	}
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	wg.Go(func() { run(ctx) })
	defer wg.Wait()
	enc := json.NewEncoder(out)
	if !synced(ctx) {
		cancel()
		return fmt.Errorf("realapiserver: %s: the caches did not sync", cfg.Side)
	}
	if cfg.Profile != "" {
		f, err := os.Create(cfg.Profile)
		if err != nil {
			cancel()
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			cancel()
			return err
		}
		defer pprof.StopCPUProfile()
	}
	rep := usage()
	rep.Synced = time.Since(cfg.Start).Seconds()
	if err := enc.Encode(rep); err != nil {
		return err
	}
	trace := make(chan string, 1)
	if workers != nil {
		wg.Go(func() { trace <- traceWorkers(ctx, workers) })
	} else {
		trace <- ""
	}
	if !cfg.ExitWhenSynced {
		<-ctx.Done()
	}
	cancel()
	wg.Wait()
	rep = usage()
	rep.Done, rep.Levels, rep.Workers = true, levels.get(), <-trace
	return enc.Encode(rep)
}

// traceWorkers samples workers every 10 ms until ctx is done, and returns its changes.
func traceWorkers(ctx context.Context, workers func() int) string {
	start, last := time.Now(), -1
	var b strings.Builder
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if n := workers(); n != last {
			fmt.Fprintf(&b, "+%.2f:%d ", time.Since(start).Seconds(), n)
			last = n
		}
		select {
		case <-ctx.Done():
			return strings.TrimSpace(b.String())
		case <-tick.C:
		}
	}
}

// usage is the process's CPU time and peak resident set so far.
func usage() ChildReport {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return ChildReport{}
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return ChildReport{CPU: cpu.Seconds(), MaxRSSMB: float64(ru.Maxrss) / 1024}
}

// nodeNameIndex is the pod informer's index kube's controller reads; kube-controller-manager
// adds it elsewhere (without it, kube's controller evicts nothing).
const nodeNameIndex = "spec.nodeName"

// kubeSide makes kube's taint eviction controller over informers of client, as
// kube-controller-manager runs it.
func kubeSide(ctx context.Context, client kubernetes.Interface) (run func(context.Context), synced func(context.Context) bool, err error) {
	factory := informers.NewSharedInformerFactory(client, 0)
	pods := factory.Core().V1().Pods()
	err = pods.Informer().AddIndexers(cache.Indexers{nodeNameIndex: func(obj any) ([]string, error) {
		pod, ok := obj.(*v1.Pod)
		if !ok || pod.Spec.NodeName == "" {
			return nil, nil
		}
		return []string{pod.Spec.NodeName}, nil
	}})
	if err != nil {
		return nil, nil, err
	}
	tc, err := tainteviction.New(ctx, client, pods, factory.Core().V1().Nodes(), "taint-eviction-controller")
	if err != nil {
		return nil, nil, fmt.Errorf("realapiserver: kube's tainteviction.New: %w", err)
	}
	run = func(ctx context.Context) {
		factory.Start(ctx.Done())
		tc.Run(ctx)
		factory.Shutdown()
	}
	synced = func(ctx context.Context) bool {
		return cache.WaitForCacheSync(ctx.Done(), pods.Informer().HasSynced, factory.Core().V1().Nodes().Informer().HasSynced)
	}
	return run, synced, nil
}

// oursSide makes taintevict's drop-in controller, as the command runs it: its Events on a
// client with a budget of their own.
func oursSide(ctx context.Context, client kubernetes.Interface, rc *rest.Config, cfg ChildConfig) (run func(context.Context), synced func(context.Context) bool, workers func() int, err error) {
	erc := rest.CopyConfig(rc)
	erc.QPS, erc.Burst, erc.RateLimiter = cfg.Client.EventsQPS, cfg.Client.EventsBurst, nil
	events, err := kubernetes.NewForConfig(erc)
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := clientgo.NewController(ctx, client, clientgo.NewFactory(client), clientgo.Options{
		Mode:        cfg.Side.Mode,
		Manager:     eviction.Options{ActWorkers: cfg.Side.DeleteWorkers},
		EventClient: events,
	})
	if err != nil {
		return nil, nil, nil, err
	}
	run = func(ctx context.Context) { _ = c.Run(ctx) }
	synced = func(ctx context.Context) bool {
		select {
		case <-c.Synced():
			return true
		case <-ctx.Done():
			return false
		}
	}
	return run, synced, c.Manager().DeleteWorkers, nil
}
