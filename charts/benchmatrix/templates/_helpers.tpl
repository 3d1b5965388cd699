{{/*
Names and labels shared by every template.
*/}}

{{/* The chart name, unless overridden. */}}
{{- define "benchmatrix.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name of the release's objects. A release named like the chart (the usual
`helm install benchmatrix ...`) gives plain "benchmatrix" instead of "benchmatrix-benchmatrix".
*/}}
{{- define "benchmatrix.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* chart-version, as the helm.sh/chart label wants it. */}}
{{- define "benchmatrix.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "benchmatrix.labels" -}}
helm.sh/chart: {{ include "benchmatrix.chart" . }}
{{ include "benchmatrix.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: benchmatrix
{{- end }}

{{/* Labels that select the operator pod; never change them in an upgrade (selectors are immutable). */}}
{{- define "benchmatrix.selectorLabels" -}}
app.kubernetes.io/name: {{ include "benchmatrix.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{/* The operator's ServiceAccount name. */}}
{{- define "benchmatrix.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "benchmatrix.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
An image reference: repository:tag, the tag defaulting to the chart's appVersion.
Call with (dict "image" .Values.image.operator "root" .)
*/}}
{{- define "benchmatrix.image" -}}
{{- printf "%s:%s" .image.repository (default .root.Chart.AppVersion .image.tag) }}
{{- end }}

{{/* Fails the render on values that cannot work, with a message saying what to change. */}}
{{- define "benchmatrix.validate" -}}
{{- if not (has .Values.operator.podSecurity (list "restricted" "baseline" "privileged")) }}
{{- fail (printf "operator.podSecurity must be \"restricted\", \"baseline\" or \"privileged\", not %q" (toString .Values.operator.podSecurity)) }}
{{- end }}
{{- if not (has .Values.operator.logFormat (list "json" "text")) }}
{{- fail (printf "operator.logFormat must be \"json\" or \"text\", not %q" .Values.operator.logFormat) }}
{{- end }}
{{- if lt (int .Values.operator.maxActiveRuns) 1 }}
{{- fail "operator.maxActiveRuns must be at least 1" }}
{{- end }}
{{- if lt (int .Values.replicas) 1 }}
{{- fail "replicas must be at least 1" }}
{{- end }}
{{- $lease := int .Values.leaderElection.leaseSeconds }}
{{- if or (lt $lease 2) (gt $lease 300) }}
{{- fail (printf "leaderElection.leaseSeconds must be 2 to 300, not %v" .Values.leaderElection.leaseSeconds) }}
{{- end }}
{{- range .Values.watchNamespaces }}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$" (toString .)) }}
{{- fail (printf "watchNamespaces: %q is not a namespace name (lower-case letters, digits and '-', at most 63)" (toString .)) }}
{{- end }}
{{- end }}
{{- if and .Values.metrics.serviceMonitor.enabled (not .Values.metrics.service.enabled) }}
{{- fail "metrics.serviceMonitor.enabled needs metrics.service.enabled: the ServiceMonitor scrapes that Service" }}
{{- end }}
{{- if or (lt (int .Values.operator.exportedRuns) 0) (gt (int .Values.operator.exportedRuns) 100) }}
{{- fail "operator.exportedRuns must be from 0 to 100" }}
{{- end }}
{{- if ne (len .Values.watchNamespaces) (len (uniq .Values.watchNamespaces)) }}
{{- fail "watchNamespaces names a namespace twice" }}
{{- end }}
{{- /* The operator refuses the same patterns at start-up; refusing them here fails the install
instead of crash-looping the operator. */}}
{{- range .Values.operator.allowedImages }}
{{- $p := toString . }}
{{- if or (eq $p "") (regexMatch "[\\s,]" $p) }}
{{- fail (printf "operator.allowedImages: %q must be one image pattern, without spaces or commas" $p) }}
{{- end }}
{{- if not (and (regexMatch "^(localhost|[^/]*[.:*][^/]*)(/|$)" $p) (or (contains "/" $p) (contains "**" $p))) }}
{{- fail (printf "operator.allowedImages: %q names no registry, so it can never match: images are matched in full, as the kubelet pulls them (nginx:1.27 is docker.io/library/nginx:1.27)" $p) }}
{{- end }}
{{- end }}
{{- end }}
