package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start is the tests' "now".
var start = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

const down = "example.com/down"

func testNode(name, zone string, taints ...v1.Taint) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}, Spec: v1.NodeSpec{Taints: taints}}
	if zone != "" {
		n.Labels[v1.LabelTopologyZone] = zone
	}
	return n
}

func testPod(ns, name, node string, tols ...v1.Toleration) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: k8stypes.UID("uid-" + name)},
		Spec: v1.PodSpec{NodeName: node, Tolerations: tols}}
}

func tolerate(key string, seconds *int64) v1.Toleration {
	return v1.Toleration{Key: key, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: seconds}
}

func noExecute(key string, added time.Time) v1.Taint {
	return v1.Taint{Key: key, Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: added}}
}

// smallCluster is two nodes of zone a and one of zone b, each with a pod that tolerates
// down for nothing, one for 300 s and one forever.
func smallCluster() []runtime.Object {
	objs := []runtime.Object{testNode("a-1", "a"), testNode("a-2", "a"), testNode("b-1", "b")}
	for _, n := range []string{"a-1", "a-2", "b-1"} {
		objs = append(objs,
			testPod("web", "web-"+n, n),
			testPod("db", "db-"+n, n, tolerate(down, ptr.To[int64](300))),
			testPod("kube-system", "agent-"+n, n, tolerate(down, nil)))
	}
	return objs
}

// runWith runs the command with args against a fake clientset holding objs, and returns
// its exit code, standard output and standard error.
func runWith(t *testing.T, objs []runtime.Object, args ...string) (int, string, string) {
	t.Helper()
	return runOn(t, fake.NewClientset(objs...), nil, args...)
}

// runOn runs the command with args against client, with rc as the kubeconfig's
// configuration (nil for none).
func runOn(t *testing.T, client *fake.Clientset, rc *rest.Config, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut}
	cmd := newRootCommand(streams, deps{
		newClient: func() (*clients, error) { return &clients{kube: client, rest: rc, namespace: "default"}, nil },
		now:       func() time.Time { return start },
	})
	cmd.SetArgs(args)
	code := exitOf(cmd.ExecuteContext(context.Background()), &errOut)
	return code, out.String(), errOut.String()
}

// jsonReport runs a what-if with -o json and decodes its report.
func jsonReport(t *testing.T, objs []runtime.Object, args ...string) Report {
	t.Helper()
	code, out, errOut := runWith(t, objs, append(args, "-o", "json")...)
	require.Equal(t, exitOK, code, errOut)
	var rep Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	return rep
}

// whens returns each pod's When, by namespace/name.
func whens(rep Report) map[string]string {
	out := map[string]string{}
	for _, p := range rep.Pods {
		out[p.Namespace+"/"+p.Name] = p.When
	}
	return out
}

func TestWhatIfTable(t *testing.T) {
	code, out, errOut := runWith(t, smallCluster(), "what-if", "node/a-1", down+":NoExecute")
	require.Equal(t, exitOK, code, errOut)
	for _, want := range []string{
		"What if node a-1 gets example.com/down:NoExecute, at 2030-01-01T12:00:00Z?",
		"It evicts 1 pod now (1 namespace), 1 more within 5m0s; 1 tolerates it forever.",
		"now     web/web-a-1             a-1    -       does not tolerate example.com/down:NoExecute",
		"+5m0s   db/db-a-1               a-1    -       tolerates example.com/down:NoExecute for 300s (tolerations[0]), from now",
		"never   kube-system/agent-a-1   a-1    -       tolerates example.com/down:NoExecute forever (tolerations[0])",
		"TOTAL         3      1     1       1       0      0",
	} {
		assert.Contains(t, out, want)
	}
}

func TestWhatIf(t *testing.T) {
	ago := start.Add(-100 * time.Second)
	tainted := smallCluster()
	tainted[0] = testNode("a-1", "a", noExecute(down, ago))
	tests := []struct {
		name    string
		objs    []runtime.Object
		args    []string
		want    map[string]string
		summary string
		// anyOrder: pods due at the same instant take a rate limit's slots in an order the
		// engine does not fix; only the set of times is checked.
		anyOrder bool
	}{
		{
			name:    "a zone goes unreachable",
			objs:    smallCluster(),
			args:    []string{"-l", v1.LabelTopologyZone + "=a"},
			want:    map[string]string{"web/web-a-1": "now", "web/web-a-2": "now", "db/db-a-1": "now", "db/db-a-2": "now", "kube-system/agent-a-1": "now", "kube-system/agent-a-2": "now"},
			summary: "evicts 6 pods now (3 namespaces)",
		},
		{
			name:    "the zone brake holds it",
			objs:    smallCluster(),
			args:    []string{"-l", v1.LabelTopologyZone + "=a", "--brake-zone-fraction=0.5"},
			want:    map[string]string{"web/web-a-1": "held", "web/web-a-2": "held", "db/db-a-1": "held", "db/db-a-2": "held", "kube-system/agent-a-1": "held", "kube-system/agent-a-2": "held"},
			summary: "evicts no pod; the brake would hold 6 pods in zone a",
		},
		{
			name:     "a rate limit",
			objs:     smallCluster(),
			args:     []string{"node/a-1", "node/b-1", down + ":NoExecute", "--eviction-rate=1", "--group-by=node,zone"},
			want:     map[string]string{"web/web-a-1": "now", "web/web-b-1": "+1s", "db/db-a-1": "+5m0s", "db/db-b-1": "+5m1s", "kube-system/agent-a-1": "never", "kube-system/agent-b-1": "never"},
			summary:  "evicts 1 pod now (1 namespace), 3 more within 5m1s; 2 tolerate it forever",
			anyOrder: true,
		},
		{
			name:    "untainting cancels",
			objs:    tainted,
			args:    []string{"node/a-1", down + "-"},
			want:    map[string]string{"web/web-a-1": "leaving", "db/db-a-1": "cancelled", "kube-system/agent-a-1": "never"},
			summary: "evicts no pod; cancels the eviction of 1 pod",
		},
		{
			name:    "--remove takes a key",
			objs:    tainted,
			args:    []string{"node/a-1", "--remove", down},
			want:    map[string]string{"web/web-a-1": "leaving", "db/db-a-1": "cancelled", "kube-system/agent-a-1": "never"},
			summary: "evicts no pod; cancels the eviction of 1 pod",
		},
		{
			name:    "one namespace",
			objs:    smallCluster(),
			args:    []string{"node/a-1", down + ":NoExecute", "-n", "db"},
			want:    map[string]string{"db/db-a-1": "+5m0s"},
			summary: "evicts 1 pod within 5m0s",
		},
	}
	// The pod that does not tolerate the taint already there has been evicted: it is
	// terminating.
	web := tainted[3].(*v1.Pod).DeepCopy()
	web.DeletionTimestamp = &metav1.Time{Time: ago}
	tainted[3] = web
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep := jsonReport(t, tc.objs, append([]string{"what-if"}, tc.args...)...)
			if tc.anyOrder {
				assert.ElementsMatch(t, slices.Collect(maps.Values(tc.want)), slices.Collect(maps.Values(whens(rep))))
			} else {
				assert.Equal(t, tc.want, whens(rep))
			}
			assert.Equal(t, tc.summary, rep.Summary.Text)
			assert.Equal(t, "WhatIf", rep.Kind)
		})
	}
}

// With --mode=evict the report says which evictions a PodDisruptionBudget would refuse.
func TestWhatIfEvictMode(t *testing.T) {
	objs := smallCluster()
	for _, o := range objs {
		if p, ok := o.(*v1.Pod); ok {
			p.Labels = map[string]string{"app": p.Namespace}
			p.Status.Phase = v1.PodRunning
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
		}
	}
	objs = append(objs, pdb("web", "web", 1))
	rep := jsonReport(t, objs, "what-if", "node/a-1", "node/a-2", down+":NoExecute", "--mode=evict")
	refused := map[string]string{}
	for _, p := range rep.Pods {
		if p.RefusedBy != "" {
			refused[p.Namespace+"/"+p.Name] = p.RefusedBy
		}
	}
	assert.Equal(t, map[string]string{"web/web-a-2": "web"}, refused, "the budget allows one disruption: the second is refused")
	assert.Equal(t, 1, rep.Summary.Refused)
}

func TestWhatIfBadInput(t *testing.T) {
	forbidden := fake.NewClientset(smallCluster()...)
	forbidden.PrependReactor("list", "pods", forbid("pods", "list"))
	noNodes := fake.NewClientset(smallCluster()...)
	noNodes.PrependReactor("list", "nodes", forbid("nodes", "list"))
	tests := []struct {
		name   string
		client *fake.Clientset
		args   []string
		code   int
		stderr string
	}{
		{"an unknown node", nil, []string{"what-if", "node/nope", down + ":NoExecute"}, exitCluster, `node "nope" not found`},
		{"no node selected", nil, []string{"what-if", "-l", "zone=z"}, exitCluster, "no node matches -l zone=z"},
		{"a malformed taint", nil, []string{"what-if", "node/a-1", "a=b=c:NoExecute"}, exitUsage, `taint "a=b=c:NoExecute"`},
		{"a taint without an effect", nil, []string{"what-if", "node/a-1", down}, exitUsage, "the effect is missing"},
		{"a NoSchedule taint", nil, []string{"what-if", "node/a-1", down + ":NoSchedule"}, exitUsage, "a NoSchedule taint evicts nothing (only NoExecute taints evict)"},
		{"an unknown effect", nil, []string{"what-if", "node/a-1", down + ":Sometimes"}, exitUsage, "effect"},
		{"no question", nil, []string{"what-if"}, exitUsage, "what-if needs node/NAME"},
		{"no taint", nil, []string{"what-if", "node/a-1"}, exitUsage, "give a taint to add"},
		{"a pod", nil, []string{"what-if", "pod/web", down + ":NoExecute"}, exitUsage, "see kubectl taintevict explain"},
		{"nodes and a selector", nil, []string{"what-if", "node/a-1", "-l", "x=y", down + ":NoExecute"}, exitUsage, "not both"},
		{"a removal of nothing", nil, []string{"what-if", "node/a-1", down + "-"}, exitCluster, "no taint example.com/down to remove"},
		{"an unknown flag", nil, []string{"what-if", "--nope"}, exitUsage, "unknown flag: --nope"},
		{"an unknown output", nil, []string{"what-if", "node/a-1", down + ":NoExecute", "-o", "xml"}, exitUsage, `-o "xml"`},
		{"a bad brake", nil, []string{"what-if", "node/a-1", down + ":NoExecute", "--brake-fraction=2"}, exitUsage, "-brake-fraction must be in (0, 1], or 0 for off, got 2"},
		{"a rate under the least", nil, []string{"what-if", "node/a-1", down + ":NoExecute", "--eviction-rate=0.0001"}, exitUsage, "-eviction-rate and -eviction-burst: eviction: engine: RateLimit.PerSecond must be 0 (no limit) or at least 0.001"},
		{"a bad taint rate", nil, []string{"what-if", "node/a-1", down + ":NoExecute", "--taint-rate=k=x"}, exitUsage, "the rate must be a number"},
		{"no access to pods", forbidden, []string{"what-if", "node/a-1", down + ":NoExecute"}, exitCluster,
			"forbidden: the command needs RBAC to allow list pods in all namespaces: pods is forbidden"},
		// Nodes have no namespace: the error names no scope they do not have.
		{"no access to nodes", noNodes, []string{"what-if", "-l", "zone=a", down + ":NoExecute"}, exitCluster,
			"forbidden: the command needs RBAC to allow list nodes (cluster-scoped: a ClusterRole grants it): nodes is forbidden"},
		{"an unknown command", nil, []string{"nope"}, exitUsage, `unknown command "nope"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := tc.client
			if client == nil {
				client = fake.NewClientset(smallCluster()...)
			}
			code, out, errOut := runOn(t, client, nil, tc.args...)
			assert.Equal(t, tc.code, code, "exit code; stdout %q", out)
			assert.Contains(t, errOut, tc.stderr)
			assert.NotContains(t, errOut, "panic")
		})
	}
}

// TestWhatIfMalformedTaintOneLine: a malformed taint is one line of standard error, about
// the taint: every problem of it on that line, and nothing that names tolerations.
func TestWhatIfMalformedTaintOneLine(t *testing.T) {
	for _, tc := range []struct{ arg, want string }{
		{"=:", `taint "=:": key: invalid value "": must not be empty; effect: invalid value "": effect is required`},
		{"a/b/c=v v:NoExecute", `taint "a/b/c=v v:NoExecute": key: invalid value "a/b/c": `},
	} {
		t.Run(tc.arg, func(t *testing.T) {
			code, _, errOut := runWith(t, smallCluster(), "what-if", "node/a-1", tc.arg)
			assert.Equal(t, exitUsage, code)
			assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
			assert.Contains(t, errOut, tc.want)
			assert.NotContains(t, errOut, "toleration")
		})
	}
}

// TestWhatIfBudgets: the what-if simulates every budget of the controller, with its flags,
// and says where its timeline cannot be exact.
func TestWhatIfBudgets(t *testing.T) {
	var objs []runtime.Object
	objs = append(objs, testNode("n1", "a"), testNode("n2", "a"))
	for i := range 3 {
		p := testPod("shop", fmt.Sprint("web-", i), "n1", tolerate(down, ptr.To(int64(i))))
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](20)
		objs = append(objs, p)
	}
	objs = append(objs, testPod("shop", "other", "n2"))
	for _, tc := range []struct {
		name    string
		args    []string
		want    map[string]string
		reason  string // of web-2
		summary string
		note    string
	}{
		{"in flight: the next goes when the last is gone, at the end of its grace", []string{"--in-flight=1"},
			map[string]string{"shop/web-0": "now", "shop/web-1": "+20s", "shop/web-2": "+40s"},
			"it waits for evictions in flight to end (--in-flight)", "evicts 1 pod now (1 namespace), 2 more within 40s",
			"--in-flight: an evicted pod counts in flight until the end of its grace period"},
		{"a namespace's window", []string{"--namespace-limit=2/1m"},
			map[string]string{"shop/web-0": "now", "shop/web-1": "+1s", "shop/web-2": "+1m0s"},
			"it waits for its namespace's window (--namespace-limit)", "evicts 1 pod now (1 namespace), 2 more within 1m0s", ""},
		{"confirm holds a taint that would evict too many", []string{"--confirm-fraction=0.5"},
			map[string]string{"shop/web-0": "held", "shop/web-1": "held", "shop/web-2": "held"},
			"held until an operator confirms the taint", "evicts no pod; 3 pods held until an operator confirms the taint", ""},
		{"loop damping damps no pod of a what-if", []string{"--loop-window=10m"},
			map[string]string{"shop/web-0": "now", "shop/web-1": "+1s", "shop/web-2": "+2s"},
			"tolerates", "evicts 1 pod now (1 namespace), 2 more within 2s", "--loop-window: the what-if re-creates no evicted pod"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := jsonReport(t, objs, append([]string{"what-if", "node/n1", down + ":NoExecute"}, tc.args...)...)
			assert.Equal(t, tc.want, whens(rep))
			assert.Equal(t, tc.summary, rep.Summary.Text)
			for _, p := range rep.Pods {
				if p.Name == "web-2" {
					assert.Contains(t, p.Reason, tc.reason)
				}
			}
			if tc.note == "" {
				assert.Empty(t, rep.Notes)
			} else {
				require.Len(t, rep.Notes, 1)
				assert.Contains(t, rep.Notes[0], tc.note)
			}
		})
	}
	code, out, errOut := runWith(t, objs, "what-if", "node/n1", down+":NoExecute", "--in-flight=1")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "(Note: --in-flight: an evicted pod counts in flight until the end of its grace period", "the table says it too")
}

func TestWhatIfCPUProfile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cpu.pprof")
	code, out, errOut := runWith(t, smallCluster(), "what-if", "node/a-1", down+":NoExecute", "--cpuprofile", file)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "It evicts 1 pod now")
	got, err := os.ReadFile(file)
	require.NoError(t, err)
	// A Go CPU profile is gzip-compressed protobuf: it starts with gzip's magic bytes.
	if len(got) < 2 || got[0] != 0x1f || got[1] != 0x8b {
		t.Errorf("--cpuprofile wrote %d bytes, want a gzip-compressed profile", len(got))
	}

	code, _, errOut = runWith(t, smallCluster(), "what-if", "node/a-1", down+":NoExecute", "--cpuprofile", filepath.Join(t.TempDir(), "no", "such", "dir"))
	if code == exitOK || !strings.Contains(errOut, "--cpuprofile") {
		t.Errorf("--cpuprofile to a missing folder: exit %d, stderr %q; want an error naming the flag", code, errOut)
	}
}
