package scale

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/taintevict/taintevict/bench/realapiserver"
)

// Shape is a cluster's size: Nodes nodes in the three Zones, PodsPerNode pods on each.
type Shape struct {
	Nodes       int `json:"nodes"`
	PodsPerNode int `json:"pods_per_node"`
	// Toleration is the API server's --default-unreachable-toleration-seconds and
	// --default-not-ready-toleration-seconds: kube's 300 s shortened so that a run fits.
	Toleration time.Duration `json:"toleration"`
}

// Pods is the number of pods of s.
func (s Shape) Pods() int { return s.Nodes * s.PodsPerNode }

// String is "NODES×PODS".
func (s Shape) String() string { return fmt.Sprintf("%d nodes × %d pods", s.Nodes, s.PodsPerNode) }

// Zone returns the indexes of the nodes of zone z (an index into Zones).
func (s Shape) Zone(z int) []int {
	var out []int
	for i := z; i < s.Nodes; i += len(Zones) {
		out = append(out, i)
	}
	return out
}

// apiserverFlags are the API server flags the cluster is built and run with.
func (s Shape) apiserverFlags() map[string]string {
	secs := strconv.Itoa(int(s.Toleration / time.Second))
	return map[string]string{
		"default-unreachable-toleration-seconds": secs,
		"default-not-ready-toleration-seconds":   secs,
		// Lists of 150,000 pods take longer than the default 60 s on two busy cores.
		"request-timeout":                "5m",
		"max-requests-inflight":          "800",
		"max-mutating-requests-inflight": "400",
	}
}

// etcdFlags are the etcd flags the cluster is built and run with: the backend quota at
// the 8 GiB etcd recommends as the most for a large cluster, where its default of 2 GiB
// ran out in the outage at 100,020 pods ("mvcc: database space exceeded").
var etcdFlags = map[string]string{"quota-backend-bytes": strconv.Itoa(8 << 30)}

// builderUser makes the cluster; the audit policy leaves its requests out.
const builderUser = "scale-builder"

// auditPolicy logs, at the Metadata level, every write about pods, Events and nodes and
// every get of a pod, by anyone but the builder: the sides' requests and the harness's
// taints.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted", "Panic"]
rules:
- level: None
  users: ["` + builderUser + `"]
- level: None
  verbs: ["list", "watch"]
- level: Metadata
  resources:
  - group: ""
    resources: ["pods", "pods/status", "pods/eviction", "events", "nodes", "nodes/status"]
- level: None
`

// The users the sides run as, each bound to cluster-admin when the cluster is built (not
// through system:masters, which API Priority and Fairness exempts).
const (
	// KubeUser is kube-controller-manager's own user, which the bootstrap FlowSchema
	// kube-controller-manager serves at workload-high.
	KubeUser = "system:kube-controller-manager"
)

// Saved is a cluster built once and kept as etcd's data folder, for the runs to start from
// a copy of.
type Saved struct {
	Dir   string `json:"-"`
	Shape Shape  `json:"shape"`
	// OursUser is the service account taintevict runs as (from its FlowSchema).
	OursUser string `json:"ours_user"`
	// BuildSeconds is how long the build took.
	BuildSeconds float64 `json:"build_seconds"`
}

// metaFile marks a complete saved cluster.
const metaFile = "cluster.json"

// LoadOrBuild returns the cluster of shape saved under dir, building it first if dir holds
// none.
func LoadOrBuild(ctx context.Context, assets, flowSchema, dir string, shape Shape, log io.Writer) (*Saved, error) {
	raw, err := os.ReadFile(filepath.Join(dir, metaFile))
	if err == nil {
		s := &Saved{Dir: dir}
		if err := json.Unmarshal(raw, s); err != nil {
			return nil, fmt.Errorf("scale: %s: %w", dir, err)
		}
		if s.Shape != shape {
			return nil, fmt.Errorf("scale: %s holds %v, not %v", dir, s.Shape, shape)
		}
		return s, nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	began := time.Now()
	s := &Saved{Dir: dir, Shape: shape}
	if s.OursUser, err = build(ctx, assets, flowSchema, dir, shape, log); err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	s.BuildSeconds = time.Since(began).Seconds()
	raw, err = json.Marshal(s)
	if err != nil {
		return nil, err
	}
	return s, os.WriteFile(filepath.Join(dir, metaFile), raw, 0o644)
}

// build makes the cluster on a control plane whose etcd keeps its data in dir/etcd.
func build(ctx context.Context, assets, flowSchema, dir string, shape Shape, log io.Writer) (oursUser string, err error) {
	cp, err := realapiserver.StartControlPlaneWith(assets, realapiserver.PlaneOptions{
		AuditPolicy: auditPolicy, APIServerFlags: shape.apiserverFlags(), EtcdFlags: etcdFlags, EtcdDataDir: filepath.Join(dir, "etcd"),
	})
	if err != nil {
		return "", err
	}
	defer func() { err = errors.Join(err, cp.Stop()) }()
	rc, err := cp.Credentials(builderUser, []string{"system:masters"})
	if err != nil {
		return "", err
	}
	rc.QPS, rc.Burst = -1, 0
	rc.ContentType = realapiserver.ContentProtobuf
	rc.WarningHandler = rest.NoWarnings{}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return "", err
	}
	fs, oursUser, err := realapiserver.LoadFlowSchema(flowSchema)
	if err != nil {
		return "", err
	}
	if _, err := client.FlowcontrolV1().FlowSchemas().Create(ctx, fs, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("scale: creating the FlowSchema %s: %w", fs.Name, err)
	}
	for _, u := range []string{KubeUser, oursUser} {
		if err := bindAdmin(ctx, client, u); err != nil {
			return "", err
		}
	}
	for n := range namespaces + 1 {
		ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("team-%02d", n)}}
		if n == namespaces {
			ns.Name = leaseNamespace
		}
		if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("scale: creating namespace %s: %w", ns.Name, err)
		}
	}
	if err := createObjects(ctx, client, shape, log); err != nil {
		return "", err
	}
	return oursUser, nil
}

// bindAdmin binds cluster-admin to user.
func bindAdmin(ctx context.Context, client kubernetes.Interface, user string) error {
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "scale-" + sanitize(user)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("scale: binding cluster-admin to %s: %w", user, err)
	}
	return nil
}

// sanitize makes a user name fit an object's name.
func sanitize(s string) string {
	out := []byte(s)
	for i, c := range out {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			out[i] = '-'
		}
	}
	return string(out)
}

// createObjects creates the nodes, their Leases and the pods, and writes each pod's running
// status, many at once.
func createObjects(ctx context.Context, client kubernetes.Interface, shape Shape, log io.Writer) error {
	now := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(48)
	for i := range shape.Nodes {
		g.Go(func() error {
			if _, err := client.CoreV1().Nodes().Create(gctx, newNode(i, now), metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("scale: creating %s: %w", nodeName(i), err)
			}
			if _, err := client.CoordinationV1().Leases(v1.NamespaceNodeLease).Create(gctx, newLease(i, now), metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("scale: creating the Lease of %s: %w", nodeName(i), err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(64)
	began := time.Now()
	for i := range shape.Nodes {
		if log != nil && i > 0 && i%500 == 0 {
			fmt.Fprintf(log, "  build: %d of %d nodes' pods after %s\n", i, shape.Nodes, time.Since(began).Round(time.Second))
		}
		for j := range shape.PodsPerNode {
			g.Go(func() error {
				pod := newPod(i, j)
				p, err := client.CoreV1().Pods(pod.Namespace).Create(gctx, pod, metav1.CreateOptions{})
				if err != nil {
					return fmt.Errorf("scale: creating pod %s: %w", podOf(i, j), err)
				}
				p.Status = runningStatus(p, i, j, now)
				if _, err := client.CoreV1().Pods(p.Namespace).UpdateStatus(gctx, p, metav1.UpdateOptions{}); err != nil {
					return fmt.Errorf("scale: writing the status of pod %s: %w", podOf(i, j), err)
				}
				return nil
			})
		}
	}
	return g.Wait()
}

// Plane is a control plane started from a copy of a saved cluster.
type Plane struct {
	*realapiserver.ControlPlane
	Saved *Saved
	// Admin is a client of a user of system:masters, for the harness's taints.
	Admin kubernetes.Interface
	dir   string
}

// Start copies s's etcd data into a new folder and starts a control plane on it.
func (s *Saved) Start(ctx context.Context, assets string) (*Plane, error) {
	dir, err := os.MkdirTemp("", "scale-run-")
	if err != nil {
		return nil, err
	}
	if out, err := exec.CommandContext(ctx, "cp", "-a", filepath.Join(s.Dir, "etcd"), filepath.Join(dir, "etcd")).CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("scale: copying the saved cluster: %v: %s", err, out)
	}
	cp, err := realapiserver.StartControlPlaneWith(assets, realapiserver.PlaneOptions{
		AuditPolicy: auditPolicy, APIServerFlags: s.Shape.apiserverFlags(), EtcdFlags: etcdFlags, EtcdDataDir: filepath.Join(dir, "etcd"),
	})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	p := &Plane{ControlPlane: cp, Saved: s, dir: dir}
	rc := rest.CopyConfig(cp.Admin)
	rc.QPS, rc.Burst = -1, 0
	rc.ContentType = realapiserver.ContentProtobuf
	if p.Admin, err = kubernetes.NewForConfig(rc); err != nil {
		return nil, errors.Join(err, p.Stop())
	}
	return p, nil
}

// Stop stops the control plane and removes the copy.
func (p *Plane) Stop() error {
	return errors.Join(p.ControlPlane.Stop(), os.RemoveAll(p.dir))
}

// Kubeconfig provisions user (of groups) and writes a kubeconfig file for it.
func (p *Plane) Kubeconfig(user string, groups []string, file string) (string, error) {
	rc, err := p.Credentials(user, groups)
	if err != nil {
		return "", err
	}
	return p.WriteKubeconfig(rc, file)
}
