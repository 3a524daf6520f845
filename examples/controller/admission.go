package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/taintevict/taintevict/clientgo"
	"github.com/taintevict/taintevict/clientgo/device"
	"github.com/taintevict/taintevict/eviction/engine"
	"github.com/taintevict/taintevict/eviction/whatif"
	"github.com/taintevict/taintevict/tolerations"
)

// The paths the admission webhook serves; deploy/webhook/webhook.yaml registers them.
const (
	admitNodesPath = "/validate/nodes"
	admitRulesPath = "/validate/devicetaintrules"
)

// OverrideAnnotation, set to "true" on a node or a DeviceTaintRule, lets through a taint
// that -admission-deny-fraction would refuse.
const OverrideAnnotation = "taintevict.io/allow-mass-eviction"

// maxBody bounds an AdmissionReview's body: a node or a rule, twice, is far less.
const maxBody = 3 << 20

// admitter answers the API server's AdmissionReviews of node updates and DeviceTaintRule
// creates and updates. When a request adds a NoExecute taint (or creates a rule of effect
// NoExecute), it simulates what the controller would do with the engine, in dry run, from
// the controller's informer caches (package whatif, as kubectl-taintevict what-if does),
// and answers with admission warnings that say it; with a deny fraction it refuses a taint
// that would evict too many of the cluster's pods at once, unless the object carries
// OverrideAnnotation. It never fails a request for a fault of its own: it allows it, with a
// warning that says why it could not tell. Its methods are safe for concurrent use.
type admitter struct {
	// node are the node side's informers; nil without the node side.
	node *clientgo.Informers
	// dev are the device side's informers; nil without the device side.
	dev *device.Informers
	// nodeOpts and devOpts are the engine options of each side (budgets, rules).
	nodeOpts, devOpts engine.Options
	// deny is -admission-deny-fraction, 0 for none.
	deny float64
	// horizon bounds the simulated time.
	horizon time.Duration
	now     func() time.Time
}

// ServeHTTP answers an AdmissionReview at admitNodesPath or admitRulesPath.
func (a *admitter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "Method Not Allowed: POST an AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	var review admissionv1.AdmissionReview
	if err == nil {
		err = json.Unmarshal(body, &review)
	}
	if err != nil || review.Request == nil {
		http.Error(w, fmt.Sprintf("Bad Request: want an AdmissionReview of admission.k8s.io/v1 (%v)", err), http.StatusBadRequest)
		return
	}
	resp := a.review(r.Context(), review.Request)
	resp.UID = review.Request.UID
	review.Request, review.Response = nil, resp
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

// review decides one request.
func (a *admitter) review(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	allow := &admissionv1.AdmissionResponse{Allowed: true}
	var verdict *admissionv1.AdmissionResponse
	var err error
	switch req.Resource.Resource {
	case "nodes":
		verdict, err = a.reviewNode(ctx, req)
	case "devicetaintrules":
		verdict, err = a.reviewRule(ctx, req)
	default:
		return allow
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "Admission review", "resource", req.Resource.Resource, "name", req.Name)
		allow.Warnings = []string{"taintevict: cannot tell what this change evicts: " + oneLine(err)}
		return allow
	}
	return verdict
}

// reviewNode reviews a node update: the NoExecute taints it adds.
func (a *admitter) reviewNode(ctx context.Context, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, error) {
	var old, node v1.Node
	if err := decode(req.Object.Raw, &node); err != nil {
		return nil, err
	}
	if len(req.OldObject.Raw) > 0 {
		if err := decode(req.OldObject.Raw, &old); err != nil {
			return nil, err
		}
	}
	added := addedNoExecute(old.Spec.Taints, node.Spec.Taints)
	if len(added) == 0 {
		return &admissionv1.AdmissionResponse{Allowed: true}, nil
	}
	if a.node == nil {
		return nil, errors.New("the controller does not watch nodes (-controllers without node)")
	}
	if !a.node.Nodes.HasSynced() || !a.node.Pods.HasSynced() {
		return nil, errors.New("the controller's caches are not synced yet")
	}
	var nodes []*v1.Node
	for _, o := range a.node.Nodes.GetStore().List() {
		if n, ok := o.(*v1.Node); ok {
			nodes = append(nodes, n)
		}
	}
	start := a.now()
	res, err := whatif.Nodes(ctx, whatif.Cluster{Nodes: nodes, Pods: clientgo.NewInformerCache(*a.node)},
		whatif.Change{node.Name: node.Spec.Taints}, whatif.Options{Start: start, Engine: a.nodeOpts, Until: start.Add(a.horizon)})
	if err != nil {
		return nil, err
	}
	s := res.Summary()
	what := fmt.Sprintf("%s %s on node %s", pluralWord(len(added), "taint"), taintList(added), node.Name)
	return a.verdict(what, s, a.node.Pods.GetStore(), node.Annotations, "node "+node.Name), nil
}

// reviewRule reviews a DeviceTaintRule create or update that gives devices a NoExecute
// taint.
func (a *admitter) reviewRule(ctx context.Context, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, error) {
	var rule, old resourcev1.DeviceTaintRule
	if err := decode(req.Object.Raw, &rule); err != nil {
		return nil, err
	}
	if rule.Spec.Taint.Effect != resourcev1.DeviceTaintEffectNoExecute {
		return &admissionv1.AdmissionResponse{Allowed: true}, nil
	}
	if len(req.OldObject.Raw) > 0 {
		if err := decode(req.OldObject.Raw, &old); err != nil {
			return nil, err
		}
		if old.Spec.Taint.Effect == rule.Spec.Taint.Effect && old.Spec.Taint.Key == rule.Spec.Taint.Key &&
			old.Spec.Taint.Value == rule.Spec.Taint.Value && sameSelector(old.Spec.DeviceSelector, rule.Spec.DeviceSelector) {
			return &admissionv1.AdmissionResponse{Allowed: true}, nil // its status, its labels
		}
	}
	if a.dev == nil {
		return nil, errors.New("the controller does not watch devices (-controllers without device)")
	}
	inf := *a.dev
	for _, i := range []cache.SharedIndexInformer{inf.Pods, inf.Claims, inf.Slices, inf.Rules} {
		if !i.HasSynced() {
			return nil, errors.New("the controller's caches are not synced yet")
		}
	}
	// The rules as they would be: a store of their own, never the informer's.
	changed := inf
	changed.Rules = cache.NewSharedIndexInformer(&cache.ListWatch{}, &resourcev1.DeviceTaintRule{}, 0, cache.Indexers{}) // never run
	for _, o := range inf.Rules.GetStore().List() {
		if r, ok := o.(*resourcev1.DeviceTaintRule); ok && r.Name != rule.Name {
			_ = changed.Rules.GetStore().Add(r)
		}
	}
	_ = changed.Rules.GetStore().Add(&rule)
	start := a.now()
	res, err := whatif.Holders[*v1.Pod]{
		Before: device.NewSource(inf), After: device.NewSource(changed),
		IDs:     inf.Claims.GetIndexer().ListIndexFuncValues(device.DeviceIndex),
		Options: whatif.Options{Start: start, Engine: a.devOpts, Until: start.Add(a.horizon)},
	}.Simulate(ctx)
	if err != nil {
		return nil, err
	}
	t := rule.Spec.Taint
	what := fmt.Sprintf("DeviceTaintRule %s (taint %s, on %s)", rule.Name,
		taintList([]v1.Taint{{Key: t.Key, Value: t.Value, Effect: v1.TaintEffect(t.Effect)}}), plural(len(res.Changed), "device"))
	return a.verdict(what, res.Summary(), inf.Pods.GetStore(), rule.Annotations, "DeviceTaintRule "+rule.Name), nil
}

// verdict is the answer about what, which would do s in a cluster whose pods are in pods:
// allowed with a warning that says it, or refused when it evicts more than the deny
// fraction of them at once and the object (named by kind and name) has no override
// annotation.
func (a *admitter) verdict(what string, s whatif.Summary, pods cache.Store, annotations map[string]string, object string) *admissionv1.AdmissionResponse {
	warning := "taintevict: " + what + " " + s.String()
	resp := &admissionv1.AdmissionResponse{Allowed: true, Warnings: []string{warning}}
	if a.deny == 0 || s.Now == 0 {
		return resp
	}
	total := len(pods.ListKeys()) // O(pods): only when a deny fraction may refuse
	if float64(s.Now) <= a.deny*float64(total) {
		return resp
	}
	if annotations[OverrideAnnotation] == "true" {
		resp.Warnings = append(resp.Warnings, fmt.Sprintf("taintevict: let through by the annotation %s=true, though it evicts %d of the %d pods at once, more than -admission-deny-fraction %g", OverrideAnnotation, s.Now, total, a.deny))
		return resp
	}
	return &admissionv1.AdmissionResponse{Allowed: false, Warnings: resp.Warnings, Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusForbidden, Reason: metav1.StatusReasonForbidden,
		Message: fmt.Sprintf("taintevict: %s would evict %d of the cluster's %d pods at once, more than -admission-deny-fraction %g allows; to do it anyway, set the annotation %s=true on the %s (in the same request, or before)",
			what, s.Now, total, a.deny, OverrideAnnotation, object),
	}}
}

// addedNoExecute returns the NoExecute taints of now that were not in before (by key,
// value and effect).
func addedNoExecute(before, now []v1.Taint) []v1.Taint {
	var out []v1.Taint
	for _, t := range now {
		if t.Effect == v1.TaintEffectNoExecute && !slices.ContainsFunc(before, func(b v1.Taint) bool { return b.MatchTaint(&t) && b.Value == t.Value }) {
			out = append(out, t)
		}
	}
	return out
}

func sameSelector(a, b *resourcev1.DeviceTaintSelector) bool {
	if a == nil || b == nil {
		return a == b
	}
	eq := func(x, y *string) bool { return x == nil && y == nil || x != nil && y != nil && *x == *y }
	return eq(a.Driver, b.Driver) && eq(a.Pool, b.Pool) && eq(a.Device, b.Device)
}

// taintList writes taints as kubectl does, KEY[=VALUE]:EFFECT, comma-separated.
func taintList(taints []v1.Taint) string {
	var parts []string
	for _, t := range taints {
		s := t.Key
		if t.Value != "" {
			s += "=" + t.Value
		}
		parts = append(parts, s+":"+string(t.Effect))
	}
	return strings.Join(parts, ", ")
}

// pluralWord returns what, or its plural for n other than 1.
func pluralWord(n int, what string) string {
	if n == 1 {
		return what
	}
	return what + "s"
}

// plural returns "1 device" or "n devices".
func plural(n int, what string) string { return fmt.Sprintf("%d %s", n, pluralWord(n, what)) }

// decode decodes the JSON of an object in a review.
func decode(raw []byte, into any) error {
	if len(raw) == 0 {
		return errors.New("the request has no object")
	}
	return json.Unmarshal(raw, into)
}

// listenAdmission serves the admission webhook of cfg over the controllers of set, on
// -admission-addr with the certificate of certs, until the returned stop is called.
func listenAdmission(ctx context.Context, cfg config, set *controllerSet, certs *certReloader) (stop func(), err error) {
	a := &admitter{deny: cfg.admission.deny, horizon: cfg.admission.horizon, now: time.Now}
	a.nodeOpts, a.devOpts = admissionOptions(cfg)
	if set.node != nil {
		inf := set.node.Informers()
		a.node = &inf
	}
	if set.dev != nil {
		inf := set.dev.Informers()
		a.dev = &inf
	}
	mux := http.NewServeMux()
	mux.Handle(admitNodesPath, a)
	mux.Handle(admitRulesPath, a)
	tc := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.GetCertificate, NextProtos: []string{"http/1.1"}}
	return listen(ctx, "admission-addr", cfg.admission.addr, mux, tc)
}

// admissionOptions are the engine options the webhook simulates each side with: the
// controller's own, but Confirm on the device side.
func admissionOptions(cfg config) (node, dev engine.Options) {
	node = cfg.controllerOptions().Manager
	dev = deviceOptions(cfg, nil).Engine
	dev.Tolerations.Rules = tolerations.DeviceRules
	// The device side's census for Confirm counts from its informers, which a what-if of one
	// rule does not have: its what-if leaves Confirm out, and the rule's status says what
	// the controller holds.
	dev.Confirm = engine.Confirm{}
	return node, dev
}
