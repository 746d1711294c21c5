{{/*
Helpers shared by every Phalanx service chart, which depends on this library chart: a chart
differs from another only in its Deployment's extra environment, ports and volumes, its RBAC and
its Service ports. The objects every chart renders alike are in the other files here.
*/}}

{{/* The service this chart runs: the chart name without "phalanx-" (watcher, scheduler, ...). */}}
{{- define "phalanx.service" -}}
{{- trimPrefix "phalanx-" .Chart.Name -}}
{{- end -}}

{{/* The service's environment prefix: SCHEDULER for phalanx-scheduler, and so on. */}}
{{- define "phalanx.envPrefix" -}}
{{- include "phalanx.service" . | upper -}}
{{- end -}}

{{- define "phalanx.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "phalanx.service" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "phalanx.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "phalanx.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 }}
{{ include "phalanx.selectorLabels" . }}
app.kubernetes.io/component: {{ include "phalanx.service" . }}
app.kubernetes.io/part-of: phalanx
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "phalanx.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "phalanx.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "phalanx.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/*
Environment every service reads (pydantic-settings, prefix <SERVICE>_, nested with "__").
The PostgreSQL URL carries a password, so it only ever comes from a Secret; so may NATS's.
*/}}
{{- define "phalanx.commonEnv" -}}
{{- $prefix := include "phalanx.envPrefix" . -}}
- name: {{ $prefix }}_NATS__URL
{{- if .Values.nats.existingSecret }}
  valueFrom:
    secretKeyRef:
      name: {{ .Values.nats.existingSecret }}
      key: {{ .Values.nats.secretKey }}
{{- else }}
  value: {{ required "nats.url is required" .Values.nats.url | quote }}
{{- end }}
{{- include "phalanx.natsIdentityEnv" (dict "prefix" $prefix "nats" .Values.nats) }}
- name: {{ $prefix }}_NATS__MANAGE_STREAMS
  value: {{ .Values.nats.manageStreams | quote }}
- name: {{ $prefix }}_POSTGRES__URL
  valueFrom:
    secretKeyRef:
      name: {{ required "postgres.existingSecret is required: a Secret holding the PostgreSQL URL" .Values.postgres.existingSecret }}
      key: {{ required "postgres.secretKey is required" .Values.postgres.secretKey }}
- name: {{ $prefix }}_HEALTH_HOST
  value: "0.0.0.0"   # the kubelet's probes and Prometheus reach the pod's own address
- name: {{ $prefix }}_HEALTH_PORT
  value: {{ .Values.healthPort | quote }}
- name: {{ $prefix }}_LOG__LEVEL
  value: {{ .Values.log.level | quote }}
- name: {{ $prefix }}_LOG__FORMAT
  value: {{ .Values.log.format | quote }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Who this pod is on NATS: its user, its password from a Secret, the CA of the server's TLS.
     Called with (dict "prefix" ... "nats" ...), also by the scheduler chart's streams hook. */}}
{{- define "phalanx.natsIdentityEnv" -}}
{{- with .nats.user }}
- name: {{ $.prefix }}_NATS__USER
  value: {{ . | quote }}
{{- end }}
{{- if .nats.passwordSecret }}
- name: {{ .prefix }}_NATS__PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .nats.passwordSecret }}
      key: {{ .nats.passwordKey }}
{{- end }}
{{- if .nats.tls.caSecret }}
- name: {{ .prefix }}_NATS__TLS_CA_FILE
  value: /etc/phalanx/nats-ca/ca.crt
{{- end }}
{{- end -}}

{{/* The NATS server's CA, mounted where natsIdentityEnv points (only when one is given). */}}
{{- define "phalanx.natsCaMount" -}}
{{- if .Values.nats.tls.caSecret }}
- name: nats-ca
  mountPath: /etc/phalanx/nats-ca
  readOnly: true
{{- end }}
{{- end -}}

{{- define "phalanx.natsCaVolume" -}}
{{- if .Values.nats.tls.caSecret }}
- name: nats-ca
  secret:
    secretName: {{ .Values.nats.tls.caSecret }}
    items:
      - key: ca.crt
        path: ca.crt
{{- end }}
{{- end -}}

{{/* /healthz: the process is alive; /readyz: it can do its work (NATS, PostgreSQL, ...). */}}
{{- define "phalanx.probes" -}}
livenessProbe:
  httpGet:
    path: /healthz
    port: health
  {{- toYaml .Values.probes.liveness | nindent 2 }}
readinessProbe:
  httpGet:
    path: /readyz
    port: health
  {{- toYaml .Values.probes.readiness | nindent 2 }}
{{- end -}}

{{/* Pod-level placement and identity, the same for every service. */}}
{{- define "phalanx.podPlacement" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
