package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

var testMeta = Meta{Arch: "amd64", Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Version: "v0.1.0", Revision: "abc123"}

func archive(t *testing.T, binary []byte, meta Meta, tag string) ([]byte, Digests) {
	t.Helper()
	img, err := Build(binary, meta)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	var buf bytes.Buffer
	d, err := WriteArchive(&buf, img, tag)
	if err != nil {
		t.Fatalf("WriteArchive: %v", err)
	}
	return buf.Bytes(), d
}

// TestReproducible: the same binary and Meta give the same bytes; another time gives
// another image.
func TestReproducible(t *testing.T) {
	bin := []byte("\x7fELF not really")
	a, da := archive(t, bin, testMeta, DefaultTag)
	b, db := archive(t, bin, testMeta, DefaultTag)
	if !bytes.Equal(a, b) || da != db {
		t.Errorf("two builds: got %v and %v (equal bytes: %t), want the same", da, db, bytes.Equal(a, b))
	}
	later := testMeta
	later.Created = later.Created.Add(time.Second)
	if _, dc := archive(t, bin, later, DefaultTag); dc.Manifest == da.Manifest {
		t.Errorf("another creation time: got the same digest %v, want another", dc.Manifest)
	}
}

// readTar returns the regular files of a tar.
func readTar(t *testing.T, r io.Reader) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = data
	}
}

// unpack returns the image's config and its one layer's files from an archive, as a
// reader of `docker save`'s manifest.json finds them.
func unpack(t *testing.T, arch []byte) (v1.ConfigFile, map[string][]byte, map[string]*tar.Header) {
	t.Helper()
	files := readTar(t, bytes.NewReader(arch))
	var m []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(files["manifest.json"], &m); err != nil || len(m) != 1 || len(m[0].Layers) != 1 {
		t.Fatalf("manifest.json: got %s (%v), want one image of one layer", files["manifest.json"], err)
	}
	var cfg v1.ConfigFile
	if err := json.Unmarshal(files[m[0].Config], &cfg); err != nil {
		t.Fatalf("config %s: %v", m[0].Config, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(files[m[0].Layers[0]]))
	if err != nil {
		t.Fatalf("layer %s: %v", m[0].Layers[0], err)
	}
	headers := map[string]*tar.Header{}
	layer := map[string][]byte{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		headers[h.Name] = h
		if layer[h.Name], err = io.ReadAll(tr); err != nil {
			t.Fatal(err)
		}
	}
	return cfg, layer, headers
}

func TestImageContent(t *testing.T) {
	bin := []byte("\x7fELF not really")
	arch, _ := archive(t, bin, testMeta, DefaultTag)
	cfg, layer, headers := unpack(t, arch)
	if got, want := cfg.Config.User, "65532:65532"; got != want {
		t.Errorf("user: got %q, want %q", got, want)
	}
	if got, want := cfg.Config.Entrypoint, []string{"/controller"}; !reflect.DeepEqual(got, want) {
		t.Errorf("entrypoint: got %q, want %q", got, want)
	}
	if got, want := cfg.Config.Labels, map[string]string{
		"org.opencontainers.image.source":   "https://github.com/taintevict/taintevict",
		"org.opencontainers.image.version":  "v0.1.0",
		"org.opencontainers.image.revision": "abc123",
		"org.opencontainers.image.licenses": "Apache-2.0",
		"org.opencontainers.image.title":    "taintevict-controller",
		"org.opencontainers.image.created":  "2026-01-02T03:04:05Z",
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("labels: got %v, want %v", got, want)
	}
	if cfg.OS != "linux" || cfg.Architecture != "amd64" || !cfg.Created.Time.Equal(testMeta.Created) {
		t.Errorf("platform and time: got %s/%s %v, want linux/amd64 %v", cfg.OS, cfg.Architecture, cfg.Created.Time, testMeta.Created)
	}
	if len(layer) != 1 || !bytes.Equal(layer["controller"], bin) {
		t.Errorf("layer: got files %v, want controller alone, the binary", keys(layer))
	}
	if h := headers["controller"]; h == nil || h.Mode != 0o555 || h.Uid != 0 || !h.ModTime.Equal(testMeta.Created) {
		t.Errorf("controller's header: got %+v, want mode 0555, root's, at the creation time", h)
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestArchiveReaders: the archive reads as `docker save`'s tarball (as crane push and
// kind load read it) and as an OCI image layout, with the same image in both.
func TestArchiveReaders(t *testing.T) {
	arch, d := archive(t, []byte("binary"), testMeta, "registry.example.com/ops/controller:v1")
	dir := t.TempDir()
	p := filepath.Join(dir, "image.tar")
	if err := os.WriteFile(p, arch, 0o644); err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag("registry.example.com/ops/controller:v1")
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(p, &tag)
	if err != nil {
		t.Fatalf("as docker save's tarball: %v", err)
	}
	if got, err := img.ConfigName(); err != nil || got != d.Config {
		t.Errorf("as docker save's tarball: got config %v (%v), want %v", got, err, d.Config)
	}

	oci := filepath.Join(dir, "layout")
	for name, data := range readTar(t, bytes.NewReader(arch)) {
		f := filepath.Join(oci, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	idx, err := layout.ImageIndexFromPath(oci)
	if err != nil {
		t.Fatalf("as an OCI layout: %v", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Digest != d.Manifest ||
		im.Manifests[0].Annotations["io.containerd.image.name"] != "registry.example.com/ops/controller:v1" ||
		im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "v1" {
		t.Fatalf("index.json: got %+v, want the manifest %v, named registry.example.com/ops/controller:v1", im.Manifests, d.Manifest)
	}
	oimg, err := idx.Image(d.Manifest)
	if err != nil {
		t.Fatalf("as an OCI layout: %v", err)
	}
	if got, err := oimg.ConfigName(); err != nil || got != d.Config {
		t.Errorf("as an OCI layout: got config %v (%v), want %v", got, err, d.Config)
	}
}

func TestSplitTag(t *testing.T) {
	for _, tc := range []struct{ tag, full, short, err string }{
		{tag: "taintevict-controller:dev", full: "docker.io/library/taintevict-controller:dev", short: "dev"},
		{tag: "ops/controller:v1", full: "docker.io/ops/controller:v1", short: "v1"},
		{tag: "localhost:5000/controller:v1", full: "localhost:5000/controller:v1", short: "v1"},
		{tag: "ghcr.io/taintevict/controller:v0.1.0", full: "ghcr.io/taintevict/controller:v0.1.0", short: "v0.1.0"},
		{tag: "controller", err: "want NAME:TAG"},
		{tag: "localhost:5000/controller", err: "want NAME:TAG"},
		{tag: "controller:", err: "want NAME:TAG"},
		{tag: "controller@sha256:00", err: "want NAME:TAG"},
	} {
		t.Run(tc.tag, func(t *testing.T) {
			full, short, err := splitTag(tc.tag)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("got %q %q %v, want an error with %q", full, short, err, tc.err)
				}
				return
			}
			if err != nil || full != tc.full || short != tc.short {
				t.Errorf("got %q %q %v, want %q %q", full, short, err, tc.full, tc.short)
			}
		})
	}
}

// TestDeploymentNamesTheImage: the Deployment runs the image this program names by default.
func TestDeploymentNamesTheImage(t *testing.T) {
	b, err := os.ReadFile("../../examples/controller/deploy/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var images []string
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "image:"); ok {
			images = append(images, strings.TrimSpace(v))
		}
	}
	if !reflect.DeepEqual(images, []string{DefaultTag}) {
		t.Errorf("deployment.yaml's images: got %q, want %q", images, DefaultTag)
	}
}

// TestCommandImage builds the image of the real command twice: the same bytes both times.
// It unpacks it, runs the binary inside with -h, and checks that the image runs as a user
// that is not root.
func TestCommandImage(t *testing.T) {
	dir := t.TempDir()
	var arches [2][]byte
	for i := range arches {
		p := filepath.Join(dir, "image.tar")
		var stdout bytes.Buffer
		if err := run([]string{"-out", p, "-arch", runtime.GOARCH, "-version", "test"}, &stdout, io.Discard); err != nil {
			t.Fatalf("build %d: %v", i+1, err)
		}
		t.Logf("build %d: %s", i+1, strings.TrimSpace(stdout.String()))
		var err error
		if arches[i], err = os.ReadFile(p); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(arches[0], arches[1]) {
		t.Errorf("two builds of one commit: got different tarballs, want the same bytes")
	}
	cfg, layer, _ := unpack(t, arches[0])
	if u := cfg.Config.User; u == "" || u == "0" || u == "root" || strings.HasPrefix(u, "0:") || strings.HasPrefix(u, "root:") {
		t.Errorf("user: got %q, want a user that is not root", u)
	}
	bin := filepath.Join(dir, "controller")
	if err := os.WriteFile(bin, layer["controller"], 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-h").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "-kubeconfig") {
		t.Errorf("controller -h: got %v and %q, want exit code 0 and the usage", err, out)
	}
}
