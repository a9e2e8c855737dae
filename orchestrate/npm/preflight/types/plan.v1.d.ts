// Generated from orchestrate/schemas/plan.v1.schema.json by json-schema-to-typescript (pinned in tools/package.json).
// Do not edit: orchestrate/npm/preflight/check.sh fails when this file differs from what the schemas generate.

/**
 * What `jr2 up` hands `jr2-preflight run --plan <file|->`: the namespace and Instance, the probe's image, the deadline, the placements of the Harness pods (each with the pod spec jr2 up renders for them, Custodian container and volumes included) and the models to check. One check pod runs per placement that has a model. A plan never holds a secret value: the Harness env carries Stand-ins (`jr2-held-<NAME>`) and valueFrom references, and a model names the env var of its key. Every object is closed (`additionalProperties: false`) except `podSpec`, which is a Kubernetes core/v1 PodSpec; incompatible changes bump `schema`. Bad input gets one `error:` line naming the field and exit code 2.
 */
export interface Plan {
  /**
   * The plan's schema identifier. The driver refuses a plan whose identifier it does not know.
   */
  schema: "jr2.dev/provider-preflight-plan/v1";
  /**
   * The Instance's namespace: the check pods are created there.
   */
  namespace: DnsLabel;
  /**
   * The Instance's name: in the check pods' names and their `jr2.dev/instance` label, which the sweep of stale check pods selects on.
   */
  instance: DnsLabel;
  /**
   * The probe's image (jr2-probe), as the cluster pulls it: re-homed to the kit registry where there is one. The check pod pulls it with the Harness pods' imagePullSecrets. Default: ghcr.io/jr2/jr2-probe:<driver version>; --probe-image overrides it.
   */
  probeImage?: string | undefined;
  /**
   * The deadline of the whole check, in seconds: the check pods' activeDeadlineSeconds and the probe's JR2_PROBE_DEADLINE (now + this). Must be more than timeoutSeconds.
   */
  deadlineSeconds?: number | undefined;
  /**
   * Seconds a model waits for its verdict before its progress line (`provider: <model>: no verdict yet after 30 s of 120 s — ...`), and between the next ones; 0: none.
   */
  waitingNoteSeconds?: number | undefined;
  /**
   * The time one model has to answer, in seconds; no answer within it is a timeout (`no answer in 120 s`).
   */
  timeoutSeconds?: number | undefined;
  /**
   * Where the Harness pods run: a Sandbox placement, the Instance Harness. Names are unique. At least one: the driver refuses an empty list (exit 2, as any bad input).
   */
  placements: readonly Placement[];
  /**
   * The models to check, in the order their lines are printed. A model runs on the placement of the Harness pods that run it (an Agent with `workspace: "none"`: the Instance Harness; any other: a Sandbox). The same model may appear once per placement. An empty list is nothing to check: no pod, no line, an ok verdict.
   */
  models: readonly Model[];
  /**
   * What the NetworkPolicy check needs. The check pod has labels of its own, so a NetworkPolicy that selects the Harness pods and limits their egress does not select it: the driver warns of such a policy. Absent: no NetworkPolicy is read.
   */
  networkPolicyCheck?: {
    /**
     * Per placement name: the labels of its Harness pods, matched against each policy's podSelector.
     */
    harnessPodLabels: {
      [k: string]: {
        [k: string]: string;
      };
    };
  } | undefined;
}

export type DnsLabel = string;

/**
 * One placement of Harness pods, with the pod spec jr2 up renders for them.
 */
export interface Placement {
  /**
   * The placement's name: in the check pod's name and its `jr2.dev/placement` label; models name it.
   */
  name: DnsLabel;
  /**
   * A Kubernetes core/v1 PodSpec, as jr2 up renders it for these Harness pods: the Harness container, the Custodian container and their volumes. The check pod copies from it nodeSelector, affinity, tolerations, topologySpreadConstraints, nodeName, runtimeClassName, schedulerName, imagePullSecrets, dnsPolicy, dnsConfig, hostAliases and the pod securityContext; the Custodian container (a plain container before the probe when the probe can ask its readiness probe itself or it has none, else a native sidecar) and the volumes it mounts; the Harness container's env, envFrom and CA mounts (under /etc/jr2/ca, or where a CA env var points). Not copied: labels, resources, the priority class (named in an annotation: the check pod never preempts), the service account, other containers and volumes.
   */
  podSpec: PodSpec;
  /**
   * The Harness container's name in podSpec.containers.
   */
  harnessContainer?: string | undefined;
  /**
   * The Custodian container's name, in podSpec.containers (or already a sidecar in initContainers). Absent: these pods hold no secret and have no Custodian, and their calls go direct.
   */
  custodianContainer?: string | undefined;
}

/**
 * One model to check: the probe's run-spec model (probe/schemas/run-spec.v1.schema.json) plus its placement. `viaCustodian` is not written: it is derived from the placement (it has a Custodian).
 */
export interface Model {
  /**
   * `<provider>/<id>` as the Agent names it; split at the first `/` (`vllm/Qwen/Qwen3-32B` is provider `vllm`, id `Qwen/Qwen3-32B`).
   */
  model: string;
  /**
   * The name of the placement whose Harness pods run this model.
   */
  placement: DnsLabel;
  /**
   * catalog: a model of pi's catalog at the catalog's base URL; gateway: a catalog model behind a harness.catalog gateway (baseUrl required); custom: the custom provider, harness.provider (baseUrl required).
   */
  source: "catalog" | "gateway" | "custom";
  /**
   * The base URL the API appends its path to: http or https, a host, no credentials, no query.
   */
  baseUrl?: string | undefined;
  /**
   * pi's API kind; default: openai-completions for custom, the catalog's otherwise.
   */
  api?:
    | "openai-completions"
    | "anthropic-messages"
    | "openai-responses"
    | "azure-openai-responses"
    | "openai-codex-responses"
    | "google-generative-ai"
    | "google-vertex"
    | "mistral-conversations"
    | "bedrock-converse-stream" | undefined;
  /**
   * The env var that holds the key (custom: JR2_PROVIDER_API_KEY; catalog: the provider's, e.g. ANTHROPIC_API_KEY). In the Harness env its value is the Stand-in jr2-held-<NAME> or a valueFrom reference, never a literal key. Absent: no key.
   */
  keyEnv?: string | undefined;
  /**
   * A Harness pod holds that key (custom: harness.provider.apiKey is set). Decides the held-secret line of an error.
   */
  keyHeld: boolean;
  /**
   * The model's maxTokens as jr2 resolves it (custom: per model, then per provider, else 0). Absent: 0 for a custom model (sent as 1, as a Turn sends it), the catalog's otherwise.
   */
  maxTokens?: number | undefined;
  /**
   * The model's context window as jr2 resolves it.
   */
  contextWindow?: number | undefined;
  /**
   * The tool_choice to send; unset (the default) sends none, as a Turn does.
   */
  toolChoice?: "unset" | "auto" | "none" | "required" | "named" | undefined;
}

/**
 * A Kubernetes core/v1 PodSpec (plan.v1 `podSpec`), with the fields of Kubernetes 1.35 (the driver's): each
 * optional and typed, so that a read is typed (`podSpec.nodeSelector` is a string map, not `any`), an
 * interface-typed pod spec (a `V1PodSpec` of @kubernetes/client-node) is taken as it is, and a misspelt field of an
 * object literal (`nodeSelectr`) fails the compile, as the driver warns of it. The objects under it are `object`:
 * the client's own types describe them.
 */
export interface PodSpec {
  /**
   * The pod's containers: the Harness container and the Custodian container among them (by the names harnessContainer and custodianContainer give).
   */
  containers: readonly object[];
  activeDeadlineSeconds?: number | undefined;
  affinity?: object | undefined;
  automountServiceAccountToken?: boolean | undefined;
  dnsConfig?: object | undefined;
  dnsPolicy?: string | undefined;
  enableServiceLinks?: boolean | undefined;
  ephemeralContainers?: readonly object[] | undefined;
  hostAliases?: readonly object[] | undefined;
  hostIPC?: boolean | undefined;
  hostNetwork?: boolean | undefined;
  hostPID?: boolean | undefined;
  hostUsers?: boolean | undefined;
  hostname?: string | undefined;
  hostnameOverride?: string | undefined;
  imagePullSecrets?: readonly object[] | undefined;
  initContainers?: readonly object[] | undefined;
  nodeName?: string | undefined;
  nodeSelector?: { readonly [key: string]: string } | undefined;
  os?: object | undefined;
  overhead?: { readonly [resource: string]: string | number } | undefined;
  preemptionPolicy?: string | undefined;
  priority?: number | undefined;
  priorityClassName?: string | undefined;
  readinessGates?: readonly object[] | undefined;
  resourceClaims?: readonly object[] | undefined;
  resources?: object | undefined;
  restartPolicy?: string | undefined;
  runtimeClassName?: string | undefined;
  schedulerName?: string | undefined;
  schedulingGates?: readonly object[] | undefined;
  securityContext?: object | undefined;
  serviceAccount?: string | undefined;
  serviceAccountName?: string | undefined;
  setHostnameAsFQDN?: boolean | undefined;
  shareProcessNamespace?: boolean | undefined;
  subdomain?: string | undefined;
  terminationGracePeriodSeconds?: number | undefined;
  tolerations?: readonly object[] | undefined;
  topologySpreadConstraints?: readonly object[] | undefined;
  volumes?: readonly object[] | undefined;
  workloadRef?: object | undefined;
}
