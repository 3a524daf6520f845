package clientgo

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// TestHandlerFuncs: adds, updates and deletes reach f with kube's (old, new) convention, a
// tombstone is unwrapped, and objects of another type are ignored.
func TestHandlerFuncs(t *testing.T) {
	var got []string
	name := func(n *v1.Node) string {
		if n == nil {
			return "nil"
		}
		return n.Name
	}
	h := HandlerFuncs(klog.Background(), func(old, new *v1.Node) { got = append(got, name(old)+" -> "+name(new)) })
	a, b := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b"}}
	h.OnAdd(a, false)
	h.OnUpdate(a, b)
	h.OnDelete(b)
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "a", Obj: a})
	h.OnAdd(&v1.Pod{}, false)
	h.OnUpdate(a, &v1.Pod{})
	h.OnDelete(&v1.Pod{})
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "p", Obj: &v1.Pod{}})
	if want := []string{"nil -> a", "a -> b", "b -> nil", "a -> nil"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
