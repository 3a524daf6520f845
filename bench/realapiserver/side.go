package realapiserver

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/taintevict/taintevict/clientgo"
)

// Side is one controller under test: kube's, taintevict's drop-in with a mode and a number
// of delete workers, or the flood that measures the API server's capacity.
type Side struct {
	// Kube is kube's controller; the other fields are then zero.
	Kube bool
	// Flood is no controller: the same requests as taintevict's in Mode, sent by Inflight
	// goroutines with no client rate limit as soon as each node is tainted (see floodSide):
	// what the API server serves when it is kept busy.
	Flood bool
	// Mode is taintevict's clientgo.ModeDelete or clientgo.ModeEvict.
	Mode clientgo.Mode
	// DeleteWorkers pins eviction.Options.DeleteWorkers; 0 keeps the Manager's default.
	DeleteWorkers int
	// Inflight is the flood's requests at once; 0 means DefaultFloodInflight.
	Inflight int
}

// DefaultFloodInflight is the flood's removals at once when its side does not say.
const DefaultFloodInflight = 256

// ParseSide reads a side: "kube"; "ours" followed by "/mode=evict" (or "/mode=delete",
// the default) and "/delete-workers=N", in any order, e.g. "ours/mode=evict/delete-workers=64";
// or "flood" followed by "/mode=evict" and "/inflight=N".
func ParseSide(s string) (Side, error) {
	parts := strings.Split(s, "/")
	side := Side{Mode: clientgo.ModeDelete}
	switch parts[0] {
	case "kube":
		if len(parts) > 1 {
			return Side{}, fmt.Errorf("realapiserver: side %q: kube takes no options", s)
		}
		return Side{Kube: true}, nil
	case "ours":
	case "flood":
		side.Flood = true
	default:
		return Side{}, fmt.Errorf("realapiserver: side %q: want kube, ours[/mode=evict][/delete-workers=N] or flood[/mode=evict][/inflight=N]", s)
	}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(p, "=")
		switch k {
		case "mode":
			if m := clientgo.Mode(v); m == clientgo.ModeDelete || m == clientgo.ModeEvict {
				side.Mode = m
				continue
			}
			return Side{}, fmt.Errorf("realapiserver: side %q: mode %q: want delete or evict", s, v)
		case "delete-workers", "inflight":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || (k == "inflight") != side.Flood {
				return Side{}, fmt.Errorf("realapiserver: side %q: %s %q: want a whole number, at least 1, delete-workers for ours and inflight for flood", s, k, v)
			}
			if side.Flood {
				side.Inflight = n
			} else {
				side.DeleteWorkers = n
			}
			continue
		}
		return Side{}, fmt.Errorf("realapiserver: side %q: unknown option %q", s, p)
	}
	return side, nil
}

// String is the side as ParseSide reads it, with only what differs from the defaults.
func (s Side) String() string {
	if s.Kube {
		return "kube"
	}
	out := "ours"
	if s.Flood {
		out = "flood"
	}
	if s.Mode == clientgo.ModeEvict {
		out += "/mode=evict"
	}
	if s.DeleteWorkers > 0 {
		out += "/delete-workers=" + strconv.Itoa(s.DeleteWorkers)
	}
	if s.Inflight > 0 {
		out += "/inflight=" + strconv.Itoa(s.Inflight)
	}
	return out
}

// The service accounts the sides run as (by name: each side has a client certificate with
// that name, which API Priority and Fairness reads as the service account's).
const (
	// KubeUser is the service account kube-controller-manager gives its taint eviction
	// controller with --use-service-account-credentials; the bootstrap FlowSchema
	// kube-system-service-accounts serves it at workload-high.
	KubeUser = "system:serviceaccount:kube-system:taint-eviction-controller"
)

// userGroups are the groups of the service account named user.
func userGroups(user string) []string {
	ns := strings.Split(user, ":")[2]
	return []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
}
