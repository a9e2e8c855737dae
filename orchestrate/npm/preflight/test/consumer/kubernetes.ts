// The shapes a Kubernetes client library gives a TypeScript program, as @kubernetes/client-node 1.x declares them:
// interfaces (no index signature), optional fields, `Array<...>`, nested interfaces. Only the fields this consumer
// touches; what matters is that they are interfaces, which a `{ [k: string]: unknown }` target would refuse.

export interface V1EnvVar {
  name: string;
  value?: string;
  valueFrom?: V1EnvVarSource;
}

export interface V1EnvVarSource {
  secretKeyRef?: { name: string; key: string; optional?: boolean };
}

export interface V1VolumeMount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
}

export interface V1Container {
  name: string;
  image?: string;
  env?: Array<V1EnvVar>;
  volumeMounts?: Array<V1VolumeMount>;
  restartPolicy?: string;
}

export interface V1Volume {
  name: string;
  secret?: { secretName?: string };
  configMap?: { name?: string };
}

export interface V1Toleration {
  key?: string;
  operator?: string;
  effect?: string;
}

export interface V1PodSpec {
  containers: Array<V1Container>;
  initContainers?: Array<V1Container>;
  volumes?: Array<V1Volume>;
  nodeSelector?: { [key: string]: string };
  tolerations?: Array<V1Toleration>;
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  securityContext?: { runAsNonRoot?: boolean; fsGroup?: number };
}

export interface V1PodTemplateSpec {
  metadata?: { labels?: { [key: string]: string } };
  spec?: V1PodSpec;
}
