{{/* Metadata shared by every CRD of this chart. */}}
{{- define "phalanx-crds.metadata" -}}
labels:
  helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 }}
  app.kubernetes.io/name: {{ .Chart.Name }}
  app.kubernetes.io/instance: {{ .Release.Name }}
  app.kubernetes.io/part-of: phalanx
  app.kubernetes.io/managed-by: {{ .Release.Service }}
  {{- with .Values.labels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- if .Values.keep }}
annotations:
  helm.sh/resource-policy: keep
{{- end }}
{{- end -}}
