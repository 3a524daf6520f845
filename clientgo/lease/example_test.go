package lease_test

import (
	"context"
	"fmt"
	"log"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/taintevict/taintevict/clientgo/lease"
)

// An Elector runs the work given to Run only while this replica holds the Lease; a
// clientgo.Controller takes it as Options.Elector and runs its Manager that way. Here a
// fake clientset holds the Lease, which no one else holds, so it is taken at once.
func Example() {
	client := fake.NewClientset()
	e, err := lease.New(client, lease.Options{Namespace: "kube-system", Identity: "replica-a"})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	err = e.Run(ctx, func(lctx context.Context) error {
		fmt.Println("leading:", e.Leading())
		cancel() // done: Run releases the Lease once this returns
		<-lctx.Done()
		return nil
	})
	fmt.Println("Run:", err, "leading:", e.Leading())
	// Output:
	// leading: true
	// Run: <nil> leading: false
}
