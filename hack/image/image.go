package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's fixed parts.
const (
	// User is the image's user and group: distroless's "nonroot", as the Deployment's
	// securityContext runs it.
	User = "65532:65532"
	// Entrypoint is where the binary is, and what the image runs.
	Entrypoint = "/controller"
	Source     = "https://github.com/taintevict/taintevict"
	Title      = "taintevict-controller"
	Licenses   = "Apache-2.0"
)

// Meta is what varies between builds of the image.
type Meta struct {
	Arch     string    // GOARCH
	Created  time.Time // every time in the image
	Version  string    // the org.opencontainers.image.version label
	Revision string    // the commit, the org.opencontainers.image.revision label
}

// Build returns the image of binary: one layer that holds it at Entrypoint, owned by root
// and executable by all, on no base, run as User, with the OCI labels. The same arguments
// give the same image, to the byte.
func Build(binary []byte, meta Meta) (v1.Image, error) {
	layerTar, err := layerTar(binary, meta.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("the layer: %w", err)
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History: v1.History{
			Created:   v1.Time{Time: meta.Created},
			CreatedBy: "hack/image: " + Entrypoint + ", go build -trimpath with CGO_ENABLED=0",
		},
	})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS = meta.Arch, "linux"
	cfg.Created = v1.Time{Time: meta.Created}
	cfg.Config = v1.Config{
		User:       User,
		Entrypoint: []string{Entrypoint},
		WorkingDir: "/",
		Labels: map[string]string{
			"org.opencontainers.image.source":   Source,
			"org.opencontainers.image.version":  meta.Version,
			"org.opencontainers.image.revision": meta.Revision,
			"org.opencontainers.image.licenses": Licenses,
			"org.opencontainers.image.title":    Title,
			"org.opencontainers.image.created":  meta.Created.UTC().Format(time.RFC3339),
		},
	}
	return mutate.ConfigFile(img, cfg)
}

// layerTar is the layer's one file, binary at Entrypoint, with the time created.
func layerTar(binary []byte, created time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     Entrypoint[1:],
		Mode:     0o555,
		Size:     int64(len(binary)),
		ModTime:  created,
		Format:   tar.FormatPAX,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(binary); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
