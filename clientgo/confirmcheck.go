package clientgo

import (
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/tolerations"
)

// UnconfirmedReason is the reason of the Warning Event a [Controller] with
// Options.Manager.Confirm records on a node whose [eviction.ConfirmAnnotation] does not
// name one of its NoExecute taints' keys.
const UnconfirmedReason = "ConfirmationNamesNoTaint"

// confirmCheck is the Updater that records that Event when a node's annotation or
// NoExecute taints change, before it passes the update on.
type confirmCheck struct {
	Updater
	recorder record.EventRecorder
}

// NodeUpdated records the Event if new's annotation, new or changed, misses a key.
func (c confirmCheck) NodeUpdated(old, new *v1.Node) {
	if new != nil {
		value, annotated := new.Annotations[eviction.ConfirmAnnotation]
		changed := old == nil || old.Annotations[eviction.ConfirmAnnotation] != value || engine.TaintsChanged(old.Spec.Taints, new.Spec.Taints)
		if missed := unconfirmedKeys(value, new.Spec.Taints); annotated && changed && len(missed) > 0 {
			keys := "those keys"
			if len(missed) == 1 {
				keys = "that key"
			}
			ref := &v1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: new.Name, UID: new.UID}
			c.recorder.Eventf(ref, v1.EventTypeWarning, UnconfirmedReason,
				"The annotation %s=%q does not name the NoExecute taint key %s of this node: it confirms no eviction of %s; name the key (or \"*\") to confirm it",
				eviction.ConfirmAnnotation, value, strings.Join(missed, ", "), keys)
		}
	}
	c.Updater.NodeUpdated(old, new)
}

// unconfirmedKeys returns the keys of taints' NoExecute taints that value does not confirm,
// each once, in order.
func unconfirmedKeys(value string, taints []v1.Taint) []string {
	var out []string
	for _, t := range tolerations.NoExecuteTaints(taints) {
		if !eviction.Confirms(value, t.Key) && !slices.Contains(out, t.Key) {
			out = append(out, t.Key)
		}
	}
	return out
}
