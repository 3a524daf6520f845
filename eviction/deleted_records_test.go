package eviction_test

import (
	"fmt"
	"testing"

	"github.com/taintevict/taintevict/eviction"
)

// TestNoDeletionRecordLeaks: the Manager remembers each pod it deleted until it sees the
// pod's removal, so that a lagging cache cannot make it delete the pod twice. When the
// removal is processed before that record would be made (the informer was fast), the record
// must not be made at all, or it would stay forever.
func TestNoDeletionRecordLeaks(t *testing.T) {
	for _, workers := range []int{1, 8} {
		synctestRun(t, fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			h := run(t, eviction.Options{Workers: workers, ActWorkers: workers})
			h.removeOnDelete()
			for i := range 20 {
				h.setNode(newNode(fmt.Sprint("n", i)))
				for j := range 25 {
					h.setPod(newPod(fmt.Sprintf("p-%d-%d", i, j), fmt.Sprint("n", i)))
				}
			}
			h.wait()
			for i := range 20 {
				h.setNode(newNode(fmt.Sprint("n", i), noExecute("a", t0)))
			}
			h.wait()
			if got, want := len(h.deleted()), 500; got != want {
				t.Fatalf("deletions: got %d, want %d", got, want)
			}
			if got := h.m.Records(); got != 0 {
				t.Errorf("records left after every removal was seen: got %d, want 0", got)
			}
		})
	}
}
