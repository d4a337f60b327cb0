{{/*
Checks across values that values.schema.json cannot express well; each names the fix.
*/}}
{{- define "llmgw-mirror.validate" -}}
{{- $s3 := include "llmgw-mirror.s3" . }}
{{- if and (gt (int .Values.replicaCount) 1) (ne .Values.store.accessMode "ReadWriteMany") (not $s3) }}
{{- fail (printf "replicaCount is %d but store.accessMode is %s: more than one mirror pod needs a shared store; set store.accessMode: ReadWriteMany, or store.type: s3, or replicaCount: 1" (int .Values.replicaCount) .Values.store.accessMode) }}
{{- end }}
{{- if and $s3 (not .Values.store.s3.bucket) }}
{{- fail "store.type is s3 but store.s3.bucket is empty: name the bucket the store lives in" }}
{{- end }}
{{- if and $s3 (not .Values.store.s3.existingSecret) }}
{{- fail "store.type is s3 but store.s3.existingSecret is empty: name a Secret holding AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" }}
{{- end }}
{{- if and (eq .Values.store.s3.blobDelivery "presigned") (not $s3) }}
{{- fail "store.s3.blobDelivery presigned needs store.type: s3 (a store on a volume has no presigned URLs)" }}
{{- end }}
{{- if and $s3 (eq .Values.store.s3.blobDelivery "presigned") (not (or .Values.store.s3.publicEndpoint .Values.store.s3.endpoint)) }}
{{- fail "store.s3.blobDelivery presigned needs store.s3.publicEndpoint: the S3 URL the nodes reach, which presigned URLs point at" }}
{{- end }}
{{- if and .Values.store.s3.cache.enabled (eq .Values.store.s3.blobDelivery "presigned") }}
{{- fail "store.s3.cache.enabled is for blobDelivery proxy: with presigned the bytes never pass through a replica; turn one of them off" }}
{{- end }}
{{- if and $s3 .Values.bundleImport.enabled (eq .Values.bundleImport.mode "initContainer") }}
{{- fail "bundleImport.mode initContainer would import from every replica at once into the bucket; with store.type s3 set bundleImport.mode: job" }}
{{- end }}
{{- if and .Values.bundleImport.enabled (eq .Values.bundleImport.mode "job") (eq .Values.store.accessMode "ReadWriteOncePod") }}
{{- fail "bundleImport.mode job cannot mount a ReadWriteOncePod store while the mirror pod holds it; set bundleImport.mode: initContainer" }}
{{- end }}
{{- if and .Values.bundleImport.enabled (not (include "llmgw-mirror.trustEnabled" .)) }}
{{- fail "bundleImport.enabled needs a trusted minisign key: set trust.keys, trust.existingConfigMap or trust.existingSecret (import refuses bundles without one)" }}
{{- end }}
{{- if and (or .Values.trust.existingConfigMap .Values.trust.existingSecret) (not .Values.trust.existingKeys) }}
{{- fail "trust.existingConfigMap/existingSecret is set but trust.existingKeys is empty: list the key file names in it to trust" }}
{{- end }}
{{- if and .Values.trust.existingConfigMap .Values.trust.existingSecret }}
{{- fail "set only one of trust.existingConfigMap and trust.existingSecret" }}
{{- end }}
{{- if and .Values.auth.enabled (not .Values.auth.existingSecret) (not .Values.auth.token) }}
{{- fail "auth.enabled needs auth.existingSecret (recommended) or auth.token" }}
{{- end }}
{{- end }}
