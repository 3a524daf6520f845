package main

import (
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// forbid is a reactor that refuses verb on resource as RBAC does.
func forbid(resource, verb string) k8stesting.ReactionFunc {
	return func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "",
			errString(`User "bob" cannot `+verb+` resource "`+resource+`" in API group "" at the cluster scope`))
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// pdb is a PodDisruptionBudget of the pods labelled app=app in namespace ns, allowing n
// disruptions.
func pdb(ns, app string, n int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: n, CurrentHealthy: 3, DesiredHealthy: 1},
	}
}

// rule is a DeviceTaintRule of every device, with a NoExecute taint of key.
func rule(name, key string) *resourcev1.DeviceTaintRule {
	return &resourcev1.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.DeviceTaintRuleSpec{DeviceSelector: &resourcev1.DeviceTaintSelector{},
			Taint: resourcev1.DeviceTaint{Key: key, Effect: resourcev1.DeviceTaintEffectNoExecute}}}
}
