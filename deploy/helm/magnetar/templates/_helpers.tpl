{{/* Name prefix of every object: the release name. */}}
{{- define "magnetar.fullname" -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{- define "magnetar.namespace" -}}
{{- default .Release.Namespace .Values.namespace -}}
{{- end -}}

{{/* Labels of every object; "component" names the role. */}}
{{- define "magnetar.labels" -}}
app.kubernetes.io/name: magnetar
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/component: {{ .component }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Selector labels (stable across upgrades). */}}
{{- define "magnetar.selector" -}}
app.kubernetes.io/name: magnetar
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "magnetar.image" -}}
{{- $img := .Values.images.magnetar -}}
image: "{{ $img.repository }}:{{ default .Chart.AppVersion $img.tag }}"
imagePullPolicy: {{ default .Values.defaultPullPolicy $img.pullPolicy }}
{{- end -}}

{{- define "magnetar.pullSecrets" -}}
{{- with .Values.images.imagePullSecrets }}
imagePullSecrets:
{{- range . }}
  - name: {{ . }}
{{- end }}
{{- end }}
{{- end -}}

{{/* ZooKeeper hosts: host:port,host:port of the ensemble's pods. */}}
{{- define "magnetar.zookeeper.hosts" -}}
{{- $fn := include "magnetar.fullname" . -}}
{{- $ns := include "magnetar.namespace" . -}}
{{- $hosts := list -}}
{{- range $i := until (int .Values.zookeeper.replicaCount) -}}
{{- $hosts = append $hosts (printf "%s-%s-%d.%s-%s.%s.svc.%s:%d" $fn $.Values.zookeeper.component $i $fn $.Values.zookeeper.component $ns $.Values.clusterDomain (int $.Values.zookeeper.ports.client)) -}}
{{- end -}}
{{- join "," $hosts -}}
{{- end -}}

{{/* Pulsar's metadataStoreUrl: zk:hosts/prefix. */}}
{{- define "magnetar.metadataStoreUrl" -}}
zk:{{ include "magnetar.zookeeper.hosts" . }}{{ .Values.metadataPrefix }}
{{- end -}}

{{/* The same as a --metadata-url flag value. */}}
{{- define "magnetar.metadataURL" -}}
zk://{{ include "magnetar.zookeeper.hosts" . }}{{ .Values.metadataPrefix }}
{{- end -}}

{{/* Pod anti-affinity of a component: .root, .component, .affinity. */}}
{{- define "magnetar.antiAffinity" -}}
{{- if and .root.Values.affinity.anti_affinity .affinity.anti_affinity }}
affinity:
  podAntiAffinity:
    {{- if eq .affinity.type "requiredDuringSchedulingIgnoredDuringExecution" }}
    requiredDuringSchedulingIgnoredDuringExecution:
      - topologyKey: {{ .affinity.anti_affinity_topology_key }}
        labelSelector:
          matchLabels:
            {{- include "magnetar.selector" . | nindent 12 }}
    {{- else }}
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm:
          topologyKey: {{ .affinity.anti_affinity_topology_key }}
          labelSelector:
            matchLabels:
              {{- include "magnetar.selector" . | nindent 14 }}
    {{- end }}
{{- end }}
{{- end -}}

{{/* Scheduling extras: nodeSelector, tolerations of a component. */}}
{{- define "magnetar.scheduling" -}}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Whether token authentication is on. */}}
{{- define "magnetar.authOn" -}}
{{- if .Values.auth.authentication.enabled -}}
{{- if ne .Values.auth.authentication.provider "jwt" -}}
{{- fail "auth.authentication.provider: the chart sets up jwt (token) authentication only" -}}
{{- end -}}
true
{{- end -}}
{{- end -}}

{{/* "true" when bookies serve TLS (tls.enabled and tls.bookie.enabled). */}}
{{- define "magnetar.bookieTLS" -}}
{{- if and .Values.tls.enabled .Values.tls.bookie.enabled -}}
true
{{- end -}}
{{- end -}}

{{/* Bookie-client keys of brokers and autorecovery (Pulsar's names):
TLS to bookies with the bookie Secret's CA. Their AUTH credentials are
brokerClientAuthentication*, the token of auth.superUsers.broker. */}}
{{- define "magnetar.bookieClientTLS" -}}
{{- if include "magnetar.bookieTLS" . -}}
brokerClientTlsEnabled=true
brokerClientTrustCertsFilePath=/pulsar/certs/bookie-ca/ca.crt
{{- end -}}
{{- end -}}

{{/* Token verification keys (security keys of broker, proxy, worker, bookie). */}}
{{- define "magnetar.tokenKeys" -}}
authenticationEnabled=true
authenticationProviders=org.apache.pulsar.broker.authentication.AuthenticationProviderToken
{{- if .Values.auth.authentication.jwt.usingSecretKey }}
tokenSecretKey=file:///pulsar/keys/token/secret.key
{{- else }}
tokenPublicKey=file:///pulsar/keys/token/public.key
{{- end }}
{{- end -}}

{{/* Volume holding the token verification key. */}}
{{- define "magnetar.tokenKeyVolume" -}}
- name: token-keys
  secret:
    {{- if .Values.auth.authentication.jwt.usingSecretKey }}
    secretName: {{ include "magnetar.fullname" . }}-token-symmetric-key
    items:
      - key: SECRETKEY
        path: token/secret.key
    {{- else }}
    secretName: {{ include "magnetar.fullname" . }}-token-asymmetric-key
    items:
      - key: PUBLICKEY
        path: token/public.key
    {{- end }}
{{- end -}}

{{/* Volume holding a superuser's token: .root, .name (volume and
directory), .role (the Secret is <release>-token-<role>). */}}
{{- define "magnetar.tokenVolume" -}}
- name: {{ .name }}-token
  secret:
    secretName: {{ include "magnetar.fullname" .root }}-token-{{ .role }}
    items:
      - key: TOKEN
        path: {{ .name }}/token
{{- end -}}

{{/* Volume of a TLS Secret: .root, .name (volume), .cert (cert_name);
.caOnly mounts only its ca.crt (a peer's trust, never its key). */}}
{{- define "magnetar.tlsVolume" -}}
- name: {{ .name }}
  secret:
    secretName: {{ include "magnetar.fullname" .root }}-{{ .cert }}
    {{- if .caOnly }}
    items:
      - key: ca.crt
        path: ca.crt
    {{- end }}
{{- end -}}

{{/* key=value lines of a configData map, sorted. */}}
{{- define "magnetar.confLines" -}}
{{- range $k, $v := . }}
{{ $k }}={{ $v }}
{{- end }}
{{- end -}}

{{- define "magnetar.quorum.check" -}}
{{- $c := .Values.broker.configData -}}
{{- $e := int (default "3" $c.managedLedgerDefaultEnsembleSize) -}}
{{- $w := int (default "2" $c.managedLedgerDefaultWriteQuorum) -}}
{{- $a := int (default "2" $c.managedLedgerDefaultAckQuorum) -}}
{{- if not (and (ge $e $w) (ge $w $a) (ge $a 1)) -}}
{{- fail (printf "broker.configData: want managedLedgerDefaultEnsembleSize >= WriteQuorum >= AckQuorum >= 1, got %d/%d/%d" $e $w $a) -}}
{{- end -}}
{{- if and .Values.components.bookkeeper (lt (int .Values.bookkeeper.replicaCount) $e) -}}
{{- fail (printf "bookkeeper.replicaCount %d is below the ensemble size %d: no ledger could be created" (int .Values.bookkeeper.replicaCount) $e) -}}
{{- end -}}
{{- $e -}}
{{- end -}}

{{/* Probe timing fields of a probe's values. */}}
{{- define "magnetar.probeTiming" -}}
initialDelaySeconds: {{ .initialDelaySeconds }}
periodSeconds: {{ .periodSeconds }}
timeoutSeconds: {{ .timeoutSeconds }}
failureThreshold: {{ .failureThreshold }}
{{- end -}}

{{/* A volumeClaimTemplate from a volume's values (name, size, storageClassName). */}}
{{- define "magnetar.claim" -}}
- metadata:
    name: {{ .name }}
  spec:
    accessModes: ["ReadWriteOnce"]
    {{- with .storageClassName }}
    storageClassName: {{ . }}
    {{- end }}
    resources:
      requests:
        storage: {{ .size }}
{{- end -}}
