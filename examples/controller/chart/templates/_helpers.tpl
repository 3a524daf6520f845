{{/* The prefix of every name: the release's name when it holds "taintevict" (release
"taintevict" gives deploy/'s names), else RELEASE-taintevict. */}}
{{- define "taintevict.prefix" -}}
{{- if contains "taintevict" .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-taintevict" .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "taintevict.name" -}}
{{- include "taintevict.prefix" . }}-controller
{{- end -}}

{{- define "taintevict.labels" -}}
app.kubernetes.io/name: taintevict-controller
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}

{{- define "taintevict.selector" -}}
app.kubernetes.io/name: taintevict-controller
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Whether the device side runs. */}}
{{- define "taintevict.device" -}}
{{- if has "device" (splitList "," .Values.controllers) }}true{{ end -}}
{{- end -}}

{{/* The webhook's secret of its serving certificate. */}}
{{- define "taintevict.webhookSecret" -}}
{{- if .Values.webhook.certManager.enabled -}}
{{- include "taintevict.name" . }}-webhook-tls
{{- else -}}
{{- required "webhook.secretName is required without cert-manager (webhook.certManager.enabled=false)" .Values.webhook.secretName -}}
{{- end -}}
{{- end -}}

{{/* The controller's flags, from the values: one a line, each quoted. */}}
{{- define "taintevict.args" -}}
- "-kubeconfig=auto"
- {{ printf "-mode=%s" .Values.mode | quote }}
{{- if ne .Values.controllers "node" }}
- {{ printf "-controllers=%s" .Values.controllers | quote }}
{{- end }}
{{- with .Values.deadlineSource }}
- {{ printf "-deadline-source=%s" . | quote }}
{{- end }}
- {{ printf "-leader-elect=%t" .Values.leaderElection.enabled | quote }}
{{- with .Values.leaderElection.leaseDuration }}
- {{ printf "-leader-elect-lease-duration=%s" . | quote }}
{{- end }}
{{- with .Values.leaderElection.renewDeadline }}
- {{ printf "-leader-elect-renew-deadline=%s" . | quote }}
{{- end }}
{{- with .Values.leaderElection.retryPeriod }}
- {{ printf "-leader-elect-retry-period=%s" . | quote }}
{{- end }}
{{- if .Values.metrics.enabled }}
- {{ printf "-metrics-addr=:%v" .Values.metrics.port | quote }}
{{- end }}
{{- $b := .Values.budgets }}
{{- with $b.evictionRate }}
- {{ printf "-eviction-rate=%v" . | quote }}
{{- end }}
{{- with $b.evictionBurst }}
- {{ printf "-eviction-burst=%v" . | quote }}
{{- end }}
{{- range $b.taintRate }}
- {{ printf "-taint-rate=%s" . | quote }}
{{- end }}
{{- with $b.brakeFraction }}
- {{ printf "-brake-fraction=%v" . | quote }}
{{- end }}
{{- with $b.brakeZoneFraction }}
- {{ printf "-brake-zone-fraction=%v" . | quote }}
{{- end }}
{{- with $b.brakeHolders }}
- {{ printf "-brake-holders=%v" . | quote }}
{{- end }}
{{- with $b.brakeZoneHolders }}
- {{ printf "-brake-zone-holders=%v" . | quote }}
{{- end }}
{{- with $b.fullDisruption }}
- {{ printf "-full-disruption=%s" . | quote }}
{{- end }}
{{- with $b.inFlight }}
- {{ printf "-in-flight=%v" . | quote }}
{{- end }}
{{- with $b.inFlightFraction }}
- {{ printf "-in-flight-fraction=%v" . | quote }}
{{- end }}
{{- with $b.namespaceLimit }}
- {{ printf "-namespace-limit=%s" . | quote }}
{{- end }}
{{- with $b.ownerLimit }}
- {{ printf "-owner-limit=%s" . | quote }}
{{- end }}
{{- with $b.loopWindow }}
- {{ printf "-loop-window=%s" . | quote }}
{{- end }}
{{- with $b.confirmFraction }}
- {{ printf "-confirm-fraction=%v" . | quote }}
{{- end }}
{{- with $b.confirmMinPods }}
- {{ printf "-confirm-min-pods=%v" . | quote }}
{{- end }}
{{- if .Values.webhook.enabled }}
- {{ printf "-admission-addr=:%v" .Values.webhook.port | quote }}
- "-admission-tls-cert-file=/etc/taintevict/webhook/tls.crt"
- "-admission-tls-private-key-file=/etc/taintevict/webhook/tls.key"
{{- with .Values.webhook.denyFraction }}
- {{ printf "-admission-deny-fraction=%v" . | quote }}
{{- end }}
{{- end }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end -}}
