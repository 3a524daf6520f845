package apparatus

import (
	"context"
	"errors"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/util/watchlist"
)

var errUIDMismatch = errors.New("the precondition's UID is not the pod's")

// Counts are the requests a Client answered, by verb. Events counts event writes, which are
// not pod requests.
type Counts struct {
	Get, Patch, Update, Delete, Evict, Events int64
}

// Sub returns the requests of c made since b, an earlier Counts of the same Client.
func (c Counts) Sub(b Counts) Counts {
	return Counts{Get: c.Get - b.Get, Patch: c.Patch - b.Patch, Update: c.Update - b.Update,
		Delete: c.Delete - b.Delete, Evict: c.Evict - b.Evict, Events: c.Events - b.Events}
}

// PodRequests is the number of pod requests: GET, PATCH, UPDATE, DELETE and eviction.
func (c Counts) PodRequests() int64 { return c.Get + c.Patch + c.Update + c.Delete + c.Evict }

// Client is a kubernetes.Interface whose pod GET, PATCH, UPDATE, UpdateStatus, DELETE and
// eviction requests, and event writes, are answered at once from the Cluster it was made
// for, without a lock, and counted. A PATCH or UPDATE changes nothing: the answer is the
// pod as it was. A DELETE (or eviction) removes the pod for later
// requests, which then get NotFound, as from an API server; a UID precondition that does
// not match gets a Conflict. Everything else goes to the embedded clientset.
//
// Client is safe for concurrent use. OnDelete, when set before use, is called after each
// DELETE that removed a pod, with the pod's index in the Cluster.
type Client struct {
	kubernetes.Interface
	cluster  *Cluster
	gone     []atomic.Bool
	OnDelete func(index int)

	get, patch, update, del, evict, events atomic.Int64
}

// NewClient returns a Client answering for cluster, passing other requests to next.
func NewClient(next kubernetes.Interface, cluster *Cluster) *Client {
	return &Client{Interface: next, cluster: cluster, gone: make([]atomic.Bool, len(cluster.Pods))}
}

// Counts returns the requests answered so far.
func (c *Client) Counts() Counts {
	return Counts{Get: c.get.Load(), Patch: c.patch.Load(), Update: c.update.Load(),
		Delete: c.del.Load(), Evict: c.evict.Load(), Events: c.events.Load()}
}

// Deleted reports whether the pod with the given index has been deleted.
func (c *Client) Deleted(index int) bool { return c.gone[index].Load() }

// IsWatchListSemanticsUnSupported tells informers what the wrapped clientset tells them:
// the fake clientset cannot stream a list through a watch, and informers that try wait for
// ever.
func (c *Client) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(c.Interface)
}

// CoreV1 returns the core client with the pods and events answered here.
func (c *Client) CoreV1() corev1.CoreV1Interface {
	return coreV1{CoreV1Interface: c.Interface.CoreV1(), c: c}
}

type coreV1 struct {
	corev1.CoreV1Interface
	c *Client
}

func (cv coreV1) Pods(namespace string) corev1.PodInterface {
	return pods{PodInterface: cv.CoreV1Interface.Pods(namespace), c: cv.c, ns: namespace}
}

func (cv coreV1) Events(namespace string) corev1.EventInterface {
	return events{EventInterface: cv.CoreV1Interface.Events(namespace), c: cv.c}
}

type pods struct {
	corev1.PodInterface
	c  *Client
	ns string
}

var podResource = v1.Resource("pods")

// lookup returns the pod and its index, or NotFound when it does not exist or was deleted.
func (p pods) lookup(name string) (*v1.Pod, int, error) {
	i, ok := p.c.cluster.index[types.NamespacedName{Namespace: p.ns, Name: name}]
	if !ok || p.c.gone[i].Load() {
		return nil, -1, apierrors.NewNotFound(podResource, name)
	}
	return p.c.cluster.Pods[i], i, nil
}

func (p pods) Get(_ context.Context, name string, _ metav1.GetOptions) (*v1.Pod, error) {
	p.c.get.Add(1)
	pod, _, err := p.lookup(name)
	if err != nil {
		return nil, err
	}
	return shallowCopy(pod), nil
}

func (p pods) Patch(_ context.Context, name string, _ types.PatchType, _ []byte, _ metav1.PatchOptions, _ ...string) (*v1.Pod, error) {
	p.c.patch.Add(1)
	pod, _, err := p.lookup(name)
	if err != nil {
		return nil, err
	}
	return shallowCopy(pod), nil
}

func (p pods) Update(_ context.Context, pod *v1.Pod, _ metav1.UpdateOptions) (*v1.Pod, error) {
	return p.answerUpdate(pod)
}

func (p pods) UpdateStatus(_ context.Context, pod *v1.Pod, _ metav1.UpdateOptions) (*v1.Pod, error) {
	return p.answerUpdate(pod)
}

func (p pods) answerUpdate(pod *v1.Pod) (*v1.Pod, error) {
	p.c.update.Add(1)
	if _, _, err := p.lookup(pod.Name); err != nil {
		return nil, err
	}
	return shallowCopy(pod), nil
}

// shallowCopy is the answer to a GET, PATCH or UPDATE: a pod of its own, whose maps and
// slices are the cluster's, so that answering costs one allocation whatever the pod holds
// (an API server's answer costs its decoding, which is no part of either controller).
// Neither controller modifies what it gets.
func shallowCopy(pod *v1.Pod) *v1.Pod {
	p := *pod
	return &p
}

func (p pods) Delete(_ context.Context, name string, opts metav1.DeleteOptions) error {
	p.c.del.Add(1)
	return p.remove(name, opts.Preconditions)
}

func (p pods) EvictV1(_ context.Context, e *policyv1.Eviction) error {
	p.c.evict.Add(1)
	var pre *metav1.Preconditions
	if e.DeleteOptions != nil {
		pre = e.DeleteOptions.Preconditions
	}
	return p.remove(e.Name, pre)
}

func (p pods) remove(name string, pre *metav1.Preconditions) error {
	pod, i, err := p.lookup(name)
	if err != nil {
		return err
	}
	if pre != nil && pre.UID != nil && *pre.UID != pod.UID {
		return apierrors.NewConflict(podResource, name, errUIDMismatch)
	}
	if p.c.gone[i].Swap(true) {
		return apierrors.NewNotFound(podResource, name)
	}
	if p.c.OnDelete != nil {
		p.c.OnDelete(i)
	}
	return nil
}

type events struct {
	corev1.EventInterface
	c *Client
}

func (e events) record(ev *v1.Event) (*v1.Event, error) {
	e.c.events.Add(1)
	return ev, nil
}

func (e events) CreateWithEventNamespace(ev *v1.Event) (*v1.Event, error) { return e.record(ev) }
func (e events) UpdateWithEventNamespace(ev *v1.Event) (*v1.Event, error) { return e.record(ev) }
func (e events) PatchWithEventNamespace(ev *v1.Event, _ []byte) (*v1.Event, error) {
	return e.record(ev)
}
func (e events) CreateWithEventNamespaceWithContext(_ context.Context, ev *v1.Event) (*v1.Event, error) {
	return e.record(ev)
}
func (e events) UpdateWithEventNamespaceWithContext(_ context.Context, ev *v1.Event) (*v1.Event, error) {
	return e.record(ev)
}
func (e events) PatchWithEventNamespaceWithContext(_ context.Context, ev *v1.Event, _ []byte) (*v1.Event, error) {
	return e.record(ev)
}
func (e events) Create(_ context.Context, ev *v1.Event, _ metav1.CreateOptions) (*v1.Event, error) {
	return e.record(ev)
}
