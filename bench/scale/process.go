package scale

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/taintevict/taintevict/bench/realapiserver"
)

// Binaries are the programs of the sides.
type Binaries struct {
	// KCM is kube-controller-manager (hack/kube-assets.sh builds it with kube-apiserver).
	KCM string
	// Controller is taintevict's command (examples/controller), Plugin its kubectl plugin
	// (examples/kubectl-taintevict).
	Controller, Plugin string
	// Flood is the scale command itself, which runs FloodChild with -flood-child first.
	Flood string
}

// BuildBinaries builds taintevict's command and plugin from the repository at root into
// dir, and names kube-controller-manager in assets (its runs fail if it is not there).
func BuildBinaries(ctx context.Context, root, assets, dir string) (Binaries, error) {
	b := Binaries{KCM: filepath.Join(assets, "kube-controller-manager"),
		Controller: filepath.Join(dir, "controller"), Plugin: filepath.Join(dir, "kubectl-taintevict")}
	for out, pkg := range map[string]string{b.Controller: "./examples/controller", b.Plugin: "./examples/kubectl-taintevict"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOWORK=") // the repository's go.work
		if raw, err := cmd.CombinedOutput(); err != nil {
			return b, fmt.Errorf("scale: building %s: %v\n%s", pkg, err, raw)
		}
	}
	return b, nil
}

// executable fails, with the command that builds it, unless path is an executable file.
func executable(path string) error {
	if info, err := os.Stat(path); err != nil || info.Mode()&0o111 == 0 {
		return fmt.Errorf("scale: no executable %s: build it with %s (from the repository root)", path, realapiserver.AssetsCommand)
	}
	return nil
}

// Budget is a client's rate limit: both sides get the same.
type Budget struct {
	QPS   float64 `json:"qps"`
	Burst int     `json:"burst"`
}

// String is "qps QPS, burst BURST".
func (b Budget) String() string { return fmt.Sprintf("qps %g, burst %d", b.QPS, b.Burst) }

// proc is a side's process: kube-controller-manager or taintevict's command.
type proc struct {
	cmd     *exec.Cmd
	started time.Time
	logPath string
	exited  chan struct{}
	err     error // once exited is closed
	// ready says whether the process has synced its caches.
	ready func() bool
	// lastCPU is its CPU time when last read (see run.sideCPU).
	lastCPU time.Duration
}

// kcmControllers are the controllers kube's side runs: its taint-eviction-controller, and
// the daemonset-controller, inert here (the cluster holds no DaemonSet), only because it
// adds the pod informer's spec.nodeName index that taint-eviction-controller reads but never
// adds itself; without it (or node-lifecycle-controller) a newly tainted node evicts nothing
// (see Side.Alone).
const kcmControllers = "taint-eviction-controller,daemonset-controller"

// startKCM starts kube-controller-manager with controllers, on kubeconfig, at budget; a
// standby is a second replica, with leaderElect, while the first leads.
func startKCM(bins Binaries, controllers, kubeconfig string, budget Budget, leaderElect, standby bool, logPath string) (*proc, error) {
	if err := executable(bins.KCM); err != nil {
		return nil, err
	}
	args := []string{"--kubeconfig=" + kubeconfig, "--controllers=" + controllers,
		"--kube-api-qps=" + strconv.FormatFloat(budget.QPS, 'g', -1, 64), "--kube-api-burst=" + strconv.Itoa(budget.Burst),
		"--leader-elect=" + strconv.FormatBool(leaderElect), "--secure-port=0", "--v=2"}
	p, err := startProc(bins.KCM, args, logPath)
	if err != nil {
		return nil, err
	}
	// kube v1.37 logs its informers' sync without the controller's name; the controllers
	// of kcmControllers share the pod and node informers, so the first such line is
	// taint-eviction-controller's to within a millisecond.
	p.ready = func() bool { return logHas(logPath, `"Caches are synced"`) }
	if standby {
		// A standby kube-controller-manager starts its controllers, and their informers,
		// only once it leads: it is ready when it waits for the Lease.
		p.ready = func() bool { return logHas(logPath, "to acquire leader lease") }
	}
	return p, nil
}

// startOurs starts taintevict's command on kubeconfig at budget, in mode, with extra flags.
func startOurs(bins Binaries, kubeconfig string, budget Budget, mode string, leaderElect bool, extra []string, logPath string) (*proc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	args := append([]string{"-kubeconfig=" + kubeconfig, "-mode=" + mode,
		"-kube-api-qps=" + strconv.FormatFloat(budget.QPS, 'g', -1, 64), "-kube-api-burst=" + strconv.Itoa(budget.Burst),
		"-leader-elect=" + strconv.FormatBool(leaderElect), "-metrics-addr=" + addr, "-metrics-secure=false"}, extra...)
	if leaderElect {
		args = append(args, "-leader-elect-namespace="+leaseNamespace)
	}
	p, err := startProc(bins.Controller, args, logPath)
	if err != nil {
		return nil, err
	}
	p.ready = readyz(addr)
	return p, nil
}

// startFlood starts the flood side (FloodChild) on kubeconfig, in mode.
func startFlood(bins Binaries, kubeconfig, mode, logPath string) (*proc, error) {
	if bins.Flood == "" {
		return nil, errors.New("scale: the flood side needs Binaries.Flood, the scale command")
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	p, err := startProc(bins.Flood, []string{"-flood-child", "-kubeconfig=" + kubeconfig, "-mode=" + mode, "-addr=" + addr}, logPath)
	if err != nil {
		return nil, err
	}
	p.ready = readyz(addr)
	return p, nil
}

// readyz says whether the process serving on addr answers /readyz with 200.
func readyz(addr string) func() bool {
	client := &http.Client{Timeout: time.Second}
	return func() bool {
		resp, err := client.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
}

// leaseNamespace holds taintevict's Lease when it runs with leader election.
const leaseNamespace = "taintevict-system"

func startProc(bin string, args []string, logPath string) (*proc, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	p := &proc{cmd: exec.Command(bin, args...), logPath: logPath, exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.started = time.Now()
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("scale: starting %s: %w", bin, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	return p, nil
}

// waitReady polls the process every 20 ms until it is ready, and returns when that was.
func (p *proc) waitReady(ctx context.Context, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		if p.ready() {
			return time.Now(), nil
		}
		select {
		case <-p.exited:
			return time.Time{}, fmt.Errorf("scale: %s exited before it was ready (%v): %s", filepath.Base(p.cmd.Path), p.err, p.tail())
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("scale: %s not ready after %s: %s", filepath.Base(p.cmd.Path), timeout, p.tail())
		}
	}
}

// alive fails once the process has exited.
func (p *proc) alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("scale: %s exited (%v): %s", filepath.Base(p.cmd.Path), p.err, p.tail())
	default:
		return nil
	}
}

// stop ends the process with SIGTERM, and SIGKILL after 30 s.
func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		p.kill()
	}
}

// kill ends the process with SIGKILL and waits for it.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// usage is the process's CPU time so far and its resident set now and at its peak.
func (p *proc) usage() (cpu time.Duration, rssMB, peakMB float64, err error) {
	return pidUsage(p.cmd.Process.Pid)
}

// pidUsage is usage for any process.
func pidUsage(pid int) (cpu time.Duration, rssMB, peakMB float64, err error) {
	if cpu, err = realapiserver.ProcessCPU(pid); err != nil {
		return 0, 0, 0, err
	}
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, 0, 0, fmt.Errorf("scale: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			rssMB = kb / 1024
		case "VmHWM:":
			peakMB = kb / 1024
		}
	}
	return cpu, rssMB, peakMB, nil
}

// tail is the end of the process's log.
func (p *proc) tail() string {
	raw, _ := os.ReadFile(p.logPath)
	if len(raw) > 3000 {
		raw = raw[len(raw)-3000:]
	}
	return string(raw)
}

// logHas says whether a line of the file at path holds every one of subs.
func logHas(path string, subs ...string) bool {
	raw, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for line := range bytes.Lines(raw) {
		all := true
		for _, s := range subs {
			if !bytes.Contains(line, []byte(s)) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// freeAddr is a loopback address with a free port.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// errTimeout is what a wait that ran out of RunConfig.Timeout wraps.
var errTimeout = errors.New("scale: timed out")
