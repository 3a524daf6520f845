// Command sidebyside measures a zone outage against kube's taint eviction controller and
// against taintevict's eviction Manager, each in a process of its own, at several cluster
// sizes and several times, rotating the order of the sides from run to run; it prints a
// Markdown table of medians and ratios and writes the plot of the time to evict every
// untolerating pod against cluster size.
//
//	go run ./cmd/sidebyside -runs 5 -sizes 1000,10000,50000,150000 -svg outage.svg -raw raw.jsonl
//
// With -impls kube,taintevict,floor it measures the floor too (see package outage): the
// drop-in's requests and Events with no scheduling at all. A second table then gives the
// floor's medians and the ratios kube/floor and taintevict/floor; the plot stays as it is.
//
// With -outage device it measures a device outage instead (outage.RunDevice): kube's
// device taint eviction controller against taintevict's clientgo/device, a DRA driver
// tainting every device at once, 10 pods to a device (a size of 10000 pods is 1,000
// devices), half of them tolerating the taint for 300 s:
//
//	go run ./cmd/sidebyside -outage device -runs 5 -sizes 10000
//
// With -replot it runs nothing, and reports the results an earlier run wrote to -raw.
//
// With -impl it is the child process: it runs one outage (package outage) and prints its
// result as one line of JSON.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"

	"github.com/taintevict/taintevict/bench/outage"
)

func main() {
	impl := flag.String("impl", "", "child mode: run one outage against kube, taintevict or floor and print it as JSON")
	pods := flag.Int("pods", 150_000, "child mode: pods in the cluster, 30 to a node")
	sizes := flag.String("sizes", "1000,10000,50000,150000", "driver: comma-separated cluster sizes, in pods")
	runs := flag.Int("runs", 5, "driver: runs of each side at each size")
	impls := flag.String("impls", "kube,taintevict", "driver: comma-separated sides to run, kube and taintevict among them; add floor for the second table")
	svg := flag.String("svg", "", "driver: write the plot to this SVG file")
	raw := flag.String("raw", "", "driver: append every result as a JSON line to this file")
	cpuprofile := flag.String("cpuprofile", "", "child mode: write a CPU profile of the outage (not of building the cluster) to this file")
	memprofile := flag.String("memprofile", "", "child mode: write a heap profile, taken once the outage is over, to this file, and one taken right before it to this file with .before added (go tool pprof -diff_base FILE.before FILE shows the heap growth)")
	replot := flag.Bool("replot", false, "driver: run nothing; summarize the results of an earlier -raw file and redraw the plot")
	flag.StringVar(&outageKind, "outage", "node", "node (a zone outage: tainted nodes) or device (a DRA driver taints its devices, 10 pods to a device)")
	flag.Parse()
	if outageKind != "node" && outageKind != "device" {
		fmt.Fprintln(os.Stderr, "sidebyside: -outage: want node or device")
		os.Exit(2)
	}
	var err error
	if *replot {
		err = replotRaw(*sizes, *raw, *svg)
	} else if *impl != "" {
		err = child(*impl, *pods, *cpuprofile, *memprofile)
	} else {
		err = drive(*sizes, *impls, *runs, *svg, *raw)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sidebyside:", err)
		os.Exit(1)
	}
}

func child(impl string, pods int, cpuprofile, memprofile string) error {
	cfg := outage.Config{Impl: impl, Pods: pods}
	var beforeErr, afterErr error
	var cpu *os.File
	cfg.BeforeOutage = func() {
		if memprofile != "" {
			beforeErr = writeHeapProfile(memprofile + ".before")
		}
		if cpuprofile != "" && beforeErr == nil {
			cpu, beforeErr = startCPUProfile(cpuprofile)
		}
	}
	cfg.AfterOutage = func() {
		if cpu != nil {
			pprof.StopCPUProfile()
			afterErr = cpu.Close()
			cpu = nil
		}
		if memprofile != "" {
			afterErr = errors.Join(afterErr, writeHeapProfile(memprofile))
		}
	}
	var res outage.Result
	var err error
	if outageKind == "device" {
		res, err = outage.RunDevice(context.Background(), outage.DeviceConfig{Impl: impl, Devices: pods / devicePods,
			BeforeOutage: cfg.BeforeOutage, AfterOutage: cfg.AfterOutage})
	} else {
		res, err = outage.Run(context.Background(), cfg)
	}
	if cpu != nil { // the outage failed before AfterOutage
		pprof.StopCPUProfile()
		cpu.Close()
	}
	err = errors.Join(err, beforeErr, afterErr)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// startCPUProfile starts a CPU profile written to path. The profile covers the outage
// only, from the first tainted node until the heap after it is read, not the building of
// the cluster, which is the same for both sides.
func startCPUProfile(path string) (*os.File, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// drive runs every size runs times, each side in a child process, and reports. The order
// of the sides rotates by one from run to run, so that each side runs first, and after
// each other, as often as the runs allow: with kube and taintevict, kube runs first in odd
// runs and taintevict in even ones.
func drive(sizeList, implList string, runs int, svgPath, rawPath string) error {
	sizes, err := parseSizes(sizeList)
	if err != nil {
		return err
	}
	impls, err := parseImpls(implList)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var all []sample
	for r := range runs {
		for _, n := range sizes {
			for _, impl := range rotate(impls, r) {
				res, err := runChild(self, impl, n)
				if err != nil {
					return fmt.Errorf("run %d, %s at %d pods: %w", r+1, impl, n, err)
				}
				fmt.Fprintf(os.Stderr, "run %d: %s %d pods: %.3f s\n", r+1, impl, n, res.Seconds)
				all = append(all, sample{run: r, res: res})
				if err := appendRaw(rawPath, res); err != nil {
					return err
				}
			}
		}
	}
	return report(all, sizes, svgPath)
}

// replotRaw reads the results an earlier run appended to rawPath, in the order it ran them
// (the k-th result of one side at one size belongs to run k), and reports them.
func replotRaw(sizeList, rawPath, svgPath string) error {
	sizes, err := parseSizes(sizeList)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(rawPath)
	if err != nil {
		return err
	}
	var all []sample
	seen := map[string]int{}
	dec := json.NewDecoder(bytes.NewReader(data))
	for dec.More() {
		var res outage.Result
		if err := dec.Decode(&res); err != nil {
			return fmt.Errorf("reading %s: %w", rawPath, err)
		}
		k := fmt.Sprintf("%s/%d", res.Impl, res.Pods)
		all = append(all, sample{run: seen[k], res: res})
		seen[k]++
	}
	return report(all, sizes, svgPath)
}

// report prints the Markdown table and writes the plot, if svgPath is set.
func report(all []sample, sizes []int, svgPath string) error {
	tab := summarize(all, sizes)
	fmt.Print(tab.markdown())
	if svgPath == "" {
		return nil
	}
	f, err := os.Create(svgPath)
	if err != nil {
		return err
	}
	if err := tab.plot().WriteSVG(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// parseImpls reads -impls: known sides, each once, kube and taintevict among them (the
// main table and the plot compare those two).
func parseImpls(list string) ([]string, error) {
	var impls []string
	known := outage.Impls
	if outageKind == "device" {
		known = outage.DeviceImpls
	}
	for _, f := range strings.Split(list, ",") {
		impl := strings.TrimSpace(f)
		if !slices.Contains(known, impl) || slices.Contains(impls, impl) {
			return nil, fmt.Errorf("bad side %q in -impls: want each of %v at most once", impl, known)
		}
		impls = append(impls, impl)
	}
	if !slices.Contains(impls, "kube") || !slices.Contains(impls, "taintevict") {
		return nil, fmt.Errorf("-impls %q: kube and taintevict must be among them", list)
	}
	return impls, nil
}

// rotate returns impls rotated left by r.
func rotate(impls []string, r int) []string {
	k := r % len(impls)
	return slices.Concat(impls[k:], impls[:k])
}

func parseSizes(list string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 {
			return nil, fmt.Errorf("bad size %q in -sizes", f)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// outageKind is -outage: node or device.
var outageKind = "node"

// devicePods is how many pods use each device in a device outage.
const devicePods = 10

func runChild(self, impl string, pods int) (outage.Result, error) {
	var out, errOut bytes.Buffer
	cmd := exec.Command(self, "-impl", impl, "-pods", strconv.Itoa(pods), "-outage", outageKind)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return outage.Result{}, fmt.Errorf("%w: %s", err, errOut.String())
	}
	var res outage.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return res, fmt.Errorf("reading the child's result %q: %w", out.String(), err)
	}
	if res.WronglyDeleted != 0 {
		return res, fmt.Errorf("%d tolerating pods were deleted", res.WronglyDeleted)
	}
	return res, nil
}

func appendRaw(path string, res outage.Result) error {
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if err := json.NewEncoder(f).Encode(res); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
