package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// binDir holds the controller command that TestMain builds, the audit log and its policy.
var binDir string

// raceEnabled says whether the test binary was built with -race (see race_test.go).
var raceEnabled bool

// buildController builds the controller command of this module once for the test binary,
// with the race detector when the test runs with it, so that a run against the real API
// server is checked for races too.
func buildController() error {
	args := []string{"build", "-o", filepath.Join(binDir, "controller")}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "..")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the controller command: %v\n%s", err, out)
	}
	return nil
}

var (
	plainOnce sync.Once
	plainBin  string
	plainErr  error
)

// plainController builds the controller command without the race detector, once, for the
// scale scenario: its figures are those of the binary users run.
func plainController(t *testing.T) string {
	t.Helper()
	plainOnce.Do(func() {
		plainBin = filepath.Join(binDir, "controller-plain")
		out, err := exec.Command("go", "build", "-o", plainBin, "..").CombinedOutput()
		if err != nil {
			plainErr = fmt.Errorf("building the controller command: %v\n%s", err, out)
		}
	})
	if plainErr != nil {
		t.Fatal(plainErr)
	}
	return plainBin
}

// writeKubeconfig writes a kubeconfig file for rc and returns its path.
func writeKubeconfig(t *testing.T, rc *rest.Config) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthorityData: rc.CAData}
	cfg.AuthInfos["e2e"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: rc.CertData,
		ClientKeyData:         rc.KeyData,
		Token:                 rc.BearerToken,
	}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "e2e"}
	cfg.CurrentContext = "e2e"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatalf("writing the kubeconfig: %v", err)
	}
	return path
}

// controllerUser provisions a user of the controllers' group, named after name, with the
// rights of system:masters, and returns its name and client configuration. Each controller
// process runs as a user of its own, so that the audit log tells them apart.
func controllerUser(t *testing.T, name string) (string, *rest.Config) {
	t.Helper()
	user := fmt.Sprintf("e2e-%s-%d", strings.ReplaceAll(name, " ", "-"), nameSeq.Add(1))
	u, err := env.AddUser(envtest.User{Name: user, Groups: []string{"system:masters", controllersGroup}}, nil)
	if err != nil {
		t.Fatalf("provisioning user %s: %v", user, err)
	}
	return user, u.Config()
}

// process is a run of the controller command. Its output is kept, to wait on and to show
// when the test fails.
type process struct {
	name string
	id   identity // who it runs as, for the audit log
	addr string   // of its /metrics, /healthz and /readyz
	cmd  *exec.Cmd
	out  *output
	done chan struct{}
	err  error // once done is closed
}

// startProcess runs the controller command with args and returns once it is ready: its
// /readyz answers 200 (its caches have synced and, with leader election, it leads or waits
// for the Lease). The test's cleanup stops it, if it still runs, and logs its output if the
// test failed.
func startProcess(t *testing.T, name string, args ...string) *process {
	t.Helper()
	return startBinary(t, filepath.Join(binDir, "controller"), name, args...)
}

// startBinary is startProcess with the controller command at bin.
func startBinary(t *testing.T, bin, name string, args ...string) *process {
	t.Helper()
	addr := freeAddr(t)
	p := &process{name: name, addr: addr, out: newOutput(), done: make(chan struct{})}
	args = append([]string{"-metrics-addr=" + addr}, args...)
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout = p.out
	p.cmd.Stderr = p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		// SIGTERM, so that a leader releases its Lease for the next test's controller.
		p.signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			t.Errorf("%s still runs 30 s after SIGTERM", name)
			p.kill()
		}
		if t.Failed() {
			t.Logf("output of %s:\n%s", name, p.out)
		}
	})
	p.waitReady(t, "http://"+addr+"/readyz")
	return p
}

// metric returns the value of the series of the process's /metrics that is written as
// series (a name and its labels in Prometheus's text format, e.g.
// `taintevict_evictions_total{outcome="succeeded",reason="evict"}`), or 0 if there is none.
func (p *process) metric(t *testing.T, series string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + p.addr + "/metrics")
	if err != nil {
		t.Fatalf("%s: scraping /metrics: %v", p.name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: scraping /metrics: %v", p.name, err)
	}
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: /metrics: %q: %v", p.name, line, err)
			}
			return f
		}
	}
	return 0
}

// outcomes is the series of taintevict_evictions_total with the given labels.
func outcomes(outcome, reason string) string {
	return fmt.Sprintf("taintevict_evictions_total{outcome=%q,reason=%q}", outcome, reason)
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitReady polls url until it answers 200, and fails the test if the process exits first
// or failAfter passes.
func (p *process) waitReady(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(failAfter)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after %s (%v); output:\n%s", p.name, failAfter, err, p.out)
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited (%v) before it was ready; output:\n%s", p.name, p.err, p.out)
		case <-tick.C:
		}
	}
}

func (p *process) signal(sig syscall.Signal) {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Signal(sig)
	}
}

// stop sends SIGTERM and waits for the process to exit; it fails the test if the process
// takes longer than timeout or exits with an error.
func (p *process) stop(t *testing.T, timeout time.Duration) {
	t.Helper()
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("%s still runs %s after SIGTERM", p.name, timeout)
	}
	var exit *exec.ExitError
	if p.err != nil && !errors.As(p.err, &exit) {
		t.Fatalf("%s: %v", p.name, p.err)
	}
}

// kill ends the process with SIGKILL, as a crash would: nothing is cleaned up or released.
func (p *process) kill() {
	p.signal(syscall.SIGKILL)
	<-p.done
}

// waitOutput returns once the process has written s, and fails the test if it has not
// within timeout or exits first.
func (p *process) waitOutput(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for !strings.Contains(p.out.String(), s) {
		select {
		case <-p.out.wake:
		case <-p.done:
			if !strings.Contains(p.out.String(), s) {
				t.Fatalf("%s exited (%v) before writing %q; output:\n%s", p.name, p.err, s, p.out)
			}
		case <-deadline.C:
			t.Fatalf("%s has not written %q within %s; output:\n%s", p.name, s, timeout, p.out)
		}
	}
}

// output is a process's output that can be waited on: each write wakes the waiter.
type output struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	wake chan struct{}
}

func newOutput() *output { return &output{wake: make(chan struct{}, 1)} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	n, err := o.buf.Write(p)
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return n, err
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}
