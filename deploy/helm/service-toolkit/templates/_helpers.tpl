{{- define "service-toolkit.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "service-toolkit.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "service-toolkit.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* The CUDA image when workers ask for GPUs, else the CPU image, unless image.tag names one. */}}
{{- define "service-toolkit.image" -}}
{{- $tag := .Values.image.tag | default (ternary .Chart.AppVersion (printf "%s-cpu" .Chart.AppVersion) (gt (int .Values.workers.gpus) 0)) -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}

{{- define "service-toolkit.tokenSecret" -}}
{{- .Values.clusterToken.existingSecret | default (printf "%s-cluster-token" (include "service-toolkit.fullname" .)) -}}
{{- end -}}

{{- define "service-toolkit.authSecret" -}}
{{- .Values.auth.existingSecret | default (printf "%s-auth-config" (include "service-toolkit.fullname" .)) -}}
{{- end -}}

{{- define "service-toolkit.hasToken" -}}
{{- if or .Values.clusterToken.value .Values.clusterToken.existingSecret }}true{{ end -}}
{{- end -}}

{{- define "service-toolkit.hasAuth" -}}
{{- if or .Values.auth.config .Values.auth.existingSecret }}true{{ end -}}
{{- end -}}

{{/* Environment both programs get: the cluster token from its Secret, and the chart's `env`. */}}
{{- define "service-toolkit.env" -}}
{{- if include "service-toolkit.hasToken" . }}
- name: SERVICE_CLUSTER_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ include "service-toolkit.tokenSecret" . }}
      key: token
{{- end }}
{{- range $name, $value := .Values.env }}
- name: {{ $name }}
  value: {{ $value | quote }}
{{- end }}
{{- end -}}

{{/*
The names the supervisor answers to in the Host header besides IP addresses and loopback names (see the README's
Access control): its Service's names inside the cluster, the Ingress host, and the chart's `allowedHosts`.
*/}}
{{- define "service-toolkit.allowedHosts" -}}
{{- $fullname := include "service-toolkit.fullname" . -}}
{{- $names := list $fullname (printf "%s.%s" $fullname .Release.Namespace) (printf "%s.%s.svc" $fullname .Release.Namespace) (printf "%s.%s.svc.%s" $fullname .Release.Namespace .Values.clusterDomain) -}}
{{- if and .Values.ingress.enabled .Values.ingress.host }}{{ $names = append $names .Values.ingress.host }}{{ end -}}
{{- concat $names .Values.allowedHosts | join "," -}}
{{- end -}}

{{- define "service-toolkit.volumeClaimSpec" -}}
accessModes: {{ toJson .accessModes }}
{{- if .storageClass }}
storageClassName: {{ .storageClass | quote }}
{{- end }}
resources:
  requests:
    storage: {{ .size | quote }}
{{- end -}}
