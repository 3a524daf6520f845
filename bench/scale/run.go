package scale

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/taintevict/taintevict/bench/realapiserver"
)

// Side is a controller under test: kube-controller-manager, or taintevict's command in a mode.
type Side struct {
	Kube bool
	// Alone runs kube-controller-manager with its taint-eviction-controller only: the
	// memory of the target's reference. Its pod informer lacks the spec.nodeName index (see
	// kcmControllers), so it evicts the pods it learns of on a node already tainted (its
	// pod handler) but none when a node is tainted (its node handler fails): a run of it
	// measures the start and the steady state, then taints zone a and counts the removals
	// 15 s past the deadline instead of waiting for them.
	Alone bool
	// Flood is no controller: the removal requests of taintevict's Deleter in Mode, each
	// sent at its pod's deadline with no client rate limit (see FloodChild). It plays the
	// outage variant only.
	Flood bool
	// Mode is taintevict's -mode: delete or evict.
	Mode string
}

// ParseSide reads "kube", "kube/alone", "ours", "ours/mode=evict", "flood" or
// "flood/mode=evict".
func ParseSide(s string) (Side, error) {
	switch s {
	case "kube":
		return Side{Kube: true}, nil
	case "kube/alone":
		return Side{Kube: true, Alone: true}, nil
	case "ours", "ours/mode=delete":
		return Side{Mode: "delete"}, nil
	case "ours/mode=evict":
		return Side{Mode: "evict"}, nil
	case "flood", "flood/mode=delete":
		return Side{Flood: true, Mode: "delete"}, nil
	case "flood/mode=evict":
		return Side{Flood: true, Mode: "evict"}, nil
	}
	return Side{}, fmt.Errorf("scale: side %q: want kube, kube/alone, ours, ours/mode=evict, flood or flood/mode=evict", s)
}

// String is the side as ParseSide reads it.
func (s Side) String() string {
	switch {
	case s.Alone:
		return "kube/alone"
	case s.Kube:
		return "kube"
	case s.Flood && s.Mode == "evict":
		return "flood/mode=evict"
	case s.Flood:
		return "flood"
	case s.Mode == "evict":
		return "ours/mode=evict"
	}
	return "ours"
}

// The variants of the outage a run plays.
const (
	// VariantOutage: a zone's nodes become unreachable at once.
	VariantOutage = "outage"
	// VariantBrake: the same, taintevict with its brake on (-brake-fraction just under the
	// zone's share of the nodes); after RunConfig.Hold a few of the zone's nodes come back,
	// which lets it go. Nothing may be removed before.
	VariantBrake = "brake"
	// VariantRestart: the side is killed (SIGKILL) once half the due pods are removed, and
	// started again at once.
	VariantRestart = "restart"
	// VariantFailover: two replicas with leader election; the leader is killed once half
	// the due pods are removed, and the other takes the Lease.
	VariantFailover = "failover"
	// VariantBrakeRestart: the brake variant, with a restart while the brake holds.
	VariantBrakeRestart = "brake-restart"
)

// RunConfig is one run of one side on a fresh copy of a saved cluster.
type RunConfig struct {
	Saved   *Saved
	Assets  string
	Bins    Binaries
	Side    Side
	Variant string
	Budget  Budget
	// StartNodes are nodes of zone b tainted out-of-service before the side starts: its
	// first correct decision is the removal of one of their pods.
	StartNodes int
	// Settle is the wait after the start's removals, before the quiet window; Quiet the
	// window over which the steady state's CPU is measured.
	Settle, Quiet time.Duration
	// Hold is how long the brake variants hold before some nodes come back.
	Hold time.Duration
	// Timeout bounds each wait for removals.
	Timeout time.Duration
	// WhatIf runs `kubectl taintevict what-if -l topology.kubernetes.io/zone=a` in the
	// steady state (taintevict's sides only).
	WhatIf bool
	// ProfileDir, if set, receives CPU profiles of the what-if: the plugin's
	// (whatif-plugin.pprof) and kube-apiserver's over the same seconds
	// (whatif-apiserver.pprof).
	ProfileDir string
	Run        int
	Log        io.Writer
}

// Result is what a run measured. Times are in seconds.
type Result struct {
	Side    string `json:"side"`
	Variant string `json:"variant"`
	Budget  Budget `json:"budget"`
	Shape   Shape  `json:"shape"`
	Run     int    `json:"run"`
	// Ready is from the process's start until its caches synced; Decision until its first
	// correct removal (of a pod on the out-of-service nodes); StartCorrect says that every
	// such pod was removed once and nothing else touched.
	Ready, Decision float64
	StartCorrect    bool
	// StartTwice counts the start's pods removed more than once; StartRemoved, for
	// kube/alone, those removed at all.
	StartTwice, StartRemoved, StartDue int
	// RSSMB and PeakMB are the side's resident set at the end of the quiet window and its
	// peak until then; QuietCPU its CPU (cores) over the window, APIServerIdle and
	// EtcdIdle theirs.
	RSSMB, PeakMB                     float64
	QuietCPU, APIServerIdle, EtcdIdle float64
	// APIServerRSSMB and EtcdRSSMB are their resident sets at the end of the quiet window.
	APIServerRSSMB, EtcdRSSMB float64
	// Outage is the audit log's account of the outage, from the taint; Deadline is when its
	// pods fell due, after the taint (the taint's TimeAdded, in whole seconds, plus the
	// toleration).
	Outage   outcome
	Deadline float64
	// APIServerCPU, EtcdCPU and SideCPU are CPU seconds from the taint until the last
	// removal (Window seconds).
	APIServerCPU, EtcdCPU, SideCPU, Window float64
	// Resume is, for a restart or a failover, the time from the kill until the first
	// removal sent by the new process (for a failover: once it took the Lease) completed;
	// Killed when the kill came, after the taint.
	Resume, Killed float64
	// HeldRemovals counts removals while the brake held; LetGo is when it let go, after
	// the taint.
	HeldRemovals int
	LetGo        float64
	// WhatIf is how long the what-if of zone a took, in all, and its own timings.
	WhatIf        float64
	WhatIfTimings string `json:",omitempty"`
	// WhatIfCPU is the CPU seconds the what-if took of the plugin, kube-apiserver and etcd.
	WhatIfCPU [3]float64 `json:",omitempty"`
	Load      [2]float64
	// Complete says every due pod of the outage was removed.
	Complete bool
}

// run is the state of one run.
type run struct {
	cfg        RunConfig
	plane      *Plane
	kubeconfig string
	user       string
	audit      *auditLog
	procs      []*proc
	res        Result
}

// Run runs cfg once and measures it.
func Run(ctx context.Context, cfg RunConfig) (res Result, err error) {
	r := &run{cfg: cfg, res: Result{Side: cfg.Side.String(), Variant: cfg.Variant, Budget: cfg.Budget, Shape: cfg.Saved.Shape, Run: cfg.Run}}
	r.res.Load[0] = loadAverage()
	if r.plane, err = cfg.Saved.Start(ctx, cfg.Assets); err != nil {
		return r.res, err
	}
	defer func() {
		for _, p := range r.procs {
			p.stop()
		}
		if err != nil {
			err = fmt.Errorf("%w (the sides' logs: %s)", err, r.keepLogs())
		}
		err = errors.Join(err, r.plane.Stop())
	}()
	r.user, r.kubeconfig = KubeUser, ""
	groups := []string{"system:authenticated"}
	if !cfg.Side.Kube {
		r.user = cfg.Saved.OursUser
		ns := strings.Split(r.user, ":")[2]
		groups = []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
	}
	if r.kubeconfig, err = r.plane.Kubeconfig(r.user, groups, "side"); err != nil {
		return r.res, err
	}
	r.audit = &auditLog{reader: realapiserver.NewAuditReader(r.plane.AuditLog)}
	r.logf("%s on %v (%d pods), %s", cfg.Variant, cfg.Saved.Shape, cfg.Saved.Shape.Pods(), cfg.Budget)
	if err := r.start(ctx); err != nil {
		return r.res, err
	}
	if err := r.steady(ctx); err != nil {
		return r.res, err
	}
	if err := r.outage(ctx); err != nil {
		return r.res, err
	}
	r.res.Load[1] = loadAverage()
	return r.res, nil
}

// keepLogs copies the sides' logs of a failed run into a new folder, which it returns,
// before the control plane's folder goes.
func (r *run) keepLogs() string {
	dir, err := os.MkdirTemp("", "scale-failed-")
	if err != nil {
		return err.Error()
	}
	for _, p := range r.procs {
		if raw, err := os.ReadFile(p.logPath); err == nil {
			_ = os.WriteFile(filepath.Join(dir, filepath.Base(p.logPath)), raw, 0o644)
		}
	}
	return dir
}

func (r *run) logf(format string, args ...any) {
	if r.cfg.Log != nil {
		fmt.Fprintf(r.cfg.Log, "  %s run %d: "+format+"\n", append([]any{r.res.Side, r.cfg.Run + 1}, args...)...)
	}
}

// launch starts a process of the side; with leaderElect, one of two replicas, the second
// of which (standby) starts while the first leads.
func (r *run) launch(leaderElect, standby bool) (*proc, error) {
	logPath := filepath.Join(r.plane.Dir(), fmt.Sprintf("side-%d.log", len(r.procs)))
	var p *proc
	var err error
	if r.cfg.Side.Kube {
		controllers := kcmControllers
		if r.cfg.Side.Alone {
			controllers = "taint-eviction-controller"
		}
		p, err = startKCM(r.cfg.Bins, controllers, r.kubeconfig, r.cfg.Budget, leaderElect, standby, logPath)
	} else if r.cfg.Side.Flood {
		p, err = startFlood(r.cfg.Bins, r.kubeconfig, r.cfg.Side.Mode, logPath)
	} else {
		p, err = startOurs(r.cfg.Bins, r.kubeconfig, r.cfg.Budget, r.cfg.Side.Mode, leaderElect, r.oursFlags(), logPath)
	}
	if err != nil {
		return nil, err
	}
	r.procs = append(r.procs, p)
	return p, nil
}

// oursFlags are the variant's flags for taintevict's command.
func (r *run) oursFlags() []string {
	if r.cfg.Variant != VariantBrake && r.cfg.Variant != VariantBrakeRestart {
		return nil
	}
	zone := len(r.cfg.Saved.Shape.Zone(0))
	back := comeBack(zone)
	// Held while more than this fraction of the nodes carry the taint, until fewer do:
	// half a node under zone a's share, and half a node over what is left once back of
	// its nodes come back.
	f := (float64(zone-back) + 0.5) / float64(r.cfg.Saved.Shape.Nodes)
	return []string{fmt.Sprintf("-brake-fraction=%.6f", f)}
}

// comeBack is how many of a zone's nodes come back to let the brake go: 1%, at least one.
func comeBack(zoneNodes int) int { return max(1, zoneNodes/100) }

// start taints StartNodes nodes of zone b out-of-service, starts the side, and measures its
// time to ready and to its first correct decision.
func (r *run) start(ctx context.Context) error {
	zoneB := r.cfg.Saved.Shape.Zone(1)
	nodes := zoneB[:min(r.cfg.StartNodes, len(zoneB))]
	e := r.expect(time.Now(), nil)
	for _, i := range nodes {
		for j := range r.cfg.Saved.Shape.PodsPerNode {
			e.due[podOf(i, j)] = e.from
			delete(e.spared, podOf(i, j))
		}
	}
	if err := r.taint(ctx, nodes, v1.Taint{Key: v1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: v1.TaintEffectNoExecute}, false); err != nil {
		return err
	}
	r.res.StartDue = len(e.due)
	replicas := 1
	if r.cfg.Variant == VariantFailover {
		replicas = 2
	}
	p, err := r.launch(replicas > 1, false)
	if err != nil {
		return err
	}
	ready, err := p.waitReady(ctx, 10*time.Minute)
	if err != nil {
		return err
	}
	r.res.Ready = ready.Sub(p.started).Seconds()
	r.logf("ready in %.2f s", r.res.Ready)
	if r.cfg.Side.Alone {
		time.Sleep(r.cfg.Settle)
		recs, err := r.audit.poll()
		if err != nil {
			return err
		}
		r.res.StartRemoved = judge(recs, *e).Removed
		r.res.StartCorrect = true // not judged: its double removals are kube's, shown by kube's own side
		r.logf("alone: %d of the %d pods of the out-of-service nodes removed %.0f s after it was ready", r.res.StartRemoved, len(e.due), r.cfg.Settle.Seconds())
		return nil
	}
	o, err := r.waitRemoved(ctx, e, len(e.due))
	if err != nil {
		return err
	}
	r.res.Decision = o.firsts[0].Sub(p.started).Seconds()
	r.res.StartCorrect, r.res.StartTwice = o.correct(), o.RemovedTwice
	r.logf("first correct decision %.2f s after the start; %d of %d removed, twice %d, early %d, spared touched %d", r.res.Decision, o.Removed, o.Due, o.RemovedTwice, o.Early, o.TouchedSpared)
	if replicas > 1 {
		if err := r.waitLeader(ctx); err != nil {
			return err
		}
		p2, err := r.launch(true, true)
		if err != nil {
			return err
		}
		if _, err := p2.waitReady(ctx, 10*time.Minute); err != nil {
			return err
		}
	}
	return nil
}

// expect is the expectation of a phase from from on: no pod spared but those of
// unspared; due ones added by the caller.
func (r *run) expect(from time.Time, unspared map[podRef]bool) *expect {
	e := &expect{users: map[string]bool{r.user: true}, due: map[podRef]time.Time{}, spared: map[podRef]bool{}, from: from, evict: r.cfg.Side.Mode == "evict"}
	shape := r.cfg.Saved.Shape
	for i := range shape.Nodes {
		for j := range shape.PodsPerNode {
			if ref := podOf(i, j); !unspared[ref] {
				e.spared[ref] = true
			}
		}
	}
	return e
}

// steady measures the side's memory and CPU over a quiet window, and the what-if.
func (r *run) steady(ctx context.Context) error {
	time.Sleep(r.cfg.Settle)
	p := r.procs[0]
	cpu0, _, _, err := p.usage()
	if err != nil {
		return err
	}
	api0, etcd0, err := r.plane.CPU()
	if err != nil {
		return err
	}
	began := time.Now()
	time.Sleep(r.cfg.Quiet)
	cpu1, rss, peak, err := p.usage()
	if err != nil {
		return err
	}
	api1, etcd1, err := r.plane.CPU()
	if err != nil {
		return err
	}
	d := time.Since(began).Seconds()
	apiPID, etcdPID := r.plane.PIDs()
	_, r.res.APIServerRSSMB, _, _ = pidUsage(apiPID)
	_, r.res.EtcdRSSMB, _, _ = pidUsage(etcdPID)
	r.res.RSSMB, r.res.PeakMB, r.res.QuietCPU = rss, peak, (cpu1-cpu0).Seconds()/d
	r.res.APIServerIdle, r.res.EtcdIdle = (api1-api0).Seconds()/d, (etcd1-etcd0).Seconds()/d
	r.logf("steady: RSS %.0f MB (peak %.0f), CPU %.3f cores over %.0f s; API server %.3f cores, %.0f MB; etcd %.3f, %.0f MB",
		rss, peak, r.res.QuietCPU, d, r.res.APIServerIdle, r.res.APIServerRSSMB, r.res.EtcdIdle, r.res.EtcdRSSMB)
	if r.cfg.WhatIf && !r.cfg.Side.Kube && !r.cfg.Side.Flood {
		return r.whatIf(ctx)
	}
	return nil
}

// whatIf runs the plugin's what-if of zone a against the API server, as JSON, and
// measures the CPU it takes of the plugin, kube-apiserver and etcd (with
// RunConfig.ProfileDir, their profiles too).
func (r *run) whatIf(ctx context.Context) error {
	args := []string{"what-if", "-l", v1.LabelTopologyZone + "=a", "-o", "json", "--timings", "--kubeconfig", r.kubeconfig}
	profiled := make(chan error, 1)
	if dir := r.cfg.ProfileDir; dir != "" {
		args = append(args, "--cpuprofile", filepath.Join(dir, "whatif-plugin.pprof"))
		go func() { profiled <- r.apiserverProfile(ctx, filepath.Join(dir, "whatif-apiserver.pprof")) }()
		time.Sleep(time.Second) // the profile's start, before the what-if's
	} else {
		profiled <- nil
	}
	cmd := exec.CommandContext(ctx, r.cfg.Bins.Plugin, args...)
	var errOut strings.Builder
	cmd.Stdout, cmd.Stderr = io.Discard, &errOut
	api0, etcd0, err := r.plane.CPU()
	if err != nil {
		return err
	}
	began := time.Now()
	err = cmd.Run()
	r.res.WhatIf = time.Since(began).Seconds()
	if err != nil {
		// Exit code 1 says the what-if would evict pods: its answer, not a failure.
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() > 1 {
			return fmt.Errorf("scale: what-if: %v: %s", err, errOut.String())
		}
	}
	api1, etcd1, err := r.plane.CPU()
	if err != nil {
		return err
	}
	ps := cmd.ProcessState
	r.res.WhatIfCPU = [3]float64{(ps.UserTime() + ps.SystemTime()).Seconds(), (api1 - api0).Seconds(), (etcd1 - etcd0).Seconds()}
	r.res.WhatIfTimings = strings.TrimSpace(errOut.String())
	r.logf("what-if of zone a: %.2f s (%s); CPU s: plugin %.2f, kube-apiserver %.2f, etcd %.2f",
		r.res.WhatIf, r.res.WhatIfTimings, r.res.WhatIfCPU[0], r.res.WhatIfCPU[1], r.res.WhatIfCPU[2])
	return <-profiled
}

// whatIfProfileSeconds is how long kube-apiserver's profile of the what-if runs: longer
// than the what-if at the largest size run.
const whatIfProfileSeconds = 40

// apiserverProfile writes kube-apiserver's CPU profile over the next
// whatIfProfileSeconds to file.
func (r *run) apiserverProfile(ctx context.Context, file string) error {
	body, err := r.plane.Admin.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
		Param("seconds", strconv.Itoa(whatIfProfileSeconds)).Timeout(2 * whatIfProfileSeconds * time.Second).DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("scale: kube-apiserver's profile: %w", err)
	}
	return os.WriteFile(file, body, 0o644)
}

// outage makes zone a's nodes unreachable at once, as the node lifecycle controller marks
// them (Ready Unknown, then the unreachable taints), and measures the removals.
func (r *run) outage(ctx context.Context) error {
	shape := r.cfg.Saved.Shape
	zone := shape.Zone(0)
	brake := r.cfg.Variant == VariantBrake || r.cfg.Variant == VariantBrakeRestart
	back := map[int]bool{}
	if brake {
		for _, i := range zone[len(zone)-comeBack(len(zone)):] {
			back[i] = true
		}
	}
	t0 := time.Now()
	added := t0.Truncate(time.Second)
	deadline := added.Add(shape.Toleration)
	due := map[podRef]bool{}
	for _, i := range zone {
		for j := range shape.PodsPerNode {
			if kind(j) == kindReplica && !back[i] {
				due[podOf(i, j)] = true
			}
		}
	}
	e := r.expect(t0, due)
	for ref := range due {
		e.due[ref] = deadline
	}
	r.res.Deadline = deadline.Sub(t0).Seconds()
	api0, etcd0, err := r.plane.CPU()
	if err != nil {
		return err
	}
	side0 := r.sideCPU()
	if err := r.markUnknown(ctx, zone); err != nil {
		return err
	}
	if err := r.taint(ctx, zone, v1.Taint{Key: v1.TaintNodeUnreachable, Effect: v1.TaintEffectNoExecute, TimeAdded: &metav1.Time{Time: added}}, true); err != nil {
		return err
	}
	r.logf("zone a tainted (%d nodes, %d pods due at +%.0f s) in %.2f s", len(zone), len(due), deadline.Sub(t0).Seconds(), time.Since(t0).Seconds())
	if r.cfg.Side.Alone {
		time.Sleep(time.Until(deadline.Add(15 * time.Second)))
		recs, err := r.audit.poll()
		if err != nil {
			return err
		}
		r.res.Outage = judge(recs, *e)
		r.logf("alone: %d of %d due pods removed 15 s after their deadline", r.res.Outage.Removed, r.res.Outage.Due)
		return nil
	}
	if brake {
		if err := r.holdThenLetGo(ctx, e, zone, back, t0); err != nil {
			return err
		}
	}
	var o outcome
	if r.cfg.Variant == VariantRestart || r.cfg.Variant == VariantFailover {
		if o, err = r.killMidway(ctx, e, t0); err != nil {
			return err
		}
	}
	if o, err = r.waitRemoved(ctx, e, len(e.due)); err != nil && !errors.Is(err, errTimeout) {
		return err
	}
	r.res.Complete = err == nil
	api1, etcd1, cerr := r.plane.CPU()
	if cerr != nil {
		return cerr
	}
	r.res.Outage = o
	r.res.Window = time.Since(t0).Seconds()
	r.res.APIServerCPU, r.res.EtcdCPU = (api1 - api0).Seconds(), (etcd1 - etcd0).Seconds()
	r.res.SideCPU = (r.sideCPU() - side0).Seconds()
	r.logf("outage: %d of %d removed (and %d by requests answered 5xx), first %.2f, half %.2f, last %.2f s after the taint; twice %d, early %d, spared touched %d",
		o.Removed, o.Due, o.Unacked, o.First, o.Half, o.Last, o.RemovedTwice, o.Early, o.TouchedSpared)
	return nil
}

// holdThenLetGo waits out the hold (restarting the side midway for VariantBrakeRestart),
// counts the removals while the brake held, and brings the nodes of back back.
func (r *run) holdThenLetGo(ctx context.Context, e *expect, zone []int, back map[int]bool, t0 time.Time) error {
	if r.cfg.Variant == VariantBrakeRestart {
		time.Sleep(r.cfg.Hold / 2)
		if _, err := r.restart(ctx, false); err != nil {
			return err
		}
	}
	time.Sleep(time.Until(t0.Add(r.cfg.Hold)))
	held, err := r.audit.poll()
	if err != nil {
		return err
	}
	r.res.HeldRemovals = judge(held, *e).Removed
	r.res.LetGo = time.Since(t0).Seconds()
	var nodes []int
	for _, i := range zone {
		if back[i] {
			nodes = append(nodes, i)
		}
	}
	r.logf("brake held for %.1f s with %d removals; %d nodes come back", r.res.LetGo, r.res.HeldRemovals, len(nodes))
	return r.untaint(ctx, nodes)
}

// killMidway kills the side (its leader, for a failover) once half the due pods are
// removed, restarts it unless a standby takes over, and measures the time to the next
// removal.
func (r *run) killMidway(ctx context.Context, e *expect, t0 time.Time) (outcome, error) {
	o, err := r.waitRemoved(ctx, e, len(e.due)/2)
	if err != nil {
		return o, err
	}
	failover := r.cfg.Variant == VariantFailover
	holder := ""
	if failover {
		if holder, err = r.leaseHolder(ctx); err != nil {
			return o, err
		}
	}
	killed, err := r.restart(ctx, failover)
	if err != nil {
		return o, err
	}
	r.res.Killed = killed.Sub(t0).Seconds()
	// The next removal sent by the new process (the new leader, once it took the Lease):
	// the killed process's requests may still reach the server after it died.
	since := r.procs[len(r.procs)-1].started
	if failover {
		for {
			h, err := r.leaseHolder(ctx)
			if err != nil {
				return o, err
			}
			if h != holder {
				since = time.Now()
				r.logf("the standby took the Lease %.2f s after the kill", since.Sub(killed).Seconds())
				break
			}
			if time.Since(killed) > r.cfg.Timeout {
				return o, fmt.Errorf("%w: the standby never took the Lease", errTimeout)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	for r.res.Resume == 0 {
		if err := ctx.Err(); err != nil {
			return o, err
		}
		if _, err := r.audit.poll(); err != nil {
			return o, err
		}
		for _, rec := range r.audit.recs {
			if _, due := e.due[podRef{rec.Namespace, rec.Name}]; due && e.users[rec.User] && rec.Received.After(since) &&
				rec.Code >= 200 && rec.Code < 300 && rec.Resource == "pods" && removes(rec, e.evict) {
				if d := rec.Completed.Sub(killed).Seconds(); r.res.Resume == 0 || d < r.res.Resume {
					r.res.Resume = d
				}
			}
		}
		if time.Since(killed) > r.cfg.Timeout {
			return o, fmt.Errorf("%w: no removal after the kill", errTimeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
	next, err := r.waitRemoved(ctx, e, o.Removed+1)
	if err != nil {
		return next, err
	}
	r.logf("killed at +%.2f s with %d removed; the next removal sent after it completed %.2f s later", r.res.Killed, o.Removed, r.res.Resume)
	return next, nil
}

// restart kills the side's first live process (the leader, of two replicas) and returns
// when it had exited; unless standby, it starts a new one.
func (r *run) restart(ctx context.Context, standby bool) (killed time.Time, err error) {
	for _, p := range r.procs {
		if p.alive() == nil {
			p.kill()
			break
		}
	}
	killed = time.Now()
	if !standby {
		_, err = r.launch(false, false)
	}
	return killed, err
}

// sideCPU is the CPU time of the side's processes so far (those that have exited: until
// their last reading).
func (r *run) sideCPU() time.Duration {
	var sum time.Duration
	for _, p := range r.procs {
		if cpu, _, _, err := p.usage(); err == nil {
			p.lastCPU = cpu
		}
		sum += p.lastCPU
	}
	return sum
}

// waitRemoved reads the audit log until n of e's due pods are removed, and judges it.
// It fails with errTimeout after RunConfig.Timeout.
func (r *run) waitRemoved(ctx context.Context, e *expect, n int) (outcome, error) {
	deadline := time.Now().Add(r.cfg.Timeout)
	for {
		recs, err := r.audit.poll()
		if err != nil {
			return outcome{}, err
		}
		if done := r.audit.removed(e); done >= n || done+len(unanswered(recs, *e)) >= n {
			o := judge(recs, *e)
			if o.Unacked, err = r.unacked(ctx, recs, e); err != nil {
				return o, err
			}
			if o.Removed+o.Unacked >= n {
				return o, nil
			}
		}
		if time.Now().After(deadline) {
			return judge(recs, *e), fmt.Errorf("%w waiting for %d removals", errTimeout, n)
		}
		live := false
		for _, p := range r.procs {
			live = live || p.alive() == nil
		}
		if !live {
			return judge(recs, *e), fmt.Errorf("scale: no process of the side is running: %s", r.procs[len(r.procs)-1].tail())
		}
		select {
		case <-ctx.Done():
			return outcome{}, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// unacked counts the due pods of e whose removals were all answered 5xx, but whose pod
// carries a deletionTimestamp all the same: the server applied a request whose answer
// never reached its client.
func (r *run) unacked(ctx context.Context, recs []Record, e *expect) (int, error) {
	n := 0
	for _, ref := range unanswered(recs, *e) {
		p, err := r.plane.Admin.CoreV1().Pods(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) || err == nil && p.DeletionTimestamp != nil:
			n++
		case err != nil:
			return n, err
		}
	}
	return n, nil
}

// waitLeader waits until a replica holds the side's Lease.
func (r *run) waitLeader(ctx context.Context) error {
	for range 600 {
		h, err := r.leaseHolder(ctx)
		if err != nil {
			return err
		}
		if h != "" {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("scale: no replica took the side's Lease")
}

// leaseHolder is the holder of the side's Lease, "" if none.
func (r *run) leaseHolder(ctx context.Context) (string, error) {
	ns, name := leaseNamespace, "taintevict-controller"
	if r.cfg.Side.Kube {
		ns, name = "kube-system", "kube-controller-manager"
	}
	l, err := r.plane.Admin.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", err
	case l.Spec.HolderIdentity == nil:
		return "", nil
	}
	return *l.Spec.HolderIdentity, nil
}

// taint adds t to the nodes, one PATCH each, many at once; with noSchedule also the
// NoSchedule taint of the same key, as the node lifecycle controller does.
func (r *run) taint(ctx context.Context, nodes []int, t v1.Taint, noSchedule bool) error {
	taints := []v1.Taint{t}
	if noSchedule {
		taints = append(taints, v1.Taint{Key: t.Key, Effect: v1.TaintEffectNoSchedule})
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"taints": taints}})
	if err != nil {
		return err
	}
	return r.eachNode(ctx, nodes, func(ctx context.Context, name string) error {
		_, err := r.plane.Admin.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
}

// untaint removes every taint of the nodes and marks them Ready again.
func (r *run) untaint(ctx context.Context, nodes []int) error {
	patch := []byte(`{"spec":{"taints":null}}`)
	return r.eachNode(ctx, nodes, func(ctx context.Context, name string) error {
		_, err := r.plane.Admin.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
}

// markUnknown writes Ready Unknown into the nodes' status, as the node lifecycle controller
// does once their kubelets stop posting.
func (r *run) markUnknown(ctx context.Context, nodes []int) error {
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": nodeConditions(metav1.Now(), v1.ConditionUnknown)}})
	if err != nil {
		return err
	}
	return r.eachNode(ctx, nodes, func(ctx context.Context, name string) error {
		_, err := r.plane.Admin.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		return err
	})
}

// eachNode calls f for each node, 64 at once.
func (r *run) eachNode(ctx context.Context, nodes []int, f func(context.Context, string) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(64)
	for _, i := range nodes {
		g.Go(func() error {
			if err := f(gctx, nodeName(i)); err != nil {
				return fmt.Errorf("scale: node %s: %w", nodeName(i), err)
			}
			return nil
		})
	}
	return g.Wait()
}

// auditLog is the run's audit log, read as it grows.
type auditLog struct {
	reader *realapiserver.AuditReader
	recs   []Record
}

// poll reads what the log gained and returns all of it.
func (a *auditLog) poll() ([]Record, error) {
	more, err := a.reader.Read()
	if err != nil {
		return nil, err
	}
	a.recs = append(a.recs, more...)
	return a.recs, nil
}

// removed counts e's due pods removed successfully so far, reading only the records
// it has not read before for e.
func (a *auditLog) removed(e *expect) int {
	if e.seen == nil {
		e.seen = map[podRef]bool{}
	}
	for _, r := range a.recs[e.scanned:] {
		if e.users[r.User] && !r.Completed.Before(e.from) && r.Resource == "pods" && r.Code >= 200 && r.Code < 300 && removes(r, e.evict) {
			ref := podRef{r.Namespace, r.Name}
			if _, ok := e.due[ref]; ok {
				e.seen[ref] = true
			}
		}
	}
	e.scanned = len(a.recs)
	return len(e.seen)
}

// loadAverage is the 1-minute load average, or -1 if it cannot be read.
func loadAverage() float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	var v float64
	if _, err := fmt.Sscan(string(raw), &v); err != nil {
		return -1
	}
	return v
}
