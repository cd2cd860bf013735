{{/* The release's name for kedge's objects. */}}
{{- define "kedge.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "kedge.serviceAccountName" -}}
{{- default (include "kedge.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "kedge.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kedge.labels" -}}
{{ include "kedge.selectorLabels" . }}
app.kubernetes.io/part-of: kedge
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Whether the GitHub App key is mounted: App authentication is configured. */}}
{{- define "kedge.githubApp" -}}
{{- if .Values.config.github.appID -}}true{{- end -}}
{{- end -}}

{{/*
kedge.yaml: the config values, with the paths the chart owns filled in when
left empty (the App key's mount, the cache volume).
*/}}
{{- define "kedge.config" -}}
{{- $config := deepCopy .Values.config -}}
{{- if and (include "kedge.githubApp" .) (not .Values.config.github.privateKeyFile) -}}
{{- $_ := set $config.github "privateKeyFile" (printf "/etc/kedge/github/%s" .Values.githubApp.privateKeyKey) -}}
{{- end -}}
{{- if not .Values.config.git.cacheDir -}}
{{- $_ := set $config.git "cacheDir" "/var/cache/kedge" -}}
{{- end -}}
{{- toYaml $config -}}
{{- end -}}
