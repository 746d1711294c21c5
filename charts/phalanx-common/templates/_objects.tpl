{{/*
The objects every service chart renders alike. A chart's templates/<object>.yaml is one line
that includes the one it needs, with its own context: {{ include "phalanx.pdb" . }}.
*/}}

{{- define "phalanx.pdb" -}}
{{- if and .Values.podDisruptionBudget.enabled (gt (int .Values.replicas) 1) }}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "phalanx.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "phalanx.labels" . | nindent 4 }}
spec:
  maxUnavailable: {{ .Values.podDisruptionBudget.maxUnavailable }}
  selector:
    matchLabels:
      {{- include "phalanx.selectorLabels" . | nindent 6 }}
{{- end }}
{{- end -}}

{{/* (dict "root" . "kubeApi" false) leaves the token out of the ServiceAccount: a service that never
     calls the Kubernetes API (the scheduler). */}}
{{- define "phalanx.serviceAccount" -}}
{{- $root := .root | default . -}}
{{- if $root.Values.serviceAccount.create }}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "phalanx.serviceAccountName" $root }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "phalanx.labels" $root | nindent 4 }}
  {{- with $root.Values.serviceAccount.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- if and (kindIs "map" .) (hasKey . "kubeApi") (not .kubeApi) }}
automountServiceAccountToken: false
{{- end }}
{{- end }}
{{- end -}}

{{/* Ingress to these pods, and nothing else: the health and metrics port (the kubelet's probes,
     Prometheus), the ports a chart adds (`ports`: a list of {port, from}, such as the console's
     web port), and the webhook port for the Kubernetes API server only where there is one.
     Egress is left to the cluster's policy: NATS, PostgreSQL, DNS and the API server live at
     addresses a chart cannot know (docs/security.md). Called with the chart's context, or with
     (dict "root" . "ports" (list ...)). */}}
{{- define "phalanx.networkPolicy" -}}
{{- $root := .root | default . -}}
{{- $ports := list -}}
{{- if and (kindIs "map" .) (hasKey . "ports") }}{{ $ports = .ports }}{{ end -}}
{{- if $root.Values.networkPolicy.enabled }}
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {{ include "phalanx.fullname" $root }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "phalanx.labels" $root | nindent 4 }}
spec:
  podSelector:
    matchLabels:
      {{- include "phalanx.selectorLabels" $root | nindent 6 }}
  policyTypes: [Ingress]
  ingress:
    - ports:
        - port: {{ $root.Values.healthPort }}
          protocol: TCP
      {{- with $root.Values.networkPolicy.metricsFrom }}
      from:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    {{- range $ports }}
    - ports:
        - port: {{ .port }}
          protocol: TCP
      {{- with .from }}
      from:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    {{- end }}
    {{- if $root.Values.webhook }}
    - ports:
        - port: {{ $root.Values.webhook.port }}
          protocol: TCP
      {{- with $root.Values.networkPolicy.apiServerCIDRs }}
      from:
        {{- range . }}
        - ipBlock:
            cidr: {{ . | quote }}
        {{- end }}
      {{- end }}
    {{- end }}
{{- end }}
{{- end -}}

{{/* The Service Prometheus scrapes, for a service that serves nothing else. */}}
{{- define "phalanx.metricsService" -}}
{{- if .Values.metrics.service.enabled }}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "phalanx.fullname" . }}-metrics
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "phalanx.labels" . | nindent 4 }}
  {{- with .Values.metrics.service.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  type: ClusterIP
  selector:
    {{- include "phalanx.selectorLabels" . | nindent 4 }}
  ports:
    - name: metrics
      port: {{ .Values.metrics.service.port }}
      targetPort: health
      protocol: TCP
{{- end }}
{{- end -}}

{{/*
The service's Deployment: one restricted container running `python -m services.<service>`.
Called with (dict "root" . "kubeApi" <bool> "env" <yaml> "ports" <yaml> "volumeMounts" <yaml>
"volumes" <yaml> "statefulSet" <bool>): kubeApi says whether the pod gets a ServiceAccount token
(in-cluster configuration: <SERVICE>_KUBECONFIG unset means the mounted token); statefulSet makes it
a StatefulSet, whose pods each have an ordinal of their own (the controller's replica number); the
others are the chart's own additions as YAML lists, usually from its own templates/_<service>.tpl.
*/}}
{{- define "phalanx.deployment" -}}
{{- $root := .root -}}
{{- $service := include "phalanx.service" $root -}}
apiVersion: apps/v1
kind: {{ if .statefulSet }}StatefulSet{{ else }}Deployment{{ end }}
metadata:
  name: {{ include "phalanx.fullname" $root }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "phalanx.labels" $root | nindent 4 }}
spec:
  replicas: {{ $root.Values.replicas }}
  revisionHistoryLimit: 5
  {{- if .statefulSet }}
  # Nothing resolves the pods by name, so the governing Service need not exist; Parallel: a
  # replica starts and stops without waiting for the ones before it.
  serviceName: {{ include "phalanx.fullname" $root }}
  podManagementPolicy: Parallel
  {{- end }}
  selector:
    matchLabels:
      {{- include "phalanx.selectorLabels" $root | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "phalanx.labels" $root | nindent 8 }}
      {{- with $root.Values.podAnnotations }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      serviceAccountName: {{ include "phalanx.serviceAccountName" $root }}
      automountServiceAccountToken: {{ .kubeApi }}
      securityContext:
        {{- toYaml $root.Values.podSecurityContext | nindent 8 }}
      terminationGracePeriodSeconds: 30
      {{- with include "phalanx.podPlacement" $root | trim }}
      {{- . | nindent 6 }}
      {{- end }}
      containers:
        - name: {{ $service }}
          image: {{ include "phalanx.image" $root }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          command: ["python", "-m", "services.{{ $service }}"]
          env:
            {{- include "phalanx.commonEnv" $root | nindent 12 }}
            {{- with default "" .env | trim }}
            {{- . | nindent 12 }}
            {{- end }}
          ports:
            - name: health
              containerPort: {{ $root.Values.healthPort }}
              protocol: TCP
            {{- with default "" .ports | trim }}
            {{- . | nindent 12 }}
            {{- end }}
          {{- include "phalanx.probes" $root | nindent 10 }}
          resources:
            {{- toYaml $root.Values.resources | nindent 12 }}
          securityContext:
            {{- toYaml $root.Values.securityContext | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            {{- include "phalanx.natsCaMount" $root | nindent 12 }}
            {{- with default "" .volumeMounts | trim }}
            {{- . | nindent 12 }}
            {{- end }}
      volumes:
        - name: tmp
          emptyDir:
            sizeLimit: 64Mi
        {{- include "phalanx.natsCaVolume" $root | nindent 8 }}
        {{- with default "" .volumes | trim }}
        {{- . | nindent 8 }}
        {{- end }}
{{- end -}}
