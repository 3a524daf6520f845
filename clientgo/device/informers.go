package device

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
)

// The indexes NewInformers adds.
const (
	// ClaimIndex indexes pods by the ResourceClaims they use, "namespace/claim", as
	// resourceclaim.PodClaims names them.
	ClaimIndex = "taintevict/resourceclaims"
	// DeviceIndex indexes allocated ResourceClaims by their devices, named by [ID].
	DeviceIndex = "taintevict/allocated-devices"
	// PoolIndex indexes ResourceSlices by their pool, "driver/pool".
	PoolIndex = "taintevict/pool"
)

// Informers are the four shared informers the device side reads: pods (with [ClaimIndex]),
// ResourceClaims (with [DeviceIndex]), ResourceSlices (with [PoolIndex]) and
// DeviceTaintRules, of resource.k8s.io/v1. The zero Informers holds none: create one with
// [NewInformers].
type Informers struct {
	Pods, Claims, Slices, Rules cache.SharedIndexInformer
}

// NewInformers registers the four informers in factory and adds the indexes they lack. It
// must be called before factory starts (an index cannot be added to an informer that has
// started); calling it twice on one factory returns the same informers.
func NewInformers(factory informers.SharedInformerFactory) (Informers, error) {
	r := factory.Resource().V1()
	inf := Informers{
		Pods:   factory.Core().V1().Pods().Informer(),
		Claims: r.ResourceClaims().Informer(),
		Slices: r.ResourceSlices().Informer(),
		Rules:  r.DeviceTaintRules().Informer(),
	}
	for _, ix := range []struct {
		inf  cache.SharedIndexInformer
		name string
		fn   cache.IndexFunc
	}{
		{inf.Pods, ClaimIndex, indexBy(ClaimIndex, func(pod *v1.Pod) (keys []string) {
			for name := range resourceclaim.PodClaims(pod) {
				keys = append(keys, pod.Namespace+"/"+name)
			}
			return keys
		})},
		{inf.Claims, DeviceIndex, indexBy(DeviceIndex, func(claim *resourcev1.ResourceClaim) (keys []string) {
			if claim.Status.Allocation != nil {
				for _, r := range claim.Status.Allocation.Devices.Results {
					keys = append(keys, ID(r.Driver, r.Pool, r.Device))
				}
			}
			return keys
		})},
		{inf.Slices, PoolIndex, indexBy(PoolIndex, func(slice *resourcev1.ResourceSlice) []string { return []string{poolName(slice)} })},
	} {
		if _, ok := ix.inf.GetIndexer().GetIndexers()[ix.name]; ok {
			continue
		}
		if err := ix.inf.AddIndexers(cache.Indexers{ix.name: ix.fn}); err != nil {
			return Informers{}, fmt.Errorf("device: adding the %s index: %w", ix.name, err)
		}
	}
	return inf, nil
}

// indexBy returns the index function name of the objects of type T.
func indexBy[T any](name string, keys func(T) []string) cache.IndexFunc {
	return func(obj any) ([]string, error) {
		t, ok := obj.(T)
		if !ok {
			return nil, fmt.Errorf("device: %s index: want %T, got %T", name, t, obj)
		}
		return keys(t), nil
	}
}

// poolName names the pool of slice as [PoolIndex] does: "driver/pool".
func poolName(slice *resourcev1.ResourceSlice) string {
	return slice.Spec.Driver + "/" + slice.Spec.Pool.Name
}
