// Command image builds the container image of the drop-in controller (examples/controller)
// with no Docker daemon and no base image: one layer holding a static binary (CGO_ENABLED=0,
// -trimpath, no build ID), run as the non-root user 65532:65532, with the OCI labels
// org.opencontainers.image.source, .version, .revision, .licenses, .title and .created.
//
// Usage, from this folder:
//
//	go run . -out controller-image.tar [-tag taintevict-controller:dev] [-version dev] [-arch amd64]
//
// The tarball is an OCI image layout (oci-layout, index.json, blobs/sha256/...) that also
// carries the manifest.json of `docker save`, as Docker 25 and later write it, so that
// `kind load image-archive`, `docker load`, containerd's `ctr images import` and
// `crane push` all take it. The default tag is the image that
// examples/controller/deploy/deployment.yaml names.
//
// It is reproducible: every time in it (the files', the layer's, the image's creation) is
// the commit time of HEAD, or $SOURCE_DATE_EPOCH when set, and the tarball's entries come in
// a fixed order; the same commit thus gives the same bytes, and the same image digest, which
// it prints.
//
// It exits 1 with one line on stderr when the build fails or a flag is bad.
package main
