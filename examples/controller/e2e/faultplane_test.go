package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// faultPlane is a control plane of a fault test's own: a kube-apiserver and an etcd that the
// test may kill, pause or compact without breaking the suite's shared server. It audits the
// controllers' requests as the shared one does (see configureAudit), into a log of its own.
type faultPlane struct {
	t        *testing.T
	env      *envtest.Environment
	config   *rest.Config
	admin    kubernetes.Interface
	auditLog string

	apiserver []string // kube-apiserver's command line, to start it again as it was
	apiPID    int
	etcdPID   int
	etcdURL   string

	mu       sync.Mutex
	again    *exec.Cmd // the kube-apiserver the test started again; nil until then
	againCh  chan struct{}
	againOut *output
}

// startFaultPlane starts a control plane for the test with the extra kube-apiserver flags
// given as name, value pairs, and stops it when the test ends.
func startFaultPlane(t *testing.T, flags ...string) *faultPlane {
	t.Helper()
	dir, err := assetsDir()
	if err != nil {
		t.Fatalf("%v; build the assets with: %s (from the repository root)", err, assetsCommand)
	}
	tmp := t.TempDir()
	fp := &faultPlane{t: t, auditLog: filepath.Join(tmp, "audit.log")}
	fp.env = &envtest.Environment{
		BinaryAssetsDirectory:    dir,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	policy := filepath.Join(tmp, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	args := fp.env.ControlPlane.GetAPIServer().Configure().
		Set("audit-policy-file", policy).
		Set("audit-log-path", fp.auditLog).
		Set("audit-log-format", "json").
		Set("audit-log-mode", "blocking")
	for i := 0; i+1 < len(flags); i += 2 {
		args.Set(flags[i], flags[i+1])
	}
	start := time.Now()
	if fp.config, err = fp.env.Start(); err != nil {
		_ = fp.env.Stop()
		t.Fatalf("starting the fault plane's kube-apiserver and etcd: %v", err)
	}
	t.Cleanup(func() {
		fp.stopAgain()
		fp.resumeEtcd() // a stopped etcd would not stop
		if err := fp.env.Stop(); err != nil {
			t.Errorf("stopping the fault plane: %v", err)
		}
	})
	t.Logf("fault plane ready in %s", time.Since(start).Round(10*time.Millisecond))
	fp.admin = kubernetes.NewForConfigOrDie(fp.config)
	as := fp.env.ControlPlane.APIServer
	fp.etcdURL = fp.env.ControlPlane.Etcd.URL.String()
	if fp.apiPID, fp.apiserver, err = findProcess("kube-apiserver", "--secure-port="+as.SecureServing.Port); err != nil {
		t.Fatal(err)
	}
	if fp.etcdPID, _, err = findProcess("etcd", "--listen-client-urls="+fp.etcdURL); err != nil {
		t.Fatal(err)
	}
	return fp
}

// use points the suite's server (env, admin, adminConfig, the audit log) at the plane for
// the rest of the test, so that the scene, controllerUser, startController and auditEvents
// work on it. The suite's tests run one after another, so nothing else sees the change.
func (fp *faultPlane) use(t *testing.T) {
	oldEnv, oldConfig, oldAdmin, oldLog := env, adminConfig, admin, auditLog
	env, adminConfig, admin, auditLog = fp.env, fp.config, fp.admin, fp.auditLog
	t.Cleanup(func() { env, adminConfig, admin, auditLog = oldEnv, oldConfig, oldAdmin, oldLog })
}

// killAPIServer kills kube-apiserver with SIGKILL, as a crash would, and returns once its
// port refuses connections.
func (fp *faultPlane) killAPIServer() time.Time {
	fp.t.Helper()
	pid := fp.apiPID
	fp.mu.Lock()
	if fp.again != nil {
		pid = fp.again.Process.Pid
	}
	fp.mu.Unlock()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		fp.t.Fatalf("killing kube-apiserver (pid %d): %v", pid, err)
	}
	killed := time.Now()
	host := hostOf(fp.t, fp.config)
	for deadline := time.Now().Add(failAfter); ; time.Sleep(10 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", host, time.Second)
		if err != nil {
			fp.trimAudit()
			return killed
		}
		c.Close()
		if time.Now().After(deadline) {
			fp.t.Fatalf("kube-apiserver still accepts connections %s after SIGKILL", failAfter)
		}
	}
}

// trimAudit cuts a line that the killed server left half written off the end of the audit
// log, so that the log stays one JSON object a line when the server writes again.
func (fp *faultPlane) trimAudit() {
	fp.t.Helper()
	data, err := os.ReadFile(fp.auditLog)
	if err != nil {
		fp.t.Fatalf("reading the audit log: %v", err)
	}
	if keep := bytes.LastIndexByte(data, '\n') + 1; keep < len(data) {
		fp.t.Logf("audit log: %d bytes of a line half written by the killed server cut off", len(data)-keep)
		if err := os.Truncate(fp.auditLog, int64(keep)); err != nil {
			fp.t.Fatalf("trimming the audit log: %v", err)
		}
	}
}

// restartAPIServer starts kube-apiserver again with the command line it had, on the same
// port, certificates and etcd, and returns when its /readyz first answered 200.
func (fp *faultPlane) restartAPIServer() time.Time {
	fp.t.Helper()
	cmd := exec.Command(fp.apiserver[0], fp.apiserver[1:]...)
	out := newOutput()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		fp.t.Fatalf("starting kube-apiserver again: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	fp.mu.Lock()
	fp.again, fp.againCh, fp.againOut = cmd, done, out
	fp.mu.Unlock()
	rc := fp.admin.Discovery().RESTClient()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := rc.Get().AbsPath("/readyz").Do(ctx).Error()
		cancel()
		if err == nil {
			return time.Now()
		}
		select {
		case <-done:
			fp.t.Fatalf("kube-apiserver exited after its restart:\n%s", out)
		default:
		}
		if time.Now().After(deadline) {
			fp.t.Fatalf("kube-apiserver not ready 2 min after its restart (%v):\n%s", err, out)
		}
	}
}

// stopAgain stops the kube-apiserver the test started again, if any.
func (fp *faultPlane) stopAgain() {
	fp.mu.Lock()
	cmd, done, out := fp.again, fp.againCh, fp.againOut
	fp.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-done
	}
	if fp.t.Failed() {
		fp.t.Logf("output of the restarted kube-apiserver (tail):\n%s", tail(out.String(), 4000))
	}
}

// pauseEtcd stops etcd with SIGSTOP: it holds every connection open and answers nothing.
func (fp *faultPlane) pauseEtcd() {
	fp.t.Helper()
	if err := syscall.Kill(fp.etcdPID, syscall.SIGSTOP); err != nil {
		fp.t.Fatalf("pausing etcd: %v", err)
	}
}

// resumeEtcd lets a paused etcd go on (SIGCONT); it does nothing to one that runs.
func (fp *faultPlane) resumeEtcd() {
	_ = syscall.Kill(fp.etcdPID, syscall.SIGCONT)
}

// compact compacts etcd's history up to its current revision, physically, through etcd's
// JSON gateway, and returns that revision: a watch from an older resource version then
// gets 410 Gone.
func (fp *faultPlane) compact() int64 {
	fp.t.Helper()
	var rng struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	fp.etcdCall("/v3/kv/range", map[string]any{"key": base64.StdEncoding.EncodeToString([]byte("/"))}, &rng)
	rev, err := strconv.ParseInt(rng.Header.Revision, 10, 64)
	if err != nil {
		fp.t.Fatalf("etcd's revision %q: %v", rng.Header.Revision, err)
	}
	fp.etcdCall("/v3/kv/compaction", map[string]any{"revision": rev, "physical": true}, nil)
	return rev
}

func (fp *faultPlane) etcdCall(path string, req, resp any) {
	fp.t.Helper()
	body, _ := json.Marshal(req)
	r, err := http.Post(fp.etcdURL+path, "application/json", bytes.NewReader(body))
	if err != nil {
		fp.t.Fatalf("etcd %s: %v", path, err)
	}
	defer r.Body.Close()
	data, _ := io.ReadAll(r.Body)
	if r.StatusCode != http.StatusOK {
		fp.t.Fatalf("etcd %s: %s: %s", path, r.Status, data)
	}
	if resp != nil {
		if err := json.Unmarshal(data, resp); err != nil {
			fp.t.Fatalf("etcd %s: %v: %s", path, err, data)
		}
	}
}

// findProcess returns the ID and command line of the one process whose program is named
// name and whose command line holds arg.
func findProcess(name, arg string) (int, []string, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, nil, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue
		}
		args := strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
		if filepath.Base(args[0]) != name {
			continue
		}
		for _, a := range args[1:] {
			if a == arg {
				return pid, args, nil
			}
		}
	}
	return 0, nil, fmt.Errorf("no %s process with %s", name, arg)
}

// hostOf is the host:port of rc's server.
func hostOf(t *testing.T, rc *rest.Config) string {
	t.Helper()
	u, err := url.Parse(rc.Host)
	if err != nil || u.Host == "" {
		t.Fatalf("server %q: %v", rc.Host, err)
	}
	return u.Host
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// cutter stands between a controller and the API server at the TCP level (TLS passes
// through: the controller authenticates as itself). cut closes every connection and
// refuses new ones, as a network partition or a server that is gone does; heal listens
// again on the same address.
type cutter struct {
	t      *testing.T
	addr   string
	target string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

// newCutter starts a cutter in front of the API server of rc and returns it; the test's
// cleanup stops it.
func newCutter(t *testing.T, rc *rest.Config) *cutter {
	t.Helper()
	c := &cutter{t: t, target: hostOf(t, rc), conns: map[net.Conn]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c.addr = ln.Addr().String()
	c.serve(ln)
	t.Cleanup(func() { c.cut(); c.wg.Wait() })
	return c
}

// config is rc with its server the cutter.
func (c *cutter) config(rc *rest.Config) *rest.Config {
	cc := rest.CopyConfig(rc)
	cc.Host = "https://" + c.addr
	return cc
}

func (c *cutter) serve(ln net.Listener) {
	c.mu.Lock()
	c.ln = ln
	c.mu.Unlock()
	c.wg.Go(func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", c.target)
			if err != nil {
				in.Close()
				continue
			}
			c.mu.Lock()
			c.conns[in], c.conns[out] = true, true
			c.mu.Unlock()
			pipe := func(dst, src net.Conn) {
				_, _ = io.Copy(dst, src)
				dst.Close()
				src.Close()
				c.mu.Lock()
				delete(c.conns, dst)
				delete(c.conns, src)
				c.mu.Unlock()
			}
			c.wg.Go(func() { pipe(out, in) })
			c.wg.Go(func() { pipe(in, out) })
		}
	})
}

// cut closes the listener and every connection.
func (c *cutter) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ln != nil {
		c.ln.Close()
		c.ln = nil
	}
	for conn := range c.conns {
		conn.Close()
	}
}

// heal listens again on the cutter's address.
func (c *cutter) heal() {
	c.t.Helper()
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		c.t.Fatalf("listening again on %s: %v", c.addr, err)
	}
	c.serve(ln)
}
