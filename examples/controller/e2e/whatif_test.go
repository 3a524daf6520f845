package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// The plugin's binary, built once per test binary (with -race when the tests are), from
// ../../kubectl-taintevict, a module of the root go.work.
var (
	pluginOnce sync.Once
	pluginBin  string
	pluginErr  error
)

func plugin(t *testing.T) string {
	t.Helper()
	pluginOnce.Do(func() {
		pluginBin = filepath.Join(binDir, "kubectl-taintevict")
		args := []string{"build", "-o", pluginBin}
		if raceEnabled {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, "../../kubectl-taintevict")...).CombinedOutput()
		if err != nil {
			pluginErr = fmt.Errorf("building kubectl-taintevict: %v\n%s", err, out)
		}
	})
	if pluginErr != nil {
		t.Fatal(pluginErr)
	}
	return pluginBin
}

// runPlugin runs kubectl-taintevict with args and the kubeconfig file kc, and returns its
// exit code, standard output and standard error, and how long it ran.
func runPlugin(t *testing.T, kc string, args ...string) (int, string, string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, plugin(t), append(args, "--kubeconfig", kc)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errOut.String(), took
	case errors.As(err, &exit):
		return exit.ExitCode(), out.String(), errOut.String(), took
	}
	t.Fatalf("running kubectl-taintevict %v: %v", args, err)
	return 0, "", "", 0
}

// whatIfReport is the part of the plugin's -o json report the tests read.
type whatIfReport struct {
	Summary struct {
		Text  string `json:"text"`
		Now   int    `json:"now"`
		Later int    `json:"later"`
	} `json:"summary"`
	Pods []struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
		When      string `json:"when"`
		After     struct {
			Verdict  string     `json:"verdict"`
			Seconds  *float64   `json:"seconds"`
			Deadline *time.Time `json:"deadline"`
		} `json:"after"`
	} `json:"pods"`
}

// sceneLabel marks the nodes of a scene, for -l.
const sceneLabel = "e2e.taintevict.io/scene"

// The what-if of the suite's 100 × 20 cluster predicts, pod by pod and to the second, what
// the controller then does when the taint is really applied: the pods it says go at once
// are deleted at once, those it says go at +20 s and +40 s are held by the controller for
// exactly TimeAdded + 20 s and + 40 s (its /debug/pending says so) and deleted then, not
// before, and those it says stay are never touched.
func TestWhatIfPredicts(t *testing.T) {
	s := newScene(t)
	var nodes []string
	for i := range scaleNodes {
		name := fmt.Sprintf("%s-%03d", s.prefix, i)
		_, err := admin.CoreV1().Nodes().Create(s.ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{sceneLabel: s.prefix}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		s.nodes = append(s.nodes, name)
		nodes = append(nodes, name)
	}
	// A quarter of the pods tolerate nothing, a quarter 20 s, a quarter 40 s, a quarter
	// forever.
	tolerations := [][]v1.Toleration{nil, {tolerate(ptr.To[int64](20))}, {tolerate(ptr.To[int64](40))}, {tolerate(nil)}}
	var g errgroup.Group
	g.SetLimit(20)
	for i, node := range nodes {
		for j := range scalePodsPerNode {
			g.Go(func() error {
				_, err := admin.CoreV1().Pods(s.ns).Create(s.ctx, newPod(s.ns, fmt.Sprintf("p-%03d-%02d", i, j), node, tolerations[j%4]...), metav1.CreateOptions{})
				return err
			})
		}
	}
	require.NoError(t, g.Wait(), "creating the pods")
	kc := writeKubeconfig(t, adminConfig)

	code, out, errOut, took := runPlugin(t, kc, "what-if", "-l", sceneLabel+"="+s.prefix, outage+":NoExecute", "-o", "json", "--timings")
	require.Equal(t, 0, code, errOut)
	var rep whatIfReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	t.Logf("what-if of %d nodes × %d pods on the real API server: %s in all (%s); %s",
		scaleNodes, scalePodsPerNode, took.Round(time.Millisecond), bytes.TrimSpace([]byte(errOut)), rep.Summary.Text)
	predicted := map[string]float64{} // seconds after the taint; -1: stays
	for _, p := range rep.Pods {
		require.Equal(t, s.ns, p.Namespace)
		switch p.After.Verdict {
		case "Evicted":
			predicted[p.Name] = *p.After.Seconds
		case "Stays":
			predicted[p.Name] = -1
		default:
			t.Fatalf("pod %s: verdict %s", p.Name, p.After.Verdict)
		}
	}
	require.Len(t, predicted, scaleNodes*scalePodsPerNode, "a prediction for every pod")
	assert.Equal(t, "evicts 500 pods now (1 namespace), 1000 more within 40s; 500 tolerate it forever", rep.Summary.Text)

	user, rc := controllerUser(t, "controller")
	c := startBinary(t, plainController(t), "controller", "-kubeconfig", writeKubeconfig(t, rc),
		"-kube-api-qps=1000", "-kube-api-burst=2000")
	c.id = identity{user: user}
	deletions := s.watchDeletions()
	added := time.Now().Truncate(time.Second)
	for _, node := range nodes {
		g.Go(func() error { s.taintAt(node, added); return nil })
	}
	require.NoError(t, g.Wait())

	// The deadlines the controller holds are the predicted ones, to the second: ask it about
	// every pod that the what-if says goes later, before the first of them is due.
	token := explainerToken(t)
	var later, now, never []string
	for name, secs := range predicted {
		switch {
		case secs < 0:
			never = append(never, name)
		case secs == 0:
			now = append(now, name)
		default:
			later = append(later, name)
		}
	}
	slices.Sort(later)
	var mismatched []string
	var mu sync.Mutex
	for _, name := range later {
		g.Go(func() error {
			ev := c.pending(t, token, s.ns+"/"+name)
			want := added.Add(time.Duration(predicted[name]) * time.Second)
			if len(ev) != 1 || ev[0].At == nil || !ev[0].At.Equal(want) {
				mu.Lock()
				mismatched = append(mismatched, fmt.Sprintf("%s: held %+v, predicted %s", name, ev, want))
				mu.Unlock()
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	assert.Empty(t, mismatched, "deadlines the controller holds that the what-if did not predict")
	require.Less(t, time.Since(added), 20*time.Second, "the deadlines were read before the first was due")

	// Then each pod is deleted no earlier than predicted (the audit log's first write of the
	// controller to it), and those that stay are never touched.
	seen := deletions.waitFor(t, append(slices.Clone(now), later...))
	writes, err := auditEvents(c.id, func(e auditEvent) bool {
		return inNamespace(s.ns)(e) && e.ObjectRef.Resource == "pods" && e.Verb != "get"
	})
	require.NoError(t, err)
	first := map[string]time.Time{}
	for _, e := range writes {
		if f, ok := first[e.ObjectRef.Name]; !ok || e.Received.Before(f) {
			first[e.ObjectRef.Name] = e.Received
		}
	}
	var early []string
	var lateness []time.Duration
	for _, name := range append(slices.Clone(now), later...) {
		due := added.Add(time.Duration(predicted[name]) * time.Second)
		if first[name].Before(due) {
			early = append(early, fmt.Sprintf("%s at %s, predicted %s", name, first[name], due))
		}
		lateness = append(lateness, seen[name].Sub(due))
	}
	assert.Empty(t, early, "pods written before the predicted time")
	slices.Sort(lateness)
	t.Logf("deleted after the predicted time: median %s, max %s", lateness[len(lateness)/2].Round(time.Millisecond), lateness[len(lateness)-1].Round(time.Millisecond))
	// The forever half, now that the last deadline has passed: untouched, and held by
	// nothing.
	for _, name := range never {
		if _, ok := seen[name]; ok {
			t.Errorf("pod %s, predicted to stay, was deleted", name)
		}
		if first[name] != (time.Time{}) {
			t.Errorf("pod %s, predicted to stay, was written by the controller", name)
		}
	}
	assert.Empty(t, c.pending(t, token, s.ns+"/"+never[0]), "the controller holds nothing for a pod that stays")
}

// explanation is the part of explain's -o json answer the tests read.
type explanation struct {
	Leaving string `json:"leaving"`
	Verdict struct {
		Verdict     string     `json:"verdict"`
		At          *time.Time `json:"at"`
		AtTheLatest bool       `json:"atTheLatest"`
	} `json:"verdict"`
	NodeTaints []struct {
		Taint         string `json:"taint"`
		Toleration    *int   `json:"toleration"`
		Forever       bool   `json:"forever"`
		FromTimeAdded bool   `json:"fromTimeAdded"`
	} `json:"nodeTaints"`
	Text       string `json:"text"`
	Controller *struct {
		Reached   bool              `json:"reached"`
		Error     string            `json:"error"`
		Evictions []pendingEviction `json:"evictions"`
		Text      string            `json:"text"`
	} `json:"controller"`
}

// explain runs kubectl-taintevict explain of pod in ns with kc and args, and decodes its
// answer.
func explain(t *testing.T, kc, ns, pod string, args ...string) explanation {
	t.Helper()
	code, out, errOut, _ := runPlugin(t, kc, append([]string{"explain", "pod/" + pod, "-n", ns, "-o", "json"}, args...)...)
	require.Equal(t, 0, code, errOut)
	var x explanation
	require.NoError(t, json.Unmarshal([]byte(out), &x), out)
	return x
}

// explain agrees with what happens: for each pod of a tainted node it says evict now, at
// TimeAdded + 40 s, never, or (a pod already terminating) nothing will happen; the
// controller then does exactly that. Before the controller runs, explain says it could not
// ask it; once it runs, it shows the eviction the controller holds, at the same time,
// asked at its port and through the API server's service proxy.
func TestExplainAgrees(t *testing.T) {
	s := newScene(t)
	node := s.node("n")
	s.pod("none", node)
	s.pod("forty", node, tolerate(ptr.To[int64](40)))
	s.pod("forever", node, tolerate(nil))
	s.pod("leaving", node)
	require.NoError(t, admin.CoreV1().Pods(s.ns).Delete(s.ctx, "leaving", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](300)}))
	added := s.taint(node)
	kc := tokenKubeconfig(t, explainerToken(t))

	// The controller is not running yet: explain says what it will do, and that it could
	// not ask it.
	for _, tc := range []struct {
		pod, verdict string
		at           time.Time
		text         string
	}{
		{"none", "Evicted", time.Time{}, "which no toleration tolerates: due at once"},
		{"forty", "Evicted", added.Add(40 * time.Second), "tolerated for 40s by spec.tolerations[0]"},
		{"forever", "Stays", time.Time{}, "tolerated forever by spec.tolerations[0]"},
		{"leaving", "Leaving", time.Time{}, "It is already being deleted"},
	} {
		x := explain(t, kc, s.ns, tc.pod, "--controller-service", s.ns+"/nothing:https")
		assert.Equal(t, tc.verdict, x.Verdict.Verdict, tc.pod)
		if !tc.at.IsZero() {
			require.NotNil(t, x.Verdict.At, tc.pod)
			assert.True(t, x.Verdict.At.Equal(tc.at), "%s: explained %s, want %s", tc.pod, x.Verdict.At, tc.at)
		}
		assert.Contains(t, x.Text, tc.text, tc.pod)
		require.NotNil(t, x.Controller)
		assert.False(t, x.Controller.Reached, tc.pod)
		assert.Contains(t, x.Controller.Text, "The controller could not be asked", tc.pod)
	}

	// The controller, listening on the host's address, so that the API server's service
	// proxy reaches it through a Service of the scene's.
	port := strings.TrimPrefix(freeAddr(t), "127.0.0.1:")
	user, rc := controllerUser(t, "controller")
	c := startListening(t, filepath.Join(binDir, "controller"), "controller", ":"+port, "127.0.0.1:"+port, "-kubeconfig", writeKubeconfig(t, rc))
	c.id = identity{user: user}
	s.waitDeleted("none")
	x := explain(t, kc, s.ns, "forty", "--controller", "https://127.0.0.1:"+port, "--controller-insecure")
	require.True(t, x.Controller.Reached, x.Controller.Text)
	require.Len(t, x.Controller.Evictions, 1, x.Controller.Text)
	assert.True(t, x.Controller.Evictions[0].At.Equal(*x.Verdict.At), "the controller holds %s, explain says %s", x.Controller.Evictions[0].At, x.Verdict.At)
	t.Logf("explain: %s\n%s", x.Text, x.Controller.Text)

	if host := hostAddress(t); host != "" {
		s.serviceTo(t, "taintevict", host, port)
		x = explain(t, kc, s.ns, "forty", "--controller-service", s.ns+"/taintevict:https-metrics")
		require.True(t, x.Controller.Reached, "through the service proxy: %s", x.Controller.Text)
		require.Len(t, x.Controller.Evictions, 1)
		assert.True(t, x.Controller.Evictions[0].At.Equal(*x.Verdict.At))
	}

	_, seen := s.waitDeleted("forty")
	assertAt(t, "forty", seen, added.Add(40*time.Second))
	s.assertNotEvicted("forever")
	leaving := s.getPod("leaving")
	assert.Nil(t, condition(leaving, v1.DisruptionTarget), "the terminating pod marked by the controller")
}

// hostAddress returns an address of this host that is not loopback, for the API server's
// service proxy (which refuses loopback endpoints), or "" when there is none.
func hostAddress(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Log("no address but loopback: the service proxy is not tried")
	return ""
}

// serviceTo creates the Service name of the scene, with the port https-metrics, whose one
// endpoint is host:port, and a Role that lets the explainer reach it through the service
// proxy, as deploy/explain.yaml's Role lets it reach the controller's. The API server
// proxies only to the address of a pod the endpoint refers to: the controller's process
// stands for a pod of that address (its status written here, as no kubelet runs), and the
// EndpointSlice, with no selector, is written here too, as no controller-manager runs.
func (s *scene) serviceTo(t *testing.T, name, host, port string) {
	t.Helper()
	p, err := strconv.Atoi(port)
	require.NoError(t, err)
	pod, err := admin.CoreV1().Pods(s.ns).Create(s.ctx, newPod(s.ns, name, ""), metav1.CreateOptions{})
	require.NoError(t, err)
	pod.Status.PodIP, pod.Status.PodIPs = host, []v1.PodIP{{IP: host}}
	_, err = admin.CoreV1().Pods(s.ns).UpdateStatus(s.ctx, pod, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = admin.CoreV1().Services(s.ns).Create(s.ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.ServiceSpec{Ports: []v1.ServicePort{{Name: "https-metrics", Port: 8443, TargetPort: intstr.FromInt(p)}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.DiscoveryV1().EndpointSlices(s.ns).Create(s.ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{host},
			TargetRef: &v1.ObjectReference{Kind: "Pod", Namespace: s.ns, Name: name, UID: pod.UID}}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("https-metrics"), Port: ptr.To(int32(p))}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	// deploy/explain.yaml's Role, for this Service.
	var rules []rbacv1.PolicyRule
	for _, obj := range manifests(t) {
		if obj.GetKind() == "Role" && obj.GetName() == "taintevict-explainer" {
			var role rbacv1.Role
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &role))
			rules = role.Rules
		}
	}
	require.Len(t, rules, 1, "deploy/explain.yaml's Role")
	rules[0].ResourceNames = []string{"https:" + name + ":https-metrics"}
	_, err = admin.RbacV1().Roles(s.ns).Create(s.ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "explainer"}, Rules: rules}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().RoleBindings(s.ns).Create(s.ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "explainer"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "explainer"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: explainerAccount, Namespace: explainerNamespace}}}, metav1.CreateOptions{})
	require.NoError(t, err)
}

// pending asks the controller's /debug/pending about pod, with token.
func (p *process) pending(t *testing.T, token, pod string) []pendingEviction {
	t.Helper()
	code, body := p.scrape(t, "/debug/pending?pod="+pod, token)
	if code != http.StatusOK {
		t.Errorf("%s: /debug/pending?pod=%s: %d %s", p.name, pod, code, body)
		return nil
	}
	var a struct {
		Evictions []pendingEviction `json:"evictions"`
	}
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Errorf("/debug/pending: %v: %s", err, body)
	}
	return a.Evictions
}

// pendingEviction is the part of /debug/pending's answer the tests read.
type pendingEviction struct {
	Holder    string     `json:"holder"`
	At        *time.Time `json:"at"`
	Attempts  int        `json:"attempts"`
	LastError string     `json:"lastError"`
}

// The explainer: a service account with the rules of deploy/explain.yaml (the right to get
// /debug/pending, and to reach the controller through the service proxy) and the right to
// read pods and nodes, as a person running explain has.
const (
	explainerNamespace = "e2e-explain"
	explainerAccount   = "oncall"
	explainerRole      = "e2e-taintevict-explainer"
)

var (
	explainerOnce  sync.Once
	explainerTok   string
	explainerSetup error
)

// explainerToken returns a token of the suite's explainer, made once per test binary.
func explainerToken(t *testing.T) string {
	t.Helper()
	explainerOnce.Do(func() { explainerTok, explainerSetup = setUpExplainer(t) })
	if explainerSetup != nil {
		t.Fatalf("setting up the explainer: %v", explainerSetup)
	}
	return explainerTok
}

func setUpExplainer(t *testing.T) (string, error) {
	var rules []rbacv1.PolicyRule
	for _, obj := range manifests(t) {
		if obj.GetKind() == "ClusterRole" && obj.GetName() == "taintevict-explainer" {
			var role rbacv1.ClusterRole
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &role); err != nil {
				return "", err
			}
			rules = role.Rules
		}
	}
	if rules == nil {
		return "", errors.New("deploy/explain.yaml has no ClusterRole taintevict-explainer")
	}
	rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods", "nodes"}, Verbs: []string{"get", "list"}})
	return setUpAccount(explainerNamespace, explainerAccount, explainerRole, rules)
}

// tokenKubeconfig writes a kubeconfig that authenticates with token.
func tokenKubeconfig(t *testing.T, token string) string {
	t.Helper()
	return writeKubeconfig(t, &rest.Config{Host: adminConfig.Host, TLSClientConfig: rest.TLSClientConfig{CAData: adminConfig.CAData}, BearerToken: token})
}

// writeFile writes data to name in a folder of the test and returns its path.
func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, data, 0o600))
	return p
}
