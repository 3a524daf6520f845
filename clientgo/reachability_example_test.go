package clientgo_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/taintevict/taintevict/clientgo"
)

// A Reachability goes into the client's rest.Config; the requests the client makes anyway
// tell it whether the API server answers. Give it to the Controller (Options.Reachability),
// and to the device side's (package clientgo/device, its Options.Reachability) when both run
// on the client, so that /readyz says so and the deletes that failed meanwhile are retried at
// once when the server answers again. Here an HTTP server stands for the API server, and
// the client's dialer refuses to connect while it is down.
func ExampleReachability() {
	r, err := clientgo.NewReachability(clientgo.ReachabilityOptions{})
	if err != nil {
		log.Fatal(err)
	}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"major": "1", "minor": "37"}`) // GET /version
	}))
	defer server.Close()
	var down atomic.Bool
	rc := &rest.Config{Host: server.URL}
	rc.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if down.Load() {
			return nil, syscall.ECONNREFUSED
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	rc.Wrap(r.Wrap) // the Reachability sees the outcome of each of the client's requests
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		log.Fatal(err)
	}
	_ = clientgo.Options{Reachability: r} // for the Controller made with client

	for _, isDown := range []bool{true, false} {
		down.Store(isDown)
		_, err := client.Discovery().ServerVersion()
		fmt.Printf("down: %v, request failed: %v, ready: %v\n", isDown, err != nil, r.Err() == nil)
	}
	// Output:
	// down: true, request failed: true, ready: false
	// down: false, request failed: false, ready: true
}
