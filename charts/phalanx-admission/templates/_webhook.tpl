{{/* The Validating- and MutatingWebhookConfiguration name the service owns (and may update). */}}
{{- define "phalanx.webhookConfigurationName" -}}
{{- default (include "phalanx.fullname" .) .Values.webhook.configurationName -}}
{{- end -}}
