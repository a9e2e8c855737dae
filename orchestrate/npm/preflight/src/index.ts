// @jr2/preflight: the provider preflight of jr2 up as a dependency. resolveBinary() finds the jr2-preflight binary of
// this platform (a platform package, or JR2_PREFLIGHT_BINARY); runPreflight() runs it on a plan and resolves with its
// typed verdict. The types are generated from the JSON Schemas the package ships (schemas/); every generated file is
// also reachable on its own as `@jr2/preflight/types/<name>` (e.g. `@jr2/preflight/types/verdict.v1`).

export {
  BINARY_ENV,
  PLATFORMS,
  PreflightBinaryError,
  builtFor,
  lockfileRepair,
  platformPackage,
  resolveBinary,
} from "./binary.js";
export type { Environment, ResolveOptions, ResolvedBinary } from "./binary.js";
export { EXIT_CODES, PreflightRunError, driverArgs, runPreflight } from "./run.js";
export type { AbortSignalLike, ExitCode, PreflightOptions, PreflightResult } from "./run.js";
/** This package's version (the driver's: the binary it runs says the same to `--version`), without reading a file. */
export { VERSION } from "./version.js";
export type { Model as PlanModel, Placement, Plan, PodSpec } from "../types/plan.v1.js";
export type { DriverVerdict, PodCode, PodVerdict } from "../types/driver-verdict.v1.js";
export type {
  ApiKind,
  Cause,
  Code,
  Endpoint,
  Level,
  ModelResult,
  Origin,
  Outcome,
  Route,
  Timings,
  Try,
} from "../types/common.v1.js";
export type { ProbeVerdict } from "../types/verdict.v1.js";
export type { ProbeEvent, Verdict as ProbeEventVerdict } from "../types/events.v1.js";
export type { ProbeSummary } from "../types/summary.v1.js";
export type { Model as RunSpecModel, RunSpec } from "../types/run-spec.v1.js";
