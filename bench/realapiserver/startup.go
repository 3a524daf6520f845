package realapiserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
)

// StartupConfig is the start-up measurement: taintevict's controller started again and
// again on one cluster, with each encoding in turn, until it is ready.
type StartupConfig struct {
	Assets, FlowSchema, Self string
	Shape                    Shape
	// ContentTypes are the encodings, in the order of the first run; each run rotates it
	// by one.
	ContentTypes []string
	Runs         int
	Client       Client // its ContentType is set from ContentTypes
	Log          io.Writer
}

// StartupResult is one start.
type StartupResult struct {
	ContentType string `json:"content_type"`
	Pods        int    `json:"pods"`
	Run         int    `json:"run"`
	// Wall is the time from starting the process until it reported ready; Synced the same
	// from inside the process (from its main).
	Wall, Synced float64
	// CPU and MaxRSSMB are the process's, when it was ready.
	CPU, MaxRSSMB float64
	// APIServerCPU and EtcdCPU are their CPU seconds from the process's start until it
	// exited.
	APIServerCPU, EtcdCPU float64
	Load                  float64
}

// Startup runs the start-up measurement on one fresh control plane.
func Startup(ctx context.Context, cfg StartupConfig) (results []StartupResult, err error) {
	cp, err := StartControlPlane(cfg.Assets)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, cp.Stop()) }()
	adminRC := *cp.Admin
	adminRC.QPS, adminRC.Burst = 5000, 10000
	admin, err := kubernetes.NewForConfig(&adminRC)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	cluster, err := BuildCluster(ctx, admin, cfg.Shape)
	if err != nil {
		return nil, err
	}
	pods := len(cluster.Tolerating) + len(cluster.Untolerating)
	if cfg.Log != nil {
		fmt.Fprintf(cfg.Log, "startup: %d nodes and %d pods made in %s\n", len(cluster.Nodes), pods, time.Since(began).Round(time.Second))
	}
	user, err := sideUser(ctx, admin, RunConfig{FlowSchema: cfg.FlowSchema})
	if err != nil {
		return nil, err
	}
	rc, err := cp.User(ctx, user, userGroups(user))
	if err != nil {
		return nil, err
	}
	kubeconfig, err := cp.WriteKubeconfig(rc, "side")
	if err != nil {
		return nil, err
	}
	for run := range cfg.Runs {
		for _, ct := range rotate(cfg.ContentTypes, run) {
			client := cfg.Client
			client.ContentType = ct
			res := StartupResult{ContentType: ct, Pods: pods, Run: run, Load: loadAverage()}
			api0, etcd0, err := cp.CPU()
			if err != nil {
				return results, err
			}
			start := time.Now()
			c, err := startChild(cfg.Self, ChildConfig{Side: Side{Mode: "delete"}, Kubeconfig: kubeconfig, Client: client, ExitWhenSynced: true},
				filepath.Join(cp.Dir(), "startup.log"))
			if err != nil {
				return results, err
			}
			rep, err := c.synced(5 * time.Minute)
			res.Wall = time.Since(start).Seconds()
			if _, stopErr := c.stop(); err == nil {
				err = stopErr
			}
			if err != nil {
				return results, err
			}
			api1, etcd1, err := cp.CPU()
			if err != nil {
				return results, err
			}
			res.Synced, res.CPU, res.MaxRSSMB = rep.Synced, rep.CPU, rep.MaxRSSMB
			res.APIServerCPU, res.EtcdCPU = (api1 - api0).Seconds(), (etcd1 - etcd0).Seconds()
			if cfg.Log != nil {
				fmt.Fprintf(cfg.Log, "startup run %d, %s: ready in %.2f s (wall %.2f s), CPU %.2f s, API server CPU %.2f s\n",
					run, ct, res.Synced, res.Wall, res.CPU, res.APIServerCPU)
			}
			results = append(results, res)
		}
	}
	return results, nil
}

// rotate returns s rotated left by k, so that each element goes first in turn.
func rotate[T any](s []T, k int) []T {
	if len(s) == 0 {
		return nil
	}
	k %= len(s)
	return append(append([]T(nil), s[k:]...), s[:k]...)
}
