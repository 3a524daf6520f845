package main

import (
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/taintevict/taintevict/eviction"

	"github.com/taintevict/taintevict/clientgo"
)

// How the demo waits, without sleeping for a guessed time. Manager.WaitIdle knows only what
// the Manager has been handed: a change the script makes through the clientset reaches the
// Manager later, once the informer has delivered it, and a pod the Deleter removes comes
// back the same way. So settle waits for a fixed point: every node and pod the clientset
// holds has been handed to the Manager as it is now (handed, the informers' side), the
// Manager is idle (WaitIdle, its side), and the clientset did not change meanwhile.

// handed wraps the Manager where the informers feed it, and remembers what it was handed
// last: each node's NoExecute taints, and which pods exist. It wakes a waiting script at
// every update. It is safe for concurrent use.
type handed struct {
	clientgo.Updater
	wake chan struct{}

	mu    sync.Mutex
	nodes map[string]string // name -> its taints, as state writes them
	pods  map[string]bool   // "ns/name" of the pods that exist
}

var _ clientgo.Updater = (*handed)(nil)

func newHanded(u clientgo.Updater) *handed {
	return &handed{Updater: u, wake: make(chan struct{}, 1), nodes: map[string]string{}, pods: map[string]bool{}}
}

// NodeUpdated hands the update on, then notes it: once noted, a WaitIdle called next
// covers it.
func (h *handed) NodeUpdated(old, node *v1.Node) {
	h.Updater.NodeUpdated(old, node)
	h.mu.Lock()
	if node == nil {
		delete(h.nodes, old.Name)
	} else {
		h.nodes[node.Name] = taintsOf(node)
	}
	h.mu.Unlock()
	poke(h.wake)
}

// PodUpdated hands the update on, then notes it.
func (h *handed) PodUpdated(old, pod *v1.Pod) {
	h.Updater.PodUpdated(old, pod)
	h.mu.Lock()
	if pod == nil {
		delete(h.pods, old.Namespace+"/"+old.Name)
	} else {
		h.pods[pod.Namespace+"/"+pod.Name] = true
	}
	h.mu.Unlock()
	poke(h.wake)
}

// state is what the Manager was handed, in the form of clusterState.
func (h *handed) state() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return state(h.nodes, h.pods)
}

// settle waits until the Manager has been handed the clientset's nodes and pods as they
// are, and is idle, with no change to the clientset meanwhile; or until ctx is done.
func settle(ctx context.Context, client kubernetes.Interface, h *handed, m *eviction.Manager) error {
	want, err := clusterState(ctx, client)
	for err == nil {
		if err = until(ctx, h.wake, func() bool { return h.state() == want }); err != nil {
			return err
		}
		if err = m.WaitIdle(ctx); err != nil {
			return err
		}
		var now string
		if now, err = clusterState(ctx, client); err == nil && now == want {
			return nil
		}
		want = now // the Deleter changed the cluster: wait for that to come round too
	}
	return err
}

// clusterState reads the nodes and pods straight from the clientset.
func clusterState(ctx context.Context, client kubernetes.Interface) (string, error) {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	ns, ps := map[string]string{}, map[string]bool{}
	for i := range nodes.Items {
		ns[nodes.Items[i].Name] = taintsOf(&nodes.Items[i])
	}
	for _, p := range pods.Items {
		ps[p.Namespace+"/"+p.Name] = true
	}
	return state(ns, ps), nil
}

func taintsOf(node *v1.Node) string {
	var ts []string
	for _, t := range node.Spec.Taints {
		if t.Effect == v1.TaintEffectNoExecute {
			ts = append(ts, t.ToString())
		}
	}
	slices.Sort(ts)
	return strings.Join(ts, ",")
}

func state(nodes map[string]string, pods map[string]bool) string {
	var lines []string
	for n, ts := range nodes {
		lines = append(lines, "node "+n+" "+ts)
	}
	for p := range pods {
		lines = append(lines, "pod "+p)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// wakeHandler pokes wake at every change of an informer's cache: the demo's Event informer,
// whose Events the broadcaster writes from its own goroutine, where no WaitIdle reaches.
func wakeHandler(wake chan struct{}) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke(wake) },
		UpdateFunc: func(any, any) { poke(wake) },
		DeleteFunc: func(any) { poke(wake) },
	}
}

func poke(wake chan struct{}) {
	select {
	case wake <- struct{}{}:
	default:
	}
}

// until returns once cond is true, checking it at every wake-up, or errInterrupted when
// ctx is done first.
func until(ctx context.Context, wake <-chan struct{}, cond func() bool) error {
	for !cond() {
		select {
		case <-wake:
		case <-ctx.Done():
			return errInterrupted
		}
	}
	return nil
}

// sleepUntil waits on the real clock until t, or returns errInterrupted when ctx is done.
func sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return errInterrupted
	}
}

// syncWriter serialises the writes to w; each write is a whole line or block.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
