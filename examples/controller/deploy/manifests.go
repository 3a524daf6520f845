// Package deploy holds the controller's Kubernetes manifests (the YAML files in this
// folder) and decodes them, so that tests and tools apply the very files a user applies:
//
//	kubectl apply -f examples/controller/deploy/
//
// The files are plain YAML, one or more objects each, separated by "---".
package deploy

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
)

//go:embed *.yaml device/*.yaml webhook/*.yaml
var files embed.FS

// Files returns the manifests' file names, in the order to apply them: the Namespace
// first. Those of the device side (-controllers with device) are under device/. Those of
// the admission webhook, under webhook/, are apart: see [Webhook].
func Files() []string {
	names, _ := fs.Glob(files, "*.yaml") // the pattern is valid
	more, _ := fs.Glob(files, "device/*.yaml")
	names = append(names, more...)
	slices.SortStableFunc(names, func(a, b string) int {
		return order(a) - order(b)
	})
	return names
}

func order(name string) int {
	switch name {
	case "namespace.yaml":
		return 0
	case "serviceaccount.yaml":
		return 1
	case "rbac.yaml", "device/rbac.yaml":
		return 2
	case "flowschema.yaml", "metrics.yaml", "explain.yaml":
		return 3
	}
	return 4
}

// Read returns the raw bytes of the manifest file name.
func Read(name string) ([]byte, error) {
	b, err := files.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("deploy: %w", err)
	}
	return b, nil
}

// Objects decodes every manifest into typed objects (client-go's scheme), in the order
// to apply them. It fails, naming the file, on a document that does not decode.
func Objects() ([]runtime.Object, error) {
	var objs []runtime.Object
	for _, name := range Files() {
		b, err := Read(name)
		if err != nil {
			return nil, err
		}
		got, err := decode(b)
		if err != nil {
			return nil, fmt.Errorf("deploy: %s: %w", name, err)
		}
		objs = append(objs, got...)
	}
	return objs, nil
}

// The admission webhook's files, under webhook/.
const (
	// WebhookFile holds the webhook's Service and ValidatingWebhookConfiguration.
	WebhookFile = "webhook/webhook.yaml"
	// WebhookPatchFile is the strategic merge patch that turns the webhook on in the
	// Deployment.
	WebhookPatchFile = "webhook/deployment-patch.yaml"
	// CertManagerFile holds cert-manager's Issuer and Certificate of the webhook's serving
	// certificate. Its kinds are cert-manager's: [Read] it, it does not decode here.
	CertManagerFile = "webhook/cert-manager.yaml"
)

// Webhook decodes the webhook's Service and ValidatingWebhookConfiguration (WebhookFile),
// and the Deployment of the patch (WebhookPatchFile, a partial Deployment).
func Webhook() (objs []runtime.Object, patch runtime.Object, err error) {
	for _, name := range []string{WebhookFile, WebhookPatchFile} {
		b, err := Read(name)
		if err != nil {
			return nil, nil, err
		}
		if name == WebhookPatchFile {
			// A patch has no apiVersion and kind: it is decoded as the Deployment it patches.
			b = append([]byte("apiVersion: apps/v1\nkind: Deployment\n"), b...)
		}
		got, err := decode(b)
		if err != nil {
			return nil, nil, fmt.Errorf("deploy: %s: %w", name, err)
		}
		if name == WebhookPatchFile {
			if len(got) != 1 {
				return nil, nil, fmt.Errorf("deploy: %s: want one patch, got %d documents", name, len(got))
			}
			patch = got[0]
			continue
		}
		objs = append(objs, got...)
	}
	return objs, patch, nil
}

// decode decodes the YAML documents of b.
func decode(b []byte) ([]runtime.Object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var objs []runtime.Object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		json, err := utilyaml.ToJSON(doc)
		if err != nil {
			return nil, err
		}
		if string(json) == "null" { // a document of comments only
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(json, nil, nil)
		if err != nil {
			return nil, err
		}
		objs = append(objs, obj)
	}
}
