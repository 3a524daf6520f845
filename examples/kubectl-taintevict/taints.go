package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/taintevict/taintevict/tolerations"
)

// taintSpec is one taint of the command line, as kubectl taint writes it: KEY[=VALUE]:EFFECT
// to add (or replace the taint of that key and effect), KEY[:EFFECT]- to remove.
type taintSpec struct {
	taint  v1.Taint
	remove bool
}

// errNotNoExecute says that a taint added is not NoExecute: it evicts nothing.
var errNotNoExecute = errors.New("only NoExecute taints evict")

// parseTaintSpec parses s as kubectl taint does. Added taints must be NoExecute: a
// NoSchedule or PreferNoSchedule taint evicts nothing, and there would be nothing to
// simulate.
func parseTaintSpec(s string) (taintSpec, error) {
	spec, remove := strings.CutSuffix(s, "-")
	var t v1.Taint
	keyValue, effect, hasEffect := strings.Cut(spec, ":")
	if strings.Contains(effect, ":") {
		return taintSpec{}, fmt.Errorf("taint %q: want KEY[=VALUE]:NoExecute", s)
	}
	key, value, hasValue := strings.Cut(keyValue, "=")
	t.Key, t.Value, t.Effect = key, value, v1.TaintEffect(effect)
	switch {
	case remove && hasValue:
		return taintSpec{}, fmt.Errorf("taint %q: to remove a taint give KEY- or KEY:EFFECT-, without a value", s)
	case !remove && !hasEffect:
		return taintSpec{}, fmt.Errorf("taint %q: want KEY[=VALUE]:NoExecute (the effect is missing)", s)
	}
	check := t
	if remove && !hasEffect {
		check.Effect = v1.TaintEffectNoExecute // any effect: only the key is checked
	}
	if err := tolerations.ValidateTaints([]v1.Taint{check}); err != nil {
		return taintSpec{}, fmt.Errorf("taint %q: %s", s, problems(err))
	}
	if !remove && t.Effect != v1.TaintEffectNoExecute {
		return taintSpec{}, fmt.Errorf("taint %q: a %s taint evicts nothing (%w); give KEY[=VALUE]:NoExecute", s, t.Effect, errNotNoExecute)
	}
	return taintSpec{taint: t, remove: remove}, nil
}

// problems writes the problems ValidateTaints found with one taint on one line, each
// named by its field: `key: invalid value "": must not be empty; effect: ...`.
func problems(err error) string {
	list := []error{err}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		list = joined.Unwrap()
	}
	parts := make([]string, 0, len(list))
	for _, e := range list {
		var fe *tolerations.FieldError
		if !errors.As(e, &fe) {
			parts = append(parts, e.Error())
			continue
		}
		parts = append(parts, fmt.Sprintf("%s: invalid value %s: %s", strings.TrimPrefix(fe.Field, "taints[0]."), fe.Value, fe.Detail))
	}
	return strings.Join(parts, "; ")
}

// apply returns taints with specs applied in order, as kubectl taint applies them: an added
// taint replaces the one of the same key and effect, or is appended; a removal removes
// every taint of its key (and effect, if given). It reports a removal that removes nothing.
func apply(taints []v1.Taint, specs []taintSpec) ([]v1.Taint, error) {
	out := slices.Clone(taints)
	for _, s := range specs {
		t := s.taint
		if s.remove {
			n := len(out)
			out = slices.DeleteFunc(out, func(x v1.Taint) bool { return x.Key == t.Key && (t.Effect == "" || x.Effect == t.Effect) })
			if len(out) == n {
				return nil, fmt.Errorf("no taint %s to remove", describeRemoval(t))
			}
			continue
		}
		if i := slices.IndexFunc(out, func(x v1.Taint) bool { return x.Key == t.Key && x.Effect == t.Effect }); i >= 0 {
			out[i] = t
		} else {
			out = append(out, t)
		}
	}
	return out, nil
}

func describeRemoval(t v1.Taint) string {
	if t.Effect == "" {
		return t.Key
	}
	return t.Key + ":" + string(t.Effect)
}

// taintString writes a taint as kubectl does: KEY[=VALUE]:EFFECT.
func taintString(t v1.Taint) string {
	s := t.Key
	if t.Value != "" {
		s += "=" + t.Value
	}
	return s + ":" + string(t.Effect)
}
