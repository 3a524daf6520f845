package outage

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/devicetainteviction"

	"github.com/taintevict/taintevict/bench/apparatus"
	"github.com/taintevict/taintevict/clientgo/device"
	"github.com/taintevict/taintevict/clientgo/metrics"
)

// DeviceConfig is one device outage: a DRA driver taints every device it publishes at once,
// NoExecute, as a driver that finds its devices broken would.
type DeviceConfig struct {
	// Impl is the side: "kube" (kube's device taint eviction controller,
	// devicetainteviction.New) or "taintevict" (clientgo/device.Controller).
	Impl string
	// Devices is the number of devices, DevicesPerPool to a pool (a node's ResourceSlice);
	// PodsPerDevice pods use each, through a claim of their own that was allocated the
	// device, half of them (the even ones) tolerating the taint for 300 s. 0 means 1,000
	// devices, 8 to a pool, 10 pods to a device.
	Devices, DevicesPerPool, PodsPerDevice int
	// Timeout, BeforeOutage and AfterOutage are as in Config.
	Timeout                   time.Duration
	BeforeOutage, AfterOutage func()
}

// DeviceImpls are the sides RunDevice can measure.
var DeviceImpls = []string{"kube", "taintevict"}

// deviceTaintKey is the taint the driver puts on its devices.
const deviceTaintKey = "gpu.example.com/unhealthy"

// RunDevice builds the device cluster, makes and runs the controller on informers that
// list it from a fake clientset, waits until the controller has taken the untainted cluster
// in, then taints every device and measures, as Run does, the time until every untolerating
// pod's DELETE has arrived and the heap once the deletions have reached the informers and
// the controller.
//
// The pods' requests are answered by the apparatus (apparatus.Client), which counts them.
// The watches are the apparatus's too: the ResourceSlices' updates and the pods' deletions
// reach the informers through watch channels large enough for the whole outage (the fake
// clientset's own watch panics when 100 events wait), in the order a watch delivers them:
// a pod's deletion after its DELETE was answered.
func RunDevice(ctx context.Context, cfg DeviceConfig) (Result, error) {
	cfg = cfg.withDefaults()
	d := newDeviceCluster(cfg)
	n := d.n()
	r := &deviceRig{d: d, deletes: newDeleteCounter(n / 2), sentinel: make(chan struct{})}
	fc := fake.NewClientset()
	for _, o := range d.objects() {
		if err := fc.Tracker().Add(o); err != nil {
			return Result{}, fmt.Errorf("outage: %w", err)
		}
	}
	r.watches = newWatches(fc, len(d.pods.Pods)+len(d.slices))
	r.client = apparatus.NewClient(fc, d.pods)
	r.client.OnDelete = func(i int) {
		if i == n {
			close(r.sentinel)
		} else {
			r.deletes.onDelete(i)
		}
		r.watches.send("pods", watch.Deleted, d.pods.Pods[i])
	}

	klog.SetLogger(logr.Discard())
	ctx, cancel := context.WithCancel(klog.NewContext(ctx, logr.Discard()))
	defer cancel()
	factory := informers.NewSharedInformerFactory(r.client, 0)
	side, err := newDeviceSide(ctx, cfg.Impl, r.client, factory)
	if err != nil {
		return Result{}, err
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = side.Run(ctx) }()
	defer func() { cancel(); <-done; factory.Shutdown() }()

	res := Result{Impl: cfg.Impl, Pods: n, Devices: cfg.Devices, Nodes: len(d.slices)}
	pods := factory.Core().V1().Pods().Informer().GetStore()
	if err := r.barrier(ctx, cfg.Timeout, pods, side); err != nil {
		return res, err
	}
	before := r.client.Counts()
	if cfg.BeforeOutage != nil {
		cfg.BeforeOutage()
	}
	settled := func() error {
		return waitFor(ctx, cfg.Timeout, func() bool { return len(pods.ListKeys()) == n-n/2 && side.Idle() })
	}
	if err := measure(&res, cfg.Timeout, r.deletes, d.taintAll(r.watches), settled); err != nil {
		return res, err
	}
	res.CachedPods = len(pods.ListKeys())
	res.Requests = r.client.Counts().Sub(before)
	res.RequestsPerEviction = float64(res.Requests.PodRequests()) / float64(res.Evicted)
	if cfg.AfterOutage != nil {
		cfg.AfterOutage()
	}
	return res, nil
}

type deviceRig struct {
	d        *deviceCluster
	client   *apparatus.Client
	watches  *watches
	deletes  *deleteCounter
	sentinel chan struct{} // closed when the sentinel pod's DELETE arrived
}

// barrier waits until the controller has taken the initial listing in, and has handled
// every notification of it. Each informer hands its handler the notifications in order, so
// the sentinel (a tainted device, then a claim allocated it, then a pod that uses it and
// tolerates nothing, each sent after the listing) is evicted only once the slice, claim and
// pod handlers have handled everything before it: then the heap measured before the outage
// holds no notification still waiting in an informer's buffer.
func (r *deviceRig) barrier(ctx context.Context, timeout time.Duration, pods cache.Store, side *Side) error {
	n := r.d.n()
	if err := waitFor(ctx, timeout, func() bool { return len(pods.ListKeys()) == n }); err != nil {
		return err
	}
	// The store holds the cluster's own pods from now on, as the node outage fills it: a
	// deleted pod's memory is then not freed, and the heap growth is the controller's own
	// (the listed copies would free 5,000 pods' worth and show a growth below zero).
	for _, p := range r.d.pods.Pods[:n] {
		if err := pods.Update(p); err != nil {
			return fmt.Errorf("outage: %w", err)
		}
	}
	r.watches.send("resourceslices", watch.Added, r.d.sentinelSlice())
	r.watches.send("resourceclaims", watch.Added, r.d.claims[n])
	r.watches.send("pods", watch.Added, r.d.pods.Pods[n])
	select {
	case <-r.sentinel:
	case <-time.After(timeout):
		return fmt.Errorf("outage: the sentinel pod was not evicted within %v", timeout)
	}
	return waitFor(ctx, timeout, func() bool { return len(pods.ListKeys()) == n && side.Idle() })
}

func (cfg DeviceConfig) withDefaults() DeviceConfig {
	if cfg.Devices == 0 {
		cfg.Devices = 1000
	}
	if cfg.DevicesPerPool == 0 {
		cfg.DevicesPerPool = 8
	}
	if cfg.PodsPerDevice == 0 {
		cfg.PodsPerDevice = 10
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Minute
	}
	return cfg
}

// deviceCluster is the device outage's cluster: the apparatus's pods (in their nodes'
// order, PodsPerDevice to a device), a claim for each, and the pools' slices.
type deviceCluster struct {
	cfg    DeviceConfig
	pods   *apparatus.Cluster
	claims []*resourcev1.ResourceClaim
	slices []*resourcev1.ResourceSlice
}

const deviceDriver = "gpu.example.com"

// newDeviceCluster builds the cluster, and one pod more, the last: the sentinel of
// deviceRig.barrier, which uses a device of a pool of its own and tolerates nothing.
func newDeviceCluster(cfg DeviceConfig) *deviceCluster {
	n := cfg.Devices * cfg.PodsPerDevice
	d := &deviceCluster{cfg: cfg, pods: apparatus.NewCluster(n+1, cfg.PodsPerDevice)}
	for p := range (cfg.Devices + cfg.DevicesPerPool - 1) / cfg.DevicesPerPool {
		d.slices = append(d.slices, d.slice(p, false))
	}
	for i, pod := range d.pods.Pods {
		dev := i / cfg.PodsPerDevice
		name := pod.Name + "-gpu"
		pod.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &name}}
		result := resourcev1.DeviceRequestAllocationResult{Request: "gpu", Driver: deviceDriver, Pool: poolName(dev / cfg.DevicesPerPool), Device: deviceName(dev)}
		if i == n {
			result.Pool, result.Device = sentinel, sentinel
		} else if apparatus.Tolerates(i) {
			secs := int64(apparatus.TolerationSeconds)
			result.Tolerations = []resourcev1.DeviceToleration{{Key: deviceTaintKey, Operator: resourcev1.DeviceTolerationOpExists, Effect: resourcev1.DeviceTaintEffectNoExecute, TolerationSeconds: &secs}}
		}
		d.claims = append(d.claims, &resourcev1.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: name, UID: types.UID("claim-uid-" + strconv.Itoa(i)), ResourceVersion: "1"},
			Status: resourcev1.ResourceClaimStatus{
				Allocation:  &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{result}}},
				ReservedFor: []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: pod.Name, UID: pod.UID}},
			},
		})
	}
	return d
}

// n is the number of pods, the sentinel left out.
func (d *deviceCluster) n() int { return d.cfg.Devices * d.cfg.PodsPerDevice }

// sentinel names the sentinel's pool and device.
const sentinel = "sentinel"

// sentinelSlice is the slice of the sentinel's pool, its device tainted.
func (d *deviceCluster) sentinelSlice() *resourcev1.ResourceSlice {
	added := metav1.Now()
	return &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: sentinel, ResourceVersion: "1"},
		Spec: resourcev1.ResourceSliceSpec{Driver: deviceDriver, NodeName: new(sentinel), Pool: resourcev1.ResourcePool{Name: sentinel, ResourceSliceCount: 1},
			Devices: []resourcev1.Device{{Name: sentinel, Taints: []resourcev1.DeviceTaint{{Key: deviceTaintKey, Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: &added}}}}},
	}
}

func poolName(p int) string     { return "node-" + strconv.Itoa(p) }
func deviceName(dev int) string { return "gpu-" + strconv.Itoa(dev) }

// slice returns pool p's slice, with every device tainted (added now) or none.
func (d *deviceCluster) slice(p int, tainted bool) *resourcev1.ResourceSlice {
	s := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: poolName(p) + "-gpus", ResourceVersion: "1"},
		Spec: resourcev1.ResourceSliceSpec{Driver: deviceDriver, NodeName: new(poolName(p)),
			Pool: resourcev1.ResourcePool{Name: poolName(p), ResourceSliceCount: 1}},
	}
	added := metav1.Now()
	for dev := p * d.cfg.DevicesPerPool; dev < min((p+1)*d.cfg.DevicesPerPool, d.cfg.Devices); dev++ {
		dv := resourcev1.Device{Name: deviceName(dev)}
		if tainted {
			dv.Taints = []resourcev1.DeviceTaint{{Key: deviceTaintKey, Effect: resourcev1.DeviceTaintEffectNoExecute, TimeAdded: &added}}
		}
		s.Spec.Devices = append(s.Spec.Devices, dv)
	}
	if tainted {
		s.ResourceVersion = "2"
	}
	return s
}

// objects are what the fake clientset's tracker lists: the pods, the claims and the
// untainted slices; the sentinel's come later.
func (d *deviceCluster) objects() []runtime.Object {
	var out []runtime.Object
	for _, p := range d.pods.Pods[:d.n()] {
		out = append(out, p)
	}
	for _, c := range d.claims[:d.n()] {
		out = append(out, c)
	}
	for _, s := range d.slices {
		out = append(out, s)
	}
	return out
}

// taintAll returns the outage: the driver's update of every pool's slice, every device
// tainted, as the slices' watch delivers it.
func (d *deviceCluster) taintAll(w *watches) func(time.Time) error {
	return func(time.Time) error {
		for p := range d.slices {
			w.send("resourceslices", watch.Modified, d.slice(p, true))
		}
		return nil
	}
}

// watches answers the watches of pods, ResourceClaims and ResourceSlices with channels of
// the apparatus, room for n events each, and lets the tracker answer the others (nothing
// changes there). An event sent before its resource's watch has begun (a reflector watches
// only once its list is in the store) waits for it.
type watches struct {
	mu      sync.Mutex
	n       int
	out     map[string][]*watch.FakeWatcher
	pending map[string][]watch.Event
}

func newWatches(fc *fake.Clientset, n int) *watches {
	w := &watches{n: n, out: map[string][]*watch.FakeWatcher{}, pending: map[string][]watch.Event{}}
	fc.PrependWatchReactor("*", func(a clienttesting.Action) (bool, watch.Interface, error) {
		res := a.GetResource().Resource
		if res != "pods" && res != "resourceslices" && res != "resourceclaims" {
			return false, nil, nil
		}
		fw := watch.NewFakeWithChanSize(w.n, false)
		w.mu.Lock()
		defer w.mu.Unlock()
		w.out[res] = append(w.out[res], fw)
		for _, e := range w.pending[res] {
			fw.Action(e.Type, e.Object)
		}
		delete(w.pending, res)
		return true, fw, nil
	})
	return w
}

// send delivers the event to every watch of the resource.
func (w *watches) send(resource string, typ watch.EventType, obj runtime.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.out[resource]) == 0 {
		w.pending[resource] = append(w.pending[resource], watch.Event{Type: typ, Object: obj})
	}
	for _, fw := range w.out[resource] {
		fw.Action(typ, obj)
	}
}

// newDeviceSide makes the device controller impl over factory, sending its requests
// through client.
func newDeviceSide(ctx context.Context, impl string, client kubernetes.Interface, factory informers.SharedInformerFactory) (*Side, error) {
	switch impl {
	case "kube":
		setQueueMetrics()
		kubeQueues.reset()
		r := factory.Resource().V1()
		tc := devicetainteviction.New(client, factory.Core().V1().Pods(), r.ResourceClaims(), r.ResourceSlices(), r.DeviceTaintRules(), r.DeviceClasses(), device.Component)
		return &Side{
			Run: func(ctx context.Context) error {
				factory.Start(ctx.Done())
				return tc.Run(ctx, 8) // kube-controller-manager's default ConcurrentSyncs
			},
			Idle: func() bool { return kubeQueues.idle(device.Component) },
		}, nil
	case "taintevict":
		// Its metrics on a registry of its own, since kube's controller always keeps its own.
		c, err := device.NewController(ctx, client, factory, device.Options{Metrics: metrics.NewMeter(prometheus.NewRegistry())})
		if err != nil {
			return nil, fmt.Errorf("outage: device.NewController: %w", err)
		}
		e := c.Engine()
		return &Side{Run: c.Run, Idle: func() bool { return e.Backlog() == 0 && idle(e.WaitIdle) }}, nil
	}
	return nil, fmt.Errorf("outage: unknown device implementation %q, want one of %v", impl, DeviceImpls)
}
