// Generated from orchestrate/schemas/driver-verdict.v1.schema.json by json-schema-to-typescript (pinned in tools/package.json).
// Do not edit: orchestrate/npm/preflight/check.sh fails when this file differs from what the schemas generate.

import type { ApiKind, Cause, Code, Endpoint, Level, ModelResult, Outcome, Route, Timings, Try } from "./common.v1.js";
export type { ApiKind, Cause, Code, Endpoint, Level, ModelResult, Outcome, Route, Timings, Try } from "./common.v1.js";

/**
 * What `jr2-preflight run --output json` prints on stdout. The per-model results are the probe's (their definitions are copied from verdict.v1.schema.json; a test keeps the two equal). Nothing in it holds a secret value.
 */
export interface DriverVerdict {
  /**
   * The verdict's version.
   */
  schema: "jr2.dev/provider-preflight-driver-verdict/v1";
  /**
   * No error (warnings allowed): jr2 up goes on.
   */
  ok: boolean;
  /**
   * The process's exit code: 0 when ok, 1 on an error, 129 / 130 / 143 when interrupted by SIGHUP / SIGINT / SIGTERM (the check pods deleted).
   */
  exitCode: 0 | 1 | 129 | 130 | 143;
  /**
   * The run's id: the check pods' jr2.dev/preflight-run label.
   */
  runId: string;
  /**
   * The namespace the check pods ran in.
   */
  namespace: string;
  /**
   * --skip-provider-preflight: nothing was checked, one warning line was written, and each model of the plan is in `models` with outcome `skipped`.
   */
  skipped: boolean;
  /**
   * The release that ran, for the troubleshooting envelope.
   */
  release: {
    /**
     * The driver's version (jr2-preflight).
     */
    driver: string;
    /**
     * The probe's version as the probe reported it; null when no probe reported one (skipped, nothing to check, no pod finished).
     */
    probe: string | null;
    /**
     * The probe image the check pods ran (or would have run).
     */
    probeImage: string;
  };
  /**
   * The kubeconfig context of the run (--context, else the current one); null when the kubeconfig could not be read.
   */
  kubeContext: string | null;
  /**
   * The cluster the run talked to (or would have); null when the kubeconfig could not be read.
   */
  cluster: null | {
    /**
     * The API server's host, with :port when the kubeconfig names one (no scheme, path or credentials).
     */
    server: string;
    /**
     * The API server's gitVersion (GET /version); null when it was not asked (nothing contacted) or did not answer.
     */
    kubernetesVersion: string | null;
  };
  /**
   * UTC start, RFC 3339 with milliseconds (ends in Z).
   */
  startedAt: string;
  /**
   * Milliseconds the run took.
   */
  elapsedMs: number;
  /**
   * Per model, in plan order: the probe's result, or not_checked when its pod failed.
   */
  models: ModelResult[];
  /**
   * Per check pod.
   */
  pods: PodVerdict[];
  /**
   * Every line written on stderr, in order.
   */
  lines: string[];
}

/**
 * One check pod.
 */
export interface PodVerdict {
  /**
   * The pod's name.
   */
  name: string;
  /**
   * The placement it stood in for.
   */
  placement: string;
  /**
   * The node it ran on, when it was scheduled.
   */
  node: string | null;
  /**
   * finished: the probe gave its verdict; failed: the pod did not let it (the failure's lines say why).
   */
  outcome: "finished" | "failed";
  /**
   * The failure's lines (the error: line, then detail lines); empty when finished.
   */
  failure: string[];
  /**
   * The failure's stable code, one per pod-level cause (never renamed); null when finished. The models the pod left unchecked take its next action.
   */
  code: PodCode | null;
  /**
   * What to do next about the failure, in jr2 up's words (its flags, jr2.config.ts fields): the cause's fix first, and a new run only after it, or once for a cause that can pass by itself; null when finished.
   */
  nextAction: string | null;
  /**
   * Kept for inspection (--keep-pod): delete it by hand.
   */
  kept: boolean;
}

/**
 * The stable code of a check pod's failure. PROVIDER_POD_IMAGE_PULL: a node cannot pull an image. PROVIDER_POD_SECRET_MISSING: harness.envFrom names a Secret the namespace does not hold. PROVIDER_POD_SECRET_KEY_MISSING: a harness.env valueFrom names a key (or Secret) that does not exist. PROVIDER_POD_CUSTODIAN_VOLUME: a Secret or key a secrets valueFrom names is missing, so the Custodian's volume does not mount. PROVIDER_POD_CUSTODIAN_REFUSED: the Custodian refused a held value at start. PROVIDER_POD_OUT_OF_MEMORY: a container ran out of memory. PROVIDER_POD_CANNOT_START: another reason the containers cannot start. PROVIDER_POD_REFUSED: the API server refused the pod (quota, Pod Security, a webhook). PROVIDER_POD_STOPPED: the pod stopped before the probe finished (evicted, preempted, deleted, its deadline). PROVIDER_POD_PROBE_ERROR: the probe refused its run (exit 2: a run spec of another release). PROVIDER_POD_NOT_STARTED: the pod did not start in time. PROVIDER_CLUSTER_UNREACHABLE: the API server did not answer the create, or stopped answering during the run (a lost connection, a TLS failure). PROVIDER_CLUSTER_AUTH: the kubeconfig's credentials could not be used (an exec credential plugin failed); nothing was created. PROVIDER_INTERRUPTED: the run was interrupted (SIGINT, SIGTERM). PROVIDER_PERMISSION_MISSING: the driver may not do what the check needs in the namespace (a SelfSubjectAccessReview said no); nothing was created. PROVIDER_POD_SECURITY: the namespace's Pod Security level would refuse the check pod; it was not created. PROVIDER_POD_LEFT: the cluster did not confirm the delete of the check pod, which may outlive the run (the error has its kubectl delete line). PROVIDER_POD_CREATE_TIMEOUT: the API server did not finish the create in time (its admission, a webhook, was too slow); no refusal. PROVIDER_NAMESPACE_TERMINATING: the namespace is being deleted: the create was refused for it, or the pod went with it during the run. PROVIDER_CLOCK_SKEW: the node's clock is ahead of the API server's, so the probe found the check pod's deadline passed as it started. PROVIDER_POD_NODE_LOST: the check pod's node stopped answering while it ran, or never started it (the error names the node). PROVIDER_POD_WOULD_PREEMPT: a warning: the check pod stayed unschedulable where a Harness pod of its priority class would preempt other pods, which the check pod never does; its models are not checked.
 */
export type PodCode =
  | "PROVIDER_POD_IMAGE_PULL"
  | "PROVIDER_POD_SECRET_MISSING"
  | "PROVIDER_POD_SECRET_KEY_MISSING"
  | "PROVIDER_POD_CUSTODIAN_VOLUME"
  | "PROVIDER_POD_CUSTODIAN_REFUSED"
  | "PROVIDER_POD_OUT_OF_MEMORY"
  | "PROVIDER_POD_CANNOT_START"
  | "PROVIDER_POD_REFUSED"
  | "PROVIDER_POD_STOPPED"
  | "PROVIDER_POD_PROBE_ERROR"
  | "PROVIDER_POD_NOT_STARTED"
  | "PROVIDER_CLUSTER_UNREACHABLE"
  | "PROVIDER_CLUSTER_AUTH"
  | "PROVIDER_INTERRUPTED"
  | "PROVIDER_PERMISSION_MISSING"
  | "PROVIDER_POD_SECURITY"
  | "PROVIDER_POD_LEFT"
  | "PROVIDER_POD_CREATE_TIMEOUT"
  | "PROVIDER_NAMESPACE_TERMINATING"
  | "PROVIDER_CLOCK_SKEW"
  | "PROVIDER_POD_NODE_LOST"
  | "PROVIDER_POD_WOULD_PREEMPT";
