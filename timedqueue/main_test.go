package timedqueue

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine (a worker, Run's timer loop, a timer
// callback of the reference queue) outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
