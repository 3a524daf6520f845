package realapiserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// AssetsCommand builds the control plane's binaries; it is in every message about missing
// ones.
const AssetsCommand = "bash hack/kube-assets.sh"

// auditPolicy logs, at the Metadata level once each response is complete, every request
// about what a taint eviction controller reads and writes, whoever makes it: the sides'
// requests and the harness's taints.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted", "Panic"]
rules:
- level: Metadata
  resources:
  - group: ""
    resources: ["pods", "pods/status", "pods/eviction", "events", "nodes"]
- level: None
`

// AssetsDir returns the folder holding kube-apiserver and etcd: $KUBEBUILDER_ASSETS if set,
// else the folder hack/kube-assets.sh builds into for the k8s.io/kubernetes version this
// program is built with.
func AssetsDir() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		version := ""
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, d := range bi.Deps {
				if d.Path == "k8s.io/kubernetes" {
					version = d.Version
				}
			}
		}
		if version == "" {
			// A test binary's build information lists no dependencies: ask the module.
			out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "k8s.io/kubernetes").Output()
			if err != nil {
				return "", fmt.Errorf("realapiserver: no k8s.io/kubernetes in the build information (%v); set KUBEBUILDER_ASSETS=$(%s | tail -1)", err, AssetsCommand)
			}
			version = strings.TrimSpace(string(out))
		}
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("realapiserver: no cache folder for the assets: %w", err)
		}
		dir = filepath.Join(cache, "taintevict", "kube-assets", version)
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		info, err := os.Stat(filepath.Join(dir, bin))
		if err != nil || info.Mode()&0o111 == 0 {
			return "", fmt.Errorf("realapiserver: no executable %s in %s: build it with %s (from the repository root)", bin, dir, AssetsCommand)
		}
	}
	return dir, nil
}

// ControlPlane is a fresh kube-apiserver and etcd on loopback (envtest), with the audit
// log the measurement reads. Stop removes everything it made.
type ControlPlane struct {
	env *envtest.Environment
	dir string
	// Admin is the configuration of a user of system:masters (exempt from API Priority and
	// Fairness), for the harness.
	Admin *rest.Config
	// AuditLog is the audit log's path: JSON lines, one per request.
	AuditLog string
	// The processes' IDs, for their CPU time.
	apiserverPID, etcdPID int
}

// PlaneOptions are what a control plane may differ in; the zero PlaneOptions is the one
// [StartControlPlane] starts.
type PlaneOptions struct {
	// AuditPolicy is the audit policy's YAML; "" logs, at the Metadata level, every request
	// about pods, pods/status, pods/eviction, events and nodes.
	AuditPolicy string
	// APIServerFlags are kube-apiserver flags beyond envtest's, by name without "--".
	APIServerFlags map[string]string
	// EtcdDataDir, if not "", is the folder etcd keeps its data in: an existing one is used
	// as it is (a cluster saved earlier), and Stop leaves it. "" is a new folder that Stop
	// removes.
	EtcdDataDir string
	// EtcdFlags are etcd flags beyond envtest's, by name without "--".
	EtcdFlags map[string]string
}

// StartControlPlane starts kube-apiserver and etcd from the folder assets.
func StartControlPlane(assets string) (*ControlPlane, error) {
	return StartControlPlaneWith(assets, PlaneOptions{})
}

// StartControlPlaneWith starts kube-apiserver and etcd from the folder assets as o says.
func StartControlPlaneWith(assets string, o PlaneOptions) (*ControlPlane, error) {
	dir, err := os.MkdirTemp("", "realapiserver-")
	if err != nil {
		return nil, err
	}
	cp := &ControlPlane{dir: dir, AuditLog: filepath.Join(dir, "audit.log")}
	policy := filepath.Join(dir, "audit-policy.yaml")
	if o.AuditPolicy == "" {
		o.AuditPolicy = auditPolicy
	}
	if err := os.WriteFile(policy, []byte(o.AuditPolicy), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cp.env = &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		ControlPlaneStartTimeout: 5 * time.Minute, // a saved cluster of 150,000 pods is read first
		ControlPlaneStopTimeout:  time.Minute,
	}
	cp.env.ControlPlane.Etcd = &envtest.Etcd{DataDir: o.EtcdDataDir}
	etcdArgs := cp.env.ControlPlane.Etcd.Configure()
	for k, v := range o.EtcdFlags {
		etcdArgs.Set(k, v)
	}
	args := cp.env.ControlPlane.GetAPIServer().Configure().
		Set("audit-policy-file", policy).
		Set("audit-log-path", cp.AuditLog).
		Set("audit-log-format", "json").
		Set("audit-log-mode", "blocking")
	for k, v := range o.APIServerFlags {
		args.Set(k, v)
	}
	if cp.Admin, err = cp.env.Start(); err != nil {
		_ = cp.Stop()
		return nil, fmt.Errorf("realapiserver: starting kube-apiserver and etcd from %s: %w", assets, err)
	}
	as := cp.env.ControlPlane.APIServer
	if cp.apiserverPID, err = findProcess("kube-apiserver", "--secure-port="+as.SecureServing.Port); err == nil {
		cp.etcdPID, err = findProcess("etcd", "--listen-client-urls="+cp.env.ControlPlane.Etcd.URL.String())
	}
	if err != nil {
		_ = cp.Stop()
		return nil, err
	}
	return cp, nil
}

// PIDs are the process IDs of kube-apiserver and etcd.
func (cp *ControlPlane) PIDs() (apiserver, etcd int) { return cp.apiserverPID, cp.etcdPID }

// Stop stops the API server and etcd and removes their files.
func (cp *ControlPlane) Stop() error {
	var err error
	if cp.env != nil {
		err = cp.env.Stop()
	}
	return errors.Join(err, os.RemoveAll(cp.dir))
}

// Dir is a folder that lives as long as the control plane, for the sides' files.
func (cp *ControlPlane) Dir() string { return cp.dir }

// CPU returns the CPU time (user and system) kube-apiserver and etcd have used so far.
func (cp *ControlPlane) CPU() (apiserver, etcd time.Duration, err error) {
	if apiserver, err = processCPU(cp.apiserverPID); err != nil {
		return 0, 0, err
	}
	etcd, err = processCPU(cp.etcdPID)
	return apiserver, etcd, err
}

// Credentials provisions a client certificate for the user name of groups, with no rights
// beyond those the cluster already gives that name or groups, and returns its configuration.
func (cp *ControlPlane) Credentials(name string, groups []string) (*rest.Config, error) {
	u, err := cp.env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return nil, fmt.Errorf("realapiserver: provisioning user %s: %w", name, err)
	}
	return u.Config(), nil
}

// User provisions a user named name, of groups, with a client certificate and the rights of
// the ClusterRole cluster-admin (bound to the name, not through system:masters, which API
// Priority and Fairness exempts), and returns its configuration.
func (cp *ControlPlane) User(ctx context.Context, name string, groups []string) (*rest.Config, error) {
	u, err := cp.env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return nil, fmt.Errorf("realapiserver: provisioning user %s: %w", name, err)
	}
	admin, err := kubernetes.NewForConfig(cp.Admin)
	if err != nil {
		return nil, err
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "realapiserver-" + strings.NewReplacer(":", "-").Replace(name)},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}},
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("realapiserver: binding cluster-admin to %s: %w", name, err)
	}
	return u.Config(), nil
}

// WriteKubeconfig writes a kubeconfig file for rc into the control plane's folder.
func (cp *ControlPlane) WriteKubeconfig(rc *rest.Config, name string) (string, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthorityData: rc.CAData}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: rc.CertData, ClientKeyData: rc.KeyData, Token: rc.BearerToken}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "c"
	path := filepath.Join(cp.dir, name+".kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

// findProcess returns the ID of the one process whose program is named name and whose
// command line holds arg.
func findProcess(name, arg string) (int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("realapiserver: %w", err)
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
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if filepath.Base(args[0]) == name && containsArg(args[1:], arg) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("realapiserver: no %s process with %s", name, arg)
}

func containsArg(args []string, arg string) bool {
	for _, a := range args {
		if a == arg {
			return true
		}
	}
	return false
}

// processCPU returns the CPU time, user and system, of process pid and its threads so far.
func processCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, fmt.Errorf("realapiserver: %w", err)
	}
	return parseStatCPU(string(raw))
}

// clockTicks is the unit of /proc/PID/stat's times: USER_HZ, 100 on Linux.
const clockTicks = 100

// parseStatCPU reads utime and stime from the text of /proc/PID/stat. The command name,
// in parentheses, may hold spaces; the fields are counted after its closing parenthesis.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("realapiserver: /proc stat %q: no command name", stat)
	}
	// After ") ": state is field 3; utime and stime are fields 14 and 15.
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("realapiserver: /proc stat %q: too few fields", stat)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("realapiserver: /proc stat: %w", err)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// ProcessCPU returns the CPU time, user and system, that process pid has used so far.
func ProcessCPU(pid int) (time.Duration, error) { return processCPU(pid) }
