// Package devicetol holds tests only: taintevict's device tolerations (tolerations.Deadline
// under tolerations.DeviceRules, tolerations.DeviceTaints, tolerations.DeviceTolerations and
// tolerations.ToleratesDevice) against kube's own matching of device tolerations,
// resourceclaim.ToleratesTaint (k8s.io/dynamic-resource-allocation v0.37.2), on random
// cases drawn with fixed seeds and in fuzz targets whose seed corpora run in CI.
//
// Kube's device eviction time (claimEvictionTime in
// k8s.io/kubernetes/pkg/controller/devicetainteviction) is a method of the controller, over
// its informers, so the deadline test builds its reference from resourceclaim.ToleratesTaint
// and that method's rule, written out in the test.
package devicetol
