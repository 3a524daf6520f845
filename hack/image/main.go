package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DefaultTag is the image the Deployment in examples/controller/deploy names.
const DefaultTag = "taintevict-controller:dev"

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "image:", err)
		}
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "the tarball to write")
	tag := fs.String("tag", DefaultTag, "the image's name in the tarball")
	version := fs.String("version", "dev", "the org.opencontainers.image.version label")
	arch := fs.String("arch", "amd64", "the GOARCH to build for (linux only)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() > 0 {
		return errors.New("usage: image -out FILE [-tag NAME:TAG] [-version V] [-arch GOARCH]")
	}
	root, err := git(".", "rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	created, err := sourceTime(root)
	if err != nil {
		return err
	}
	revision, err := git(root, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	binary, err := buildBinary(filepath.Join(root, "examples", "controller"), *arch)
	if err != nil {
		return err
	}
	img, err := Build(binary, Meta{
		Arch: *arch, Created: created, Version: *version, Revision: revision,
	})
	if err != nil {
		return err
	}
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	d, err := WriteArchive(f, img, *tag)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %s (config %s), %s\n", *out, d.Manifest, d.Config, *tag)
	return nil
}

// sourceTime is $SOURCE_DATE_EPOCH, else the commit time of HEAD.
func sourceTime(root string) (time.Time, error) {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: want seconds since 1970: %w", s, err)
		}
		return time.Unix(sec, 0).UTC(), nil
	}
	s, err := git(root, "log", "-1", "--format=%ct")
	if err != nil {
		return time.Time{}, err
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("the commit time of HEAD, %q: %w", s, err)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// buildTimeout bounds one build of the command.
const buildTimeout = 25 * time.Minute

// buildBinary builds the command in dir as a static linux binary, the same bytes for the
// same source: no cgo, no file paths, no VCS stamp, no build ID.
func buildBinary(dir, arch string) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "taintevict-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "controller")
	// A cold build on a busy two-core machine takes minutes; it is bounded here, not by
	// whoever runs this (go test's default timeout of 10 minutes killed it once).
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w -buildid=", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("go build in %s: not done after %v: %w", dir, buildTimeout, ctx.Err())
		}
		return nil, fmt.Errorf("go build in %s: %w: %s", dir, err, strings.TrimSpace(string(out)))
	}
	return os.ReadFile(bin)
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}
