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

{{/*
The ClusterRole's rules: get, list and watch on exactly the kinds kedge
reads. kedge and its doctor hook are bound to the same rules.
*/}}
{{- define "kedge.clusterRules" -}}
- apiGroups: [""]
  # ConfigMaps cluster-wide: the injector ConfigMaps are found by their
  # istio.io/rev label in whichever namespace istiod runs.
  resources: [namespaces, pods, configmaps]
  verbs: [get, list, watch]
# Nodes are only counted: ztunnel must run on each before a namespace
# moves to ambient mode. Services: which pods a waypoint serves
# (istio.io/use-waypoint) and what an L7 policy can attach to.
- apiGroups: [""]
  resources: [nodes, services]
  verbs: [get, list, watch]
- apiGroups: [apps]
  resources: [replicasets, deployments, statefulsets, daemonsets]
  verbs: [get, list, watch]
- apiGroups: [batch]
  resources: [jobs, cronjobs]
  verbs: [get, list, watch]
- apiGroups: [admissionregistration.k8s.io]
  resources: [mutatingwebhookconfigurations]
  verbs: [get, list, watch]
# Optional kinds, read when their CRDs are installed.
# AppProjects say which repositories an Application may take charts
# from; kedge pulls from no other.
- apiGroups: [argoproj.io]
  resources: [rollouts, applications, appprojects]
  verbs: [get, list, watch]
- apiGroups: [kustomize.toolkit.fluxcd.io]
  resources: [kustomizations]
  verbs: [get, list, watch]
# HelmRepositories and OCIRepositories say where a HelmRelease's chart
# is pulled from.
- apiGroups: [source.toolkit.fluxcd.io]
  resources: [gitrepositories, helmrepositories, ocirepositories]
  verbs: [get, list, watch]
# Istio ProxyConfigs set the proxy image type mesh-wide, per namespace or
# per workload.
- apiGroups: [networking.istio.io]
  resources: [proxyconfigs]
  verbs: [get, list, watch]
# What Istio's sidecar-to-ambient migration guide checks before a
# namespace moves: authorization and authentication policies, Envoy
# filters, Wasm plugins, VirtualServices and the HTTPRoutes replacing
# them, and waypoint Gateways.
- apiGroups: [security.istio.io]
  resources: [authorizationpolicies, peerauthentications, requestauthentications]
  verbs: [get, list, watch]
- apiGroups: [networking.istio.io]
  resources: [envoyfilters, virtualservices]
  verbs: [get, list, watch]
- apiGroups: [extensions.istio.io]
  resources: [wasmplugins]
  verbs: [get, list, watch]
- apiGroups: [gateway.networking.k8s.io]
  resources: [gateways, httproutes]
  verbs: [get, list, watch]
# A Flagger Canary names the workload whose template its primary runs.
- apiGroups: [flagger.app]
  resources: [canaries]
  verbs: [get, list, watch]
{{- end -}}

{{/* The leader-election Role's rules. */}}
{{- define "kedge.leaseRules" -}}
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  verbs: [create]
- apiGroups: [coordination.k8s.io]
  resources: [leases]
  resourceNames: [{{ .Values.config.server.leaseName | quote }}]
  verbs: [get, update]
{{- end -}}

{{/* The annotations of the doctor hook's objects, created in weight order
before each install and upgrade and deleted once the checks pass. */}}
{{- define "kedge.doctorHook" -}}
helm.sh/hook: pre-install,pre-upgrade
helm.sh/hook-weight: {{ .weight | quote }}
helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
{{- end -}}
