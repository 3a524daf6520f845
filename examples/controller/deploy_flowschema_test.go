package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

// TestDeployFlowSchema: the FlowSchema of deploy/ sends the requests of the controller's
// service account, all of them, to the priority level workload-high, ahead of the bootstrap
// FlowSchema service-accounts (precedence 9000, workload-low) and behind those of kube's own
// components (up to 900).
func TestDeployFlowSchema(t *testing.T) {
	objs := manifests(t)
	require.Len(t, objs["*v1.FlowSchema"], 1)
	fs := objs["*v1.FlowSchema"][0].(*flowcontrolv1.FlowSchema)
	ns := objs["*v1.Namespace"][0].(*v1.Namespace).Name
	sa := objs["*v1.ServiceAccount"][0].(*v1.ServiceAccount).Name

	assert.Equal(t, "workload-high", fs.Spec.PriorityLevelConfiguration.Name)
	assert.Greater(t, fs.Spec.MatchingPrecedence, int32(900))
	assert.Less(t, fs.Spec.MatchingPrecedence, int32(9000))
	require.NotNil(t, fs.Spec.DistinguisherMethod)
	assert.Equal(t, flowcontrolv1.FlowDistinguisherMethodByNamespaceType, fs.Spec.DistinguisherMethod.Type)
	require.Len(t, fs.Spec.Rules, 1)
	r := fs.Spec.Rules[0]
	assert.Equal(t, []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindServiceAccount,
		ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: ns, Name: sa}}}, r.Subjects)
	assert.Equal(t, []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"},
		Namespaces: []string{"*"}, ClusterScope: true}}, r.ResourceRules, "every request, as kube-controller-manager's FlowSchema")
	assert.Equal(t, []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}, r.NonResourceRules)
}
