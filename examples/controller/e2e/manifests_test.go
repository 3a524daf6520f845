package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/taintevict/taintevict/examples/controller/deploy"
)

// deployDir holds the controller's manifests.
const deployDir = "../deploy"

// manifests reads every object of the YAML files in deploy/ and deploy/device/, in file
// order.
func manifests(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(deployDir, "*.yaml"))
	device, _ := filepath.Glob(filepath.Join(deployDir, "device", "*.yaml"))
	files = append(files, device...)
	if err != nil || len(files) == 0 || len(device) == 0 {
		t.Fatalf("no manifests in %s or its device/ (%v)", deployDir, err)
	}
	var objs []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var obj unstructured.Unstructured
			err := dec.Decode(&obj.Object)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(obj.Object) > 0 {
				objs = append(objs, &obj)
			}
		}
	}
	return objs
}

// applier creates manifest objects through the dynamic client, as `kubectl create` would.
type applier struct {
	client dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newApplier(t *testing.T) *applier {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(adminConfig)
	if err != nil {
		t.Fatal(err)
	}
	return &applier{
		client: dynamic.NewForConfigOrDie(adminConfig),
		mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)),
	}
}

// resource returns the client of obj's resource, in obj's namespace if it has one.
func (a *applier) resource(obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", gvk, err)
	}
	if m.Scope.Name() == "namespace" {
		return a.client.Resource(m.Resource).Namespace(obj.GetNamespace()), nil
	}
	return a.client.Resource(m.Resource), nil
}

// create creates obj, or with dryRun only has the server validate and admit it. An object
// that exists already is left as it is.
func (a *applier) create(ctx context.Context, obj *unstructured.Unstructured, dryRun bool) error {
	r, err := a.resource(obj)
	if err != nil {
		return err
	}
	opts := metav1.CreateOptions{FieldValidation: "Strict"}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err = r.Create(ctx, obj, opts)
	if apierrors.IsAlreadyExists(err) && !dryRun {
		return nil
	}
	return err
}

func describe(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return obj.GetKind() + " " + ns + "/" + obj.GetName()
	}
	return obj.GetKind() + " " + obj.GetName()
}

// Scenario 10: the Namespace, the RBAC objects and the Deployment of deploy/ pass the API
// server's validation and admission, with unknown fields an error (a server-side dry-run
// create). The namespace is created for real first, since the server checks that a
// namespaced object's namespace exists.
func TestManifestsPassServerValidation(t *testing.T) {
	a := newApplier(t)
	objs := manifests(t)
	kinds := map[string]int{}
	for _, obj := range objs {
		if obj.GetKind() == "Namespace" {
			if err := a.create(t.Context(), obj, true); err != nil {
				t.Errorf("dry-run create of %s: %v", describe(obj), err)
			}
			if err := a.create(t.Context(), obj, false); err != nil {
				t.Fatalf("creating %s: %v", describe(obj), err)
			}
		}
	}
	for _, obj := range objs {
		kinds[obj.GetKind()]++
		if obj.GetKind() == "Namespace" {
			continue
		}
		if err := a.create(t.Context(), obj, true); err != nil {
			t.Errorf("dry-run create of %s: %v", describe(obj), err)
		}
	}
	// deploy/webhook's Service and ValidatingWebhookConfiguration (its cert-manager objects
	// are of kinds this server does not serve).
	webhook, _, err := deploy.Webhook()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range webhook {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{Object: u}
		obj.SetGroupVersionKind(o.GetObjectKind().GroupVersionKind())
		kinds[obj.GetKind()]++
		if err := a.create(t.Context(), obj, true); err != nil {
			t.Errorf("dry-run create of %s: %v", describe(obj), err)
		}
	}
	for _, kind := range []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "FlowSchema", "Service", "Deployment", "ValidatingWebhookConfiguration"} {
		if kinds[kind] == 0 {
			t.Errorf("deploy/ has no %s", kind)
		}
	}
}
