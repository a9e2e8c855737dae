// jr2 up's code written the obvious way, type-checked by check.sh and install-test.sh (never run), with no Node
// global in it: check.sh and install-test.sh also compile this file with TypeScript 7 and its defaults (`types: []`,
// no @types/node), under strict, noUncheckedIndexedAccess, exactOptionalPropertyTypes and verbatimModuleSyntax, and
// skipLibCheck false, so that every .d.ts of the package is checked. Each line here is one the package refused once
// (issue 37): optional values handed on as they are, readonly lists, a typed pod spec read, the version and the
// errors as values.
import {
  type AbortSignalLike,
  EXIT_CODES,
  type ExitCode,
  type Placement,
  type Plan,
  type PlanModel,
  type PodSpec,
  PreflightBinaryError,
  type PreflightOptions,
  PreflightRunError,
  VERSION,
  runPreflight,
} from "@jr2/preflight";

/** jr2 up's resolved model: every optional field is `T | undefined`, as its own config types have them. */
interface ResolvedModel {
  readonly id: string;
  readonly placement: string;
  readonly baseUrl: string | undefined;
  readonly keyEnv: string | undefined;
  readonly maxTokens: number | undefined;
  readonly contextWindow: number | undefined;
}

/** Optional values handed on as they are (exactOptionalPropertyTypes): no `...(x === undefined ? {} : { x })`. */
export function planModel(m: ResolvedModel): PlanModel {
  return {
    model: m.id,
    placement: m.placement,
    source: "custom",
    baseUrl: m.baseUrl,
    keyEnv: m.keyEnv,
    keyHeld: m.keyEnv !== undefined,
    maxTokens: m.maxTokens,
    contextWindow: m.contextWindow,
  };
}

/** Readonly lists taken as they are (no TS4104), and an optional probe image handed on. */
export function plan(
  placements: readonly Placement[],
  models: readonly ResolvedModel[],
  probeImage: string | undefined,
  deadlineSeconds?: number,
): Plan {
  return {
    schema: "jr2.dev/provider-preflight-plan/v1",
    namespace: "jr2",
    instance: "demo",
    probeImage,
    deadlineSeconds,
    placements,
    models: models.map(planModel),
  };
}

/** A pod spec's fields read typed, not `any`. */
export function selector(spec: PodSpec): string {
  const nodeSelector = spec.nodeSelector ?? {};
  // @ts-expect-error: nodeSelector is a string map, not a number (it read as `any` once).
  const wrong: number = spec["nodeSelector"];
  void wrong;
  return Object.entries(nodeSelector)
    .map(([k, v]) => `${k}=${v}`)
    .join(",");
}

/** A literal pod spec with a misspelt field fails the compile (the driver warns of it at run time). */
export const typo: PodSpec = {
  containers: [{ name: "harness" }],
  // @ts-expect-error: no such field (nodeSelector).
  nodeSelectr: { pool: "gpu" },
};

/** Every documented exit code, 129 (hung up) among them. */
export const hungUp: ExitCode = 129;
export const documented: readonly ExitCode[] = EXIT_CODES;

/** The version without resolving the binary (a constant, not a package.json read). */
export const userAgent = `jr2-up (preflight ${VERSION})`;

/** The failures as classes to test for: the binary not found, the driver crashed. */
export async function run(p: Plan, signal: AbortSignalLike, env: { readonly [k: string]: string | undefined }) {
  const options: PreflightOptions = { signal, env, timeout: undefined, context: undefined };
  try {
    return await runPreflight(p, options);
  } catch (e) {
    if (e instanceof PreflightBinaryError) return `not installed: ${e.message}`;
    if (e instanceof PreflightRunError) return `crashed (${e.exitCode ?? e.signal ?? "?"}): ${e.message}`;
    throw e;
  }
}
