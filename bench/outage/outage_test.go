package outage

import (
	"context"
	"testing"
	"time"
)

// TestOutage runs a small outage against each side and checks what the side-by-side
// figures rely on: every untolerating pod's DELETE arrives, and its deletion reaches the
// informer's store, no tolerating pod is deleted,
// and the requests per eviction are what each controller is known to make (kube: a GET, a
// status PATCH and a DELETE; taintevict's adapters, and the floor, which calls them: a
// status PATCH and a DELETE).
func TestOutage(t *testing.T) {
	wantRequests := map[string]float64{"kube": 3, "taintevict": 2, "floor": 2}
	for _, impl := range Impls {
		t.Run(impl, func(t *testing.T) {
			res, err := Run(context.Background(), Config{Impl: impl, Pods: 600, Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := res.Evicted, 300; got != want {
				t.Errorf("evicted: got %d, want %d", got, want)
			}
			if got, want := res.CachedPods, 300; got != want {
				t.Errorf("pods in the informer's store after the outage: got %d, want the %d tolerating ones", got, want)
			}
			if res.WronglyDeleted != 0 {
				t.Errorf("tolerating pods deleted: got %d, want 0", res.WronglyDeleted)
			}
			if got, want := res.RequestsPerEviction, wantRequests[impl]; got != want {
				t.Errorf("pod requests per eviction: got %v (%+v), want %v", got, res.Requests, want)
			}
			if res.Seconds <= 0 || res.GoroutinesPeak <= 0 || res.RSSPeakMB <= 0 {
				t.Errorf("figures missing: %+v", res)
			}
		})
	}
}

func TestRunRejectsAnUnknownImpl(t *testing.T) {
	if _, err := Run(context.Background(), Config{Impl: "nope", Pods: 10}); err == nil {
		t.Error("Run with impl nope: got no error, want one")
	}
}

// TestDeviceOutage runs a small device outage against each side and checks what the
// side-by-side figures rely on, as TestOutage does: kube's device controller makes a GET, a
// status PATCH and a DELETE per eviction, taintevict's the PATCH and the DELETE.
func TestDeviceOutage(t *testing.T) {
	wantRequests := map[string]float64{"kube": 3, "taintevict": 2}
	for _, impl := range DeviceImpls {
		t.Run(impl, func(t *testing.T) {
			res, err := RunDevice(context.Background(), DeviceConfig{Impl: impl, Devices: 40, Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := res.Evicted, 200; got != want {
				t.Errorf("evicted: got %d, want %d", got, want)
			}
			if got, want := res.CachedPods, 200; got != want {
				t.Errorf("pods in the informer's store after the outage: got %d, want the %d tolerating ones", got, want)
			}
			if res.WronglyDeleted != 0 {
				t.Errorf("tolerating pods deleted: got %d, want 0", res.WronglyDeleted)
			}
			if got, want := res.RequestsPerEviction, wantRequests[impl]; got != want {
				t.Errorf("pod requests per eviction: got %v (%+v), want %v", got, res.Requests, want)
			}
			if res.Seconds <= 0 || res.GoroutinesPeak <= 0 {
				t.Errorf("figures missing: %+v", res)
			}
		})
	}
}
