{{/*
Checks across values that values.schema.json cannot express well; each names the fix.
*/}}
{{- define "llmgw-mirror.validate" -}}
{{- if and (gt (int .Values.replicaCount) 1) (ne .Values.store.accessMode "ReadWriteMany") }}
{{- fail (printf "replicaCount is %d but store.accessMode is %s: more than one mirror pod needs a ReadWriteMany store; set replicaCount: 1 or store.accessMode: ReadWriteMany" (int .Values.replicaCount) .Values.store.accessMode) }}
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
