// What the node:test tests share, and what an install test from the tarballs can import: the workspace's binaries,
// the fake cluster as a process (tests/src/bin/fake_cluster.rs), a plan for it, and Ajv 2020 strict over the schemas.
//
// The binaries: $JR2_TEST_BIN_DIR, else $CARGO_TARGET_DIR/debug, else ~/.cache/jr2-preflight/target/debug (where
// tests/run.sh builds); check.sh builds jr2-preflight, jr2-probe and jr2-fake-cluster there first.

import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir, homedir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const here = dirname(fileURLToPath(import.meta.url));
export const packageDir = join(here, "..");
export const repo = join(packageDir, "../../..");

export const binDir =
  process.env.JR2_TEST_BIN_DIR ??
  join(process.env.CARGO_TARGET_DIR ?? join(homedir(), ".cache/jr2-preflight/target"), "debug");
export const driverBin = join(binDir, "jr2-preflight");
export const probeBin = join(binDir, "jr2-probe");
export const fakeClusterBin = join(binDir, "jr2-fake-cluster");

/** The interrupted line (probe/src/contract/render/cluster.rs `interrupted`). */
export const INTERRUPTED = "error: provider preflight: interrupted; the check pods were deleted";

/** The binary and environment the run tests give runPreflight: the driver of this checkout. */
export function testDriver() {
  return { binary: driverBin, env: { ...process.env } };
}

/** A temporary folder, removed by `cleanup()`. */
export function scratch(prefix = "jr2-npm-") {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Starts the fake cluster (`scenario`: `ok` or `image-pull`): resolves with its kubeconfig, the fake provider's base
 * URL, `state()` (the check pods held, created, deleted), `waitProbe()` (a probe process has started) and `stop()`.
 */
export async function startFakeCluster(scenario = "ok") {
  for (const bin of [fakeClusterBin, probeBin]) {
    if (!existsSync(bin)) throw new Error(`no ${bin}: run check.sh, or cargo build -p jr2-testkit -p jr2-probe`);
  }
  const tmp = scratch("jr2-fake-cluster-");
  const child = spawn(fakeClusterBin, ["--probe", probeBin, "--dir", tmp.dir, "--scenario", scenario], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  // The first line says where it serves; then each answer names its command, answered in the order asked.
  let announce;
  const announced = new Promise((r) => (announce = r));
  const waiting = new Map();
  const lines = createInterface({ input: child.stdout, crlfDelay: Infinity });
  lines.on("line", (line) => {
    const value = JSON.parse(line);
    if (value.command === undefined) return announce(value);
    waiting.get(value.command)?.shift()?.(value);
  });
  const exited = new Promise((r) => child.on("close", r));
  const ask = (command) =>
    new Promise((r) => {
      if (!waiting.has(command)) waiting.set(command, []);
      waiting.get(command).push(r);
      child.stdin.write(`${command}\n`);
    });
  const started = await Promise.race([
    announced,
    exited.then((code) => {
      throw new Error(`jr2-fake-cluster exited (${code}) before it served`);
    }),
  ]);
  return {
    ...started,
    state: () => ask("state"),
    waitProbe: async () => (await ask("wait-probe")).ok,
    stop: async () => {
      child.stdin.end();
      await exited;
      tmp.cleanup();
    },
  };
}

/** A Harness pod spec as jr2 up renders it (the e2e suite's, orchestrate/tests/fake_cluster/mod.rs). */
function podSpec() {
  return {
    automountServiceAccountToken: false,
    securityContext: { runAsNonRoot: true, seccompProfile: { type: "RuntimeDefault" }, fsGroup: 2000 },
    containers: [
      {
        name: "harness",
        image: "registry.example.com/jr2/harness:0.9.0",
        env: [
          { name: "JR2_PROVIDER_API_KEY", value: "jr2-held-JR2_PROVIDER_API_KEY" },
          { name: "JR2_CUSTODIAN_URL", value: "http://127.0.0.1:8081" },
        ],
      },
      { name: "custodian", image: "envoyproxy/envoy:distroless-v1.39.1" },
    ],
  };
}

/**
 * A plan of one placement whose models are the fake provider's behaviours (`ok`, `missing`, `stall`...), each as
 * `vllm/<behaviour>` against `baseUrl`.
 */
export function planFor(baseUrl, behaviours, { timeoutSeconds = 20, deadlineSeconds = 90 } = {}) {
  return {
    schema: "jr2.dev/provider-preflight-plan/v1",
    namespace: "e2e",
    instance: "e2e",
    probeImage: "registry.example.com/jr2/jr2-probe:0.1.0",
    deadlineSeconds,
    timeoutSeconds,
    placements: [{ name: "harness", harnessContainer: "harness", custodianContainer: "custodian", podSpec: podSpec() }],
    models: behaviours.map((b) => ({
      model: `vllm/${b}`,
      placement: "harness",
      source: "custom",
      baseUrl,
      api: "openai-completions",
      keyEnv: "JR2_PROVIDER_API_KEY",
      keyHeld: true,
    })),
  };
}

/** The schemas the package ships, each compiled once by Ajv 2020 in strict mode (formats checked). */
export const SCHEMA_FILES = {
  plan: "orchestrate/schemas/plan.v1.schema.json",
  driverVerdict: "orchestrate/schemas/driver-verdict.v1.schema.json",
  verdict: "probe/schemas/verdict.v1.schema.json",
  events: "probe/schemas/events.v1.schema.json",
  summary: "probe/schemas/summary.v1.schema.json",
  runSpec: "probe/schemas/run-spec.v1.schema.json",
};

const compiled = new Map();

/** The Ajv 2020 strict validator of one of {@link SCHEMA_FILES}. Throws what strict mode reports. */
export function validator(name) {
  if (!compiled.has(name)) {
    const ajv = new Ajv2020({ strict: true, allErrors: true });
    addFormats(ajv);
    compiled.set(name, ajv.compile(JSON.parse(readFileSync(join(repo, SCHEMA_FILES[name]), "utf8"))));
  }
  return compiled.get(name);
}

/** Throws unless `value` validates against the schema `name`, listing Ajv's errors. */
export function assertValid(name, value) {
  const validate = validator(name);
  if (!validate(value)) {
    throw new Error(`not a valid ${name}: ${JSON.stringify(validate.errors, null, 2)}\n${JSON.stringify(value)}`);
  }
}
