package scale

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/taintevict/taintevict/bench/realapiserver"
	"github.com/taintevict/taintevict/clientgo"
)

// The informer variants MeasureInformers compares, each alone in a process.
var informerVariants = []string{
	"none",           // no informer: the process's own floor
	"pods",           // a typed pod informer as client-go makes it, managedFields and all
	"pods-trim",      // managedFields dropped: what kube-controller-manager keeps
	"pods-slim",      // only what a taint eviction controller reads (see slimPod)
	"pods-clientgo",  // clientgo.Trim, clientgo.NewFactory's transform: what taintevict keeps
	"pods-phase",     // pods-trim with the field selector status.phase!=Succeeded,status.phase!=Failed
	"pods-meta",      // a metadata-only informer (trimmed): no spec, so no tolerations
	"nodes",          // a typed node informer, managedFields and all
	"nodes-trim",     // managedFields dropped
	"nodes-slim",     // only metadata, taints and unschedulable
	"nodes-clientgo", // clientgo.Trim
	"nodes-meta",     // a metadata-only informer: no taints
	"pods-trim+ix",   // pods-trim with the spec.nodeName index both controllers add
}

// InformerResult is one variant's memory, in a process of its own, once synced.
type InformerResult struct {
	Shape   Shape  `json:"shape"`
	Variant string `json:"variant"`
	Objects int    `json:"objects"`
	// HeapMB is the live heap after two garbage collections; RSSMB the resident set.
	HeapMB, RSSMB float64
	SyncSeconds   float64
}

// MeasureInformers starts a control plane on saved and runs each informer variant in a
// process of its own (self with -informer-child), one after the other.
func MeasureInformers(ctx context.Context, saved *Saved, assets, self string, log io.Writer) (out []InformerResult, err error) {
	plane, err := saved.Start(ctx, assets)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, plane.Stop()) }()
	kc, err := plane.WriteKubeconfig(plane.ControlPlane.Admin, "informers")
	if err != nil {
		return nil, err
	}
	for _, v := range informerVariants {
		raw, err := exec.CommandContext(ctx, self, "-informer-child", "-kubeconfig", kc, "-variant", v).Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				err = fmt.Errorf("%w: %s", err, ee.Stderr)
			}
			return out, fmt.Errorf("scale: informer variant %s: %w", v, err)
		}
		var r InformerResult
		if err := json.Unmarshal(raw, &r); err != nil {
			return out, fmt.Errorf("scale: informer variant %s: %w", v, err)
		}
		r.Shape = saved.Shape
		if log != nil {
			fmt.Fprintf(log, "  informers %s: %d objects, heap %.0f MB, RSS %.0f MB, synced in %.1f s\n", v, r.Objects, r.HeapMB, r.RSSMB, r.SyncSeconds)
		}
		out = append(out, r)
	}
	return out, nil
}

// InformerChild is the process of one variant: it syncs its informer and writes an
// InformerResult as JSON to out.
func InformerChild(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("informer-child", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "")
	variant := fs.String("variant", "", "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !slices.Contains(informerVariants, *variant) {
		return fmt.Errorf("scale: unknown informer variant %q", *variant)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	rc.QPS, rc.Burst, rc.ContentType = -1, 0, realapiserver.ContentProtobuf
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	mclient, err := metadata.NewForConfig(rc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	began := time.Now()
	inf, err := variantInformer(*variant, client, mclient)
	if err != nil {
		return err
	}
	res := InformerResult{Variant: *variant}
	if inf != nil {
		go inf.Run(ctx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			return errors.New("scale: the informer did not sync")
		}
		res.Objects = len(inf.GetStore().ListKeys())
	}
	res.SyncSeconds = time.Since(began).Seconds()
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res.HeapMB = float64(ms.HeapAlloc) / (1 << 20)
	if _, rss, _, err := pidUsage(os.Getpid()); err == nil {
		res.RSSMB = rss
	}
	runtime.KeepAlive(inf)
	return json.NewEncoder(out).Encode(res)
}

// variantInformer is the informer of variant (nil for "none").
func variantInformer(variant string, client kubernetes.Interface, mclient metadata.Interface) (cache.SharedIndexInformer, error) {
	typed := func(tweak func(*metav1.ListOptions), transform cache.TransformFunc) informers.SharedInformerFactory {
		opts := []informers.SharedInformerOption{informers.WithTweakListOptions(tweak)}
		if transform != nil {
			opts = append(opts, informers.WithTransform(transform))
		}
		return informers.NewSharedInformerFactoryWithOptions(client, 0, opts...)
	}
	none := func(*metav1.ListOptions) {}
	meta := func(gvr schema.GroupVersionResource) cache.SharedIndexInformer {
		return metadatainformer.NewSharedInformerFactoryWithOptions(mclient, 0, metadatainformer.WithTransform(trim)).ForResource(gvr).Informer()
	}
	switch variant {
	case "none":
		return nil, nil
	case "pods":
		return typed(none, nil).Core().V1().Pods().Informer(), nil
	case "pods-trim":
		return typed(none, trim).Core().V1().Pods().Informer(), nil
	case "pods-trim+ix":
		inf := typed(none, trim).Core().V1().Pods().Informer()
		return inf, inf.AddIndexers(cache.Indexers{"spec.nodeName": func(obj any) ([]string, error) {
			return []string{obj.(*v1.Pod).Spec.NodeName}, nil
		}})
	case "pods-slim":
		return typed(none, slimPod).Core().V1().Pods().Informer(), nil
	case "pods-clientgo":
		return typed(none, clientgo.Trim).Core().V1().Pods().Informer(), nil
	case "pods-phase":
		return typed(func(o *metav1.ListOptions) { o.FieldSelector = "status.phase!=Succeeded,status.phase!=Failed" }, trim).Core().V1().Pods().Informer(), nil
	case "pods-meta":
		return meta(v1.SchemeGroupVersion.WithResource("pods")), nil
	case "nodes":
		return typed(none, nil).Core().V1().Nodes().Informer(), nil
	case "nodes-trim":
		return typed(none, trim).Core().V1().Nodes().Informer(), nil
	case "nodes-slim":
		return typed(none, slimNode).Core().V1().Nodes().Informer(), nil
	case "nodes-clientgo":
		return typed(none, clientgo.Trim).Core().V1().Nodes().Informer(), nil
	case "nodes-meta":
		return meta(v1.SchemeGroupVersion.WithResource("nodes")), nil
	}
	return nil, fmt.Errorf("scale: unknown informer variant %q", variant)
}

// trim drops managedFields, as kube-controller-manager's informers do.
func trim(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// slimPod keeps of a pod only what a taint eviction controller reads: its identity,
// labels, owners and deletion, its node and tolerations, its phase and conditions.
func slimPod(obj any) (any, error) {
	p, ok := obj.(*v1.Pod)
	if !ok {
		return obj, nil
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
			Labels: p.Labels, OwnerReferences: p.OwnerReferences, DeletionTimestamp: p.DeletionTimestamp, DeletionGracePeriodSeconds: p.DeletionGracePeriodSeconds},
		Spec:   v1.PodSpec{NodeName: p.Spec.NodeName, Tolerations: p.Spec.Tolerations, Priority: p.Spec.Priority},
		Status: v1.PodStatus{Phase: p.Status.Phase, Conditions: p.Status.Conditions},
	}, nil
}

// slimNode keeps of a node its identity, labels and annotations, taints and unschedulable.
func slimNode(obj any) (any, error) {
	n, ok := obj.(*v1.Node)
	if !ok {
		return obj, nil
	}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion, Labels: n.Labels, Annotations: n.Annotations},
		Spec:       v1.NodeSpec{Taints: n.Spec.Taints, Unschedulable: n.Spec.Unschedulable},
	}, nil
}

// InformerReport writes the table of the informer variants: memory per object over the
// process's floor ("none").
func InformerReport(w io.Writer, rs []InformerResult) {
	fmt.Fprintln(w, "\n| cluster | informer | objects | live heap (MB) | per object, over the floor (bytes) | RSS (MB) | sync (s) |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|")
	floor := map[Shape]float64{}
	for _, r := range rs {
		if r.Variant == "none" {
			floor[r.Shape] = r.HeapMB
		}
	}
	for _, r := range rs {
		per := "–"
		if r.Objects > 0 {
			per = fmt.Sprintf("%.0f", (r.HeapMB-floor[r.Shape])*(1<<20)/float64(r.Objects))
		}
		fmt.Fprintf(w, "| %v | %s | %d | %.0f | %s | %.0f | %.1f |\n", r.Shape, r.Variant, r.Objects, r.HeapMB, per, r.RSSMB, r.SyncSeconds)
	}
}
