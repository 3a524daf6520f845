package clientgo

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
)

// TestModeNewDeleter: each Mode's Deleter sends that Mode's requests (kube's two for
// ModeDelete, an eviction for ModeEvict, with the options passed on), ModeDryRun has none,
// and a Mode that is not one, or an option out of range, is an error and no Deleter.
func TestModeNewDeleter(t *testing.T) {
	for _, tc := range []struct {
		mode   Mode
		writes []string
		heard  []string
	}{
		{ModeDelete, []string{"patch pods/status", "delete pods"}, []string{"shop/web-1 found", "shop/web-1 delete gone=false"}},
		{ModeEvict, []string{"create pods/eviction"}, []string{"shop/web-1 found", "shop/web-1 evict gone=false"}},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			client := fake.NewClientset(testPod("uid-old", 1))
			var refuse error
			evictions(client, &refuse)
			obs := &removals{}
			d, err := tc.mode.NewDeleter(client, EvictionDeleterOptions{Observer: obs})
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Delete(t.Context(), testRef); err != nil {
				t.Fatal(err)
			}
			if got := writes(client.Actions()); !reflect.DeepEqual(got, tc.writes) {
				t.Errorf("requests: got %v, want %v", got, tc.writes)
			}
			if !reflect.DeepEqual(obs.got, tc.heard) {
				t.Errorf("observer: got %v, want %v", obs.got, tc.heard)
			}
		})
	}
	t.Run(string(ModeDryRun), func(t *testing.T) {
		d, err := ModeDryRun.NewDeleter(fake.NewClientset(), EvictionDeleterOptions{})
		if d != nil || err != nil {
			t.Errorf("got %v, %v; want no Deleter and no error", d, err)
		}
	})
	for _, tc := range []struct {
		name string
		mode Mode
		opts EvictionDeleterOptions
		want string
	}{
		{"empty Mode", "", EvictionDeleterOptions{}, `clientgo: unknown Mode ""`},
		{"unknown Mode", "drain", EvictionDeleterOptions{}, `clientgo: unknown Mode "drain"`},
		{"negative PDBTimeout", ModeEvict, EvictionDeleterOptions{PDBTimeout: -time.Second}, "clientgo:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := tc.mode.NewDeleter(fake.NewClientset(), tc.opts)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("error: got %v, want one starting %q", err, tc.want)
			}
			if d != nil {
				t.Errorf("Deleter: got %#v, want nil", d)
			}
		})
	}
}
