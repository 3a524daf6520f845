package chart

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// The chart and the manifests it must match, from this folder.
const (
	chartDir  = "../../examples/controller/chart"
	deployDir = "../../examples/controller/deploy"
)

// helmBin is the helm command that TestMain builds from this module's tool.
var helmBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "chart-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	helmBin = filepath.Join(dir, "helm")
	// A cold build of Helm takes minutes on a busy two-core machine: bounded here, not by
	// go test's own timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	out, err := exec.CommandContext(ctx, "go", "build", "-o", helmBin, "helm.sh/helm/v4/cmd/helm").CombinedOutput()
	cancel()
	code := 1
	if err != nil {
		fmt.Fprintf(os.Stderr, "building helm (go build helm.sh/helm/v4/cmd/helm): %v\n%s", err, out)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// helm runs the helm command with args, with a home of its own, and returns its stdout; it
// fails the test with stderr if helm fails.
func helm(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := runHelm(t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

func runHelm(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, helmBin, args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home, "KUBECONFIG="+filepath.Join(home, "none"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// object is one Kubernetes object, as YAML decodes it.
type object map[string]any

func (o object) kind() string { s, _ := o["kind"].(string); return s }

func (o object) meta(field string) string {
	m, _ := o["metadata"].(map[string]any)
	s, _ := m[field].(string)
	return s
}

func (o object) id() string {
	if ns := o.meta("namespace"); ns != "" {
		return o.kind() + " " + ns + "/" + o.meta("name")
	}
	return o.kind() + " " + o.meta("name")
}

// decode splits a YAML stream into its objects, skipping empty documents.
func decode(t *testing.T, stream string) []object {
	t.Helper()
	var objs []object
	for _, doc := range strings.Split("\n"+stream, "\n---") {
		var o object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("decoding %q: %v", doc, err)
		}
		if len(o) > 0 {
			objs = append(objs, o)
		}
	}
	return objs
}

// render runs helm template with the release taintevict in taintevict-system, deploy/'s
// names, and the values given as --set arguments.
func render(t *testing.T, set ...string) []object {
	t.Helper()
	args := []string{"template", "taintevict", chartDir, "--namespace", "taintevict-system"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return decode(t, helm(t, args...))
}

// deployed returns the objects of deploy/'s files matching the glob patterns.
func deployed(t *testing.T, patterns ...string) []object {
	t.Helper()
	var objs []object
	for _, p := range patterns {
		names, err := filepath.Glob(filepath.Join(deployDir, p))
		if err != nil || len(names) == 0 {
			t.Fatalf("deploy/%s: no file (%v)", p, err)
		}
		for _, name := range names {
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			objs = append(objs, decode(t, string(b))...)
		}
	}
	return objs
}

// rbac returns the RBAC objects of objs by id, with what grants a right: rules, roleRef,
// subjects (not the labels, which the chart adds to).
func rbac(objs []object) map[string]object {
	out := map[string]object{}
	for _, o := range objs {
		switch o.kind() {
		case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			out[o.id()] = object{"rules": o["rules"], "roleRef": o["roleRef"], "subjects": o["subjects"]}
		}
	}
	return out
}

func find(t *testing.T, objs []object, kind string) object {
	t.Helper()
	for _, o := range objs {
		if o.kind() == kind {
			return o
		}
	}
	t.Fatalf("no %s in %d objects", kind, len(objs))
	return nil
}

// containerArgs returns the args of the first container of a Deployment.
func containerArgs(t *testing.T, d object) []string {
	t.Helper()
	spec, _ := d["spec"].(map[string]any)
	tmpl, _ := spec["template"].(map[string]any)
	pspec, _ := tmpl["spec"].(map[string]any)
	containers, _ := pspec["containers"].([]any)
	if len(containers) == 0 {
		t.Fatalf("%s has no container", object(d).id())
	}
	c, _ := containers[0].(map[string]any)
	var args []string
	for _, a := range c["args"].([]any) {
		args = append(args, a.(string))
	}
	return args
}

// TestLint: helm lint passes, strictly, with the defaults and with the webhook on (with
// cert-manager, and with a certificate of one's own).
func TestLint(t *testing.T) {
	for name, set := range map[string][]string{
		"defaults":                  nil,
		"webhook with cert-manager": {"webhook.enabled=true"},
		"webhook with a secret":     {"webhook.enabled=true", "webhook.certManager.enabled=false", "webhook.secretName=tls", "webhook.caBundle=Q0E="},
		"device side":               {"controllers=node\\,device"},
	} {
		t.Run(name, func(t *testing.T) {
			args := []string{"lint", "--strict", chartDir}
			for _, s := range set {
				args = append(args, "--set", s)
			}
			out := helm(t, args...)
			if !strings.Contains(out, "1 chart(s) linted, 0 chart(s) failed") {
				t.Errorf("helm lint: got %q, want 1 chart linted and none failed", out)
			}
		})
	}
}

// TestRBACMatchesDeploy: the chart with release taintevict in taintevict-system grants
// exactly the RBAC of deploy/ (same names, rules, role references and subjects): the node
// side's alone by default, with deploy/device's when the device side runs.
func TestRBACMatchesDeploy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		set    []string
		deploy []string
	}{
		{"node side", nil, []string{"*.yaml"}},
		{"node and device sides", []string{"controllers=node\\,device"}, []string{"*.yaml", "device/*.yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, want := rbac(render(t, tc.set...)), rbac(deployed(t, tc.deploy...))
			for id, w := range want {
				if g, ok := got[id]; !ok {
					t.Errorf("the chart has no %s, which deploy/ has", id)
				} else if !reflect.DeepEqual(g, w) {
					t.Errorf("%s: the chart grants %v, want deploy/'s %v", id, g, w)
				}
			}
			for id := range got {
				if _, ok := want[id]; !ok {
					t.Errorf("the chart has %s, which deploy/ has not", id)
				}
			}
		})
	}
}

// TestDefaultsMatchDeploy: by default the chart renders deploy/'s Deployment (its args
// above all), Service, FlowSchema and no webhook.
func TestDefaultsMatchDeploy(t *testing.T) {
	got, want := render(t), deployed(t, "*.yaml")
	if g, w := containerArgs(t, find(t, got, "Deployment")), containerArgs(t, find(t, want, "Deployment")); !slices.Equal(g, w) {
		t.Errorf("the Deployment's args: got %q, want deploy/'s %q", g, w)
	}
	ids := func(objs []object) []string {
		var out []string
		for _, o := range objs {
			if o.kind() != "Namespace" { // helm install --create-namespace makes it
				out = append(out, o.id())
			}
		}
		slices.Sort(out)
		return out
	}
	if g, w := ids(got), ids(want); !slices.Equal(g, w) {
		t.Errorf("objects: got %q, want deploy/'s %q", g, w)
	}
	if g, w := find(t, got, "FlowSchema")["spec"], find(t, want, "FlowSchema")["spec"]; !reflect.DeepEqual(g, w) {
		t.Errorf("FlowSchema spec: got %v, want deploy/'s %v", g, w)
	}
	sameService(t, find(t, got, "Service"), find(t, want, "Service"))
}

// sameService checks that the chart's Service g has deploy/'s ports and selects what
// deploy/'s w selects; its selector adds the release (app.kubernetes.io/instance), so that
// two releases' Services do not select each other's pods.
func sameService(t *testing.T, g, w object) {
	t.Helper()
	gs, ws := g["spec"].(map[string]any), w["spec"].(map[string]any)
	if !reflect.DeepEqual(gs["ports"], ws["ports"]) {
		t.Errorf("%s ports: got %v, want deploy/'s %v", g.id(), gs["ports"], ws["ports"])
	}
	gsel, _ := gs["selector"].(map[string]any)
	for k, v := range ws["selector"].(map[string]any) {
		if gsel[k] != v {
			t.Errorf("%s selector: got %v, want deploy/'s %s=%v in it", g.id(), gsel, k, v)
		}
	}
	if gsel["app.kubernetes.io/instance"] != "taintevict" {
		t.Errorf("%s selector: got %v, want the release's app.kubernetes.io/instance=taintevict too", g.id(), gsel)
	}
}

// TestValuesAreFlags: each value an operator sets becomes the controller's flag.
func TestValuesAreFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  []string
		want []string // in the args, in this order
		not  []string // not in the args
	}{
		{"mode", []string{"mode=evict"}, []string{"-mode=evict"}, []string{"-mode=delete"}},
		{"device side", []string{"controllers=node\\,device"}, []string{"-controllers=node,device"}, nil},
		{"deadline source", []string{"deadlineSource=observation"}, []string{"-deadline-source=observation"}, nil},
		{"no leader election", []string{"leaderElection.enabled=false", "replicas=1"}, []string{"-leader-elect=false"}, []string{"-leader-elect=true"}},
		{"leader election timings", []string{"leaderElection.leaseDuration=30s", "leaderElection.renewDeadline=20s", "leaderElection.retryPeriod=4s"},
			[]string{"-leader-elect-lease-duration=30s", "-leader-elect-renew-deadline=20s", "-leader-elect-retry-period=4s"}, nil},
		{"no metrics", []string{"metrics.enabled=false"}, nil, []string{"-metrics-addr=:8443"}},
		{"metrics port", []string{"metrics.port=9090"}, []string{"-metrics-addr=:9090"}, nil},
		{"budgets", []string{"budgets.evictionRate=5", "budgets.evictionBurst=10", "budgets.taintRate={a=1,b=2/4}",
			"budgets.brakeFraction=0.5", "budgets.brakeZoneFraction=0.55", "budgets.brakeHolders=3", "budgets.brakeZoneHolders=2",
			"budgets.fullDisruption=pause", "budgets.inFlight=20", "budgets.inFlightFraction=0.1", "budgets.namespaceLimit=5/1m",
			"budgets.ownerLimit=2/30s", "budgets.loopWindow=10m", "budgets.confirmFraction=0.3", "budgets.confirmMinPods=50"},
			[]string{"-eviction-rate=5", "-eviction-burst=10", "-taint-rate=a=1", "-taint-rate=b=2/4", "-brake-fraction=0.5",
				"-brake-zone-fraction=0.55", "-brake-holders=3", "-brake-zone-holders=2", "-full-disruption=pause", "-in-flight=20",
				"-in-flight-fraction=0.1", "-namespace-limit=5/1m", "-owner-limit=2/30s", "-loop-window=10m", "-confirm-fraction=0.3",
				"-confirm-min-pods=50"}, nil},
		{"webhook", []string{"webhook.enabled=true", "webhook.denyFraction=0.5"},
			[]string{"-admission-addr=:9443", "-admission-tls-cert-file=/etc/taintevict/webhook/tls.crt",
				"-admission-tls-private-key-file=/etc/taintevict/webhook/tls.key", "-admission-deny-fraction=0.5"}, nil},
		{"extra args", []string{"extraArgs={-delete-workers=16}"}, []string{"-delete-workers=16"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := containerArgs(t, find(t, render(t, tc.set...), "Deployment"))
			i := 0
			for _, a := range args {
				if i < len(tc.want) && a == tc.want[i] {
					i++
				}
			}
			if i < len(tc.want) {
				t.Errorf("args %q: got no %q (in order: %q)", args, tc.want[i], tc.want)
			}
			for _, a := range tc.not {
				if slices.Contains(args, a) {
					t.Errorf("args %q: got %q, want it left out", args, a)
				}
			}
		})
	}
}

// TestWebhook: the webhook is off by default; on, with cert-manager, it renders deploy/
// webhook's objects (the Issuer, the Certificate, the Service, the configuration with the
// CA injected); with a certificate of one's own, its Secret and CA bundle, and no
// cert-manager object.
func TestWebhook(t *testing.T) {
	kinds := func(objs []object) []string {
		var out []string
		for _, o := range objs {
			out = append(out, o.id())
		}
		slices.Sort(out)
		return out
	}
	for _, o := range render(t) {
		if k := o.kind(); k == "ValidatingWebhookConfiguration" || k == "Certificate" {
			t.Errorf("default values: got %s, want no webhook", o.id())
		}
	}
	got := render(t, "webhook.enabled=true")
	want := deployed(t, "webhook/webhook.yaml", "webhook/cert-manager.yaml")
	var gotWebhook []object
	for _, o := range got {
		switch o.kind() {
		case "ValidatingWebhookConfiguration", "Issuer", "Certificate":
			gotWebhook = append(gotWebhook, o)
		case "Service":
			if strings.HasSuffix(o.meta("name"), "-webhook") {
				gotWebhook = append(gotWebhook, o)
			}
		}
	}
	if g, w := kinds(gotWebhook), kinds(want); !slices.Equal(g, w) {
		t.Fatalf("webhook objects: got %q, want deploy/webhook's %q", g, w)
	}
	sameService(t, find(t, gotWebhook, "Service"), find(t, want, "Service"))
	for _, kind := range []string{"Certificate", "Issuer"} {
		if g, w := find(t, gotWebhook, kind)["spec"], find(t, want, kind)["spec"]; !reflect.DeepEqual(g, w) {
			t.Errorf("%s spec: got %v, want deploy/webhook's %v", kind, g, w)
		}
	}
	g, w := find(t, gotWebhook, "ValidatingWebhookConfiguration"), find(t, want, "ValidatingWebhookConfiguration")
	if !reflect.DeepEqual(g["webhooks"], w["webhooks"]) {
		t.Errorf("webhooks: got %v, want deploy/webhook's %v", g["webhooks"], w["webhooks"])
	}
	annotations := func(o object) any { return o["metadata"].(map[string]any)["annotations"] }
	if !reflect.DeepEqual(annotations(g), annotations(w)) {
		t.Errorf("annotations: got %v, want deploy/webhook's %v", annotations(g), annotations(w))
	}

	own := render(t, "webhook.enabled=true", "webhook.certManager.enabled=false", "webhook.secretName=my-tls", "webhook.caBundle=Q0E=")
	for _, o := range own {
		if k := o.kind(); k == "Certificate" || k == "Issuer" {
			t.Errorf("a certificate of one's own: got %s, want no cert-manager object", o.id())
		}
	}
	if s := fmt.Sprint(find(t, own, "ValidatingWebhookConfiguration")["webhooks"]); !strings.Contains(s, "caBundle:Q0E=") {
		t.Errorf("a certificate of one's own: webhooks %s, want caBundle Q0E= in each", s)
	}
	if s := fmt.Sprint(find(t, own, "Deployment")["spec"]); !strings.Contains(s, "secretName:my-tls") {
		t.Errorf("a certificate of one's own: the Deployment mounts no secret my-tls: %s", s)
	}
}

// TestBadValues: values that cannot work fail helm template with a message that names them.
func TestBadValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  []string
		want string
	}{
		{"an unknown mode", []string{"mode=nuke"}, `mode must be delete, evict or dry-run, got "nuke"`},
		{"replicas without leader election", []string{"leaderElection.enabled=false"}, "leaderElection.enabled=false needs replicas: 1"},
		{"a webhook without cert-manager and without a secret", []string{"webhook.enabled=true", "webhook.certManager.enabled=false", "webhook.caBundle=Q0E="},
			"webhook.secretName is required without cert-manager"},
		{"a webhook without cert-manager and without a CA", []string{"webhook.enabled=true", "webhook.certManager.enabled=false", "webhook.secretName=tls"},
			"webhook.caBundle"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"template", "taintevict", chartDir}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			_, errOut, err := runHelm(t, args...)
			if err == nil || !strings.Contains(errOut, tc.want) {
				t.Errorf("helm template: got %v, %q, want an error with %q", err, errOut, tc.want)
			}
		})
	}
}
