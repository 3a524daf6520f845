package tolerations

import (
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
)

// ErrInvalid is what every validation error wraps: errors.Is(err, ErrInvalid) reports whether
// err came from [ValidateTaints] or [ValidateTolerations].
var ErrInvalid = errors.New("tolerations: invalid")

// FieldError is one problem found by [ValidateTaints] or [ValidateTolerations]. Its message
// names the field by path, such as "tolerations[2].operator", with the package name in
// front. It wraps [ErrInvalid].
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

// ValidateTaints reports every taint in taints that the API server would reject in a node's
// spec.taints: an empty or malformed key, a value that is not a valid label value, a missing
// or unknown effect, or a second taint with the same key and effect. It returns nil when all
// are valid, else one [*FieldError] per problem, joined with [errors.Join]. It applies the rules of nodes:
// a device taint converted by [DeviceTaints] with effect None is reported as invalid.
func ValidateTaints(taints []v1.Taint) error {
	var errs []error
	type keyEffect struct {
		key    string
		effect v1.TaintEffect
	}
	seen := make(map[keyEffect]bool, len(taints))
	for i := range taints {
		t := &taints[i]
		path := fmt.Sprintf("taints[%d]", i)
		if t.Key == "" {
			errs = append(errs, fieldErr(path+".key", t.Key, "must not be empty"))
		} else if msgs := content.IsLabelKey(t.Key); len(msgs) > 0 {
			errs = append(errs, fieldErr(path+".key", t.Key, strings.Join(msgs, "; ")))
		}
		if msgs := content.IsLabelValue(t.Value); len(msgs) > 0 {
			errs = append(errs, fieldErr(path+".value", t.Value, strings.Join(msgs, "; ")))
		}
		if err := validateEffect(t.Effect, false, path+".effect"); err != nil {
			errs = append(errs, err)
		}
		k := keyEffect{t.Key, t.Effect}
		if seen[k] {
			errs = append(errs, fieldErr(path, t.Key+":"+string(t.Effect), "taints must be unique by key and effect"))
		}
		seen[k] = true
	}
	return errors.Join(errs...)
}

// ValidateTolerations reports every toleration in tolerations that the API server would
// reject in a pod's spec.tolerations: a malformed key, an empty key with an operator other
// than Exists, tolerationSeconds with an effect other than NoExecute (an empty effect
// included), an unknown operator, Exists with a value, Equal with a value that is not a
// valid label value, or an unknown effect. Lt and Gt are accepted, with a canonical decimal
// integer value, only when opts.ComparisonOperators is set. A negative tolerationSeconds is
// valid, as in Kubernetes, and means evict now. It returns nil when all are valid, else the
// one [*FieldError] per problem, joined with [errors.Join]. It applies the rules of pods whatever opts.Rules
// says: device tolerations follow other rules of the API server and are not validated here.
func ValidateTolerations(tolerations []v1.Toleration, opts Options) error {
	var errs []error
	for i := range tolerations {
		t := &tolerations[i]
		path := fmt.Sprintf("tolerations[%d]", i)
		if t.Key != "" {
			if msgs := content.IsLabelKey(t.Key); len(msgs) > 0 {
				errs = append(errs, fieldErr(path+".key", t.Key, strings.Join(msgs, "; ")))
			}
		} else if t.Operator != v1.TolerationOpExists {
			errs = append(errs, fieldErr(path+".operator", string(t.Operator), "operator must be Exists when key is empty"))
		}
		if t.TolerationSeconds != nil && t.Effect != v1.TaintEffectNoExecute {
			errs = append(errs, fieldErr(path+".effect", string(t.Effect), "effect must be NoExecute when tolerationSeconds is set"))
		}
		switch t.Operator {
		case "", v1.TolerationOpEqual:
			if msgs := content.IsLabelValue(t.Value); len(msgs) > 0 {
				errs = append(errs, fieldErr(path+".value", t.Value, strings.Join(msgs, "; ")))
			}
		case v1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, fieldErr(path+".value", t.Value, "value must be empty when operator is Exists"))
			}
		case v1.TolerationOpLt, v1.TolerationOpGt:
			if !opts.ComparisonOperators {
				errs = append(errs, fieldErr(path+".operator", string(t.Operator), `supported values: "Equal", "Exists" (Lt and Gt need Options.ComparisonOperators)`))
			} else if _, ok := parseCanonicalInt(t.Value); !ok {
				errs = append(errs, fieldErr(path+".value", t.Value, "value must be a decimal integer when operator is Lt or Gt"))
			}
		default:
			supported := `supported values: "Equal", "Exists"`
			if opts.ComparisonOperators {
				supported = `supported values: "Equal", "Exists", "Lt", "Gt"`
			}
			errs = append(errs, fieldErr(path+".operator", string(t.Operator), supported))
		}
		if t.Effect != "" {
			if err := validateEffect(t.Effect, true, path+".effect"); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func validateEffect(e v1.TaintEffect, allowEmpty bool, path string) error {
	switch e {
	case v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute:
		return nil
	case "":
		if allowEmpty {
			return nil
		}
		return fieldErr(path, "", "effect is required")
	}
	return fieldErr(path, string(e), `supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`)
}

func fieldErr(field, value, detail string) *FieldError {
	return &FieldError{Field: field, Value: fmt.Sprintf("%q", value), Detail: detail}
}
