package clientgo_test

import (
	"fmt"
	"net/http"
	"net/url"
	"syscall"

	"k8s.io/client-go/rest"

	"github.com/taintevict/taintevict/clientgo"
)

// A Reachability goes into the client's rest.Config; the requests the client makes anyway
// tell it whether the API server answers. Give it to the Controller (Options.Reachability),
// and to the device side's (package clientgo/device, its Options.Reachability) when both run
// on the client, so that /readyz says so and the deletes that failed meanwhile are retried at
// once when the server answers again.
func ExampleReachability() {
	r, err := clientgo.NewReachability(clientgo.ReachabilityOptions{})
	if err != nil {
		panic(err)
	}
	rc := &rest.Config{Host: "https://kube-apiserver:6443"}
	rc.Wrap(r.Wrap)
	_ = clientgo.Options{Reachability: r} // and the client from rc

	// What the client's transport would see: a refused connection, then an answer.
	refused := r.Wrap(roundTripFunc(func(*http.Request) (*http.Response, error) {
		return nil, &url.Error{Op: "Get", URL: rc.Host + "/api/v1/pods", Err: syscall.ECONNREFUSED}
	}))
	answers := r.Wrap(roundTripFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	}))
	req, _ := http.NewRequest("GET", rc.Host+"/api/v1/pods", nil)
	_, _ = refused.RoundTrip(req)
	fmt.Println("ready:", r.Err() == nil)
	_, _ = answers.RoundTrip(req)
	fmt.Println("ready:", r.Err() == nil)
	// Output:
	// ready: false
	// ready: true
}
