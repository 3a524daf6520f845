package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestClientFlags: the Events get a client with their own budget and a rate limiter of
// their own; both clients speak the -kube-api-content-type.
func TestClientFlags(t *testing.T) {
	for _, tc := range []struct {
		name        string
		args        []string
		contentType string
		accept      string
		qps         float32
		burst       int
	}{
		{"defaults: protobuf, as kube-controller-manager; the kubelet's Event budget", nil,
			contentProtobuf, contentProtobuf + "," + contentJSON, 50, 100},
		{"JSON and a budget", []string{"-kube-api-content-type=application/json", "-events-qps=5", "-events-burst=7"},
			contentJSON, "", 5, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := flagsOf(t, append([]string{"-kube-api-qps=300", "-kube-api-burst=600"}, tc.args...)...)
			rc := &rest.Config{Host: "https://example.invalid", QPS: float32(cfg.qps), Burst: cfg.burst}
			erc := cfg.clients.configure(rc)
			for name, c := range map[string]*rest.Config{"controller": rc, "events": erc} {
				assert.Equal(t, tc.contentType, c.ContentType, name)
				assert.Equal(t, tc.accept, c.AcceptContentTypes, name)
			}
			assert.Equal(t, float32(300), rc.QPS)
			assert.Equal(t, 600, rc.Burst)
			assert.Equal(t, tc.qps, erc.QPS)
			assert.Equal(t, tc.burst, erc.Burst)

			client, err := kubernetes.NewForConfig(rc)
			require.NoError(t, err)
			events, err := kubernetes.NewForConfig(erc)
			require.NoError(t, err)
			limiter, eventsLimiter := client.CoreV1().RESTClient().GetRateLimiter(), events.CoreV1().RESTClient().GetRateLimiter()
			assert.Equal(t, float32(300), limiter.QPS())
			assert.Equal(t, tc.qps, eventsLimiter.QPS())
			assert.NotSame(t, limiter, eventsLimiter, "one rate limiter for both clients")
		})
	}
}

func TestBadClientFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-events-qps=0"}, "-events-qps must be above 0"},
		{[]string{"-events-qps=NaN"}, "-events-qps must be above 0"},
		{[]string{"-events-burst=0"}, "-events-burst must be at least 1"},
		{[]string{"-kube-api-content-type=application/yaml"}, `-kube-api-content-type must be application/vnd.kubernetes.protobuf or application/json, got "application/yaml"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			assert.Equal(t, 2, run(tc.args, &stdout, &stderr))
			assert.Equal(t, 1, strings.Count(stderr.String(), "\n"), "one line: %q", stderr.String())
			assert.Contains(t, stderr.String(), tc.want)
		})
	}
}
