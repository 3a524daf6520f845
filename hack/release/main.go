package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	modzip "golang.org/x/mod/zip"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.SetOutput(stderr)
	version := fs.String("version", "", "the version to publish the modules at, e.g. v0.1.0")
	out := fs.String("out", "", "the proxy folder to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *version == "" || *out == "" || fs.NArg() == 0 {
		return errors.New("usage: release -version VERSION -out FOLDER MODULEDIR...")
	}
	for _, dir := range fs.Args() {
		m, err := publish(dir, *version, *out)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "release: %s@%s from %s\n", m.Path, m.Version, dir)
	}
	return nil
}

// info is the content of a VERSION.info file.
type info struct {
	Version string
	Time    time.Time
}

// publish writes the module in dir at version into the proxy folder out, and returns it.
func publish(dir, version, out string) (module.Version, error) {
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return module.Version{}, err
	}
	path := modfile.ModulePath(gomod)
	if path == "" {
		return module.Version{}, fmt.Errorf("%s: go.mod names no module", dir)
	}
	m := module.Version{Path: path, Version: version}
	if err := module.Check(m.Path, m.Version); err != nil {
		return m, err
	}
	if module.CanonicalVersion(version) != version {
		return m, fmt.Errorf("%s: version %q is not canonical", path, version)
	}
	files, err := treeFiles(dir)
	if err != nil {
		return m, err
	}
	when, err := headTime(dir)
	if err != nil {
		return m, err
	}
	escPath, err := module.EscapePath(path)
	if err != nil {
		return m, err
	}
	escVersion, err := module.EscapeVersion(version)
	if err != nil {
		return m, err
	}
	vdir := filepath.Join(out, filepath.FromSlash(escPath), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return m, err
	}
	var zip bytes.Buffer
	if err := modzip.Create(&zip, m, files); err != nil {
		return m, fmt.Errorf("%s: %w", dir, err)
	}
	infoJSON, err := json.Marshal(info{Version: version, Time: when.UTC()})
	if err != nil {
		return m, err
	}
	for name, data := range map[string][]byte{
		escVersion + ".zip":  zip.Bytes(),
		escVersion + ".mod":  gomod,
		escVersion + ".info": infoJSON,
	} {
		if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
			return m, err
		}
	}
	return m, addToList(filepath.Join(vdir, "list"), version)
}

// addToList adds version to the list file at p, once, in the order of the versions.
func addToList(p, version string) error {
	old, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	versions := strings.Fields(string(old))
	if !slices.Contains(versions, version) {
		versions = append(versions, version)
	}
	semver.Sort(versions)
	return os.WriteFile(p, []byte(strings.Join(versions, "\n")+"\n"), 0o644)
}

// treeFiles lists the files under dir that a commit of the working tree would hold.
func treeFiles(dir string) ([]modzip.File, error) {
	listed, err := git(dir, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--deduplicate", "--", ".")
	if err != nil {
		return nil, err
	}
	var files []modzip.File
	for _, rel := range strings.Split(listed, "\x00") {
		if rel == "" {
			continue
		}
		full := filepath.Join(dir, filepath.FromSlash(rel))
		fi, err := os.Lstat(full)
		if errors.Is(err, os.ErrNotExist) {
			continue // tracked, deleted in the working tree
		}
		if err != nil {
			return nil, err
		}
		files = append(files, diskFile{rel: rel, full: full, info: fi})
	}
	return files, nil
}

// headTime is the commit time of HEAD in the repository of dir.
func headTime(dir string) (time.Time, error) {
	s, err := git(dir, "log", "-1", "--format=%cI")
	if err != nil {
		return time.Time{}, err
	}
	return time.Parse(time.RFC3339, strings.TrimSpace(s))
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s in %s: %w: %s", strings.Join(args, " "), dir, err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// diskFile is a file of the working tree, as modzip.Create takes it.
type diskFile struct {
	rel  string // slash-separated, relative to the module's folder
	full string
	info os.FileInfo
}

func (f diskFile) Path() string                 { return f.rel }
func (f diskFile) Lstat() (os.FileInfo, error)  { return f.info, nil }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(f.full) }
