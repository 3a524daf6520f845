package compat

import (
	"flag"
	"os"
	"testing"
)

// TestMain lets every scenario run at once: they wait on the real clock, not on the CPU,
// and by default only GOMAXPROCS parallel tests run at a time, which on two cores would
// play the scenarios nearly one after the other; 16 at a time keeps the timings within
// their tolerances on a busy two-core machine under the race detector.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.parallel"); f != nil && f.Value.String() == f.DefValue {
		if err := f.Value.Set("16"); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
