package clientgo

import (
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"
	k8stesting "k8s.io/client-go/testing"

	"github.com/taintevict/taintevict/clientgo/internal/fixtures"
)

// TestMain fails the package if any goroutine outlives the tests: informers, event
// broadcasters, Managers, leader electors and HTTP servers must all stop.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// errTest is an error for the tests to return and to find again.
var errTest = errors.New("clientgo: test error")

// failAfter bounds a test that waits on the real clock. It is a failure timeout, not a
// wait: the tests wait on channels and events.
const failAfter = 30 * time.Second

// The shared nodes and pods of the module's tests.
var (
	podUID      = fixtures.PodUID
	podOn       = fixtures.PodOn
	taintedNode = fixtures.TaintedNode
	tolerating  = fixtures.Tolerating
)

// writes returns "verb resource/subresource" for each action that is not a read.
func writes(actions []k8stesting.Action) []string {
	var out []string
	for _, a := range actions {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		s := a.GetVerb() + " " + a.GetResource().Resource
		if sub := a.GetSubresource(); sub != "" {
			s += "/" + sub
		}
		out = append(out, s)
	}
	return out
}
