// @jr2/preflight: the provider preflight of jr2 up as a dependency. resolveBinary() finds the jr2-preflight binary of
// this platform (a platform package, or JR2_PREFLIGHT_BINARY); runPreflight() runs it on a plan and resolves with its
// typed verdict. The types are generated from the JSON Schemas the package ships (schemas/).

export { BINARY_ENV, PLATFORMS, PreflightBinaryError, platformPackage, resolveBinary } from "./binary.js";
export type { ResolveOptions, ResolvedBinary } from "./binary.js";
export { driverArgs, runPreflight } from "./run.js";
export type { PreflightOptions, PreflightResult } from "./run.js";
export type { Model as PlanModel, Placement, Plan } from "../types/plan.v1.js";
export type {
  ApiKind,
  Code,
  DriverVerdict,
  Level,
  ModelResult,
  Origin,
  Outcome,
  PodCode,
  PodVerdict,
  Route,
  Timings,
  Try,
} from "../types/driver-verdict.v1.js";
