package eviction

import "k8s.io/apimachinery/pkg/types"

// podLockStripes is the number of pod locks; a power of two well above the worker count
// keeps unrelated pods from waiting on each other.
const podLockStripes = 256

// podLocks serialise the decisions about one pod: each reads the pod's state from the Cache
// and changes its schedule while holding the lock of the pod's stripe, so that two workers
// (a node's and a pod's, or a delete worker's) deciding about the same pod never interleave,
// and the last decision is made from the newest state. They are channels of capacity one
// rather than mutexes so that a goroutine waiting for one counts as blocked to
// testing/synctest. Make them with newPodLocks.
type podLocks [podLockStripes]chan struct{}

func newPodLocks() *podLocks {
	var l podLocks
	for i := range l {
		l[i] = make(chan struct{}, 1)
	}
	return &l
}

// lock takes the lock of key's stripe and returns it, for unlock: defer
// m.podLocks.lock(key).unlock() (a method, not a returned closure, which would allocate).
func (l *podLocks) lock(key types.NamespacedName) podLock {
	h := fnv1a(fnv1a(fnv1a(fnvOffset, key.Namespace), "/"), key.Name)
	c := l[h%podLockStripes]
	c <- struct{}{}
	return c
}

// podLock is one held stripe of podLocks.
type podLock chan struct{}

// unlock releases the lock.
func (p podLock) unlock() { <-p }
