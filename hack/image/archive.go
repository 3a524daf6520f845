package main

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Digests are an image's manifest digest (its digest in a registry that keeps the OCI
// manifest) and config digest (its image ID in Docker and containerd).
type Digests struct {
	Manifest, Config v1.Hash
}

// WriteArchive writes img to w as an OCI image layout in a tar, with the manifest.json of
// `docker save` beside it, under the name tag ("name:tag", or "registry/path:tag"). Each
// blob is in the tar once; the entries come in a fixed order, with the image's creation
// time, so that the same image gives the same bytes.
func WriteArchive(w io.Writer, img v1.Image, tag string) (Digests, error) {
	name, short, err := splitTag(tag)
	if err != nil {
		return Digests{}, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return Digests{}, err
	}
	when := cfg.Created.Time
	manifest, err := img.RawManifest()
	if err != nil {
		return Digests{}, err
	}
	mdigest, err := img.Digest()
	if err != nil {
		return Digests{}, err
	}
	rawConfig, err := img.RawConfigFile()
	if err != nil {
		return Digests{}, err
	}
	cdigest, err := img.ConfigName()
	if err != nil {
		return Digests{}, err
	}
	layers, err := img.Layers()
	if err != nil {
		return Digests{}, err
	}

	tw := tar.NewWriter(w)
	add := func(path string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: path, Mode: 0o644, Size: int64(len(data)), ModTime: when, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	blob := func(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "blobs/", Mode: 0o755, ModTime: when, Format: tar.FormatPAX}); err != nil {
		return Digests{}, err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "blobs/sha256/", Mode: 0o755, ModTime: when, Format: tar.FormatPAX}); err != nil {
		return Digests{}, err
	}
	var layerPaths []string
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return Digests{}, err
		}
		rc, err := l.Compressed()
		if err != nil {
			return Digests{}, err
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return Digests{}, err
		}
		if err := add(blob(d), data); err != nil {
			return Digests{}, err
		}
		layerPaths = append(layerPaths, blob(d))
	}
	if err := add(blob(cdigest), rawConfig); err != nil {
		return Digests{}, err
	}
	if err := add(blob(mdigest), manifest); err != nil {
		return Digests{}, err
	}
	index, err := json.Marshal(v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests: []v1.Descriptor{{
			MediaType: types.OCIManifestSchema1,
			Digest:    mdigest,
			Size:      int64(len(manifest)),
			Annotations: map[string]string{
				"io.containerd.image.name":          name,
				"org.opencontainers.image.ref.name": short,
			},
		}},
	})
	if err != nil {
		return Digests{}, err
	}
	dockerManifest, err := json.Marshal([]struct {
		Config   string
		RepoTags []string
		Layers   []string
	}{{Config: blob(cdigest), RepoTags: []string{tag}, Layers: layerPaths}})
	if err != nil {
		return Digests{}, err
	}
	for _, f := range []struct {
		path string
		data []byte
	}{
		{"index.json", index},
		{"manifest.json", dockerManifest},
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
	} {
		if err := add(f.path, f.data); err != nil {
			return Digests{}, err
		}
	}
	if err := tw.Close(); err != nil {
		return Digests{}, err
	}
	return Digests{Manifest: mdigest, Config: cdigest}, nil
}

// splitTag returns tag's full name as containerd names images (docker.io/library/ added to
// a bare name, docker.io/ to a path without a registry) and its tag alone.
func splitTag(tag string) (full, short string, err error) {
	slash := strings.LastIndex(tag, "/")
	colon := strings.LastIndex(tag, ":")
	if colon <= slash+1 || colon == len(tag)-1 || strings.ContainsAny(tag, " @") {
		return "", "", fmt.Errorf("tag %q: want NAME:TAG, e.g. %s", tag, DefaultTag)
	}
	full = tag
	first, _, hasPath := strings.Cut(tag, "/")
	switch {
	case !hasPath:
		full = "docker.io/library/" + tag
	case !strings.ContainsAny(first, ".:") && first != "localhost":
		full = "docker.io/" + tag
	}
	return full, tag[colon+1:], nil
}
