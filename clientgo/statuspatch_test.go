package clientgo

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// jsonStatusPatch is the status patch as encoding/json writes it from tagged structs: the
// reference that statusPatch's bytes must equal.
type jsonStatusPatch struct {
	Metadata struct {
		UID types.UID `json:"uid"`
	} `json:"metadata"`
	Status struct {
		Conditions []jsonCondition `json:"conditions"`
	} `json:"status"`
}

type jsonCondition struct {
	Type               v1.PodConditionType `json:"type"`
	Status             v1.ConditionStatus  `json:"status"`
	ObservedGeneration int64               `json:"observedGeneration,omitempty"`
	LastTransitionTime metav1.Time         `json:"lastTransitionTime"`
	Reason             string              `json:"reason"`
	Message            string              `json:"message"`
}

func referencePatch(t testing.TB, c disruptionCondition, uid types.UID) []byte {
	var p jsonStatusPatch
	p.Metadata.UID = uid
	p.Status.Conditions = []jsonCondition{{c.Type, c.Status, c.ObservedGeneration, c.LastTransitionTime, c.Reason, c.Message}}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStatusPatchBytes holds statusPatch to encoding/json's bytes, for the patch kube's
// condition makes and for values that need escaping.
func TestStatusPatchBytes(t *testing.T) {
	ours := disruptionCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, ObservedGeneration: 3,
		LastTransitionTime: metav1.NewTime(testNow), Reason: DisruptionReason, Message: DisruptionMessage}
	local := ours
	local.LastTransitionTime = metav1.NewTime(time.Date(2026, 11, 30, 13, 0, 0, 500, time.FixedZone("CET", 3600)))
	tests := []struct {
		name string
		cond func(c *disruptionCondition)
		uid  types.UID
	}{
		{"kube's condition", func(*disruptionCondition) {}, "2f6c8a4e-5d7b-4c1e-9a3f-8b0d6e2c4a17"},
		{"no observedGeneration", func(c *disruptionCondition) { c.ObservedGeneration = 0 }, "uid-1"},
		{"negative generation", func(c *disruptionCondition) { c.ObservedGeneration = -7 }, "uid-1"},
		{"zero transition time", func(c *disruptionCondition) { c.LastTransitionTime = metav1.Time{} }, "uid-1"},
		{"transition time in another zone, with nanoseconds", func(c *disruptionCondition) { *c = local }, "uid-1"},
		{"empty UID", func(*disruptionCondition) {}, ""},
		{"UID with quotes and HTML", func(*disruptionCondition) {}, `a"b\c<d>&e`},
		{"UID with control characters and non-ASCII", func(*disruptionCondition) {}, "a\tb\x00c\u00e9\u2028d"},
		{"invalid UTF-8", func(*disruptionCondition) {}, "a\xffb"},
		{"message needing escapes", func(c *disruptionCondition) { c.Message = "line\nbreak \"quoted\" <b>" }, "uid-1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ours
			tc.cond(&c)
			got, want := c.statusPatch(tc.uid), referencePatch(t, c, tc.uid)
			if got, want := string(got), string(want); !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

// FuzzStatusPatch holds statusPatch to encoding/json's bytes for any UID, reason, message,
// generation and transition time.
func FuzzStatusPatch(f *testing.F) {
	f.Add("2f6c8a4e-5d7b-4c1e-9a3f-8b0d6e2c4a17", DisruptionReason, DisruptionMessage, int64(3), testNow.UnixNano())
	f.Add(`"<&>`, "a\x00b", "\u2028\xff", int64(0), int64(0))
	f.Fuzz(func(t *testing.T, uid, reason, message string, gen, nanos int64) {
		c := disruptionCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, ObservedGeneration: gen,
			LastTransitionTime: metav1.NewTime(time.Unix(0, nanos)), Reason: reason, Message: message}
		if nanos == 0 {
			c.LastTransitionTime = metav1.Time{}
		}
		got, want := c.statusPatch(types.UID(uid)), referencePatch(t, c, types.UID(uid))
		if string(got) != string(want) {
			t.Fatalf("statusPatch = %s, want %s", got, want)
		}
	})
}
