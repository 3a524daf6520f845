package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/client-go/tools/record"

	"github.com/taintevict/taintevict/eviction"
)

// drain returns the events the fake recorder holds.
func drain(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// TestObserver checks the Events kube records, and that every decision is a line.
func TestObserver(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	var out bytes.Buffer
	o := &Observer{Out: &out, Recorder: rec}
	pod := eviction.PodRef{Namespace: "shop", Name: "web-1", UID: "uid-1", Node: "node-1"}

	o.Scheduled(pod, time.Now().Add(time.Minute))
	o.Scheduled(pod, time.Now())
	o.Started(pod, 1)
	o.Failed(pod, 1, errors.New("etcd is down"))
	o.Started(pod, 2) // a retry: no second Event
	o.Succeeded(pod, 2, false)
	o.Succeeded(pod, 1, true)
	o.Skipped(pod, eviction.ReasonPodFinished)
	o.Cancelled(pod, eviction.ReasonNotTainted)

	assert.Equal(t, []string{
		"Normal TaintManagerEviction Marking for deletion Pod shop/web-1",
		"Normal TaintManagerEviction Cancelling deletion of Pod shop/web-1",
	}, drain(rec))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	assert.Len(t, lines, 9)
	for i, want := range []string{
		"scheduled  shop/web-1 on node-1: evict at ",
		"scheduled  shop/web-1 on node-1: evict now",
		"evicting   shop/web-1 from node-1 (attempt 1)",
		"failed     shop/web-1 on node-1 (attempt 1, will retry): etcd is down",
		"evicting   shop/web-1 from node-1 (attempt 2)",
		"evicted    shop/web-1 from node-1",
		"would evict shop/web-1 from node-1 (dry run)",
		"skipped    shop/web-1 on node-1: PodFinished",
		"cancelled  shop/web-1 on node-1: NodeNotTainted",
	} {
		if assert.Less(t, i, len(lines)) {
			assert.Contains(t, lines[i], want)
		}
	}

	// Without a recorder or an output, nothing happens, and nothing breaks.
	(&Observer{}).Started(pod, 1)
	(&Observer{}).Cancelled(pod, eviction.ReasonPodDeleted)
}
