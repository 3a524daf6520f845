package main

import (
	"reflect"
	"testing"
	"time"
)

func TestParseBudgets(t *testing.T) {
	got, err := parseBudgets("50/100/90s,1000/2000")
	want := []budget{{50, 100, 90 * time.Second}, {1000, 2000, 0}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, %v, want %v", got, err, want)
	}
	for _, bad := range []string{"", "50", "50/", "0/100", "50/0", "50/100/soon", "50/100/-1s", "50/100/1s/2"} {
		if _, err := parseBudgets(bad); err == nil {
			t.Errorf("%q: got no error", bad)
		}
	}
}

func TestRotate(t *testing.T) {
	s := []string{"kube", "ours", "evict"}
	for k, want := range [][]string{{"kube", "ours", "evict"}, {"ours", "evict", "kube"}, {"evict", "kube", "ours"}, {"kube", "ours", "evict"}} {
		if got := rotate(s, k); !reflect.DeepEqual(got, want) {
			t.Errorf("rotate by %d: got %v, want %v", k, got, want)
		}
	}
}
