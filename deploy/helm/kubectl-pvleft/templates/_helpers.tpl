{{- /* Every object is named from the release, so two releases (in one namespace or two) and the plugin's own
       pvleft-reader ClusterRole (plugin/clusterrole.yaml) live side by side. */ -}}
{{- define "pvleft.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "pvleft.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- /* ClusterRole and ClusterRoleBinding are not namespaced: the namespace is in their name, so a release of the
       same name in another namespace does not take them over. */ -}}
{{- define "pvleft.clusterName" -}}
{{- printf "%s-%s" (include "pvleft.fullname" .) .Release.Namespace | trunc 253 | trimSuffix "-" -}}
{{- end -}}

{{- define "pvleft.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "pvleft.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name: the ServiceAccount to run as, when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "pvleft.labels" -}}
{{ include "pvleft.selector" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{- define "pvleft.selector" -}}
app.kubernetes.io/name: {{ include "pvleft.name" . }}
app.kubernetes.io/component: exporter
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- /* Whether to render a prometheus-operator object: "auto" renders it only when the cluster serves its API
       (helm install/upgrade ask the cluster; helm template needs --api-versions monitoring.coreos.com/v1/KIND),
       true always (helm template | kubectl apply to a cluster with the operator), false never.
       Called with (list $ .Values.serviceMonitor.enabled "ServiceMonitor"); "true" or "". */ -}}
{{- define "pvleft.operatorObject" -}}
{{- $root := index . 0 -}}
{{- $enabled := toString (index . 1) -}}
{{- $kind := index . 2 -}}
{{- if or (eq $enabled "true") (and (eq $enabled "auto") ($root.Capabilities.APIVersions.Has (printf "monitoring.coreos.com/v1/%s" $kind))) -}}
true
{{- end -}}
{{- end -}}
