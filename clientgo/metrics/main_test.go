package metrics

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a Manager of a test outlives it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
