package device

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
)

// PodGroupMode says whether the device side follows ResourceClaims reserved for, or made
// for, a PodGroup (scheduling.k8s.io) to the pods of that group, as kube's controller does
// with its DRAWorkloadResourceClaims feature gate. Without it, such a claim binds no pod.
type PodGroupMode string

// The PodGroupModes.
const (
	// PodGroupsAuto follows them when the API server serves PodGroups, as discovery says
	// when the controller starts to lead.
	PodGroupsAuto PodGroupMode = ""
	// PodGroupsOn follows them, as kube with DRAWorkloadResourceClaims on.
	PodGroupsOn PodGroupMode = "on"
	// PodGroupsOff does not, as kube with DRAWorkloadResourceClaims off (its default).
	PodGroupsOff PodGroupMode = "off"
)

// servesPodGroups asks discovery whether some version of scheduling.k8s.io serves
// podgroups.
func servesPodGroups(ctx context.Context, d discovery.DiscoveryInterface) (bool, error) {
	dc := discovery.ToDiscoveryInterfaceWithContext(d)
	groups, err := dc.ServerGroupsWithContext(ctx)
	if err != nil {
		return false, fmt.Errorf("device: discovering the API groups: %w", err)
	}
	for _, g := range groups.Groups {
		if g.Name != "scheduling.k8s.io" {
			continue
		}
		for _, v := range g.Versions {
			list, err := dc.ServerResourcesForGroupVersionWithContext(ctx, v.GroupVersion)
			switch {
			case apierrors.IsNotFound(err):
				continue
			case err != nil:
				return false, fmt.Errorf("device: discovering %s: %w", v.GroupVersion, err)
			}
			if slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "podgroups" }) {
				return true, nil
			}
		}
	}
	return false, nil
}
