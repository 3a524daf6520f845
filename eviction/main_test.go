package eviction_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine of a Manager (an event worker, a
// delete worker, a dispatcher, a timeout watcher) outlives the tests and the example.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
