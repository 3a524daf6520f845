package clientgo

import (
	"encoding/json"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// disruptionCondition is the DisruptionTarget condition [PodDeleter] sets: v1.PodCondition
// without lastProbeTime, which would be sent as null, "delete" to a merge patch.
type disruptionCondition struct {
	Type               v1.PodConditionType
	Status             v1.ConditionStatus
	ObservedGeneration int64 // 0 is left out
	LastTransitionTime metav1.Time
	Reason             string
	Message            string
}

// statusPatch returns the strategic merge patch of a pod's status that sets c, with uid in
// metadata.uid. The bytes are those encoding/json writes (the test holds them to it),
// written straight into one buffer: a generic encoding costs a dozen allocations.
func (c *disruptionCondition) statusPatch(uid types.UID) []byte {
	b := make([]byte, 0, patchFrame+len(uid)+len(c.Type)+len(c.Status)+len(c.Reason)+len(c.Message))
	b = append(b, `{"metadata":{"uid":`...)
	b = appendJSONString(b, string(uid))
	b = append(b, `},"status":{"conditions":[{"type":`...)
	b = appendJSONString(b, string(c.Type))
	b = append(b, `,"status":`...)
	b = appendJSONString(b, string(c.Status))
	if c.ObservedGeneration != 0 {
		b = append(b, `,"observedGeneration":`...)
		b = strconv.AppendInt(b, c.ObservedGeneration, 10)
	}
	b = append(b, `,"lastTransitionTime":`...)
	b = appendJSONTime(b, c.LastTransitionTime)
	b = append(b, `,"reason":`...)
	b = appendJSONString(b, c.Reason)
	b = append(b, `,"message":`...)
	b = appendJSONString(b, c.Message)
	return append(b, `}]}}`...)
}

// patchFrame is the size of a status patch without its five strings' contents, for a
// generation of up to six digits (append grows the buffer past it).
const patchFrame = len(`{"metadata":{"uid":""},"status":{"conditions":[{"type":"","status":"",`) +
	len(`"observedGeneration":123456,"lastTransitionTime":"2006-01-02T15:04:05Z",`) +
	len(`"reason":"","message":""}]}}`)

// appendJSONTime appends t as metav1.Time encodes itself.
func appendJSONTime(b []byte, t metav1.Time) []byte {
	if t.IsZero() {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, time.RFC3339)
	return append(b, '"')
}

// appendJSONString appends s as a JSON string, as encoding/json writes it: printable ASCII
// that needs no escape (UIDs, reasons and messages) is copied as it is, anything else is
// left to encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
