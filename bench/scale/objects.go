package scale

import (
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Zones are the values of the nodes' topology.kubernetes.io/zone label, node i in
// Zones[i%3]: `kubectl taintevict what-if -l topology.kubernetes.io/zone=a` selects a third.
var Zones = []string{"a", "b", "c"}

// Region is the nodes' topology.kubernetes.io/region.
const Region = "region-1"

// The kinds of pods on each node, by their index j on the node: kind returns one of these.
const (
	// kindDaemon pods (j < daemonsPerNode) belong to a DaemonSet and carry its tolerations:
	// not-ready and unreachable NoExecute with no tolerationSeconds, so no outage evicts them.
	kindDaemon = iota
	// kindStateful pods (j == daemonsPerNode) belong to a StatefulSet that tolerates
	// unreachable and not-ready for statefulToleration: not due within a run.
	kindStateful
	// kindReplica pods (the rest) belong to ReplicaSets and carry no toleration of their
	// own: the DefaultTolerationSeconds admission plugin gives them the not-ready and
	// unreachable ones, for the API server's --default-*-toleration-seconds.
	kindReplica
)

const (
	daemonsPerNode     = 2
	statefulToleration = 3600 // seconds
)

// kind is the kind of the j-th pod of a node.
func kind(j int) int {
	switch {
	case j < daemonsPerNode:
		return kindDaemon
	case j == daemonsPerNode:
		return kindStateful
	}
	return kindReplica
}

// nodeName is the name of node i.
func nodeName(i int) string { return fmt.Sprintf("node-%05d", i) }

// podRef is a pod's namespace and name.
type podRef struct{ Namespace, Name string }

func (p podRef) String() string { return p.Namespace + "/" + p.Name }

// namespaces holds the workloads' pods (the DaemonSets' are in kube-system).
const namespaces = 40

// podOf names the j-th pod of node i and says in which namespace it lives.
func podOf(i, j int) podRef {
	switch kind(j) {
	case kindDaemon:
		return podRef{"kube-system", fmt.Sprintf("%s-%05d", []string{"kube-proxy", "node-exporter"}[j], i)}
	case kindStateful:
		return podRef{fmt.Sprintf("team-%02d", i%namespaces), fmt.Sprintf("db-%03d-%d", i%97, i)}
	}
	return podRef{fmt.Sprintf("team-%02d", (i+j)%namespaces), fmt.Sprintf("web-%05d-%02d", i, j)}
}

// newNode is node i as a kubelet of a cloud VM registers it and reports its status:
// kube's well-known labels, capacity, conditions, addresses and the images it holds
// (the largest part of a real node's size).
func newNode(i int, now time.Time) *v1.Node {
	name, zone := nodeName(i), Zones[i%len(Zones)]
	ts := metav1.NewTime(now.Truncate(time.Second))
	qty := resource.MustParse
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
				"beta.kubernetes.io/instance-type": "m6i.2xlarge", "node.kubernetes.io/instance-type": "m6i.2xlarge",
				"failure-domain.beta.kubernetes.io/region": Region, "failure-domain.beta.kubernetes.io/zone": zone,
				v1.LabelTopologyRegion: Region, v1.LabelTopologyZone: zone,
				v1.LabelArchStable: "amd64", v1.LabelOSStable: "linux", v1.LabelHostname: name,
				"node-pool": fmt.Sprintf("pool-%d", i%4),
			},
			Annotations: map[string]string{
				"node.alpha.kubernetes.io/ttl":                           "0",
				"volumes.kubernetes.io/controller-managed-attach-detach": "true",
				"csi.volume.kubernetes.io/nodeid":                        fmt.Sprintf(`{"ebs.csi.aws.com":"i-%017x"}`, i),
			},
		},
		Spec: v1.NodeSpec{
			PodCIDR: fmt.Sprintf("10.%d.%d.0/24", 64+i/256, i%256), PodCIDRs: []string{fmt.Sprintf("10.%d.%d.0/24", 64+i/256, i%256)},
			ProviderID: fmt.Sprintf("aws:///%s-%s/i-%017x", Region, zone, i),
		},
		Status: v1.NodeStatus{
			Capacity: v1.ResourceList{v1.ResourceCPU: qty("8"), v1.ResourceMemory: qty("32386060Ki"), v1.ResourcePods: qty("110"),
				v1.ResourceEphemeralStorage: qty("104845292Ki"), "hugepages-1Gi": qty("0"), "hugepages-2Mi": qty("0"), "attachable-volumes-aws-ebs": qty("25")},
			Allocatable: v1.ResourceList{v1.ResourceCPU: qty("7910m"), v1.ResourceMemory: qty("31369228Ki"), v1.ResourcePods: qty("110"),
				v1.ResourceEphemeralStorage: qty("95551679124"), "hugepages-1Gi": qty("0"), "hugepages-2Mi": qty("0"), "attachable-volumes-aws-ebs": qty("25")},
			Conditions: nodeConditions(ts, v1.ConditionTrue),
			Addresses: []v1.NodeAddress{
				{Type: v1.NodeInternalIP, Address: fmt.Sprintf("10.0.%d.%d", i/250, i%250+2)},
				{Type: v1.NodeHostName, Address: name}, {Type: v1.NodeInternalDNS, Address: name + ".ec2.internal"},
			},
			DaemonEndpoints: v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: 10250}},
			NodeInfo: v1.NodeSystemInfo{
				MachineID: fmt.Sprintf("ec2%029x", i), SystemUUID: fmt.Sprintf("ec2%05x-0000-4000-8000-%012x", i, i), BootID: fmt.Sprintf("%08x-1111-4222-8333-%012x", i, i),
				KernelVersion: "6.1.112-124.190.amzn2023.x86_64", OSImage: "Amazon Linux 2023.6.20241010", ContainerRuntimeVersion: "containerd://1.7.22",
				KubeletVersion: "v1.37.2", OperatingSystem: "linux", Architecture: "amd64",
			},
		},
	}
	for k := range 30 {
		n.Status.Images = append(n.Status.Images, v1.ContainerImage{
			Names: []string{
				fmt.Sprintf("registry.example.com/team-%02d/service-%02d@sha256:%064x", k%namespaces, k, k*7919+1),
				fmt.Sprintf("registry.example.com/team-%02d/service-%02d:v1.%d.%d", k%namespaces, k, k%9, k%13),
			},
			SizeBytes: int64(20_000_000 + k*3_000_000),
		})
	}
	return n
}

// nodeConditions are a node's conditions with Ready at ready: what its kubelet reports, or
// with ConditionUnknown what the node lifecycle controller writes once it stops.
func nodeConditions(ts metav1.Time, ready v1.ConditionStatus) []v1.NodeCondition {
	cond := func(t v1.NodeConditionType, s v1.ConditionStatus, reason, msg string) v1.NodeCondition {
		return v1.NodeCondition{Type: t, Status: s, LastHeartbeatTime: ts, LastTransitionTime: ts, Reason: reason, Message: msg}
	}
	if ready == v1.ConditionUnknown {
		const why = "Kubelet stopped posting node status."
		return []v1.NodeCondition{
			cond(v1.NodeMemoryPressure, v1.ConditionUnknown, "NodeStatusUnknown", why),
			cond(v1.NodeDiskPressure, v1.ConditionUnknown, "NodeStatusUnknown", why),
			cond(v1.NodePIDPressure, v1.ConditionUnknown, "NodeStatusUnknown", why),
			cond(v1.NodeReady, v1.ConditionUnknown, "NodeStatusUnknown", why),
		}
	}
	return []v1.NodeCondition{
		cond(v1.NodeMemoryPressure, v1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		cond(v1.NodeDiskPressure, v1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		cond(v1.NodePIDPressure, v1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
		cond(v1.NodeReady, v1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
	}
}

// newLease is node i's heartbeat Lease in kube-node-lease, as its kubelet keeps it.
func newLease(i int, now time.Time) *coordinationv1.Lease {
	name := nodeName(i)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: v1.NamespaceNodeLease, Name: name},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To(int32(40)),
			RenewTime: &metav1.MicroTime{Time: now},
		},
	}
}

// owner is the controller reference of the j-th pod of node i.
func owner(i, j int) metav1.OwnerReference {
	ref := metav1.OwnerReference{Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	switch kind(j) {
	case kindDaemon:
		ref.APIVersion, ref.Kind, ref.Name = "apps/v1", "DaemonSet", []string{"kube-proxy", "node-exporter"}[j]
	case kindStateful:
		ref.APIVersion, ref.Kind, ref.Name = "apps/v1", "StatefulSet", fmt.Sprintf("db-%03d", i%97)
	default:
		ref.APIVersion, ref.Kind, ref.Name = "apps/v1", "ReplicaSet", fmt.Sprintf("web-%03d-6d4cf56db6", (i*7+j)%500)
	}
	ref.UID = types.UID(fmt.Sprintf("%08x-aaaa-4bbb-8ccc-%012x", j, i%500))
	return ref
}

// newPod is the j-th pod of node i, as its workload's controller creates it and the
// scheduler binds it: two containers with env, ports, probes, resources and mounts, the
// service account's projected volume, a config map; DaemonSet pods carry the DaemonSet
// controller's tolerations, StatefulSet pods a long toleration of their own, the others
// none (the admission plugin adds kube's defaults).
func newPod(i, j int) *v1.Pod {
	ref := podOf(i, j)
	app, _, _ := strings.Cut(ref.Name, "-")
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ref.Namespace, Name: ref.Name,
			Labels: map[string]string{
				"app": app, "app.kubernetes.io/name": app, "app.kubernetes.io/part-of": ref.Namespace,
				"app.kubernetes.io/version": "1.4.2", "pod-template-hash": "6d4cf56db6",
			},
			Annotations: map[string]string{
				"kubectl.kubernetes.io/restartedAt": "2026-11-20T09:14:05Z", "prometheus.io/scrape": "true", "prometheus.io/port": "9090",
			},
			OwnerReferences: []metav1.OwnerReference{owner(i, j)},
		},
		Spec: v1.PodSpec{
			NodeName: nodeName(i), ServiceAccountName: "default", RestartPolicy: v1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr.To(int64(30)), DNSPolicy: v1.DNSClusterFirst, SchedulerName: v1.DefaultSchedulerName,
			EnableServiceLinks: ptr.To(true), PreemptionPolicy: ptr.To(v1.PreemptLowerPriority), Priority: ptr.To(int32(0)),
			SecurityContext: &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(int64(65532)), FSGroup: ptr.To(int64(65532))},
			Containers:      []v1.Container{container(app, ref, 8080, "http", 9090), container("envoy", ref, 15001, "proxy", 15000)},
			Volumes: []v1.Volume{
				{Name: "config", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: app + "-config"}, DefaultMode: ptr.To(int32(420))}}},
				{Name: "tmp", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
				{Name: "kube-api-access-x7k2p", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{DefaultMode: ptr.To(int32(420)), Sources: []v1.VolumeProjection{
					{ServiceAccountToken: &v1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To(int64(3607)), Path: "token"}},
					{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
					{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
				}}}},
			},
		},
	}
	switch kind(j) {
	case kindDaemon:
		p.Spec.Tolerations = daemonTolerations()
	case kindStateful:
		s := ptr.To(int64(statefulToleration))
		p.Spec.Tolerations = []v1.Toleration{
			{Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: s},
			{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: s},
		}
	}
	return p
}

// daemonTolerations are those the DaemonSet controller gives its pods.
func daemonTolerations() []v1.Toleration {
	t := func(key string, effect v1.TaintEffect) v1.Toleration {
		return v1.Toleration{Key: key, Operator: v1.TolerationOpExists, Effect: effect}
	}
	return []v1.Toleration{
		t(v1.TaintNodeNotReady, v1.TaintEffectNoExecute), t(v1.TaintNodeUnreachable, v1.TaintEffectNoExecute),
		t(v1.TaintNodeDiskPressure, v1.TaintEffectNoSchedule), t(v1.TaintNodeMemoryPressure, v1.TaintEffectNoSchedule),
		t(v1.TaintNodePIDPressure, v1.TaintEffectNoSchedule), t(v1.TaintNodeUnschedulable, v1.TaintEffectNoSchedule),
	}
}

// container is one of a pod's containers, as a Deployment's template has it.
func container(name string, ref podRef, port int32, portName string, adminPort int32) v1.Container {
	env := []v1.EnvVar{
		{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
		{Name: "POD_NAMESPACE", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}},
		{Name: "POD_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}},
		{Name: "GOMAXPROCS", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: resource.MustParse("1")}}},
		{Name: "LOG_LEVEL", Value: "info"}, {Name: "LOG_FORMAT", Value: "json"},
		{Name: "OTEL_EXPORTER_OTLP_ENDPOINT", Value: "http://otel-collector.observability.svc.cluster.local:4317"},
		{Name: "DATABASE_URL", Value: "postgres://app@db-primary." + ref.Namespace + ".svc.cluster.local:5432/app?sslmode=require"},
		{Name: "CACHE_ADDR", Value: "redis-master." + ref.Namespace + ".svc.cluster.local:6379"},
		{Name: "FEATURE_FLAGS", Value: "checkout-v2,search-rerank,async-billing"},
	}
	return v1.Container{
		Name: name, Image: fmt.Sprintf("registry.example.com/%s/%s:v1.4.2", ref.Namespace, name), ImagePullPolicy: v1.PullIfNotPresent,
		Args:  []string{"--port=" + fmt.Sprint(port), "--config=/etc/" + name + "/config.yaml"},
		Ports: []v1.ContainerPort{{Name: portName, ContainerPort: port, Protocol: v1.ProtocolTCP}, {Name: portName + "-admin", ContainerPort: adminPort, Protocol: v1.ProtocolTCP}},
		Env:   env,
		Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("128Mi")},
			Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("512Mi")},
		},
		VolumeMounts: []v1.VolumeMount{
			{Name: "config", MountPath: "/etc/" + name, ReadOnly: true}, {Name: "tmp", MountPath: "/tmp"},
			{Name: "kube-api-access-x7k2p", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
		},
		LivenessProbe:          &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstrPort(port), Scheme: v1.URISchemeHTTP}}, PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3},
		ReadinessProbe:         &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/readyz", Port: intstrPort(port), Scheme: v1.URISchemeHTTP}}, PeriodSeconds: 5, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3},
		TerminationMessagePath: v1.TerminationMessagePathDefault, TerminationMessagePolicy: v1.TerminationMessageReadFile,
		SecurityContext: &v1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true), Capabilities: &v1.Capabilities{Drop: []v1.Capability{"ALL"}}},
	}
}

// runningStatus is the status a kubelet reports for a running pod.
func runningStatus(p *v1.Pod, i, j int, started time.Time) v1.PodStatus {
	ts := metav1.NewTime(started.Truncate(time.Second))
	ip := fmt.Sprintf("10.%d.%d.%d", 64+i/256, i%256, j+2)
	host := fmt.Sprintf("10.0.%d.%d", i/250, i%250+2)
	s := v1.PodStatus{
		Phase: v1.PodRunning, HostIP: host, HostIPs: []v1.HostIP{{IP: host}}, PodIP: ip, PodIPs: []v1.PodIP{{IP: ip}},
		StartTime: &ts, QOSClass: v1.PodQOSBurstable,
	}
	for _, c := range []v1.PodConditionType{"PodReadyToStartContainers", v1.PodInitialized, v1.PodReady, v1.ContainersReady, v1.PodScheduled} {
		s.Conditions = append(s.Conditions, v1.PodCondition{Type: c, Status: v1.ConditionTrue, LastTransitionTime: ts})
	}
	for k, c := range p.Spec.Containers {
		s.ContainerStatuses = append(s.ContainerStatuses, v1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: fmt.Sprintf("%s@sha256:%064x", c.Image, k+1),
			ContainerID: fmt.Sprintf("containerd://%016x%016x%016x%016x", i, j, k, i*j+k),
			Ready:       true, Started: ptr.To(true), State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: ts}},
		})
	}
	return s
}

func intstrPort(p int32) intstr.IntOrString { return intstr.FromInt32(p) }
