package eviction

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestDeletedPods(t *testing.T) {
	var d deletedPods
	a := types.NamespacedName{Namespace: "ns", Name: "a"}
	if d.has(a, "1") {
		t.Fatalf("empty: has(a, 1): got true, want false")
	}
	d.add(a, "1")
	if !d.has(a, "1") {
		t.Errorf("after add: has(a, 1): got false, want true")
	}
	if d.has(a, "2") {
		t.Errorf("has(a, 2) for another UID: got true, want false")
	}
	if got := d.len(); got != 0 {
		t.Errorf("a record of another UID is dropped: len got %d, want 0", got)
	}
	d.add(a, "1")
	d.forget(a)
	if d.has(a, "1") || d.len() != 0 {
		t.Errorf("after forget: has %v, len %d, want false, 0", d.has(a, "1"), d.len())
	}
}

// TestDeletedPodsShrink: after a large batch of records is forgotten, the map is rebuilt
// small instead of keeping the peak's buckets.
func TestDeletedPodsShrink(t *testing.T) {
	var d deletedPods
	const n = 10000
	keys := make([]types.NamespacedName, n)
	for i := range keys {
		keys[i] = types.NamespacedName{Namespace: "ns", Name: fmt.Sprint("pod-", i)}
		d.add(keys[i], types.UID(fmt.Sprint(i)))
	}
	for _, k := range keys[:n-10] {
		d.forget(k)
	}
	if got, want := d.len(), 10; got != want {
		t.Fatalf("len: got %d, want %d", got, want)
	}
	if d.peak >= n/4 {
		t.Errorf("peak after forgetting most records: got %d, want below %d (the map was not rebuilt)", d.peak, n/4)
	}
	for i, k := range keys[n-10:] {
		if !d.has(k, types.UID(fmt.Sprint(n-10+i))) {
			t.Errorf("record %v lost in the rebuild", k)
		}
	}
}
