package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

// Objects that the API server of this version refuses to store, but that a server of an
// older or newer version stored (a toleration operator or a taint effect it knew), are
// written here as such a server leaves them: straight into etcd, past validation and
// admission. The API server reads them back, serves them and sends them to watchers as it
// would any object. The suite's kube-apiserver runs with its defaults: objects under the
// prefix /registry, encoded as protobuf (its storage media type), no encryption at rest.
// etcd's gRPC gateway (JSON over HTTP, byte fields in base64) is spoken directly, so that
// no etcd client joins the module's dependencies.

// storage is the API server's codec for etcd: kube's protobuf envelope ("k8s\x00" and a
// runtime.Unknown around the object) of the types client-go knows.
var storage = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)

// podKey and nodeKey are where kube-apiserver keeps a pod and a node in etcd.
func podKey(ns, name string) string { return "/registry/pods/" + ns + "/" + name }
func nodeKey(name string) string    { return "/registry/minions/" + name }

// rewritePod changes the pod as it is stored, with change, and writes it back to etcd.
func rewritePod(t *testing.T, ns, name string, change func(*v1.Pod)) {
	t.Helper()
	etcdRewrite(t, podKey(ns, name), change)
}

// rewriteNode changes the node as it is stored, with change, and writes it back to etcd.
func rewriteNode(t *testing.T, name string, change func(*v1.Node)) {
	t.Helper()
	etcdRewrite(t, nodeKey(name), change)
}

// etcdRewrite reads the object at key, runs change on it and writes it back in the same
// version, if nobody wrote the key meanwhile (a transaction on its mod revision; it tries again, from a new
// read, if somebody did).
func etcdRewrite[T any, PT interface {
	*T
	runtime.Object
}](t *testing.T, key string, change func(PT)) {
	t.Helper()
	for range 5 {
		data, rev := etcdGet(t, key)
		// Decoded as the version it is stored in, which need not be the one clients get
		// (DeviceTaintRules are stored as v1beta2): T must be that version's type.
		decoded, gvk, err := storage.Decode(data, nil, nil)
		if err != nil {
			t.Fatalf("etcd: decoding %s: %v", key, err)
		}
		obj, ok := decoded.(PT)
		if !ok {
			t.Fatalf("etcd: %s holds a %s (%T), not a %T", key, gvk, decoded, PT(nil))
		}
		change(obj)
		obj.GetObjectKind().SetGroupVersionKind(*gvk)
		var buf bytes.Buffer
		if err := storage.Encode(obj, &buf); err != nil {
			t.Fatalf("etcd: encoding %s: %v", key, err)
		}
		if etcdSwap(t, key, rev, buf.Bytes()) {
			return
		}
	}
	t.Fatalf("etcd: %s changed under five rewrites in a row", key)
}

// etcdGet returns the value of key and its mod revision; it fails the test if there is none.
func etcdGet(t *testing.T, key string) ([]byte, int64) {
	t.Helper()
	var out struct {
		KVs []struct {
			Value       []byte `json:"value"`
			ModRevision string `json:"mod_revision"`
		} `json:"kvs"`
	}
	etcdCall(t, "/v3/kv/range", map[string]any{"key": []byte(key)}, &out)
	if len(out.KVs) != 1 {
		t.Fatalf("etcd: %d values at %s, want 1", len(out.KVs), key)
	}
	rev, err := strconv.ParseInt(out.KVs[0].ModRevision, 10, 64)
	if err != nil {
		t.Fatalf("etcd: %s: mod revision %q: %v", key, out.KVs[0].ModRevision, err)
	}
	return out.KVs[0].Value, rev
}

// etcdSwap writes value at key if the key's mod revision is still rev, and says whether
// it did.
func etcdSwap(t *testing.T, key string, rev int64, value []byte) bool {
	t.Helper()
	k := []byte(key)
	req := map[string]any{
		"compare": []map[string]any{{"key": k, "target": "MOD", "result": "EQUAL", "mod_revision": strconv.FormatInt(rev, 10)}},
		"success": []map[string]any{{"request_put": map[string]any{"key": k, "value": value}}},
	}
	var out struct {
		Succeeded bool `json:"succeeded"`
	}
	etcdCall(t, "/v3/kv/txn", req, &out)
	return out.Succeeded
}

// etcdCall posts req as JSON to the gRPC gateway of the suite's etcd and decodes the answer
// into out. encoding/json writes and reads []byte in base64, as the gateway wants.
func etcdCall(t *testing.T, path string, req, out any) {
	t.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	u := *env.ControlPlane.Etcd.URL
	u.Path = path
	resp, err := http.Post(u.String(), "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("etcd: %s: %v", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s", resp.Status, data)
	}
	if err == nil {
		err = json.Unmarshal(data, out)
	}
	if err != nil {
		t.Fatalf("etcd: %s: %v", path, err)
	}
}
