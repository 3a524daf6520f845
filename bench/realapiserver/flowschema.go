package realapiserver

import (
	"context"
	"fmt"
	"os"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
)

// FlowSchemaFile is the FlowSchema of examples/controller/deploy, from bench/.
const FlowSchemaFile = "../examples/controller/deploy/flowschema.yaml"

// LoadFlowSchema reads the FlowSchema of the file at path, and returns it with the user
// name of the service account it is for (its first subject).
func LoadFlowSchema(path string) (*flowcontrolv1.FlowSchema, string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("realapiserver: %w", err)
	}
	js, err := utilyaml.ToJSON(raw)
	if err != nil {
		return nil, "", fmt.Errorf("realapiserver: %s: %w", path, err)
	}
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(js, nil, nil)
	if err != nil {
		return nil, "", fmt.Errorf("realapiserver: %s: %w", path, err)
	}
	fs, ok := obj.(*flowcontrolv1.FlowSchema)
	if !ok {
		return nil, "", fmt.Errorf("realapiserver: %s holds a %T, want a FlowSchema", path, obj)
	}
	for _, r := range fs.Spec.Rules {
		for _, s := range r.Subjects {
			if s.Kind == flowcontrolv1.SubjectKindServiceAccount && s.ServiceAccount != nil {
				return fs, "system:serviceaccount:" + s.ServiceAccount.Namespace + ":" + s.ServiceAccount.Name, nil
			}
		}
	}
	return nil, "", fmt.Errorf("realapiserver: %s: no service account among the subjects", path)
}

// PriorityLevels returns the names of the API server's priority levels, by UID.
func PriorityLevels(ctx context.Context, admin kubernetes.Interface) (map[string]string, error) {
	list, err := admin.FlowcontrolV1().PriorityLevelConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("realapiserver: listing the priority levels (is API Priority and Fairness on?): %w", err)
	}
	out := map[string]string{}
	for _, pl := range list.Items {
		out[string(pl.UID)] = pl.Name
	}
	return out, nil
}
