package controllerruntime

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/taintevict/taintevict/clientgo"
)

func pod(name, node string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}, Spec: v1.PodSpec{NodeName: node}}
}

// TestCacheReader: PodsOnNode lists the pods bound to the node through the spec.nodeName
// index, Pod and Node read the objects, and an object that is not there is the NotFound
// error that the eviction.Cache contract takes as "does not exist".
func TestCacheReader(t *testing.T) {
	r := fake.NewClientBuilder().
		WithObjects(pod("web-1", "node-1"), pod("web-2", "node-1"), pod("db-1", "node-2"), pod("pending", ""),
			&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}).
		WithIndex(&v1.Pod{}, clientgo.NodeNameIndex, nodeNameOf).
		Build()
	c := newCache(r)
	for _, tc := range []struct {
		node string
		want []string
	}{
		{"node-1", []string{"web-1", "web-2"}},
		{"node-2", []string{"db-1"}},
		{"node-3", nil},
	} {
		t.Run("PodsOnNode/"+tc.node, func(t *testing.T) {
			pods, err := c.PodsOnNode(tc.node)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range pods {
				got = append(got, p.Name)
			}
			slices.Sort(got)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("Pod", func(t *testing.T) {
		if p, err := c.Pod("shop", "web-1"); err != nil || p.Spec.NodeName != "node-1" {
			t.Errorf("got %v, %v; want web-1 on node-1", p, err)
		}
		if p, err := c.Pod("shop", "gone"); !apierrors.IsNotFound(err) || p != nil {
			t.Errorf("missing pod: got %v, %v; want nil and NotFound", p, err)
		}
	})
	t.Run("Node", func(t *testing.T) {
		if n, err := c.Node("node-1"); err != nil || n.Name != "node-1" {
			t.Errorf("got %v, %v; want node-1", n, err)
		}
		if n, err := c.Node("node-9"); !apierrors.IsNotFound(err) || n != nil {
			t.Errorf("missing node: got %v, %v; want nil and NotFound", n, err)
		}
	})
}

// TestCacheReaderNeverWaits: on a manager's cache whose informers have not synced (their
// API server never answers), every read fails at once, with an error that is not
// NotFound (the Manager retries it later), where controller-runtime's own read waits for
// the sync.
func TestCacheReaderNeverWaits(t *testing.T) {
	hung := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-hung:
		}
	}))
	defer srv.Close()
	defer close(hung)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(v1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	mapper.Add(v1.SchemeGroupVersion.WithKind("Node"), meta.RESTScopeRoot)
	cache, err := crcache.New(&rest.Config{Host: srv.URL}, crcache.Options{Scheme: scheme.Scheme, Mapper: mapper})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if _, _, err := informers(ctx, cache, cache); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = cache.Start(ctx) }()
	defer func() { cancel(); <-stopped }()

	// The control: once the cache runs, controller-runtime's own read waits for the sync,
	// until its context ends.
	for deadline := time.Now().Add(time.Minute); ; {
		if time.Now().After(deadline) {
			t.Fatal("the cache has not started after a minute")
		}
		short, stop := context.WithTimeout(ctx, 200*time.Millisecond)
		err := cache.Get(short, client.ObjectKey{Namespace: "shop", Name: "web-1"}, &v1.Pod{})
		stop()
		if !errors.As(err, new(*crcache.ErrCacheNotStarted)) {
			if short.Err() == nil {
				t.Fatalf("the control: controller-runtime's read returned %v before its context ended, want it to wait", err)
			}
			break
		}
	}
	c := newCache(cache)
	for name, read := range map[string]func() error{
		"PodsOnNode": func() error { _, err := c.PodsOnNode("node-1"); return err },
		"Pod":        func() error { _, err := c.Pod("shop", "web-1"); return err },
		"Node":       func() error { _, err := c.Node("node-1"); return err },
	} {
		t.Run(name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { done <- read() }()
			select {
			case err := <-done:
				if err == nil || apierrors.IsNotFound(err) {
					t.Errorf("got %v, want an error other than NotFound", err)
				}
			case <-time.After(time.Minute):
				t.Fatal("the read still waits after a minute")
			}
		})
	}
}
