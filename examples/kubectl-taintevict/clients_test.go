package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// TestClientsSayWhichCluster: with no kubeconfig found and no --server, client-go talks to
// http://localhost:8080 (outside a pod) without a word; the plugin says so first, with the
// address. With a kubeconfig, or --server, it says nothing. No request is sent.
func TestClientsSayWhichCluster(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://kube.example:6443"}
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
users:
- name: u
  user: {token: t}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		kubeconfig string // $KUBECONFIG
		server     string // --server
		wantHost   string
		wantNote   string // "" for none
	}{
		{name: "no kubeconfig", kubeconfig: filepath.Join(t.TempDir(), "absent"), wantHost: "http://localhost:8080",
			wantNote: "kubectl-taintevict: no kubeconfig found (--kubeconfig, $KUBECONFIG, "},
		{name: "a kubeconfig", kubeconfig: kubeconfig, wantHost: "https://kube.example:6443"},
		{name: "no kubeconfig, --server", kubeconfig: filepath.Join(t.TempDir(), "absent"), server: "https://other.example:6443",
			wantHost: "https://other.example:6443"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tc.kubeconfig)
			t.Setenv("KUBERNETES_SERVICE_HOST", "") // not in a pod
			config := genericclioptions.NewConfigFlags(true)
			if tc.server != "" {
				config.APIServer = &tc.server
			}
			var errOut bytes.Buffer
			cl, err := clientsOf(config, &errOut)()
			if err != nil {
				t.Fatal(err)
			}
			if got := cl.rest.Host; got != tc.wantHost {
				t.Errorf("host: got %q, want %q", got, tc.wantHost)
			}
			got := errOut.String()
			switch {
			case tc.wantNote == "" && got != "":
				t.Errorf("stderr: got %q, want nothing", got)
			case tc.wantNote != "" && (!strings.HasPrefix(got, tc.wantNote) || !strings.HasSuffix(got, "and no --server: talking to "+tc.wantHost+"\n")):
				t.Errorf("stderr: got %q, want %q... ending with the address %s", got, tc.wantNote, tc.wantHost)
			}
		})
	}
}
