package main

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/taintevict/taintevict/clientgo/device"
)

// The controllers -controllers names.
const (
	controllerNode   = "node"
	controllerDevice = "device"
)

// deviceFlags are the device side's flags: which controllers run, and the device budget
// (device.Budget). The zero value runs none and budgets nothing.
type deviceFlags struct {
	controllers []string // of controllerNode and controllerDevice, each once
	budget      device.Budget
	podGroups   device.PodGroupMode
}

func (d *deviceFlags) define(fs *flag.FlagSet) {
	d.controllers = []string{controllerNode}
	fs.Func("controllers", "which controllers run, under one Lease: node (pods on tainted nodes), device (pods on tainted DRA devices: kube's device-taint-eviction-controller), or node,device (default node)", func(s string) error {
		d.controllers = nil
		for c := range strings.SplitSeq(s, ",") {
			switch {
			case c != controllerNode && c != controllerDevice:
				return fmt.Errorf("unknown controller %q: want node, device or node,device", c)
			case slices.Contains(d.controllers, c):
				return fmt.Errorf("%s given twice", c)
			}
			d.controllers = append(d.controllers, c)
		}
		return nil
	})
	fs.Float64Var(&d.budget.Fraction, "device-budget-fraction", 0, "pause a DeviceTaintRule, or a pool's taints, that would evict more than this fraction of the pods that use devices: in (0, 1] (0: off)")
	fs.Float64Var(&d.budget.NamespaceFraction, "device-budget-namespace-fraction", 0, "the same within each namespace: more than this fraction of its pods that use devices (0: off)")
	fs.IntVar(&d.budget.MinPods, "device-budget-min-pods", 0, "with a device budget: a rule or pool that would evict fewer pods never pauses (0: 1)")
	fs.Func("device-pod-groups", "whether a ResourceClaim reserved for a PodGroup binds the group's pods that use it, as kube's DRAWorkloadResourceClaims gate does: auto (when the API server serves PodGroups), on or off (default auto)", func(s string) error {
		switch m := device.PodGroupMode(s); m {
		case device.PodGroupsOn, device.PodGroupsOff:
			d.podGroups = m
		case "auto":
			d.podGroups = device.PodGroupsAuto
		default:
			return fmt.Errorf("unknown mode %q: want auto, on or off", s)
		}
		return nil
	})
}

func (d deviceFlags) validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"-device-budget-fraction", d.budget.Fraction}, {"-device-budget-namespace-fraction", d.budget.NamespaceFraction}} {
		if f.v != 0 && !(f.v > 0 && f.v <= 1) {
			return fmt.Errorf("%s must be in (0, 1], or 0 for off, got %g", f.name, f.v)
		}
	}
	switch {
	case d.budget.MinPods < 0:
		return fmt.Errorf("-device-budget-min-pods must not be negative, got %d", d.budget.MinPods)
	case (d.budget.Fraction != 0 || d.budget.NamespaceFraction != 0 || d.budget.MinPods != 0) && !d.runs(controllerDevice):
		return errors.New("the -device-budget flags need -controllers with device")
	case d.podGroups != device.PodGroupsAuto && !d.runs(controllerDevice):
		return errors.New("-device-pod-groups needs -controllers with device")
	}
	return nil
}

// runs reports whether the controller c runs.
func (d deviceFlags) runs(c string) bool { return slices.Contains(d.controllers, c) }
