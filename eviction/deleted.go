package eviction

import (
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"
)

// deletedPods remembers the UID of each pod the Deleter has deleted whose removal the
// Manager has not seen yet. The Cache lags behind the API server: an update of such a pod
// processed meanwhile must not delete it again (kube keeps the key in its queue for the same
// reason). It is safe for concurrent use; the zero value is empty and ready.
type deletedPods struct {
	n    atomic.Int64 // len(uids), so that the common case, none, takes no lock
	mu   sync.Mutex
	uids map[types.NamespacedName]types.UID
	peak int
}

// add records that the pod key with uid was deleted.
func (d *deletedPods) add(key types.NamespacedName, uid types.UID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.uids == nil {
		d.uids = make(map[types.NamespacedName]types.UID)
	}
	d.uids[key] = uid
	d.peak = max(d.peak, len(d.uids))
	d.n.Store(int64(len(d.uids)))
}

// has reports whether the pod key with uid was deleted. A record of another UID is dropped:
// that pod is gone, since one of the same name exists.
func (d *deletedPods) has(key types.NamespacedName, uid types.UID) bool {
	if d.n.Load() == 0 {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	got, ok := d.uids[key]
	if ok && got != uid {
		d.removeLocked(key)
		return false
	}
	return ok
}

// forget drops the record of key, once its removal has been seen.
func (d *deletedPods) forget(key types.NamespacedName) {
	if d.n.Load() == 0 {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.removeLocked(key)
}

// removeLocked deletes key and rebuilds the map once it holds less than a quarter of its
// peak, since a Go map never gives memory back: after a zone outage the records of tens of
// thousands of evicted pods would otherwise stay allocated.
func (d *deletedPods) removeLocked(key types.NamespacedName) {
	delete(d.uids, key)
	if d.peak > 1024 && len(d.uids) < d.peak/4 {
		fresh := make(map[types.NamespacedName]types.UID, len(d.uids))
		for k, v := range d.uids {
			fresh[k] = v
		}
		d.uids, d.peak = fresh, len(fresh)
	}
	d.n.Store(int64(len(d.uids)))
}

func (d *deletedPods) len() int { return int(d.n.Load()) }
