package main

import (
	"bytes"
	"context"
	"flag"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/clientgo/device"
	"github.com/taintevict/taintevict/eviction"
	"github.com/taintevict/taintevict/examples/internal/budgetflags"
)

// TestMain fails the package if any goroutine outlives the tests: the informers, the
// event broadcaster, the Manager and the signal handling must all stop.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// failAfter bounds a test that waits on the real clock. It is a failure timeout, not a
// wait: the tests wait on channels and events, and finish in about their toleration.
const failAfter = 30 * time.Second

// deleteTimes records when the fake API server received each pod delete.
type deleteTimes struct {
	mu sync.Mutex
	at map[string]time.Time
}

func recordDeletes(client *fake.Clientset) *deleteTimes {
	d := &deleteTimes{at: map[string]time.Time{}}
	client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		d.mu.Lock()
		d.at[a.(k8stesting.DeleteAction).GetName()] = time.Now()
		d.mu.Unlock()
		return false, nil, nil // and let the tracker delete it
	})
	return d
}

func (d *deleteTimes) of(name string) (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t, ok := d.at[name]
	return t, ok
}

// podActions returns the index in actions of the status update that marked the pod with
// the DisruptionTarget condition, and of the delete of the pod, -1 for none; and the
// delete action.
func podActions(t *testing.T, actions []k8stesting.Action, namespace, name string) (marked, deleted int, del k8stesting.DeleteActionImpl) {
	t.Helper()
	marked, deleted = -1, -1
	for i, a := range actions {
		if a.GetNamespace() != namespace || a.GetResource().Resource != "pods" {
			continue
		}
		switch a := a.(type) {
		case k8stesting.PatchActionImpl:
			if a.GetSubresource() == "status" && a.GetName() == name && marked < 0 &&
				strings.Contains(string(a.GetPatch()), `"reason":"`+clientgo.DisruptionReason+`"`) {
				marked = i
			}
		case k8stesting.DeleteActionImpl:
			if a.GetName() == name && deleted < 0 {
				deleted, del = i, a
			}
		}
	}
	return marked, deleted, del
}

func podOn(namespace, name, node string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: demoUID(namespace, name)}, Spec: v1.PodSpec{NodeName: node}}
}

// taintAdded returns the TimeAdded of the unreachable taint the demo put on node-1, from
// the node update it sent.
func taintAdded(t *testing.T, actions []k8stesting.Action) time.Time {
	t.Helper()
	for _, a := range actions {
		u, ok := a.(k8stesting.UpdateActionImpl)
		if !ok || u.GetResource().Resource != "nodes" {
			continue
		}
		for _, taint := range u.GetObject().(*v1.Node).Spec.Taints {
			if taint.Key == Unreachable && taint.TimeAdded != nil {
				return taint.TimeAdded.Time
			}
		}
	}
	t.Fatal("no node update added the unreachable taint")
	return time.Time{}
}

// TestDemo runs the in-memory scenario as go run . does, with api-1 tolerating the taint
// for one second, and checks the outcome in the fake API server.
func TestDemo(t *testing.T) {
	const seconds = 1
	client := NewDemoClientset(seconds)
	deletes := recordDeletes(client)
	ctx, cancel := context.WithTimeout(t.Context(), failAfter)
	defer cancel()
	var out bytes.Buffer

	require.NoError(t, RunDemo(ctx, client, &out, DemoOptions{Seconds: seconds, Config: flagsOf(t)}))
	t.Log("\n" + out.String())

	// Evicted: the pods that do not tolerate the taint, and api-1 once its second ran out.
	// Kept: the pod tolerating it forever, cache-1 (its eviction cancelled when the taint
	// went), the finished pod (left alone, and not reported: it never had an eviction), and
	// the pod on the healthy node.
	evicted := [][2]string{{"shop", "web-1"}, {"batch", "train-1"}, {"shop", "api-1"}}
	kept := [][2]string{{"logging", "agent-1"}, {"shop", "cache-1"}, {"batch", "report-1"}, {"shop", "web-2"}}
	actions := client.Actions()
	for _, p := range evicted {
		_, err := client.CoreV1().Pods(p[0]).Get(t.Context(), p[1], metav1.GetOptions{})
		assert.Truef(t, apierrors.IsNotFound(err), "%s/%s: want it deleted, Get says %v", p[0], p[1], err)

		marked, deleted, del := podActions(t, actions, p[0], p[1])
		if assert.GreaterOrEqualf(t, marked, 0, "%s/%s: no status update set DisruptionTarget", p[0], p[1]) &&
			assert.GreaterOrEqualf(t, deleted, 0, "%s/%s: no delete", p[0], p[1]) {
			assert.Lessf(t, marked, deleted, "%s/%s: DisruptionTarget must be set before the delete", p[0], p[1])
			pre := del.GetDeleteOptions().Preconditions
			if assert.NotNilf(t, pre, "%s/%s: delete without preconditions", p[0], p[1]) && assert.NotNil(t, pre.UID) {
				assert.Equalf(t, demoUID(p[0], p[1]), *pre.UID, "%s/%s: UID precondition", p[0], p[1])
			}
		}
	}
	for _, p := range kept {
		_, err := client.CoreV1().Pods(p[0]).Get(t.Context(), p[1], metav1.GetOptions{})
		assert.NoErrorf(t, err, "%s/%s: want it kept", p[0], p[1])
		marked, deleted, _ := podActions(t, actions, p[0], p[1])
		assert.Equalf(t, -1, marked, "%s/%s: marked", p[0], p[1])
		assert.Equalf(t, -1, deleted, "%s/%s: deleted", p[0], p[1])
	}

	// api-1 went when its toleration ran out, not before; web-1 at once, before it.
	deadline := taintAdded(t, actions).Add(seconds * time.Second)
	apiAt, ok1 := deletes.of("api-1")
	webAt, ok2 := deletes.of("web-1")
	if assert.True(t, ok1 && ok2, "deletes of api-1 and web-1 recorded") {
		assert.Falsef(t, apiAt.Before(deadline), "api-1 deleted at %s, before its deadline %s", apiAt.Format(time.StampMicro), deadline.Format(time.StampMicro))
		assert.Truef(t, webAt.Before(apiAt), "web-1 (%s) should go before api-1 (%s)", webAt.Format(time.StampMicro), apiAt.Format(time.StampMicro))
	}

	// The Events kube's taint eviction controller records, on the pods.
	events, err := client.CoreV1().Events("").List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	var messages []string
	for _, e := range events.Items {
		if e.Reason != clientgo.EventReason {
			continue
		}
		messages = append(messages, e.Message)
		assert.Equal(t, v1.EventTypeNormal, e.Type)
		assert.Equal(t, "Pod", e.InvolvedObject.Kind)
		assert.Equal(t, demoUID(e.InvolvedObject.Namespace, e.InvolvedObject.Name), e.InvolvedObject.UID)
		assert.Equal(t, clientgo.Component, e.Source.Component)
	}
	assert.ElementsMatch(t, []string{
		"Marking for deletion Pod shop/web-1",
		"Marking for deletion Pod batch/train-1",
		"Marking for deletion Pod shop/api-1",
		"Cancelling deletion of Pod shop/cache-1",
	}, messages)

	for _, line := range []string{
		"evicted    shop/web-1 from node-1",
		"evicted    shop/api-1 from node-1",
		"cancelled  shop/cache-1 on node-1: NotTainted",
	} {
		assert.Contains(t, out.String(), line)
	}
	assert.NotContains(t, out.String(), "batch/report-1 on node-1", "a pod that had finished had no eviction to report")
}

// TestDemoDryRun runs the scenario in dry-run mode: every decision is reported, and the
// API server sees no status update, no delete and no Event.
func TestDemoDryRun(t *testing.T) {
	client := NewDemoClientset(1)
	ctx, cancel := context.WithTimeout(t.Context(), failAfter)
	defer cancel()
	var out bytes.Buffer

	require.NoError(t, RunDemo(ctx, client, &out, DemoOptions{Seconds: 1, Config: flagsOf(t, "-dry-run")}))

	for _, a := range client.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
		case "update":
			assert.Equal(t, "nodes", a.GetResource().Resource, "only the demo's node updates: %v", a)
		default:
			t.Errorf("dry run sent %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	pods, err := client.CoreV1().Pods("").List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, pods.Items, len(demoPods(1)))
	for _, line := range []string{
		"would evict shop/web-1 from node-1 (dry run)",
		"would evict shop/api-1 from node-1 (dry run)",
		"cancelled  shop/cache-1 on node-1: NotTainted",
	} {
		assert.Contains(t, out.String(), line)
	}
}

// TestRunDemoIgnoresKUBECONFIG runs the command as `go run .` does, with $KUBECONFIG
// pointing at a file that does not exist: without -kubeconfig the program never reads it,
// runs the in-memory demo, and exits 0.
func TestRunDemoIgnoresKUBECONFIG(t *testing.T) {
	t.Setenv("KUBECONFIG", t.TempDir()+"/no-such-kubeconfig")
	var stdout, stderr bytes.Buffer
	code := run([]string{"-toleration-seconds=0"}, &stdout, &stderr)
	assert.Equal(t, 0, code, "stderr: %s", stderr.String())
	assert.Contains(t, stdout.String(), "an in-memory cluster")
	assert.Contains(t, stdout.String(), "pods left:")
}

// flagsOf returns the configuration of args, which must be valid.
func flagsOf(t *testing.T, args ...string) config {
	t.Helper()
	t.Setenv("KUBERNETES_SERVICE_HOST", "") // not in a pod: no leader election by default
	cfg, err := parseFlags(args, &bytes.Buffer{})
	require.NoError(t, err)
	return cfg
}

// TestDemoEvict runs the scenario with -mode=evict: the pods go through the Eviction API,
// one request each, and nothing else writes to them.
func TestDemoEvict(t *testing.T) {
	client := NewDemoClientset(0)
	ctx, cancel := context.WithTimeout(t.Context(), failAfter)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, RunDemo(ctx, client, &out, DemoOptions{Seconds: 0, Config: flagsOf(t, "-mode=evict")}))
	var evicted []string
	for _, a := range client.Actions() {
		if a.GetResource().Resource != "pods" {
			continue
		}
		switch a.GetVerb() {
		case "create":
			require.Equal(t, "eviction", a.GetSubresource())
			evicted = append(evicted, a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction).Name)
		case "get", "list", "watch":
		default:
			t.Errorf("evict mode sent %s %s/%s", a.GetVerb(), a.GetResource().Resource, a.GetSubresource())
		}
	}
	assert.ElementsMatch(t, []string{"web-1", "train-1", "api-1"}, evicted)
	assert.Contains(t, out.String(), "removed    shop/web-1 by evict")
}

// TestParseFlags checks the defaults, and that every bad value is a one-line error and
// exit code 2.
func TestParseFlags(t *testing.T) {
	cfg := flagsOf(t)
	assert.Equal(t, config{mode: clientgo.ModeDelete, workers: 8, maxDeleteWorkers: 128, qps: 50, burst: 100,
		leNamespace: cfg.leNamespace, leLease: 15 * time.Second, leRenew: 10 * time.Second, leRetry: 2 * time.Second, seconds: 3,
		manager:   managerFlags{backoffBase: 100 * time.Millisecond, backoffCap: 2 * time.Minute, backoffJitter: 0.2, deleteTimeout: 30 * time.Second},
		budgets:   defaultBudgets(),
		device:    deviceFlags{controllers: []string{controllerNode}},
		clients:   clientFlags{eventsQPS: 50, eventsBurst: 100, contentType: contentProtobuf},
		serving:   servingFlags{secure: true},
		admission: admissionFlags{horizon: 24 * time.Hour}}, cfg,
		"no flags: the in-memory demo, no leader election outside a pod")

	cfg = flagsOf(t, "-kubeconfig", "/tmp/kc", "-dry-run", "-mode=dry-run", "-workers=2", "-metrics-addr=:9090")
	assert.Equal(t, "/tmp/kc", cfg.kubeconfig)
	assert.Equal(t, clientgo.ModeDryRun, cfg.mode)
	assert.Equal(t, 2, cfg.workers)
	cfg = flagsOf(t, "-mode=evict", "-pdb-timeout=5m", "-leader-elect", "-leader-elect-namespace=ops")
	assert.Equal(t, 5*time.Minute, cfg.pdbTimeout)
	assert.True(t, cfg.leaderElect)
	assert.Equal(t, "ops", cfg.leaseOptions().Namespace)

	t.Setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "443")
	t.Setenv("POD_NAMESPACE", "taintevict-system")
	cfg, err := parseFlags(nil, &bytes.Buffer{})
	require.NoError(t, err)
	assert.True(t, cfg.leaderElect, "leader election by default in a pod")
	assert.Equal(t, "taintevict-system", cfg.leNamespace)

	cfg = flagsOf(t, "-kubeconfig=x", "-controllers=device,node", "-confirm-fraction=0.5", "-confirm-min-pods=3", "-in-flight=7", "-max-delete-workers=64")
	assert.Equal(t, []string{controllerDevice, controllerNode}, cfg.device.controllers)
	dopts := deviceOptions(cfg, &lineObserver{})
	assert.Equal(t, eviction.Confirm{Fraction: 0.5, MinTargets: 3}, dopts.Engine.Confirm, "the budgets are both sides'")
	assert.Equal(t, eviction.InFlight{Max: 7}, dopts.Engine.InFlight)
	assert.Equal(t, eviction.Confirm{Fraction: 0.5, MinTargets: 3}, cfg.controllerOptions().Manager.Confirm)
	assert.Equal(t, 8, dopts.Engine.Workers)
	assert.Equal(t, 0, dopts.Engine.ActWorkers, "the device side's act workers follow the budget, as the node side's")
	assert.Equal(t, 64, dopts.Engine.MaxActWorkers)
	assert.Equal(t, device.PodGroupsAuto, dopts.PodGroups, "PodGroups followed when served, by default")
	assert.Equal(t, device.PodGroupsOff, deviceOptions(flagsOf(t, "-kubeconfig=x", "-controllers=device", "-device-pod-groups=off"), &lineObserver{}).PodGroups)
	assert.Equal(t, device.PodGroupsOn, deviceOptions(flagsOf(t, "-kubeconfig=x", "-controllers=device", "-device-pod-groups=on"), &lineObserver{}).PodGroups)

	var usage bytes.Buffer
	_, err = parseFlags([]string{"-h"}, &usage)
	require.Error(t, err)
	assert.Contains(t, usage.String(), "-leader-elect-lease-duration")
}

func TestBadFlags(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("POD_NAMESPACE", "")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-no-such-flag"}, "flag provided but not defined: -no-such-flag"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"-mode=shred"}, `invalid value "shred" for flag -mode: want delete, evict or dry-run`},
		{[]string{"-mode=evict", "-dry-run"}, "-dry-run contradicts -mode"},
		{[]string{"-dry-run=maybe"}, "want true or false"},
		{[]string{"-pdb-timeout=5m"}, "-pdb-timeout needs -mode=evict"},
		{[]string{"-mode=evict", "-pdb-timeout=-1s"}, "-pdb-timeout must not be negative"},
		{[]string{"-pdb-timeout=soon"}, `invalid value "soon" for flag -pdb-timeout`},
		{[]string{"-workers=0"}, "-workers must be at least 1"},
		{[]string{"-delete-workers=-3"}, "-delete-workers must not be negative"},
		{[]string{"-max-delete-workers=0"}, "-max-delete-workers must be at least 1"},
		{[]string{"-kube-api-qps=0"}, "-kube-api-qps must be above 0"},
		{[]string{"-kube-api-qps=NaN"}, "-kube-api-qps must be above 0"},
		{[]string{"-kube-api-burst=0"}, "-kube-api-burst must be at least 1"},
		{[]string{"-leader-elect"}, "-leader-elect needs -leader-elect-namespace"},
		{[]string{"-leader-elect", "-leader-elect-namespace=x", "-leader-elect-retry-period=0s"}, "-leader-elect-retry-period must be positive"},
		{[]string{"-leader-elect", "-leader-elect-namespace=x", "-leader-elect-renew-deadline=2s"}, "must be more than 1.2 × -leader-elect-retry-period"},
		{[]string{"-leader-elect", "-leader-elect-namespace=x", "-leader-elect-lease-duration=10s"}, "-leader-elect-lease-duration (10s) must be more than -leader-elect-renew-deadline (10s)"},
		{[]string{"-metrics-addr=8080"}, "-metrics-addr \"8080\": want host:port"},
		{[]string{"-admission-deny-fraction=0.5"}, "need -admission-addr"},
		{[]string{"-admission-addr=9443"}, `-admission-addr "9443": want host:port`},
		{[]string{"-admission-addr=:9443"}, "-admission-addr needs -kubeconfig"},
		{[]string{"-kubeconfig=x", "-admission-addr=:9443"}, "-admission-addr needs -admission-tls-cert-file and -admission-tls-private-key-file"},
		{[]string{"-kubeconfig=x", "-admission-addr=:9443", "-admission-tls-cert-file=c", "-admission-tls-private-key-file=k", "-admission-deny-fraction=1.5"}, "-admission-deny-fraction must be in (0, 1]"},
		{[]string{"-kubeconfig=x", "-admission-addr=:9443", "-admission-tls-cert-file=c", "-admission-tls-private-key-file=k", "-admission-horizon=0s"}, "-admission-horizon must be positive"},
		{[]string{"-kubeconfig=x", "-metrics-addr=:8443", "-tls-cert-file=c.pem"}, "-tls-cert-file and -tls-private-key-file go together"},
		{[]string{"-kubeconfig=x", "-metrics-addr=:8443", "-tls-private-key-file=k.pem"}, "-tls-cert-file and -tls-private-key-file go together"},
		{[]string{"-kubeconfig=x", "-metrics-addr=:8443", "-metrics-secure=false", "-tls-cert-file=c.pem", "-tls-private-key-file=k.pem"}, "-tls-cert-file contradicts -metrics-secure=false"},
		{[]string{"-metrics-addr=:8443", "-tls-cert-file=c.pem", "-tls-private-key-file=k.pem"}, "-tls-cert-file needs -kubeconfig: the in-memory demo serves plain HTTP"},
		{[]string{"-kubeconfig=x", "-tls-cert-file=c.pem", "-tls-private-key-file=k.pem"}, "-tls-cert-file needs -metrics-addr"},
		{[]string{"-toleration-seconds=-1"}, "-toleration-seconds must not be negative"},
		{[]string{"-controllers=nodes"}, `unknown controller "nodes": want node, device or node,device`},
		{[]string{"-controllers=node,node"}, "node given twice"},
		{[]string{"-controllers=device"}, "-controllers other than node needs -kubeconfig"},
		{[]string{"-kubeconfig=x", "-controllers=device", "-device-budget-fraction=0.5"}, "flag provided but not defined: -device-budget-fraction"},
		{[]string{"-kubeconfig=x", "-controllers=device", "-device-pod-groups=yes"}, `unknown mode "yes": want auto, on or off`},
		{[]string{"-kubeconfig=x", "-device-pod-groups=on"}, "-device-pod-groups needs -controllers with device"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			assert.Equal(t, 2, run(tc.args, &stdout, &stderr))
			assert.Empty(t, stdout.String())
			assert.Equal(t, 1, strings.Count(stderr.String(), "\n"), "one line: %q", stderr.String())
			assert.True(t, strings.HasPrefix(stderr.String(), "controller: "), stderr.String())
			assert.Contains(t, stderr.String(), tc.want)
		})
	}
}

// defaultBudgets are the budget flags' defaults.
func defaultBudgets() budgetflags.Flags {
	var b budgetflags.Flags
	b.Define(flag.NewFlagSet("defaults", flag.ContinueOnError))
	return b
}
