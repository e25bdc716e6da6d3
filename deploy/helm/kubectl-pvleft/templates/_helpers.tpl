{{- define "pvleft.labels" -}}
app.kubernetes.io/name: kubectl-pvleft
app.kubernetes.io/component: exporter
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "pvleft.selector" -}}
app.kubernetes.io/name: kubectl-pvleft
app.kubernetes.io/component: exporter
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "pvleft.fullname" -}}
{{- printf "%s-exporter" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
