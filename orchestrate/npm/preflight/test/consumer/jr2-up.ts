// A consumer of the package as `jr2 up` writes it, type-checked by check.sh under strict, noUncheckedIndexedAccess
// and exactOptionalPropertyTypes (never run): pod specs typed by a Kubernetes client's interfaces (kubernetes.ts)
// go into the plan as they are, the placements are a mapped list, the exit codes and the stable codes are switched on
// exhaustively (a new code fails this compile), and the package's own name resolves through its `exports`.
import {
  type Cause,
  type Code,
  type DriverVerdict,
  type Endpoint,
  type ExitCode,
  type ModelResult,
  type Origin,
  type Placement,
  type Plan,
  type PlanModel,
  type PodCode,
  type PreflightOptions,
  type PreflightResult,
  PreflightBinaryError,
  resolveBinary,
  runPreflight,
} from "@jr2/preflight";
import type { ProbeVerdict } from "@jr2/preflight/types/verdict.v1";
import type { ProbeEvent } from "@jr2/preflight/types/events.v1";
import type { Try } from "@jr2/preflight/types/common.v1";

import type { V1Container, V1PodSpec, V1PodTemplateSpec } from "./kubernetes.js";

/** What jr2 up renders per placement: a Deployment's pod template, from its own Kubernetes client types. */
interface RenderedHarness {
  placement: string;
  template: V1PodTemplateSpec;
  custodian: boolean;
}

function harnessContainer(spec: V1PodSpec): V1Container | undefined {
  return spec.containers.find((c) => c.name === "harness");
}

/** The placements, mapped: no `[first, ...rest]` dance, and the interface-typed V1PodSpec taken as it is. */
function placements(rendered: readonly RenderedHarness[]): Placement[] {
  return rendered.flatMap((r): Placement[] => {
    const podSpec: V1PodSpec | undefined = r.template.spec;
    if (podSpec === undefined || harnessContainer(podSpec) === undefined) return [];
    const placement: Placement = { name: r.placement, podSpec, harnessContainer: "harness" };
    if (r.custodian) placement.custodianContainer = "custodian";
    return [placement];
  });
}

export function preflightPlan(
  namespace: string,
  instance: string,
  rendered: readonly RenderedHarness[],
  models: readonly PlanModel[],
  probeImage?: string,
): Plan {
  const plan: Plan = {
    schema: "jr2.dev/provider-preflight-plan/v1",
    namespace,
    instance,
    placements: placements(rendered),
    models: [...models],
  };
  if (probeImage !== undefined) plan.probeImage = probeImage;
  return plan;
}

/** What the exit code means to the converge: exhaustive over the documented codes. */
export function exitMeaning(code: ExitCode | null): "go on" | "stop" | "bad plan" | "interrupted" | "killed" {
  switch (code) {
    case 0:
      return "go on";
    case 1:
      return "stop";
    case 2:
      return "bad plan";
    case 129:
    case 130:
    case 143:
      return "interrupted";
    case null:
      return "killed";
    default: {
      const never: never = code;
      return never;
    }
  }
}

/** What jr2 up tells the user per model code: exhaustive, so a code added to the schema fails this compile. */
export function advice(code: Code): string {
  switch (code) {
    case "PROVIDER_OK":
      return "";
    case "PROVIDER_BUSY":
    case "PROVIDER_UNAVAILABLE":
    case "PROVIDER_QUOTA_EXHAUSTED":
      return "the provider is busy or out of quota";
    case "PROVIDER_KEY_REFUSED":
    case "PROVIDER_CUSTODIAN_REFUSED":
      return "check the key";
    case "PROVIDER_TEXT_ANSWER":
    case "PROVIDER_TOOLS_NOT_ENABLED":
    case "PROVIDER_LENGTH":
    case "PROVIDER_CONTEXT_TOO_SMALL":
      return "the model or its server settings";
    case "PROVIDER_TIMEOUT":
    case "PROVIDER_UNREACHABLE":
    case "PROVIDER_TLS":
    case "PROVIDER_CROSS_ORIGIN_REDIRECT":
      return "the network path";
    case "PROVIDER_HTTP_ERROR":
    case "PROVIDER_MODEL_NOT_FOUND":
    case "PROVIDER_STREAM_ERROR":
    case "PROVIDER_PROTOCOL_ERROR":
      return "the endpoint";
    case "PROVIDER_NOT_CHECKED":
    case "PROVIDER_UNSUPPORTED":
    case "PROVIDER_SKIPPED":
    case "PROVIDER_NOT_CHECKABLE_ADC":
    case "PROVIDER_NOT_CHECKABLE_OAUTH":
      return "not checked";
    default: {
      const never: never = code;
      return never;
    }
  }
}

export function podAdvice(code: PodCode | null): string {
  switch (code) {
    case null:
      return "";
    case "PROVIDER_POD_IMAGE_PULL":
      return "mirror the probe image";
    case "PROVIDER_PERMISSION_MISSING":
      return "kubectl apply the Role of `jr2-preflight rbac`";
    default:
      return code;
  }
}

function causeText(cause: Cause | null): string {
  if (cause === null) return "";
  switch (cause.kind) {
    case "contextTooSmall":
      return `served ${cause.served} tokens, ${cause.needed} needed`;
    case "gatewayBackendFailed":
      return cause.error;
    case "llamaCppSlotsBusy":
      return `${cause.slots} slots busy`;
    case "ollamaTemplateWithoutTools":
    case "ollamaModelNotFound":
    case "ollamaBaseUrlWithoutV1":
    case "ollamaLoadedNoAnswer":
    case "ollamaHeldBackCall":
    case "ollamaRepeatLimit":
      return `ollama: ${cause.kind}`;
    default:
      return cause.kind;
  }
}

function server(endpoint: Endpoint | null): string {
  return endpoint?.kind ?? "unknown";
}

function where(origin: Origin): string {
  switch (origin.kind) {
    case "thisMachine":
      return "this machine";
    case "node":
      return `node ${origin.name}`;
    default: {
      const never: never = origin;
      return never;
    }
  }
}

function failed(models: readonly ModelResult[]): string[] {
  return models
    .filter((m) => m.level === "error")
    .map((m) => {
      const firstTry: Try | undefined = m.tries[0];
      const route = m.route.kind === "custom" ? m.baseUrl : m.host;
      return `${m.model}: ${m.code} ${advice(m.code)} (${route}, ${server(m.endpoint)}, ${causeText(m.cause)}, status ${firstTry?.status ?? "none"})`;
    });
}

export function summary(verdict: DriverVerdict): string {
  const pods = verdict.pods.map((p) => podAdvice(p.code)).filter((a) => a !== "");
  return [...failed(verdict.models), ...pods].join("; ");
}

export function probeSide(v: ProbeVerdict, e: ProbeEvent): string {
  return `${where(v.origin)} ${e.event}`;
}

export const here: string = where({ kind: "thisMachine" });

export async function preflight(
  plan: Plan,
  kubeContext: string | undefined,
  signal: AbortSignal,
  flags: { evidenceDir?: string; keepPod: boolean; dryRun: boolean },
): Promise<boolean> {
  try {
    resolveBinary();
  } catch (e) {
    if (e instanceof PreflightBinaryError) console.error(e.message);
    return false;
  }
  const options: PreflightOptions = {
    context: kubeContext,
    signal,
    timeout: 300_000,
    keepPod: flags.keepPod,
    dryRun: flags.dryRun,
    evidence: flags.evidenceDir,
    probeImage: "registry.example.com/jr2/jr2-probe:0.1.0",
    onLine: (line) => process.stderr.write(`${line}\n`),
  };
  const result: PreflightResult = await runPreflight(plan, options);
  if (result.dryRunPods !== undefined) process.stdout.write(result.dryRunPods);
  const meaning = exitMeaning(result.exitCode);
  if (result.verdict !== undefined) console.error(meaning, summary(result.verdict));
  return meaning === "go on";
}
