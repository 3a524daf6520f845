// Package chart tests the Helm chart of the drop-in controller, examples/controller/chart,
// with Helm itself: helm lint, and helm template with the values operators set, against the
// manifests of examples/controller/deploy, which the chart must match (the RBAC above all).
//
// It is a module of its own, never published and never imported: Helm (helm.sh/helm/v4)
// requires the k8s.io modules at v0.37 and brings a large build list, which must stay out
// of the published modules' build lists (their floors are Kubernetes 1.35 and 1.36) and of
// the command's. Its go.work keeps it out of the repository's workspace too; it names Helm
// as a tool (go tool helm), which the end-to-end suite builds to install the chart on a
// real API server.
package chart
