package main

import (
	"flag"
	"fmt"

	"k8s.io/client-go/rest"
)

// The -kube-api-content-type values: the encodings kube-apiserver speaks for the core types.
const (
	contentJSON     = "application/json"
	contentProtobuf = "application/vnd.kubernetes.protobuf"
)

// clientFlags are the command line's choices of how the controller talks to the API
// server beyond -kube-api-qps and -kube-api-burst: the budget of the Events, which have a
// client and a rate limiter of their own, and the encoding.
type clientFlags struct {
	eventsQPS   float64
	eventsBurst int
	contentType string
}

// define defines the client flags on fs, with their defaults.
func (c *clientFlags) define(fs *flag.FlagSet) {
	// The kubelet's --event-qps and --event-burst defaults (the one Kubernetes component with
	// flags for an Event budget), and this command's own -kube-api-qps and -kube-api-burst
	// defaults: at least what kube-controller-manager gives its taint eviction controller for
	// all its requests, Events included, at its defaults (--kube-api-qps=20,
	// --kube-api-burst=30).
	fs.Float64Var(&c.eventsQPS, "events-qps", 50, "queries per second for writing Events, on a rate limiter of their own: an Event never takes a token an eviction needs")
	fs.IntVar(&c.eventsBurst, "events-burst", 100, "burst of queries for writing Events")
	fs.StringVar(&c.contentType, "kube-api-content-type", contentProtobuf, "the encoding of requests to the API server and of its answers: "+contentProtobuf+" (as kube-controller-manager speaks; JSON where protobuf is not served) or "+contentJSON)
}

// validate checks the values the flag package cannot.
func (c clientFlags) validate() error {
	switch {
	case !(c.eventsQPS > 0) || c.eventsQPS > 1e6:
		return fmt.Errorf("-events-qps must be above 0 and at most 1e6, got %g", c.eventsQPS)
	case c.eventsBurst < 1:
		return fmt.Errorf("-events-burst must be at least 1, got %d", c.eventsBurst)
	case c.contentType != contentJSON && c.contentType != contentProtobuf:
		return fmt.Errorf("-kube-api-content-type must be %s or %s, got %q", contentProtobuf, contentJSON, c.contentType)
	}
	return nil
}

// configure sets rc's encoding, and returns the configuration of the Events' client: rc's,
// with the Events' budget and no rate limiter of rc's (client-go makes one for each
// client whose configuration has none).
func (c clientFlags) configure(rc *rest.Config) *rest.Config {
	rc.ContentType = c.contentType
	if c.contentType == contentProtobuf {
		rc.AcceptContentTypes = contentProtobuf + "," + contentJSON
	}
	events := rest.CopyConfig(rc)
	events.QPS, events.Burst, events.RateLimiter = float32(c.eventsQPS), c.eventsBurst, nil
	return events
}
