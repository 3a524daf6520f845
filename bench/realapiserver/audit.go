package realapiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

// Record is one request of the audit log, as the measurement reads it.
type Record struct {
	Verb, User, UserAgent                  string
	Resource, Subresource, Namespace, Name string
	Code                                   int
	// Received is when the request arrived; Completed when its response was complete.
	Received, Completed time.Time
}

// What is the request as "verb resource[/subresource]", e.g. "create pods/eviction".
func (r Record) What() string {
	res := r.Resource
	if r.Subresource != "" {
		res += "/" + r.Subresource
	}
	return r.Verb + " " + res
}

// ok says whether the server did what was asked.
func (r Record) ok() bool { return r.Code >= 200 && r.Code < 300 }

// writes says whether the request asked for a change (not a get, list or watch).
func (r Record) writes() bool { return r.Verb != "get" && r.Verb != "list" && r.Verb != "watch" }

// auditEvent is the part of an audit.k8s.io/v1 Event read here.
type auditEvent struct {
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	Received  time.Time `json:"requestReceivedTimestamp"`
	Completed time.Time `json:"stageTimestamp"`
}

// AuditReader reads an audit log as the API server writes it: each Read returns the
// requests of the lines completed since the last one.
type AuditReader struct {
	path    string
	off     int64
	partial []byte
	bad     int // Reads in a row that met a line that does not parse
}

// auditRereads is how many Reads in a row may meet a line that does not parse, each
// reading the same lines again, before Read returns the error: at 100,000 pods a Read
// once met a line cut at its start, and an error that stays is the file's, not the read's.
const auditRereads = 25

// NewAuditReader reads the audit log at path, from its start.
func NewAuditReader(path string) *AuditReader { return &AuditReader{path: path} }

// Read returns the records of the lines written since the last Read. A log not created
// yet has none. A line that does not parse is read again at the next Read, and returned as
// an error once auditRereads Reads in a row have met one.
func (a *AuditReader) Read() ([]Record, error) {
	f, err := os.Open(a.path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("realapiserver: audit log: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(a.off, io.SeekStart); err != nil {
		return nil, fmt.Errorf("realapiserver: audit log: %w", err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("realapiserver: audit log: %w", err)
	}
	data = append(slices.Clone(a.partial), data...)
	end := bytes.LastIndexByte(data, '\n') + 1
	recs, err := ParseAudit(data[:end])
	if err != nil {
		if a.bad++; a.bad < auditRereads {
			return nil, nil // read from the same offset again next time
		}
		return nil, err
	}
	a.bad = 0
	a.off += int64(len(data) - len(a.partial))
	a.partial = slices.Clone(data[end:])
	return recs, nil
}

// ParseAudit parses audit log lines.
func ParseAudit(data []byte) ([]Record, error) {
	var out []Record
	for line := range bytes.Lines(data) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var e auditEvent
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("realapiserver: audit log line %q: %w", line, err)
		}
		r := Record{Verb: e.Verb, User: e.User.Username, UserAgent: e.UserAgent, Received: e.Received, Completed: e.Completed}
		if e.ObjectRef != nil {
			r.Resource, r.Subresource, r.Namespace, r.Name = e.ObjectRef.Resource, e.ObjectRef.Subresource, e.ObjectRef.Namespace, e.ObjectRef.Name
		}
		if e.ResponseStatus != nil {
			r.Code = e.ResponseStatus.Code
		}
		out = append(out, r)
	}
	return out, nil
}

// Judge says how to read a run's audit log.
type Judge struct {
	Cluster *Cluster
	// User is the side's user name.
	User string
	// Evict says that the side removes pods with the Eviction API (create pods/eviction),
	// not with a DELETE.
	Evict bool
}

// Measurement is what the audit log says of a run. Times are in seconds after the first
// taint: the completion of the first PATCH of a node by someone other than the side.
type Measurement struct {
	// Evictions is the number of untolerating pods; Removed those the side removed.
	Evictions, Removed int
	// First, Half and Last are when the first, the median (the ⌈n/2⌉-th) and the last
	// untolerating pod's first successful removal completed; -1 while there is none.
	First, Half, Last float64
	// Tainted is when the last node's taint completed.
	Tainted float64
	// RemovedTwice counts untolerating pods removed successfully more than once, and
	// TouchedTolerating tolerating pods the side wrote to at all: both must be 0.
	RemovedTwice, TouchedTolerating int
	// Requests counts the side's requests about pods and Events from the first taint on, by
	// What.
	Requests map[string]int
	// Errors counts the side's responses from the first taint on with a code of 400 or
	// more, by code.
	Errors map[int]int
	// Events is the number of Events the side wrote (created or patched); EventsBeforeLast
	// those completed before Last; LastEvent when the last completed (-1: none).
	Events, EventsBeforeLast int
	LastEvent                float64
}

// Measure reads recs (the whole log of a run so far) as j says.
func Measure(recs []Record, j Judge) Measurement {
	m := Measurement{Evictions: len(j.Cluster.Untolerating), First: -1, Half: -1, Last: -1, LastEvent: -1,
		Requests: map[string]int{}, Errors: map[int]int{}}
	var t0, tainted time.Time
	for _, r := range recs {
		if r.User != j.User && r.Verb == "patch" && r.Resource == "nodes" && r.ok() {
			if t0.IsZero() || r.Completed.Before(t0) {
				t0 = r.Completed
			}
			if r.Completed.After(tainted) {
				tainted = r.Completed
			}
		}
	}
	if t0.IsZero() {
		return m
	}
	m.Tainted = tainted.Sub(t0).Seconds()
	removals := map[string][]time.Time{}
	touched := map[string]bool{}
	var events []time.Time
	for _, r := range recs {
		if r.User != j.User || r.Namespace != Namespace {
			continue
		}
		if !r.Completed.Before(t0) && (r.Resource == "pods" || r.Resource == "events") {
			m.Requests[r.What()]++
			if r.Code >= 400 {
				m.Errors[r.Code]++
			}
		}
		switch {
		case r.Resource == "events" && (r.Verb == "create" || r.Verb == "patch") && r.ok():
			events = append(events, r.Completed)
		case r.Resource != "pods" || !r.writes():
		case j.Cluster.Tolerating[r.Name]:
			touched[r.Name] = true
		case j.Cluster.Untolerating[r.Name] && r.ok() && removes(r, j.Evict):
			removals[r.Name] = append(removals[r.Name], r.Completed)
		}
	}
	m.TouchedTolerating = len(touched)
	var firsts []time.Time
	for _, ts := range removals {
		if len(ts) > 1 {
			m.RemovedTwice++
		}
		firsts = append(firsts, slices.MinFunc(ts, time.Time.Compare))
	}
	slices.SortFunc(firsts, time.Time.Compare)
	m.Removed = len(firsts)
	since := func(t time.Time) float64 { return t.Sub(t0).Seconds() }
	if len(firsts) > 0 {
		m.First = since(firsts[0])
		m.Last = since(firsts[len(firsts)-1])
		if half := (m.Evictions+1)/2 - 1; half < len(firsts) {
			m.Half = since(firsts[half])
		}
	}
	m.Events = len(events)
	for _, e := range events {
		if len(firsts) > 0 && !e.After(firsts[len(firsts)-1]) {
			m.EventsBeforeLast++
		}
		if s := since(e); s > m.LastEvent {
			m.LastEvent = s
		}
	}
	return m
}

// removes says whether r is a removal of its pod: a DELETE, or with the Eviction API its
// create pods/eviction.
func removes(r Record, evict bool) bool {
	if evict {
		return r.Verb == "create" && r.Resource == "pods" && r.Subresource == "eviction"
	}
	return r.Verb == "delete" && r.Resource == "pods" && r.Subresource == ""
}
