package clientgo_test

import (
	"context"
	"fmt"
	"log"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/eviction"
)

// A test of a Controller on a fake clientset and a fake clock: taint a node through the
// clientset, and see the pod that tolerates the taint for a minute deleted at its
// deadline, and not before. Controller.WaitIdle (with Options.WaitIdle) waits until the
// informers have handed the Manager what the clientset holds and the Manager has done what
// is due on the clock: no sleep, no polling. In a test, testing/synctest's bubble does as
// well with the real clock.
func ExampleController_WaitIdle() {
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	client := fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}},
		tolerating(web1(), 60))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // fails a stuck test
	defer cancel()
	c, err := clientgo.NewController(ctx, client, clientgo.NewFactory(client), clientgo.Options{
		Manager:  eviction.Options{Clock: clk}, // the Controller's one clock
		WaitIdle: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- c.Run(ctx) }()

	// Taint the node, with a TimeAdded of the fake clock's time line.
	added := clk.Now()
	_, err = client.CoreV1().Nodes().Update(ctx, unreachable(added), metav1.UpdateOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, step := range []time.Duration{0, 59 * time.Second, time.Second} {
		clk.Step(step)
		if err := c.WaitIdle(ctx); err != nil {
			log.Fatal(err)
		}
		_, err := client.CoreV1().Pods("shop").Get(ctx, "web-1", metav1.GetOptions{})
		fmt.Printf("+%v: web-1 exists: %v\n", clk.Since(added), !apierrors.IsNotFound(err))
	}
	cancel()
	if err := <-stopped; err != nil {
		log.Fatal(err)
	}
	// Output:
	// +0s: web-1 exists: true
	// +59s: web-1 exists: true
	// +1m0s: web-1 exists: false
}
