package tolerations

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
)

// ErrInvalid is what every validation error wraps: errors.Is(err, ErrInvalid) reports whether
// err came from [ValidateTaints] or [ValidateTolerations].
var ErrInvalid = errors.New("tolerations: invalid")

// FieldError is one problem found by [ValidateTaints] or [ValidateTolerations]. It wraps
// [ErrInvalid].
type FieldError struct {
	// Field is the path of the offending field, such as "taints[0].key".
	Field string
	// Value is the offending value, quoted.
	Value string
	// Detail says what is wrong.
	Detail string
}

// Error returns "tolerations: FIELD: invalid value VALUE: DETAIL".
func (e *FieldError) Error() string {
	return fmt.Sprintf("tolerations: %s: invalid value %s: %s", e.Field, e.Value, e.Detail)
}

// Unwrap returns [ErrInvalid].
func (e *FieldError) Unwrap() error { return ErrInvalid }

// problems collects the FieldErrors of one validation.
type problems []error

func (p *problems) add(field, value, detail string) {
	*p = append(*p, &FieldError{Field: field, Value: strconv.Quote(value), Detail: detail})
}

// content adds the messages of a k8s.io/apimachinery content check, if any, as one problem.
func (p *problems) content(field, value string, msgs []string) {
	if len(msgs) > 0 {
		p.add(field, value, strings.Join(msgs, "; "))
	}
}

func (p *problems) effect(field string, e v1.TaintEffect) {
	switch e {
	case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
	case "":
		p.add(field, "", "effect is required")
	default:
		p.add(field, string(e), `supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`)
	}
}

// ValidateTaints reports every taint in taints that the API server would reject in a node's
// spec.taints: an empty or malformed key, a value that is not a valid label value, a missing
// or unknown effect, or a second taint with the same key and effect. It returns nil when all
// are valid, else one [*FieldError] per problem, joined with [errors.Join]. It applies the
// rules of nodes: a device taint of effect None, converted by [DeviceTaints], is invalid.
func ValidateTaints(taints []v1.Taint) error {
	var p problems
	seen := make(map[[2]string]bool, len(taints))
	for i := range taints {
		t := &taints[i]
		path := fmt.Sprintf("taints[%d]", i)
		if t.Key == "" {
			p.add(path+".key", t.Key, "must not be empty")
		} else {
			p.content(path+".key", t.Key, content.IsLabelKey(t.Key))
		}
		p.content(path+".value", t.Value, content.IsLabelValue(t.Value))
		p.effect(path+".effect", t.Effect)
		if k := [2]string{t.Key, string(t.Effect)}; seen[k] {
			p.add(path, t.Key+":"+string(t.Effect), "taints must be unique by key and effect")
		} else {
			seen[k] = true
		}
	}
	return errors.Join(p...)
}

// ValidateTolerations reports every toleration in tolerations that the API server would
// reject in a pod's spec.tolerations: a malformed key, an empty key with an operator other
// than Exists, tolerationSeconds with an effect other than NoExecute (empty included), an
// unknown operator or effect, Exists with a value, or Equal with a value that is not a valid
// label value. Lt and Gt are accepted, with a decimal integer value in canonical form, only
// when opts.ComparisonOperators is set. A negative tolerationSeconds is valid and means
// evict now, as in Kubernetes. It returns nil when all are valid, else one [*FieldError] per
// problem, joined with [errors.Join]. It applies the rules of pods whatever opts.Rules says:
// the API server validates device tolerations otherwise, and they are not validated here.
func ValidateTolerations(tolerations []v1.Toleration, opts Options) error {
	var p problems
	for i := range tolerations {
		t := &tolerations[i]
		path := fmt.Sprintf("tolerations[%d]", i)
		if t.Key != "" {
			p.content(path+".key", t.Key, content.IsLabelKey(t.Key))
		} else if t.Operator != v1.TolerationOpExists {
			p.add(path+".operator", string(t.Operator), "operator must be Exists when key is empty")
		}
		if t.TolerationSeconds != nil && t.Effect != v1.TaintEffectNoExecute {
			p.add(path+".effect", string(t.Effect), "effect must be NoExecute when tolerationSeconds is set")
		}
		switch t.Operator {
		case "", v1.TolerationOpEqual:
			p.content(path+".value", t.Value, content.IsLabelValue(t.Value))
		case v1.TolerationOpExists:
			if t.Value != "" {
				p.add(path+".value", t.Value, "value must be empty when operator is Exists")
			}
		case v1.TolerationOpLt, v1.TolerationOpGt:
			if !opts.ComparisonOperators {
				p.add(path+".operator", string(t.Operator), `supported values: "Equal", "Exists" (Lt and Gt need Options.ComparisonOperators)`)
			} else if _, ok := parseCanonicalInt(t.Value); !ok {
				p.add(path+".value", t.Value, "value must be a decimal integer when operator is Lt or Gt")
			}
		default:
			supported := `supported values: "Equal", "Exists"`
			if opts.ComparisonOperators {
				supported += `, "Lt", "Gt"`
			}
			p.add(path+".operator", string(t.Operator), supported)
		}
		if t.Effect != "" {
			p.effect(path+".effect", t.Effect)
		}
	}
	return errors.Join(p...)
}
