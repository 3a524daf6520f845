package eviction_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/eviction/engine"
)

func TestPodOwner(t *testing.T) {
	yes, no := true, false
	ref := func(api, kind, name string, controller *bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: api, Kind: kind, Name: name, Controller: controller}
	}
	for _, tc := range []struct {
		name   string
		refs   []metav1.OwnerReference
		labels map[string]string
		want   engine.Owner
	}{
		{"none", nil, nil, engine.Owner{}},
		{"a Deployment's ReplicaSet", []metav1.OwnerReference{ref("apps/v1", "ReplicaSet", "web-7d9f8", &yes)}, map[string]string{"pod-template-hash": "7d9f8"}, engine.Owner{Kind: "Deployment", Name: "web"}},
		{"a ReplicaSet of its own (no hash label)", []metav1.OwnerReference{ref("apps/v1", "ReplicaSet", "web-7d9f8", &yes)}, nil, engine.Owner{Kind: "ReplicaSet", Name: "web-7d9f8"}},
		{"a hash that is not the name's end", []metav1.OwnerReference{ref("apps/v1", "ReplicaSet", "web-7d9f8", &yes)}, map[string]string{"pod-template-hash": "abc"}, engine.Owner{Kind: "ReplicaSet", Name: "web-7d9f8"}},
		{"a name that is only the hash", []metav1.OwnerReference{ref("apps/v1", "ReplicaSet", "-abc", &yes)}, map[string]string{"pod-template-hash": "abc"}, engine.Owner{Kind: "ReplicaSet", Name: "-abc"}},
		{"a ReplicaSet of another group", []metav1.OwnerReference{ref("example.com/v1", "ReplicaSet", "web-7d9f8", &yes)}, map[string]string{"pod-template-hash": "7d9f8"}, engine.Owner{Kind: "ReplicaSet", Name: "web-7d9f8"}},
		{"a StatefulSet", []metav1.OwnerReference{ref("apps/v1", "StatefulSet", "db", &yes)}, nil, engine.Owner{Kind: "StatefulSet", Name: "db"}},
		{"the controller among other owners", []metav1.OwnerReference{ref("v1", "ConfigMap", "c", nil), ref("v1", "Secret", "s", &no), ref("batch/v1", "Job", "nightly", &yes)}, nil, engine.Owner{Kind: "Job", Name: "nightly"}},
		{"owners, none the controller", []metav1.OwnerReference{ref("v1", "ConfigMap", "c", nil)}, nil, engine.Owner{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: tc.refs, Labels: tc.labels}}
			if got := eviction.PodOwner(pod); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if got := testing.AllocsPerRun(10, func() { eviction.PodOwner(pod) }); got != 0 {
				t.Errorf("%v allocations, want 0", got)
			}
		})
	}
}

func TestConfirms(t *testing.T) {
	for _, tc := range []struct {
		value, key string
		want       bool
	}{
		{"", "k", false},
		{"k", "k", true},
		{"a, k ,b", "k", true},
		{"*", "anything", true},
		{"ka", "k", false},
		{",", "", false},
		{"a,b", "c", false},
	} {
		if got := eviction.Confirms(tc.value, tc.key); got != tc.want {
			t.Errorf("Confirms(%q, %q) = %v, want %v", tc.value, tc.key, got, tc.want)
		}
	}
}
