package controllerruntime_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/taintevict/taintevict/controllerruntime"
	"github.com/taintevict/taintevict/eviction"
)

// failAfter bounds every wait on the server: a failure timeout, not a wait.
const failAfter = time.Minute

// outage is the NoExecute taint of the tests (not one of node.kubernetes.io's, which the
// API server's DefaultTolerationSeconds admission has every pod tolerate for 300 s).
const outage = "crt.taintevict.io/outage"

// managersGroup is the group of the users the managers under test run as; the audit log
// records their requests, and only theirs.
const managersGroup = "crt:managers"

// auditLog is the API server's audit log: every request of the managers, at the Metadata
// level, written before the response (blocking mode), so that a request answered is in it.
var auditLog string

func configureAudit(dir string) error {
	policy := filepath.Join(dir, "audit-policy.yaml")
	rules := "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived, ResponseStarted, Panic]\n" +
		"rules:\n- level: Metadata\n  userGroups: [\"" + managersGroup + "\"]\n- level: None\n"
	if err := os.WriteFile(policy, []byte(rules), 0o600); err != nil {
		return err
	}
	auditLog = filepath.Join(dir, "audit.log")
	env.ControlPlane.GetAPIServer().Configure().
		Set("audit-policy-file", policy).
		Set("audit-log-path", auditLog).
		Set("audit-log-format", "json").
		Set("audit-log-mode", "blocking")
	return nil
}

// request is the part of an audit.k8s.io/v1 Event the tests read.
type request struct {
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	Verb      string `json:"verb"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	Received time.Time `json:"requestReceivedTimestamp"`
}

// podWrite says whether the request changed a pod: a status write, a delete, an eviction.
func (r request) podWrite() bool {
	return r.ObjectRef != nil && r.ObjectRef.Resource == "pods" && r.ObjectRef.Name != "" &&
		r.Verb != "get" && r.Verb != "list" && r.Verb != "watch"
}

// removal says whether the request asks to remove a pod: a DELETE or an eviction.
func (r request) removal() bool {
	return r.ObjectRef != nil && r.ObjectRef.Resource == "pods" &&
		(r.Verb == "delete" && r.ObjectRef.Subresource == "" || r.Verb == "create" && r.ObjectRef.Subresource == "eviction")
}

func (r request) ok() bool { return r.ResponseStatus != nil && r.ResponseStatus.Code < 300 }

// podWrites returns the pod writes the users made in namespace ns, in the order the server
// received them.
func podWrites(t *testing.T, ns string, users ...string) []request {
	t.Helper()
	f, err := os.Open(auditLog)
	if err != nil {
		t.Fatalf("reading the audit log: %v", err)
	}
	defer f.Close()
	var out []request
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var r request
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("audit log: %v", err)
		}
		if r.podWrite() && r.ObjectRef.Namespace == ns && slices.Contains(users, r.User.Username) {
			out = append(out, r)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("audit log: %v", err)
	}
	slices.SortStableFunc(out, func(a, b request) int { return a.Received.Compare(b.Received) })
	return out
}

// tally is what the audit log shows of the evictions of a namespace: lost are the due pods
// that no request removed, wrong the pods that must stay and that a request wrote to,
// doubled the pods asked to be removed again after a removal succeeded.
type tally struct{ lost, wrong, doubled []string }

func auditTally(t *testing.T, ns string, due, kept []string, users ...string) tally {
	t.Helper()
	removed := map[string]int{}
	var tl tally
	for _, r := range podWrites(t, ns, users...) {
		name := r.ObjectRef.Name
		if slices.Contains(kept, name) {
			tl.wrong = append(tl.wrong, name)
		}
		if !r.removal() {
			continue
		}
		if removed[name] > 0 {
			tl.doubled = append(tl.doubled, name)
		}
		if r.ok() {
			removed[name]++
		}
	}
	for _, n := range due {
		if removed[n] == 0 {
			tl.lost = append(tl.lost, n)
		}
	}
	return tl
}

// check logs the tally and fails the test for each lost, wrong or doubled eviction.
func (tl tally) check(t *testing.T, what string) {
	t.Helper()
	t.Logf("%s, from the audit log: evictions lost %d, wrong %d, doubled %d", what, len(tl.lost), len(tl.wrong), len(tl.doubled))
	if len(tl.lost)+len(tl.wrong)+len(tl.doubled) > 0 {
		t.Errorf("lost %v, wrong %v, doubled %v: want none", tl.lost, tl.wrong, tl.doubled)
	}
}

var seq atomic.Int64

// scene is a test's part of the shared cluster: a namespace, and nodes whose names start
// with its name. Its cleanup removes both.
type scene struct {
	t     *testing.T
	ns    string
	nodes []string
}

func newScene(t *testing.T) *scene {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	s := &scene{t: t, ns: fmt.Sprintf("%.40s-%d", name, seq.Add(1))}
	if _, err := admin.CoreV1().Namespaces().Create(t.Context(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", s.ns, err)
	}
	t.Cleanup(s.cleanup)
	return s
}

func (s *scene) cleanup() {
	ctx := context.Background()
	if err := admin.CoreV1().Pods(s.ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{}); err != nil {
		s.t.Errorf("cleanup: deleting the pods of %s: %v", s.ns, err)
	}
	for _, n := range s.nodes {
		if err := admin.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			s.t.Errorf("cleanup: deleting node %s: %v", n, err)
		}
	}
}

// node creates a node, tainted with the outage taint added at tainted if that is not zero.
func (s *scene) node(suffix string, tainted time.Time) string {
	s.t.Helper()
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: s.ns + "-" + suffix}}
	if !tainted.IsZero() {
		n.Spec.Taints = []v1.Taint{{Key: outage, Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: tainted}}}
	}
	if _, err := admin.CoreV1().Nodes().Create(s.t.Context(), n, metav1.CreateOptions{}); err != nil {
		s.t.Fatalf("creating node %s: %v", n.Name, err)
	}
	s.nodes = append(s.nodes, n.Name)
	return n.Name
}

// pod creates a pod bound to node (no scheduler runs) that tolerates the outage for
// seconds (forever if negative, not at all if nil).
func (s *scene) pod(name, node string, seconds *int64) {
	s.t.Helper()
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name},
		Spec:       v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
	}
	switch {
	case seconds == nil:
	case *seconds < 0:
		p.Spec.Tolerations = []v1.Toleration{{Key: outage, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}
	default:
		p.Spec.Tolerations = []v1.Toleration{{Key: outage, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: seconds}}
	}
	if _, err := admin.CoreV1().Pods(s.ns).Create(s.t.Context(), p, metav1.CreateOptions{}); err != nil {
		s.t.Fatalf("creating pod %s/%s: %v", s.ns, name, err)
	}
}

// setTaint puts the outage taint, added at added, on node, or takes it off if added is zero.
func (s *scene) setTaint(node string, added time.Time) {
	s.t.Helper()
	err := wait.PollUntilContextTimeout(s.t.Context(), 50*time.Millisecond, failAfter, true, func(ctx context.Context) (bool, error) {
		n, err := admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		n.Spec.Taints = nil
		if !added.IsZero() {
			n.Spec.Taints = []v1.Taint{{Key: outage, Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: added}}}
		}
		_, err = admin.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err == nil, client409(err)
	})
	if err != nil {
		s.t.Fatalf("tainting node %s: %v", node, err)
	}
}

// client409 lets a conflict be retried and ends the poll with any other error.
func client409(err error) error {
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// waitDeleted waits until the pod is being deleted (no kubelet finishes it) or gone, and
// returns when the test first saw it so.
func (s *scene) waitDeleted(name string) time.Time {
	s.t.Helper()
	err := wait.PollUntilContextTimeout(s.t.Context(), 50*time.Millisecond, failAfter, true, func(ctx context.Context) (bool, error) {
		p, err := admin.CoreV1().Pods(s.ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && p.DeletionTimestamp != nil, err
	})
	if err != nil {
		s.t.Fatalf("pod %s/%s: not deleted: %v", s.ns, name, err)
	}
	return time.Now()
}

// deleting returns the pods of the namespace that are being deleted.
func (s *scene) deleting() []string {
	s.t.Helper()
	list, err := admin.CoreV1().Pods(s.ns).List(s.t.Context(), metav1.ListOptions{})
	if err != nil {
		s.t.Fatalf("listing pods: %v", err)
	}
	var out []string
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil {
			out = append(out, p.Name)
		}
	}
	return out
}

// user returns the rest.Config of a new user of the managers' group (who may do anything),
// so that the audit log tells its requests from every other's.
func user(t *testing.T, name string) *rest.Config {
	t.Helper()
	u, err := env.AddUser(envtest.User{Name: name, Groups: []string{"system:masters", managersGroup}}, nil)
	if err != nil {
		t.Fatalf("adding user %s: %v", name, err)
	}
	cfg := u.Config()
	cfg.QPS, cfg.Burst = 100, 200
	return cfg
}

// running is a manager with a Controller, started by start.
type running struct {
	name    string
	mgr     manager.Manager
	c       *controllerruntime.Controller
	cancel  context.CancelFunc
	stopped chan struct{} // mgr.Start has returned, with err
	err     error
}

// start makes a manager as user name, with a Controller of opts, and starts it; mopts may
// set the manager's options (leader election). It stops it at the test's end.
func start(t *testing.T, name string, cfg *rest.Config, mopts manager.Options, opts controllerruntime.Options) *running {
	t.Helper()
	if mopts.Metrics.BindAddress == "" {
		mopts.Metrics = metricsserver.Options{BindAddress: "0"} // none
	}
	mgr, err := manager.New(cfg, mopts)
	if err != nil {
		t.Fatalf("%s: manager: %v", name, err)
	}
	c, err := controllerruntime.New(t.Context(), mgr, opts)
	if err != nil {
		t.Fatalf("%s: controller: %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{name: name, mgr: mgr, c: c, cancel: cancel, stopped: make(chan struct{})}
	go func() {
		defer close(r.stopped)
		r.err = mgr.Start(ctx)
	}()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop stops the manager and waits until it has returned, and the Controller too if the
// manager started it (a manager that lost the lead returns without waiting for it).
func (r *running) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	waitFor(t, r.stopped, r.name+": the manager's Start returned")
	if r.c.Leading() {
		waitFor(t, r.c.Stopped(), r.name+": the Controller's Start returned")
	}
}

// waitFor waits until ch is closed, or fails the test.
func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(failAfter):
		t.Fatalf("%s: not after %s", what, failAfter)
	}
}

// delays is an Observer that closes all once every pod of want has been reported Delayed
// for reason, and counts the Deleter calls started.
type delays struct {
	eviction.NopObserver
	reason  eviction.Reason
	mu      sync.Mutex
	want    map[types.NamespacedName]bool
	all     chan struct{}
	started atomic.Int64
}

func newDelays(ns string, reason eviction.Reason, pods ...string) *delays {
	d := &delays{reason: reason, want: map[types.NamespacedName]bool{}, all: make(chan struct{})}
	for _, p := range pods {
		d.want[types.NamespacedName{Namespace: ns, Name: p}] = true
	}
	return d
}

func (d *delays) Delayed(pod eviction.PodRef, reason eviction.Reason) {
	if reason != d.reason {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	if d.want[key] {
		delete(d.want, key)
		if len(d.want) == 0 {
			close(d.all)
		}
	}
}

func (d *delays) Started(eviction.PodRef, eviction.Attempt) { d.started.Add(1) }

// cutDialer dials the API server until Cut, which closes every connection it made and
// refuses new ones: a replica cut off from the API server, though it runs on.
type cutDialer struct {
	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func (d *cutDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut {
		return nil, errors.New("cut off from the API server")
	}
	var nd net.Dialer
	conn, err := nd.DialContext(ctx, network, addr)
	if err == nil {
		d.conns = append(d.conns, conn)
	}
	return conn, err
}

func (d *cutDialer) Cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = true
	for _, c := range d.conns {
		_ = c.Close()
	}
}
