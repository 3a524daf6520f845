package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/taintevict/taintevict/eviction/engine"
)

// buildTimeout bounds a build of the command in a test: a cold one on a busy two-core
// machine takes minutes, and go test's own timeout must not be what stops it.
const buildTimeout = 25 * time.Minute

// buildBinary builds the command into a temporary folder and returns its path.
func buildBinary(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "the go command must be on PATH to build the binary")
	bin := filepath.Join(t.TempDir(), "controller")
	ctx, cancel := context.WithTimeout(t.Context(), buildTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, goTool, "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build (bounded by %v): %s", buildTimeout, out)
	return bin
}

// TestBinarySIGTERM runs the built command, sends it SIGTERM while its Manager waits for a
// toleration to run out, and checks that it stops cleanly well within the Manager's delete
// timeout, with the demo's exit code for an interruption and "controller: interrupted" as
// the last line on stderr, after informational log lines only (an Event still queued when
// the signal came may be reported dropped: the demo's first Event can race the signal).
func TestBinarySIGTERM(t *testing.T) {
	bin := buildBinary(t)
	cmd := exec.Command(bin, "-toleration-seconds=600", "-mode=evict")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	waiting := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "waiting for api-1's 600s toleration to run out") {
				close(waiting)
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case <-waiting:
	case <-time.After(failAfter):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("the demo did not reach its wait; stderr: %s", stderr.String())
	}

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err = <-exited:
	case <-time.After(engine.DefaultActTimeout):
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("not stopped %s after SIGTERM", engine.DefaultActTimeout)
	}
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "exit: %v", err)
	assert.Equal(t, 130, exit.ExitCode())
	lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	assert.Equal(t, "controller: interrupted", lines[len(lines)-1], "stderr: %s", stderr.String())
	for _, l := range lines[:len(lines)-1] {
		assert.True(t, strings.HasPrefix(l, "I"), "got %q on stderr before the last line, want informational log lines only", l)
	}
}
