package clientgo

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/taintevict/taintevict/eviction"
)

// TestControllerConfirmWrongKey: Confirm holds a taint on one node of two that would evict
// two pods of three. An annotation that names another key (a typo) confirms nothing: the
// pods stay, and a Warning Event on the node says that its annotation does not name the
// taint's key. The annotation fixed, the pods go.
func TestControllerConfirmWrongKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		node := taintedNode("node-1", time.Now().Add(-time.Minute))
		taintKey := node.Spec.Taints[0].Key
		node.Annotations = map[string]string{eviction.ConfirmAnnotation: "exmaple.com/down"}
		client := fake.NewClientset(node, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}},
			podOn("shop", "web-1", "node-1"), podOn("shop", "web-2", "node-1"), podOn("shop", "web-3", "node-2"))
		c, err := NewController(t.Context(), client, NewFactory(client), Options{Manager: eviction.Options{Confirm: eviction.Confirm{Fraction: 0.5}}})
		if err != nil {
			t.Fatal(err)
		}
		stop := startController(t, c)
		<-c.Synced()
		time.Sleep(time.Minute)
		synctest.Wait()
		pods, err := client.CoreV1().Pods("shop").List(t.Context(), metav1.ListOptions{})
		if err != nil || len(pods.Items) != 3 {
			t.Fatalf("held: got %d pods (%v), want the 3", len(pods.Items), err)
		}
		events, err := client.CoreV1().Events(metav1.NamespaceDefault).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var warned []string
		for _, e := range events.Items {
			if e.InvolvedObject.Kind == "Node" {
				warned = append(warned, e.InvolvedObject.Name+" "+e.Type+" "+e.Reason+" "+e.Message)
			}
		}
		want := "node-1 Warning " + UnconfirmedReason + ` The annotation taintevict.io/confirm-eviction="exmaple.com/down" does not name the NoExecute taint key ` + taintKey + ` of this node: it confirms no eviction of that key; name the key (or "*") to confirm it`
		if len(warned) != 1 || warned[0] != want {
			t.Errorf("the node's Events: got %q, want [%q]", warned, want)
		}

		node, err = client.CoreV1().Nodes().Get(t.Context(), "node-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		node.Annotations[eviction.ConfirmAnnotation] = taintKey
		if _, err := client.CoreV1().Nodes().Update(t.Context(), node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		pods, err = client.CoreV1().Pods("shop").List(t.Context(), metav1.ListOptions{})
		if err != nil || len(pods.Items) != 1 || !strings.HasSuffix(pods.Items[0].Name, "web-3") {
			t.Errorf("confirmed: got %v (%v), want web-3 alone", pods.Items, err)
		}
		if err := stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}
