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

// deviceFlags are the device side's flags: which controllers run, and whether PodGroups'
// claims bind their pods. The zero value runs none. The budgets are budgetflags.Flags', for
// every controller.
type deviceFlags struct {
	controllers []string // of controllerNode and controllerDevice, each once
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
	if d.podGroups != device.PodGroupsAuto && !d.runs(controllerDevice) {
		return errors.New("-device-pod-groups needs -controllers with device")
	}
	return nil
}

// runs reports whether the controller c runs.
func (d deviceFlags) runs(c string) bool { return slices.Contains(d.controllers, c) }
