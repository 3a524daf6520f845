// Command operator is a controller-runtime operator that evicts pods from tainted nodes
// with taintevict's adapter, as a program outside the repository writes it. It is not
// built in the repository: hack/release-check.sh copies it into a fresh module, requires
// the adapter at the release's version, and tests it on a real API server.
package main

import (
	"context"
	"os"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/clientgo/metrics"
	"github.com/taintevict/taintevict/controllerruntime"
	"github.com/taintevict/taintevict/eviction"
)

func main() {
	if err := run(ctrl.SetupSignalHandler(), ctrl.GetConfigOrDie(), ":8080", ":8081"); err != nil {
		ctrl.Log.Error(err, "operator stopped")
		os.Exit(1)
	}
}

// run runs the operator on cfg's cluster until ctx is done or it loses the lead, with its
// metrics on metricsAddr and its probes on probeAddr.
func run(ctx context.Context, cfg *rest.Config, metricsAddr, probeAddr string) error {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		LeaderElection:          true,
		LeaderElectionID:        "taint-eviction",
		LeaderElectionNamespace: "kube-system",
		Metrics:                 metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:  probeAddr,
		Cache:                   cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
	})
	if err != nil {
		return err
	}
	_, err = controllerruntime.New(ctx, mgr, controllerruntime.Options{
		Mode:    clientgo.ModeEvict,
		Metrics: metrics.NewMeter(crmetrics.Registry),
		Manager: eviction.Options{Brake: eviction.Brake{Fraction: 0.55}},
	})
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}
