package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// controllersGroup is the group of every user a controller under test runs as (see
// controllerUser). The API server's audit log records their requests, and only theirs: it
// is how the tests count a controller's API calls and see who deleted what.
const controllersGroup = "e2e:controllers"

// The audit policy: every request of the controllers (and of service accounts, which
// least-privilege runs use), at the Metadata level, once the response is complete.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted", "Panic"]
rules:
- level: Metadata
  userGroups: ["` + controllersGroup + `", "system:serviceaccounts"]
- level: None
`

// auditLog is the audit log's path, set by configureAudit.
var auditLog string

// configureAudit makes the API server write its audit log into dir.
func configureAudit(dir string) error {
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return err
	}
	auditLog = filepath.Join(dir, "audit.log")
	env.ControlPlane.GetAPIServer().Configure().
		Set("audit-policy-file", policy).
		Set("audit-log-path", auditLog).
		Set("audit-log-format", "json").
		Set("audit-log-mode", "blocking")
	return nil
}

// auditEvent is the part of an audit.k8s.io/v1 Event the tests read.
type auditEvent struct {
	User struct {
		Username string              `json:"username"`
		Extra    map[string][]string `json:"extra"`
	} `json:"user"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	UserAgent  string `json:"userAgent"`
	ObjectRef  *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code    int `json:"code"`
		Details *struct {
			Causes []auditCause `json:"causes"`
		} `json:"details"`
	} `json:"responseStatus"`
	Received time.Time `json:"requestReceivedTimestamp"`
}

// auditCause is a cause of a refusal, as metav1.StatusCause records it: its type (JSON
// "reason"), e.g. DisruptionBudget.
type auditCause struct {
	Reason string `json:"reason"`
}

// what is the request as "verb resource/subresource", e.g. "create pods/eviction".
func (e auditEvent) what() string {
	if e.ObjectRef == nil {
		return e.Verb
	}
	r := e.ObjectRef.Resource
	if e.ObjectRef.Subresource != "" {
		r += "/" + e.ObjectRef.Subresource
	}
	return e.Verb + " " + r
}

func (e auditEvent) code() int {
	if e.ResponseStatus == nil {
		return 0
	}
	return e.ResponseStatus.Code
}

// identity is who made a request: a user, and for a service account, which of its tokens
// (two replicas that run as one service account have a token each).
type identity struct {
	user       string
	credential string // "JTI=..." of a service account token; "" for any
}

// credentialIDKey is where the API server records which token a request authenticated with.
const credentialIDKey = "authentication.kubernetes.io/credential-id"

func (id identity) made(e auditEvent) bool {
	if e.User.Username != id.user {
		return false
	}
	return id.credential == "" || slices.Contains(e.User.Extra[credentialIDKey], id.credential)
}

// auditEvents returns the requests of id, in the order the server logged them, that match
// keep (nil keeps all).
func auditEvents(id identity, keep func(auditEvent) bool) ([]auditEvent, error) {
	f, err := os.Open(auditLog)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var events []auditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("audit log: %w", err)
		}
		if id.made(e) && (keep == nil || keep(e)) {
			events = append(events, e)
		}
	}
	return events, sc.Err()
}

// inNamespace keeps the requests about objects of namespace ns.
func inNamespace(ns string) func(auditEvent) bool {
	return func(e auditEvent) bool { return e.ObjectRef != nil && e.ObjectRef.Namespace == ns }
}

// writesPod says whether a request changed the pod name (a status write, a delete or an
// eviction) in namespace ns.
func writesPod(ns, name string) func(auditEvent) bool {
	return func(e auditEvent) bool {
		return e.ObjectRef != nil && e.ObjectRef.Resource == "pods" && e.ObjectRef.Namespace == ns &&
			e.ObjectRef.Name == name && e.Verb != "get" && e.Verb != "list" && e.Verb != "watch"
	}
}
