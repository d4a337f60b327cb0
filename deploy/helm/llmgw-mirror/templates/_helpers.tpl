{{/* Chart name, truncated to the 63 characters a DNS label allows. */}}
{{- define "llmgw-mirror.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name: release-chart unless the release name already has it. */}}
{{- define "llmgw-mirror.fullname" -}}
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

{{- define "llmgw-mirror.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "llmgw-mirror.labels" -}}
helm.sh/chart: {{ include "llmgw-mirror.chart" . }}
{{ include "llmgw-mirror.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "llmgw-mirror.selectorLabels" -}}
app.kubernetes.io/name: {{ include "llmgw-mirror.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "llmgw-mirror.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "llmgw-mirror.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The image reference: repository@digest when a digest is given, else repository:tag. */}}
{{- define "llmgw-mirror.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The engine's image (engine.image): repository@digest when a digest is given, else
repository:tag. */}}
{{- define "llmgw-mirror.engineImage" -}}
{{- if .Values.engine.image.digest }}
{{- printf "%s@%s" .Values.engine.image.repository .Values.engine.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.engine.image.repository .Values.engine.image.tag }}
{{- end }}
{{- end }}

{{/* The engine's selector: another name than the mirror's, so neither the mirror's
Service nor its PodDisruptionBudget selects engine pods. */}}
{{- define "llmgw-mirror.engineSelectorLabels" -}}
app.kubernetes.io/name: {{ include "llmgw-mirror.name" . | trunc 56 | trimSuffix "-" }}-engine
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "llmgw-mirror.engineLabels" -}}
helm.sh/chart: {{ include "llmgw-mirror.chart" . }}
{{ include "llmgw-mirror.engineSelectorLabels" . }}
app.kubernetes.io/component: engine
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Whether the store is in S3-compatible object storage (store.type s3). */}}
{{- define "llmgw-mirror.s3" -}}
{{- if eq .Values.store.type "s3" }}true{{- end }}
{{- end }}

{{/* The --store argument: the mounted claim, or s3://BUCKET/PREFIX. */}}
{{- define "llmgw-mirror.storeArg" -}}
{{- if include "llmgw-mirror.s3" . }}
{{- printf "s3://%s/%s" .Values.store.s3.bucket (trimAll "/" .Values.store.s3.prefix) | trimSuffix "/" }}
{{- else }}
{{- .Values.store.mountPath }}
{{- end }}
{{- end }}

{{/*
Environment of every container that opens the store. With S3: the server, the region,
the credentials from the Secret, and the work folder (the bucket's manifests and state
copied locally; an import stages its bundle there).
*/}}
{{- define "llmgw-mirror.storeEnv" -}}
- name: LLMGW_STORE
  value: {{ include "llmgw-mirror.storeArg" . | quote }}
{{- if include "llmgw-mirror.s3" . }}
{{- with .Values.store.s3.endpoint }}
- name: AWS_ENDPOINT_URL
  value: {{ . | quote }}
{{- end }}
- name: AWS_REGION
  value: {{ .Values.store.s3.region | quote }}
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ .Values.store.s3.existingSecret }}
      key: AWS_ACCESS_KEY_ID
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .Values.store.s3.existingSecret }}
      key: AWS_SECRET_ACCESS_KEY
- name: LLMGW_WORK_DIR
  value: {{ include "llmgw-mirror.workDir" . | quote }}
{{- end }}
{{- end }}

{{- define "llmgw-mirror.workDir" -}}/var/lib/llmgw/work{{- end }}
{{- define "llmgw-mirror.cacheDir" -}}/var/cache/llmgw{{- end }}

{{/*
The replica's --cache-size: 90% of store.s3.cache.sizeLimit (a Kubernetes quantity), in
bytes. The cache counts whole blobs and the fill under way; the margin is for what it does
not count (the filesystem's own blocks, and an evicted blob still being downloaded, whose
room is freed when that download ends), so the emptyDir stays under its limit and the
kubelet never evicts the pod for it.
*/}}
{{- define "llmgw-mirror.cacheBytes" -}}
{{- $q := toString .Values.store.s3.cache.sizeLimit -}}
{{- $num := regexFind "^[0-9]+(\\.[0-9]+)?" $q -}}
{{- $units := dict "" 1.0 "k" 1000.0 "M" 1000000.0 "G" 1000000000.0 "T" 1000000000000.0 "P" 1000000000000000.0 "E" 1000000000000000000.0 "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 "Pi" 1125899906842624.0 "Ei" 1152921504606846976.0 -}}
{{- $unit := trimPrefix $num $q -}}
{{- if not (hasKey $units $unit) -}}
{{- fail (printf "store.s3.cache.sizeLimit %q is not a Kubernetes quantity such as 200Gi" $q) -}}
{{- end -}}
{{- printf "%.0f" (mulf (float64 $num) (get $units $unit) 0.9) -}}
{{- end }}

{{/* Where the store (or, with S3, the work folder) is mounted in a container. */}}
{{- define "llmgw-mirror.storeMount" -}}
{{- if include "llmgw-mirror.s3" . }}
- name: work
  mountPath: {{ include "llmgw-mirror.workDir" . }}
{{- else }}
- name: store
  mountPath: {{ .Values.store.mountPath }}
{{- end }}
{{- end }}

{{/*
The store's volume: the claim, or with S3 an emptyDir for the work folder, sized for what
the pod does there (`size`: the server's copies of manifests, or one staged bundle).
Parameters: (list root size).
*/}}
{{- define "llmgw-mirror.storeVolume" -}}
{{- $root := index . 0 }}
{{- if include "llmgw-mirror.s3" $root }}
- name: work
  emptyDir:
    sizeLimit: {{ index . 1 }}
{{- else }}
- name: store
  persistentVolumeClaim:
    claimName: {{ include "llmgw-mirror.claimName" $root }}
{{- end }}
{{- end }}

{{- define "llmgw-mirror.claimName" -}}
{{- default (printf "%s-store" (include "llmgw-mirror.fullname" .)) .Values.store.existingClaim }}
{{- end }}

{{- define "llmgw-mirror.tokenSecretName" -}}
{{- default (printf "%s-token" (include "llmgw-mirror.fullname" .)) .Values.auth.existingSecret }}
{{- end }}

{{/* Fixed in-container paths; the chart test checks the command uses exactly these. */}}
{{- define "llmgw-mirror.trustDir" -}}/etc/llmgw/trust{{- end }}
{{- define "llmgw-mirror.tokenDir" -}}/etc/llmgw/token{{- end }}
{{- define "llmgw-mirror.tlsDir" -}}/etc/llmgw/tls{{- end }}
{{- define "llmgw-mirror.bundleDir" -}}/bundles{{- end }}

{{/* Whether any trusted key is configured. */}}
{{- define "llmgw-mirror.trustEnabled" -}}
{{- if or .Values.trust.keys .Values.trust.existingConfigMap .Values.trust.existingSecret }}true{{- end }}
{{- end }}

{{/* The key file names to trust, sorted so renders are stable. */}}
{{- define "llmgw-mirror.trustFiles" -}}
{{- if or .Values.trust.existingConfigMap .Values.trust.existingSecret }}
{{- toJson (sortAlpha .Values.trust.existingKeys) }}
{{- else }}
{{- toJson (keys .Values.trust.keys | sortAlpha) }}
{{- end }}
{{- end }}

{{/* The volume holding the trusted keys (ConfigMap or Secret). */}}
{{- define "llmgw-mirror.trustVolume" -}}
- name: trust
{{- if .Values.trust.existingSecret }}
  secret:
    secretName: {{ .Values.trust.existingSecret }}
{{- else }}
  configMap:
    name: {{ default (printf "%s-trust" (include "llmgw-mirror.fullname" .)) .Values.trust.existingConfigMap }}
{{- end }}
{{- end }}

{{/*
Init containers running `llmgw bundle trust add` once per key, so the store trusts
them before anything imports (adding a key already trusted keeps it as it is).
Parameters: the root context.
*/}}
{{- define "llmgw-mirror.trustInitContainers" -}}
{{- $root := . }}
{{- range $i, $file := (include "llmgw-mirror.trustFiles" $root | fromJsonArray) }}
- name: trust-{{ $i }}
  image: {{ include "llmgw-mirror.image" $root }}
  imagePullPolicy: {{ $root.Values.image.pullPolicy }}
  args:
    - bundle
    - trust
    - add
    - {{ printf "%s/%s" (include "llmgw-mirror.trustDir" $root) $file | quote }}
    - --store
    - {{ include "llmgw-mirror.storeArg" $root | quote }}
  env:
    {{- include "llmgw-mirror.storeEnv" $root | nindent 4 }}
  securityContext:
    {{- toYaml $root.Values.securityContext | nindent 4 }}
  resources:
    {{- toYaml $root.Values.resources | nindent 4 }}
  volumeMounts:
    {{- include "llmgw-mirror.storeMount" $root | nindent 4 }}
    - name: trust
      mountPath: {{ include "llmgw-mirror.trustDir" $root }}
      readOnly: true
    - name: tmp
      mountPath: /tmp
{{- end }}
{{- end }}

{{/* The import container: `llmgw bundle import BUNDLE --sha256 HEX --store DIR`. */}}
{{- define "llmgw-mirror.importContainer" -}}
- name: import
  image: {{ include "llmgw-mirror.image" . }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  args:
    - bundle
    - import
    - {{ printf "%s/%s" (include "llmgw-mirror.bundleDir" .) (trimPrefix "/" .Values.bundleImport.path) | quote }}
    - --sha256
    - {{ .Values.bundleImport.sha256 | quote }}
    - --store
    - {{ include "llmgw-mirror.storeArg" . | quote }}
  env:
    {{- include "llmgw-mirror.storeEnv" . | nindent 4 }}
  securityContext:
    {{- toYaml .Values.securityContext | nindent 4 }}
  resources:
    {{- toYaml (default .Values.resources .Values.bundleImport.resources) | nindent 4 }}
  volumeMounts:
    {{- include "llmgw-mirror.storeMount" . | nindent 4 }}
    - name: bundle
      mountPath: {{ include "llmgw-mirror.bundleDir" . }}
      readOnly: true
    - name: tmp
      mountPath: /tmp
{{- end }}

{{/* The volume the bundle is read from. */}}
{{- define "llmgw-mirror.bundleVolume" -}}
- name: bundle
{{- if eq .Values.bundleImport.source.type "hostPath" }}
  hostPath:
    path: {{ .Values.bundleImport.source.hostPath }}
    type: Directory
{{- else }}
  persistentVolumeClaim:
    claimName: {{ .Values.bundleImport.source.claimName }}
    readOnly: true
{{- end }}
{{- end }}

{{/* URL scheme the server itself speaks. */}}
{{- define "llmgw-mirror.scheme" -}}
{{- if .Values.tls.enabled }}HTTPS{{ else }}HTTP{{ end }}
{{- end }}

{{/*
Labels of the import Job and its pod. They lack app.kubernetes.io/name on purpose: the
Deployment's and the Service's selectors must never match an import pod.
*/}}
{{- define "llmgw-mirror.importLabels" -}}
helm.sh/chart: {{ include "llmgw-mirror.chart" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: import
app.kubernetes.io/part-of: {{ include "llmgw-mirror.name" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The import Job's pod spec (its hash is part of the Job's name). */}}
{{- define "llmgw-mirror.importJobPodSpec" -}}
restartPolicy: Never
serviceAccountName: {{ include "llmgw-mirror.serviceAccountName" . }}
automountServiceAccountToken: false
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
initContainers:
  {{- include "llmgw-mirror.trustInitContainers" . | nindent 2 }}
containers:
  {{- include "llmgw-mirror.importContainer" . | nindent 2 }}
volumes:
  {{- include "llmgw-mirror.storeVolume" (list . .Values.store.s3.importWorkSizeLimit) | nindent 2 }}
  - name: tmp
    emptyDir:
      sizeLimit: {{ .Values.tmpSizeLimit }}
  {{- include "llmgw-mirror.trustVolume" . | nindent 2 }}
  {{- include "llmgw-mirror.bundleVolume" . | nindent 2 }}
{{- with (default .Values.nodeSelector .Values.bundleImport.nodeSelector) }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- if and (not (include "llmgw-mirror.s3" .)) (eq .Values.store.accessMode "ReadWriteOnce") }}
affinity:
  podAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      - topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- include "llmgw-mirror.selectorLabels" . | nindent 12 }}
{{- end }}
{{- end }}
