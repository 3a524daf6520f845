package main

import (
	"fmt"
	"io"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// clients are what a command talks to the cluster with.
type clients struct {
	kube kubernetes.Interface
	// rest is the configuration kube was made from: its host, TLS and credentials, to reach
	// the controller's port with the same bearer token. nil for a fake clientset.
	rest *rest.Config
	// namespace is the namespace of the kubeconfig's context, or of -n.
	namespace string
}

// clientFunc makes the clients of a command.
type clientFunc func() (*clients, error)

// clientsOf returns the clientFunc of the cluster flags: kubectl's rules for the
// kubeconfig, the context and the namespace. Listing a large cluster takes hundreds of
// pages: the rate limit is kubectl's (50 a second, bursts of 300), not client-go's default
// of 5. When no kubeconfig is found and no --server given, client-go talks to the pod's
// API server in a pod, else to http://localhost:8080, without a word: clientsOf says so
// on errOut first, with the address.
func clientsOf(config *genericclioptions.ConfigFlags, errOut io.Writer) clientFunc {
	return func() (*clients, error) {
		rc, err := config.ToRESTConfig()
		if err != nil {
			return nil, &exitError{code: exitCluster, err: fmt.Errorf("kubeconfig: %w", err)}
		}
		if !configured(config) {
			fmt.Fprintf(errOut, "kubectl-taintevict: no kubeconfig found (--kubeconfig, $KUBECONFIG, %s) and no --server: talking to %s\n",
				clientcmd.RecommendedHomeFile, rc.Host)
		}
		rc.QPS, rc.Burst = 50, 300
		rc.UserAgent = "kubectl-taintevict"
		kube, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return nil, &exitError{code: exitCluster, err: fmt.Errorf("kubeconfig: %w", err)}
		}
		ns, _, err := config.ToRawKubeConfigLoader().Namespace()
		if err != nil {
			return nil, &exitError{code: exitCluster, err: fmt.Errorf("kubeconfig: %w", err)}
		}
		return &clients{kube: kube, rest: rc, namespace: ns}, nil
	}
}

// configured reports whether the cluster flags name a cluster: a kubeconfig with a cluster
// in it, or --server.
func configured(config *genericclioptions.ConfigFlags) bool {
	if config.APIServer != nil && *config.APIServer != "" {
		return true
	}
	raw, err := config.ToRawKubeConfigLoader().RawConfig()
	return err != nil || len(raw.Clusters) > 0 // a kubeconfig that does not load says so itself
}
