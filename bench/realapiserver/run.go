package realapiserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// RunConfig is one run of one side.
type RunConfig struct {
	// Assets holds kube-apiserver and etcd (see AssetsDir).
	Assets string
	Side   Side
	Client Client
	Shape  Shape
	// FlowSchema is the file of taintevict's FlowSchema (FlowSchemaFile from bench/).
	FlowSchema string
	// Self is the program that runs a side when given ChildArgs: cmd/realapiserver.
	Self string
	// Timeout bounds the wait for the evictions and the Events after the taint.
	Timeout time.Duration
	// Quiet is how long the run waits for more Events once every pod is removed and no
	// Event came for that long, before it gives up on the missing ones.
	Quiet time.Duration
	// CPUWindow is the least time from the taint over which the control plane's CPU is
	// counted: the same for every side of a budget, long enough for the slowest to have
	// written every Event, so that each side's figure holds as much idle time as the
	// others'. 0 counts until the side's last removal or Event.
	CPUWindow time.Duration
	// Settle is how long the run waits once the side is synced, before it samples the idle
	// CPU: for the side to take in the listing, and the API server to finish serving it.
	Settle time.Duration
	// IdleWindow is how long the control plane's CPU is sampled, with the side synced and
	// nothing to do, before the taint: its idle rate.
	IdleWindow time.Duration
	// Profile, if not "", is a file to write a CPU profile of kube-apiserver to, taken
	// from right before the taint over CPUWindow (at least a second): where the API
	// server's time goes, by handler, for the sides' requests.
	Profile string
	// SideProfile, if not "", is a file to write a CPU profile of the side's process to,
	// from its caches' sync until it stops.
	SideProfile string
	// Log, if not nil, gets a line per step.
	Log io.Writer
}

// Result is what a run measured.
type Result struct {
	Side        string  `json:"side"`
	QPS         float32 `json:"qps"`
	Burst       int     `json:"burst"`
	ContentType string  `json:"content_type"`
	EventsQPS   float32 `json:"events_qps,omitempty"`
	EventsBurst int     `json:"events_burst,omitempty"`
	Nodes       int     `json:"nodes"`
	PodsPerNode int     `json:"pods_per_node"`
	// Run is the run's number, from 0, and Order the side's place in it.
	Run, Order int
	Measurement
	// APIServerCPU and EtcdCPU are their CPU seconds from right before the first taint, over
	// Window seconds: the later of RunConfig.CPUWindow and the last removal or Event the
	// run saw.
	APIServerCPU, EtcdCPU float64
	Window                float64
	// APIServerIdle and EtcdIdle are their CPU seconds per second while the side was synced
	// and idle, before the taint (RunConfig.IdleWindow).
	APIServerIdle, EtcdIdle float64
	// ControllerCPU is the side's CPU seconds from its caches' sync until it stopped.
	ControllerCPU float64
	// Synced is the side's time from its start until it was ready.
	Synced float64
	// Levels counts the side's responses by the priority level they were served at.
	Levels map[string]int
	// Load is /proc/loadavg's 1-minute average before and after the run.
	Load [2]float64
	// Complete says that every untolerating pod was removed and every Event written.
	Complete bool
	// Workers is taintevict's Deleter calls allowed at once over the run (ChildReport.Workers).
	Workers string `json:",omitempty"`
}

// Run runs cfg.Side once on a fresh control plane and measures it.
func Run(ctx context.Context, cfg RunConfig, run, order int) (res Result, err error) {
	res = Result{Side: cfg.Side.String(), QPS: cfg.Client.QPS, Burst: cfg.Client.Burst, ContentType: cfg.Client.ContentType,
		Nodes: cfg.Shape.Nodes, PodsPerNode: cfg.Shape.PodsPerNode, Run: run, Order: order}
	if !cfg.Side.Kube && !cfg.Side.Flood {
		res.EventsQPS, res.EventsBurst = cfg.Client.EventsQPS, cfg.Client.EventsBurst
	}
	res.Load[0] = loadAverage()
	logf := func(format string, args ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "  %s: "+format+"\n", append([]any{res.Side}, args...)...)
		}
	}
	cp, err := StartControlPlane(cfg.Assets)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, cp.Stop()) }()
	adminRC := *cp.Admin
	adminRC.QPS, adminRC.Burst = 5000, 10000
	admin, err := kubernetes.NewForConfig(&adminRC)
	if err != nil {
		return res, err
	}
	cluster, err := BuildCluster(ctx, admin, cfg.Shape)
	if err != nil {
		return res, err
	}
	user, err := sideUser(ctx, admin, cfg)
	if err != nil {
		return res, err
	}
	rc, err := cp.User(ctx, user, userGroups(user))
	if err != nil {
		return res, err
	}
	kubeconfig, err := cp.WriteKubeconfig(rc, "side")
	if err != nil {
		return res, err
	}
	levels, err := PriorityLevels(ctx, admin)
	if err != nil {
		return res, err
	}
	logf("%d nodes, %d pods; starting", len(cluster.Nodes), len(cluster.Tolerating)+len(cluster.Untolerating))

	child, err := startChild(cfg.Self, ChildConfig{Side: cfg.Side, Kubeconfig: kubeconfig, Client: cfg.Client, Profile: cfg.SideProfile}, filepath.Join(cp.Dir(), "side.log"))
	if err != nil {
		return res, err
	}
	defer func() {
		done, stopErr := child.stop()
		res.ControllerCPU, res.Workers = done.CPU-res.ControllerCPU, done.Workers
		res.Levels = map[string]int{}
		for uid, n := range done.Levels {
			name := levels[uid]
			if name == "" {
				name = "none"
			}
			res.Levels[name] += n
		}
		err = errors.Join(err, stopErr)
	}()
	rep, err := child.synced(2 * time.Minute)
	if err != nil {
		return res, err
	}
	res.Synced, res.ControllerCPU = rep.Synced, rep.CPU
	// Let the side take in the listing (kube's controller and the Manager each look at
	// every pod once), and the API server finish serving it, before the clock starts.
	time.Sleep(cfg.Settle)
	idleAPI, idleEtcd, err := cp.CPU()
	if err != nil {
		return res, err
	}
	idleStart := time.Now()
	time.Sleep(cfg.IdleWindow)

	apiCPU0, etcdCPU0, err := cp.CPU()
	if err != nil {
		return res, err
	}
	tainted := time.Now()
	if d := tainted.Sub(idleStart).Seconds(); d > 0 {
		res.APIServerIdle, res.EtcdIdle = (apiCPU0-idleAPI).Seconds()/d, (etcdCPU0-idleEtcd).Seconds()/d
	}
	logf("synced in %.2f s; tainting", res.Synced)
	profiled := make(chan error, 1)
	if cfg.Profile != "" {
		go func() { profiled <- profileAPIServer(ctx, admin, cfg.Profile, max(cfg.CPUWindow, time.Second)) }()
	} else {
		profiled <- nil
	}
	if err := cluster.TaintAll(ctx, admin); err != nil {
		return res, err
	}
	judge := Judge{Cluster: cluster, User: user, Evict: cfg.Side.Mode == "evict"}
	audit := NewAuditReader(cp.AuditLog)
	var recs []Record
	deadline := time.Now().Add(cfg.Timeout)
	lastProgress, progress := time.Now(), -1
	apiCPU, etcdCPU, cpuAt := apiCPU0, etcdCPU0, tainted
	for {
		more, err := audit.Read()
		if err != nil {
			return res, err
		}
		recs = append(recs, more...)
		res.Measurement = Measure(recs, judge)
		if p := res.Removed + res.Events; p != progress {
			progress, lastProgress = p, time.Now()
			if apiCPU, etcdCPU, err = cp.CPU(); err != nil {
				return res, err
			}
			cpuAt = time.Now()
		}
		allRemoved := res.Removed == res.Evictions
		res.Complete = allRemoved && (res.Events >= res.Evictions || cfg.Side.Flood) // the flood writes no Events
		if res.Complete || allRemoved && time.Since(lastProgress) > cfg.Quiet || time.Now().After(deadline) {
			break
		}
		if err := child.alive(); err != nil {
			return res, err
		}
		time.Sleep(250 * time.Millisecond)
	}
	if end := tainted.Add(cfg.CPUWindow); cpuAt.Before(end) {
		time.Sleep(time.Until(end))
		if apiCPU, etcdCPU, err = cp.CPU(); err != nil {
			return res, err
		}
		cpuAt = time.Now()
	}
	if err := <-profiled; err != nil {
		return res, err
	}
	res.Window = cpuAt.Sub(tainted).Seconds()
	res.APIServerCPU, res.EtcdCPU = (apiCPU - apiCPU0).Seconds(), (etcdCPU - etcdCPU0).Seconds()
	res.Load[1] = loadAverage()
	logf("removed %d of %d, last at +%.2f s; %d Events; complete %v", res.Removed, res.Evictions, res.Last, res.Events, res.Complete)
	return res, nil
}

// sideUser is the user name the side runs as; for taintevict it applies its FlowSchema.
func sideUser(ctx context.Context, admin kubernetes.Interface, cfg RunConfig) (string, error) {
	if cfg.Side.Kube {
		return KubeUser, nil
	}
	fs, user, err := LoadFlowSchema(cfg.FlowSchema)
	if err != nil {
		return "", err
	}
	if _, err := admin.FlowcontrolV1().FlowSchemas().Create(ctx, fs, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("realapiserver: creating the FlowSchema %s: %w", fs.Name, err)
	}
	return user, nil
}

// loadAverage is the 1-minute load average, or -1 if it cannot be read.
func loadAverage() float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

// ChildArgs are the arguments that make Self run cfg (ParseChildArgs reads them back).
func ChildArgs(cfg ChildConfig) []string {
	args := []string{"-child", cfg.Side.String(), "-kubeconfig", cfg.Kubeconfig,
		"-qps", fmt.Sprint(cfg.Client.QPS), "-burst", strconv.Itoa(cfg.Client.Burst),
		"-content-type", cfg.Client.ContentType,
		"-events-qps", fmt.Sprint(cfg.Client.EventsQPS), "-events-burst", strconv.Itoa(cfg.Client.EventsBurst)}
	if cfg.ExitWhenSynced {
		args = append(args, "-exit-when-synced")
	}
	if cfg.Profile != "" {
		args = append(args, "-profile", cfg.Profile)
	}
	return args
}

// ParseChildArgs reads the arguments ChildArgs writes.
func ParseChildArgs(args []string) (ChildConfig, error) {
	var cfg ChildConfig
	var side string
	var qps, eventsQPS float64
	fs := flag.NewFlagSet("child", flag.ContinueOnError)
	fs.StringVar(&side, "child", "", "the side")
	fs.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "")
	fs.Float64Var(&qps, "qps", 0, "")
	fs.IntVar(&cfg.Client.Burst, "burst", 0, "")
	fs.StringVar(&cfg.Client.ContentType, "content-type", ContentProtobuf, "")
	fs.Float64Var(&eventsQPS, "events-qps", 0, "")
	fs.IntVar(&cfg.Client.EventsBurst, "events-burst", 0, "")
	fs.BoolVar(&cfg.ExitWhenSynced, "exit-when-synced", false, "")
	fs.StringVar(&cfg.Profile, "profile", "", "")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	cfg.Client.QPS, cfg.Client.EventsQPS = float32(qps), float32(eventsQPS)
	var err error
	cfg.Side, err = ParseSide(side)
	return cfg, err
}

// child is a side's process.
type child struct {
	cmd     *exec.Cmd
	reports chan ChildReport
	exited  chan struct{}
	err     error // once exited is closed
	logPath string
}

// startChild starts self with cfg's arguments; its stderr goes to logPath.
func startChild(self string, cfg ChildConfig, logPath string) (*child, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	c := &child{reports: make(chan ChildReport, 2), exited: make(chan struct{}), logPath: logPath}
	c.cmd = exec.Command(self, ChildArgs(cfg)...)
	c.cmd.Stderr = logf
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("realapiserver: starting %s: %w", self, err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var r ChildReport
			if json.Unmarshal(sc.Bytes(), &r) == nil {
				c.reports <- r
			}
		}
		c.err = c.cmd.Wait()
		logf.Close()
		close(c.exited)
	}()
	return c, nil
}

// synced waits for the report that the side is ready.
func (c *child) synced(timeout time.Duration) (ChildReport, error) {
	select {
	case r := <-c.reports:
		return r, nil
	case <-c.exited:
		return ChildReport{}, fmt.Errorf("realapiserver: the side exited before it was ready (%v); its log: %s", c.err, c.tail())
	case <-time.After(timeout):
		return ChildReport{}, fmt.Errorf("realapiserver: the side was not ready after %s; its log: %s", timeout, c.tail())
	}
}

// alive fails if the side has exited.
func (c *child) alive() error {
	select {
	case <-c.exited:
		return fmt.Errorf("realapiserver: the side exited (%v); its log: %s", c.err, c.tail())
	default:
		return nil
	}
}

// stop ends the side with SIGTERM and returns its last report.
func (c *child) stop() (ChildReport, error) {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(time.Minute):
		_ = c.cmd.Process.Kill()
		<-c.exited
		return ChildReport{}, fmt.Errorf("realapiserver: the side still ran a minute after SIGTERM; its log: %s", c.tail())
	}
	var last ChildReport
	for {
		select {
		case r := <-c.reports:
			last = r
		default:
			if !last.Done {
				return last, fmt.Errorf("realapiserver: the side stopped without its report (%v); its log: %s", c.err, c.tail())
			}
			return last, nil
		}
	}
}

// tail is the end of the side's log.
func (c *child) tail() string {
	raw, _ := os.ReadFile(c.logPath)
	if len(raw) > 2000 {
		raw = raw[len(raw)-2000:]
	}
	return string(raw)
}

// profileAPIServer writes to path a CPU profile of the API server admin talks to, taken over
// d (the server's /debug/pprof/profile, on by its --profiling default).
func profileAPIServer(ctx context.Context, admin kubernetes.Interface, path string, d time.Duration) error {
	raw, err := admin.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").
		Param("seconds", strconv.Itoa(int(d.Round(time.Second)/time.Second))).Timeout(d + time.Minute).DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("realapiserver: profiling kube-apiserver: %w", err)
	}
	return os.WriteFile(path, raw, 0o644)
}
