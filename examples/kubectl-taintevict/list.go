package main

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"
)

// pageSize is how many objects each list request asks for, as kubectl get does: a cluster
// of 150,000 pods is listed in 300 requests rather than one answer of a gigabyte.
const pageSize = 500

// access names what a list needs RBAC to allow: the verb list on a resource of a group, in
// a namespace or in all of them, or on a cluster-scoped resource (nodes, ResourceSlices,
// DeviceTaintRules), which has no namespace at all.
type access struct {
	group, resource, namespace string
	clusterScoped              bool
}

func (a access) String() string {
	r := a.resource
	if a.group != "" {
		r += "." + a.group
	}
	switch {
	case a.clusterScoped:
		return fmt.Sprintf("list %s (cluster-scoped: a ClusterRole grants it)", r)
	case a.namespace != "":
		return fmt.Sprintf("list %s in namespace %s", r, a.namespace)
	}
	return fmt.Sprintf("list %s in all namespaces", r)
}

// explain turns an error of the API server about a list into one line that says what the
// command needs: the RBAC verb and resource for a refusal.
func (a access) explain(err error) error {
	switch {
	case apierrors.IsForbidden(err):
		return &exitError{code: exitCluster, err: fmt.Errorf("forbidden: the command needs RBAC to allow %s: %s", a, apiMessage(err))}
	case apierrors.IsNotFound(err):
		return &exitError{code: exitCluster, err: fmt.Errorf("the API server does not serve %s (%s)", a.resource, apiMessage(err))}
	}
	return &exitError{code: exitCluster, err: fmt.Errorf("%s: %w", a, err)}
}

// apiMessage returns the API server's message of err, or err's text.
func apiMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return status.Status().Message
	}
	return err.Error()
}

// list lists every object of a paged list with fn, with managedFields dropped (nothing
// here reads them, and they can be much of an object's size).
func list[T any, PT interface {
	*T
	runtime.Object
	metav1.Object
}](ctx context.Context, a access, fn func(context.Context, metav1.ListOptions) (runtime.Object, error)) ([]*T, error) {
	var out []*T
	p := pager.New(pager.SimplePageFunc(func(opts metav1.ListOptions) (runtime.Object, error) { return fn(ctx, opts) }))
	p.PageSize = pageSize
	err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		o, ok := obj.(PT)
		if !ok {
			return fmt.Errorf("listing %s: got a %T", a.resource, obj)
		}
		o.SetManagedFields(nil)
		out = append(out, (*T)(o))
		return nil
	})
	if err != nil {
		return nil, a.explain(err)
	}
	return out, nil
}

func listNodes(ctx context.Context, c kubernetes.Interface) ([]*v1.Node, error) {
	return list[v1.Node](ctx, access{resource: "nodes", clusterScoped: true}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.CoreV1().Nodes().List(ctx, o)
	})
}

// listPods lists the pods of namespace, or of all namespaces for "".
func listPods(ctx context.Context, c kubernetes.Interface, namespace string) ([]*v1.Pod, error) {
	return list[v1.Pod](ctx, access{resource: "pods", namespace: namespace}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.CoreV1().Pods(namespace).List(ctx, o)
	})
}

func listPDBs(ctx context.Context, c kubernetes.Interface, namespace string) ([]*policyv1.PodDisruptionBudget, error) {
	return list[policyv1.PodDisruptionBudget](ctx, access{group: "policy", resource: "poddisruptionbudgets", namespace: namespace}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.PolicyV1().PodDisruptionBudgets(namespace).List(ctx, o)
	})
}

func listClaims(ctx context.Context, c kubernetes.Interface, namespace string) ([]*resourcev1.ResourceClaim, error) {
	return list[resourcev1.ResourceClaim](ctx, access{group: "resource.k8s.io", resource: "resourceclaims", namespace: namespace}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.ResourceV1().ResourceClaims(namespace).List(ctx, o)
	})
}

func listSlices(ctx context.Context, c kubernetes.Interface) ([]*resourcev1.ResourceSlice, error) {
	return list[resourcev1.ResourceSlice](ctx, access{group: "resource.k8s.io", resource: "resourceslices", clusterScoped: true}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.ResourceV1().ResourceSlices().List(ctx, o)
	})
}

func listRules(ctx context.Context, c kubernetes.Interface) ([]*resourcev1.DeviceTaintRule, error) {
	return list[resourcev1.DeviceTaintRule](ctx, access{group: "resource.k8s.io", resource: "devicetaintrules", clusterScoped: true}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.ResourceV1().DeviceTaintRules().List(ctx, o)
	})
}
