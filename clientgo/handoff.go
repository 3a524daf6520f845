package clientgo

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	k8stesting "k8s.io/client-go/testing"

	"github.com/taintevict/taintevict/eviction"
)

// Handoff is the [Updater] between the informers and an [eviction.Manager] that remembers
// the last version of each node and pod it handed on, so that [Handoff.WaitIdle] can tell
// when the Manager has been handed what the API server holds: the way for a test on a fake
// clientset and clock to wait without guessing. Give it to [Informers.AddHandlers] in
// place of the Manager ([Options.WaitIdle] does). It keeps an entry per node and pod.
//
// A fake clientset loses a deletion made between an informer's list and its watch, so on
// one NewHandoff opens the node and pod watches itself, replaying to each the deletions
// requested before it opened, and WaitIdle first waits until both are open: create the
// Handoff (the Controller) before the informers start (else WaitIdle fails), and prepend
// any watch or delete reactor of your own for nodes or pods after it.
//
// Its methods are safe for concurrent use. The zero Handoff is not usable: create one with
// [NewHandoff].
type Handoff struct {
	client kubernetes.Interface
	m      *eviction.Manager
	wake   chan struct{} // a token after each update, and each watch opened

	mu       sync.Mutex
	nodes    map[string]*v1.Node
	pods     map[types.NamespacedName]*v1.Pod
	unopened map[string]bool // a fake clientset's watches not open yet
	late     []string        // a fake clientset's watches opened before NewHandoff
	// deleted are the keys a delete request named before the watch of its resource opened.
	deleted map[string]map[types.NamespacedName]bool
}

// NewHandoff returns the Handoff that hands every change on to m, and lists through client.
// On a fake clientset, call it before the informers start.
func NewHandoff(client kubernetes.Interface, m *eviction.Manager) *Handoff {
	h := &Handoff{client: client, m: m, wake: make(chan struct{}, 1),
		nodes: map[string]*v1.Node{}, pods: map[types.NamespacedName]*v1.Pod{}}
	if f, ok := client.(fakeClientset); ok {
		h.openWatches(f)
	}
	return h
}

// fakeClientset is what the fake Clientset offers, which openWatches uses.
type fakeClientset interface {
	PrependReactor(verb, resource string, reaction k8stesting.ReactionFunc)
	PrependWatchReactor(resource string, reaction k8stesting.WatchReactionFunc)
	Tracker() k8stesting.ObjectTracker
	Actions() []k8stesting.Action
}

// openWatches opens the fake clientset's node and pod watches as its own reactor does, and
// notes them open; and notes those opened already, which it cannot see.
func (h *Handoff) openWatches(f fakeClientset) {
	h.unopened = map[string]bool{"nodes": true, "pods": true}
	h.deleted = map[string]map[types.NamespacedName]bool{}
	for _, resource := range []string{"nodes", "pods"} {
		if slices.ContainsFunc(f.Actions(), func(a k8stesting.Action) bool {
			return a.GetVerb() == "watch" && a.GetResource().Resource == resource
		}) {
			h.late = append(h.late, resource)
		}
		f.PrependReactor("delete", resource, func(a k8stesting.Action) (bool, runtime.Object, error) {
			if d, ok := a.(k8stesting.DeleteAction); ok && a.GetSubresource() == "" {
				h.noteDeleted(resource, types.NamespacedName{Namespace: a.GetNamespace(), Name: d.GetName()})
			}
			return false, nil, nil // the fake's own reactor deletes
		})
		f.PrependWatchReactor(resource, func(a k8stesting.Action) (bool, watch.Interface, error) {
			var opts metav1.ListOptions
			if wa, ok := a.(k8stesting.WatchActionImpl); ok {
				opts = wa.ListOptions
			}
			w, err := f.Tracker().Watch(a.GetResource(), a.GetNamespace(), opts)
			if err == nil {
				h.replayDeletions(f, a.GetResource(), w)
				h.mu.Lock()
				delete(h.unopened, resource)
				h.mu.Unlock()
				h.poke()
			}
			return true, w, err
		})
	}
}

// replayDeletions sends w a Deleted event for each object of resource that a delete
// request removed before w opened: the fake's watch replays what exists, not what went, so
// an informer that listed such an object would keep it for ever (the Manager's first
// evictions come as the pods are listed, before the pod watch opens). An informer ignores
// the event of an object it does not hold.
func (h *Handoff) replayDeletions(f fakeClientset, gvr schema.GroupVersionResource, w watch.Interface) {
	fw, ok := w.(interface{ Delete(runtime.Object) })
	h.mu.Lock()
	deleted := h.deleted[gvr.Resource]
	delete(h.deleted, gvr.Resource)
	h.mu.Unlock()
	for key := range deleted {
		if _, err := f.Tracker().Get(gvr, key.Namespace, key.Name); ok && err != nil {
			fw.Delete(h.gone(gvr.Resource, key)) // not recreated since
		}
	}
}

// gone is the last version handed on of the node or pod key, or one with its name alone.
func (h *Handoff) gone(resource string, key types.NamespacedName) runtime.Object {
	h.mu.Lock()
	defer h.mu.Unlock()
	if resource == "nodes" {
		if n := h.nodes[key.Name]; n != nil {
			return n
		}
		return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: key.Name}}
	}
	if p := h.pods[key]; p != nil {
		return p
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
}

// noteDeleted notes a delete request of key, until the watch of resource opens.
func (h *Handoff) noteDeleted(resource string, key types.NamespacedName) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.unopened[resource] {
		if h.deleted[resource] == nil {
			h.deleted[resource] = map[types.NamespacedName]bool{}
		}
		h.deleted[resource][key] = true
	}
}

// NodeUpdated hands the update on to the Manager, then notes it.
func (h *Handoff) NodeUpdated(old, node *v1.Node) {
	h.m.NodeUpdated(old, node)
	h.mu.Lock()
	if node == nil {
		delete(h.nodes, old.Name)
	} else {
		h.nodes[node.Name] = node
	}
	h.mu.Unlock()
	h.poke()
}

// PodUpdated hands the update on to the Manager, then notes it.
func (h *Handoff) PodUpdated(old, pod *v1.Pod) {
	h.m.PodUpdated(old, pod)
	h.mu.Lock()
	if pod == nil {
		delete(h.pods, types.NamespacedName{Namespace: old.Namespace, Name: old.Name})
	} else {
		h.pods[types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}] = pod
	}
	h.mu.Unlock()
	h.poke()
}

func (h *Handoff) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// WaitIdle waits until the Manager has been handed every node and pod as the API server
// holds them now, and is idle ([eviction.Manager.WaitIdle]), with no change on the server
// meanwhile; or until ctx is done, and then returns its error. Evictions due later on the
// Manager's clock are left pending: step a fake clock, then wait again.
//
// It lists every node and pod whenever the informers deliver an update, and compares them,
// but for what [Trim] drops, to what it handed on; it waits forever on a cluster that
// never stops changing. It returns an error if a listing fails, and at once if the
// Handoff was made too late on a fake clientset.
func (h *Handoff) WaitIdle(ctx context.Context) error {
	if len(h.late) > 0 {
		return fmt.Errorf("clientgo: WaitIdle: the Handoff was created after the informers opened their watch of %s on the fake clientset, so it cannot wait for that watch: create the Handoff (or the Controller) before the informers start", strings.Join(h.late, " and "))
	}
	for !h.open() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-h.wake:
		}
	}
	want, err := listState(ctx, h.client)
	for err == nil {
		if h.handed(want) {
			if err = h.m.WaitIdle(ctx); err != nil {
				return err
			}
			var now state
			if now, err = listState(ctx, h.client); err == nil && now.equal(want) {
				return nil
			}
			want = now // the Manager changed the cluster: wait for that to come round too
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-h.wake:
			want, err = listState(ctx, h.client) // what was delivered is on the server
		}
	}
	return err
}

// open reports whether the fake clientset's watches are open.
func (h *Handoff) open() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.unopened) == 0
}

// handed reports whether the Manager has been handed s, and nothing else.
func (h *Handoff) handed(s state) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return state{h.nodes, h.pods}.equal(s)
}

// state is the nodes and pods listed, or handed on.
type state struct {
	nodes map[string]*v1.Node
	pods  map[types.NamespacedName]*v1.Pod
}

func listState(ctx context.Context, client kubernetes.Interface) (state, error) {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return state{}, fmt.Errorf("clientgo: WaitIdle: listing the nodes: %w", err)
	}
	pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return state{}, fmt.Errorf("clientgo: WaitIdle: listing the pods: %w", err)
	}
	s := state{nodes: make(map[string]*v1.Node, len(nodes.Items)), pods: make(map[types.NamespacedName]*v1.Pod, len(pods.Items))}
	for i := range nodes.Items {
		s.nodes[nodes.Items[i].Name] = &nodes.Items[i]
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		s.pods[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
	}
	return s, nil
}

func (s state) equal(o state) bool {
	return sameObjects(s.nodes, o.nodes) && sameObjects(s.pods, o.pods)
}

// bare returns a copy of a node or a pod without what [Trim] drops and the type meta (a
// listed item has none).
func bare(obj runtime.Object) runtime.Object {
	trimmed, _ := Trim(obj) // it fails for no node or pod
	o := trimmed.(runtime.Object).DeepCopyObject()
	o.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return o
}

func sameObjects[K comparable, T runtime.Object](a, b map[K]T) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		y, ok := b[k]
		if !ok || !apiequality.Semantic.DeepEqual(bare(x), bare(y)) {
			return false
		}
	}
	return true
}
