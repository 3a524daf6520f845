package main

import (
	"archive/zip"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// repo makes a git repository with a module example.com/m, a nested module example.com/m/sub,
// a file .gitignore excludes, an untracked file, and a tracked file deleted from the disk.
func repo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitIn := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE=2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	write("go.mod", "module example.com/m\n\ngo 1.26\n")
	write("m.go", "package m\n\n// Answer is the answer.\nconst Answer = 42\n")
	write(".gitignore", "/build/\n")
	write("gone.go", "package m\n")
	write("sub/go.mod", "module example.com/m/sub\n\ngo 1.26\n")
	write("sub/sub.go", "package sub\n")
	gitIn("init", "-q")
	gitIn("add", ".")
	gitIn("commit", "-q", "-m", "init")
	write("build/out.bin", "ignored")
	write("new.go", "package m\n\n// New is not committed yet.\nconst New = 1\n")
	if err := os.Remove(filepath.Join(dir, "gone.go")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func zipNames(t *testing.T, p string) []string {
	t.Helper()
	r, err := zip.OpenReader(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var names []string
	for _, f := range r.File {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	return names
}

func TestPublish(t *testing.T) {
	dir := repo(t)
	out := t.TempDir()
	if err := run([]string{"-version", "v0.1.0", "-out", out, dir, filepath.Join(dir, "sub")}, io.Discard); err != nil {
		t.Fatalf("run: %v", err)
	}
	v := filepath.Join(out, "example.com", "m", "@v")
	if got, want := zipNames(t, filepath.Join(v, "v0.1.0.zip")), []string{
		"example.com/m@v0.1.0/.gitignore", "example.com/m@v0.1.0/go.mod", "example.com/m@v0.1.0/m.go", "example.com/m@v0.1.0/new.go",
	}; !slices.Equal(got, want) {
		t.Errorf("the core's zip: got %q, want %q (no nested module, no ignored or deleted file)", got, want)
	}
	if got, want := zipNames(t, filepath.Join(out, "example.com", "m", "sub", "@v", "v0.1.0.zip")), []string{
		"example.com/m/sub@v0.1.0/go.mod", "example.com/m/sub@v0.1.0/sub.go",
	}; !slices.Equal(got, want) {
		t.Errorf("the nested module's zip: got %q, want %q", got, want)
	}
	mod, err := os.ReadFile(filepath.Join(v, "v0.1.0.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(mod), "module example.com/m\n\ngo 1.26\n"; got != want {
		t.Errorf(".mod: got %q, want %q", got, want)
	}
	var inf info
	b, err := os.ReadFile(filepath.Join(v, "v0.1.0.info"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &inf); err != nil {
		t.Fatal(err)
	}
	if got, want := inf.Version+" "+inf.Time.Format("2006-01-02T15:04:05Z07:00"), "v0.1.0 2026-01-02T03:04:05Z"; got != want {
		t.Errorf(".info: got %s, want %s (the commit time of HEAD)", got, want)
	}

	// A second version joins the list, in order; the same one again is listed once.
	for _, version := range []string{"v0.10.0", "v0.2.0", "v0.2.0"} {
		if err := run([]string{"-version", version, "-out", out, dir}, io.Discard); err != nil {
			t.Fatalf("run %s: %v", version, err)
		}
	}
	list, err := os.ReadFile(filepath.Join(v, "list"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(list), "v0.1.0\nv0.2.0\nv0.10.0\n"; got != want {
		t.Errorf("list: got %q, want %q", got, want)
	}
}

// TestGoDownloads: the go command downloads and verifies a module from the folder, as a
// consumer's would.
func TestGoDownloads(t *testing.T) {
	dir := repo(t)
	out := t.TempDir()
	if err := run([]string{"-version", "v0.1.0", "-out", out, dir}, io.Discard); err != nil {
		t.Fatalf("run: %v", err)
	}
	modcache := t.TempDir()
	env := append(os.Environ(), "GOPROXY=file://"+filepath.ToSlash(out), "GONOSUMDB=example.com", "GOFLAGS=-mod=mod", "GOWORK=off", "GOMODCACHE="+modcache)
	t.Cleanup(func() {
		// The module cache is read-only; the go command empties it.
		cmd := exec.Command("go", "clean", "-modcache")
		cmd.Env = env
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("go clean -modcache: %v: %s", err, b)
		}
	})
	cmd := exec.Command("go", "mod", "download", "-json", "example.com/m@v0.1.0")
	cmd.Dir = t.TempDir()
	cmd.Env = env
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download: %v: %s", err, b)
	}
	var got struct{ Version, Dir, Error string }
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("go mod download -json: %v: %s", err, b)
	}
	if got.Error != "" || got.Version != "v0.1.0" {
		t.Fatalf("go mod download: got version %q, error %q; want v0.1.0, none", got.Version, got.Error)
	}
	src, err := os.ReadFile(filepath.Join(got.Dir, "new.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "const New = 1") {
		t.Errorf("new.go in the module cache: got %q, want the working tree's", src)
	}
}

func TestBadInput(t *testing.T) {
	dir := repo(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no module folder", []string{"-version", "v0.1.0", "-out", t.TempDir()}, "usage: release"},
		{"no version", []string{"-out", t.TempDir(), dir}, "usage: release"},
		{"a folder without go.mod", []string{"-version", "v0.1.0", "-out", t.TempDir(), filepath.Join(dir, "build")}, "go.mod"},
		{"a version that is not canonical", []string{"-version", "v0.1", "-out", t.TempDir(), dir}, "not canonical"},
		{"a major version the path does not say", []string{"-version", "v2.0.0", "-out", t.TempDir(), dir}, "v2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(tc.args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error that contains %q", err, tc.want)
			}
		})
	}
}
