package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
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
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", append(args, "..")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the controller command (bounded by %v): %v\n%s", buildTimeout, err, out)
	}
	return nil
}

// buildTimeout bounds a build of the command: a cold one on a busy two-core machine takes
// minutes, and go test's own timeout must not be what stops it.
const buildTimeout = 25 * time.Minute

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
		ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, "go", "build", "-o", plainBin, "..").CombinedOutput()
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
	name   string
	id     identity // who it runs as, for the audit log
	addr   string   // of its /metrics, /healthz and /readyz
	scheme string   // of addr: https, unless it runs the demo or with -metrics-secure=false
	cmd    *exec.Cmd
	out    *output
	done   chan struct{}
	err    error // once done is closed
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
	return startListening(t, bin, name, addr, addr, args...)
}

// startListening is startBinary with -metrics-addr=listen, which the tests reach at addr.
func startListening(t *testing.T, bin, name, listen, addr string, args ...string) *process {
	t.Helper()
	p := &process{name: name, addr: addr, scheme: metricsScheme(args), out: newOutput(), done: make(chan struct{})}
	args = append([]string{"-metrics-addr=" + listen}, args...)
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
	p.waitReady(t, p.url("/readyz"))
	return p
}

// metricsScheme is the scheme the controller serves -metrics-addr with, given its
// arguments: https against a cluster (-kubeconfig), unless -metrics-secure=false; http for
// the in-memory demo.
func metricsScheme(args []string) string {
	cluster, secure := false, true
	for _, a := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch name {
		case "kubeconfig":
			cluster = true
		case "metrics-secure":
			if hasValue {
				secure, _ = strconv.ParseBool(value)
			}
		}
	}
	if cluster && secure {
		return "https"
	}
	return "http"
}

// url is the address of path on the process's metrics port.
func (p *process) url(path string) string {
	return p.scheme + "://" + p.addr + path
}

// probeClient is how the tests reach a controller's port: it trusts the certificate the
// controller made for itself, as the kubelet's HTTPS probes do (they do not verify), and
// as a Prometheus told insecure_skip_verify would. Keep-alives off: no connection outlives
// a request.
var probeClient = &http.Client{
	Timeout: 10 * time.Second,
	Transport: &http.Transport{
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true},
	},
}

// scrape GETs path of the process's port with token as the bearer token ("" for none), and
// returns the status code and the body.
func (p *process) scrape(t *testing.T, path, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, p.url(path), nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := probeClient.Do(req)
	if err != nil {
		t.Fatalf("%s: GET %s: %v", p.name, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: GET %s: %v", p.name, path, err)
	}
	return resp.StatusCode, string(body)
}

// metric returns the value of the series of the process's /metrics that is written as
// series (a name and its labels in Prometheus's text format, e.g.
// `taintevict_evictions_total{controller="node",outcome="succeeded",reason="evict"}`), or 0
// if there is none.
// Over HTTPS it scrapes as the suite's scraper (scraperToken), whom RBAC allows /metrics.
func (p *process) metric(t *testing.T, series string) float64 {
	t.Helper()
	token := ""
	if p.scheme == "https" {
		token = scraperToken(t)
	}
	code, body := p.scrape(t, "/metrics", token)
	if code != http.StatusOK {
		t.Fatalf("%s: scraping /metrics: got %d, want 200: %s", p.name, code, body)
	}
	for line := range strings.Lines(body) {
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

// outcomes is the node side's series of taintevict_evictions_total with the given labels.
func outcomes(outcome, reason string) string { return outcomesOf("node", outcome, reason) }

// outcomesOf is the series of taintevict_evictions_total of the controller ("node",
// "device") with the given labels.
func outcomesOf(controller, outcome, reason string) string {
	return fmt.Sprintf("taintevict_evictions_total{controller=%q,outcome=%q,reason=%q}", controller, outcome, reason)
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
// or failAfter passes. A url of "http://" is asked over HTTPS when the process serves
// HTTPS, so that callers that predate it work unchanged.
func (p *process) waitReady(t *testing.T, url string) {
	t.Helper()
	if rest, ok := strings.CutPrefix(url, "http://"); ok && p.scheme == "https" {
		url = "https://" + rest
	}
	deadline := time.Now().Add(failAfter)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := probeClient.Get(url)
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
