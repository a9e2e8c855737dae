// runPreflight against the real driver and the fake cluster (tests/src/bin/fake_cluster.rs), whose kubelet runs the
// real probe against the fake provider: the verdict, the lines as they come, the exit codes, skip, and a cancel.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { PreflightRunError, driverArgs, runPreflight } from "../dist/index.js";
import { INTERRUPTED, assertValid, driverBin, packageDir, planFor, scratch, startFakeCluster, testDriver } from "./harness.mjs";

const { version } = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8"));

/** Every check pod the run created was deleted, and the fake holds none. */
async function assertNoPodLeft(cluster) {
  const state = await cluster.state();
  assert.deepEqual(state.pods, [], "no check pod is left");
  assert.deepEqual([...state.deleted].sort(), [...state.created].sort(), "every pod created was deleted");
  return state;
}

describe("runPreflight", () => {
  let cluster;
  before(async () => {
    cluster = await startFakeCluster("ok");
  });
  after(async () => {
    await cluster?.stop();
  });

  test("a pass: exit 0, the typed verdict, one line per model, the pod deleted", async () => {
    const seen = [];
    const plan = planFor(cluster.providerBaseUrl, ["ok", "ok-delay-50"]);
    const before = (await cluster.state()).created.length;
    const r = await runPreflight(plan, { kubeconfig: cluster.kubeconfig, onLine: (l) => seen.push(l), ...testDriver() });
    assert.equal(r.exitCode, 0, r.lines.join("\n"));
    assert.ok(r.verdict);
    assertValid("driverVerdict", r.verdict);
    assert.equal(r.verdict.ok, true);
    assert.equal(r.verdict.exitCode, 0);
    assert.equal(r.verdict.namespace, "e2e");
    assert.deepEqual(
      r.verdict.models.map((m) => [m.model, m.outcome, m.code]),
      [
        ["vllm/ok", "ok", "PROVIDER_OK"],
        ["vllm/ok-delay-50", "ok", "PROVIDER_OK"],
      ],
    );
    assert.deepEqual(seen, r.lines, "onLine saw every line, in order");
    assert.deepEqual(r.verdict.lines, r.lines, "the verdict's lines are the stderr lines");
    assert.match(r.lines[0] ?? "", /^provider: vllm\/ok completed a tool call \(\d+ ms\)$/);
    assert.equal(r.killed, false);
    const state = await assertNoPodLeft(cluster);
    assert.equal(state.created.length, before + 1, "one check pod for the one placement");
  });

  test("an error: exit 1, the error line and its causes streamed in order, the same lines in the verdict", async () => {
    const seen = [];
    const plan = planFor(cluster.providerBaseUrl, ["ok", "missing"]);
    const r = await runPreflight(plan, { kubeconfig: cluster.kubeconfig, onLine: (l) => seen.push(l), ...testDriver() });
    assert.equal(r.exitCode, 1, r.lines.join("\n"));
    assert.ok(r.verdict);
    assertValid("driverVerdict", r.verdict);
    assert.equal(r.verdict.ok, false);
    assert.equal(r.verdict.exitCode, 1);
    const missing = r.verdict.models[1];
    assert.equal(missing?.code, "PROVIDER_MODEL_NOT_FOUND");
    assert.equal(missing?.level, "error");
    assert.deepEqual(seen, r.lines);
    assert.deepEqual(r.verdict.lines, r.lines);
    const at = seen.findIndex((l) => l.startsWith('error: provider preflight failed for model "vllm/missing"'));
    assert.ok(at > 0, `the error line comes after the pass line: ${seen.join("\n")}`);
    assert.match(seen[0] ?? "", /^provider: vllm\/ok completed a tool call/);
    const causes = seen.slice(at + 1);
    assert.ok(causes.length >= 3, "the usual causes follow the error line");
    for (const c of causes) assert.match(c, /^ {2}- /, "each cause is an indented `- ` line");
    assert.ok(causes.some((c) => c.includes("GET /v1/models")));
    await assertNoPodLeft(cluster);
  });

  test("bad input: exit 2, one error: line naming the field, no verdict, no pod created", async () => {
    const plan = { ...planFor(cluster.providerBaseUrl, ["ok"]), namespace: "Not_A_Label" };
    const before = (await cluster.state()).created.length;
    const r = await runPreflight(plan, { kubeconfig: cluster.kubeconfig, ...testDriver() });
    assert.equal(r.exitCode, 2);
    assert.equal(r.verdict, undefined);
    assert.equal(r.lines.length, 1, r.lines.join("\n"));
    assert.match(r.lines[0] ?? "", /^error: plan\.namespace: /);
    assert.equal((await cluster.state()).created.length, before, "nothing was created");
  });

  test("placements is a plain list: an empty one is the driver's exit 2 and its one error: line, nothing created", async () => {
    const plan = { ...planFor(cluster.providerBaseUrl, []), placements: [] };
    const before = (await cluster.state()).created.length;
    const r = await runPreflight(plan, { kubeconfig: cluster.kubeconfig, ...testDriver() });
    assert.equal(r.exitCode, 2);
    assert.equal(r.verdict, undefined);
    assert.deepEqual(r.lines, ["error: plan.placements: empty: name the placement of the Harness pods"]);
    assert.equal((await cluster.state()).created.length, before);
  });

  test("skip: exit 0, a skipped verdict and one warning line naming each model; the cluster is not contacted", async () => {
    const plan = planFor(cluster.providerBaseUrl, ["ok", "missing"]);
    const before = (await cluster.state()).created.length;
    const r = await runPreflight(plan, { kubeconfig: "/nonexistent/kubeconfig", skip: true, ...testDriver() });
    assert.equal(r.exitCode, 0, r.lines.join("\n"));
    assert.ok(r.verdict);
    assertValid("driverVerdict", r.verdict);
    assert.equal(r.verdict.skipped, true);
    assert.equal(r.verdict.ok, true);
    assert.equal(r.lines.length, 1);
    assert.match(r.lines[0] ?? "", /^warning: /);
    for (const m of ["vllm/ok", "vllm/missing"]) assert.ok(r.lines[0]?.includes(m), `${m} named`);
    // The typed verdict names them too, each marked skipped (issue 27, item 14), with the envelope (item 15).
    assert.deepEqual(
      r.verdict.models.map((m) => [m.model, m.outcome, m.level, m.code]),
      [
        ["vllm/ok", "skipped", "warning", "PROVIDER_SKIPPED"],
        ["vllm/missing", "skipped", "warning", "PROVIDER_SKIPPED"],
      ],
    );
    assert.equal(typeof r.verdict.release.driver, "string");
    assert.equal(r.verdict.release.probe, null);
    assert.equal(r.verdict.kubeContext, null);
    assert.equal(r.verdict.cluster, null);
    assert.match(r.verdict.startedAt, /Z$/);
    assert.equal((await cluster.state()).created.length, before);
  });

  test("the flags: the plan on stdin, JSON out, cancel over stdin, each option as the driver spells it", () => {
    assert.deepEqual(driverArgs(), ["run", "--plan", "-", "--output", "json", "--cancel-on-stdin"]);
    assert.deepEqual(
      driverArgs({ kubeconfig: "k", context: "c", namespace: "n", timeout: 1500, skip: true }).slice(6),
      ["--kubeconfig", "k", "--context", "c", "--namespace", "n", "--timeout", "1500ms", "--skip-provider-preflight"],
    );
    assert.deepEqual(driverArgs({ timeout: "5m", skip: false }).slice(6), ["--timeout", "5m"]);
    assert.deepEqual(
      driverArgs({ dryRun: true, keepPod: true, probeImage: "mirror.example/jr2-probe:1", evidence: "ev" }).slice(6),
      ["--dry-run", "--keep-pod", "--probe-image", "mirror.example/jr2-probe:1", "--evidence", "ev"],
    );
    assert.deepEqual(driverArgs({ dryRun: false, keepPod: false }).slice(6), []);
  });

  test("dryRun and probeImage: the driver's pods in dryRunPods, the image given, exit 0, no verdict, nothing created", async () => {
    const plan = planFor(cluster.providerBaseUrl, ["ok"]);
    const before = (await cluster.state()).created.length;
    const r = await runPreflight(plan, {
      kubeconfig: cluster.kubeconfig,
      dryRun: true,
      probeImage: "mirror.example/jr2/jr2-probe:test",
      ...testDriver(),
    });
    assert.equal(r.exitCode, 0, r.lines.join("\n"));
    assert.equal(r.verdict, undefined);
    assert.match(r.dryRunPods ?? "", /^kind: Pod$/m);
    assert.match(r.dryRunPods ?? "", /image: mirror\.example\/jr2\/jr2-probe:test$/m);
    assert.equal((await cluster.state()).created.length, before, "nothing was created");
  });

  test("a pod-spec field Kubernetes does not know (nodeSelectr): one warning line naming its path, and the run goes on", async () => {
    const plan = planFor(cluster.providerBaseUrl, ["ok"]);
    plan.placements[0].podSpec.nodeSelectr = { pool: "gpu" };
    const r = await runPreflight(plan, { kubeconfig: cluster.kubeconfig, dryRun: true, ...testDriver() });
    assert.equal(r.exitCode, 0, r.lines.join("\n"));
    assert.deepEqual(r.lines, [
      'warning: plan.placements[0].podSpec.nodeSelectr: unknown field, not in a Kubernetes PodSpec: the check pod is made without it, as the API server makes the Harness pods (it warns: unknown field "spec.nodeSelectr")',
    ]);
    assert.doesNotMatch(r.dryRunPods ?? "", /nodeSelectr|pool: gpu/);
  });

  test("evidence: the folder reaches the driver, which refuses one that is not empty (exit 2) before the cluster", async () => {
    const s = scratch("jr2-npm-evidence-");
    try {
      writeFileSync(join(s.dir, "already"), "x");
      const before = (await cluster.state()).created.length;
      const r = await runPreflight(planFor(cluster.providerBaseUrl, ["ok"]), {
        kubeconfig: cluster.kubeconfig,
        evidence: s.dir,
        keepPod: true,
        ...testDriver(),
      });
      assert.equal(r.exitCode, 2, r.lines.join("\n"));
      assert.match(r.lines.at(-1) ?? "", /^error: --evidence: /);
      assert.equal((await cluster.state()).created.length, before, "nothing was created");
    } finally {
      s.cleanup();
    }
  });

  test("an exit none of the documented ones (a crash) rejects with a PreflightRunError, naming the code and the last line", async () => {
    const s = scratch("jr2-npm-crash-");
    try {
      const bin = join(s.dir, "jr2-preflight");
      writeFileSync(
        bin,
        `#!/bin/sh\nif [ "$1" = --version ]; then echo 'jr2-preflight ${version}'; exit 0; fi\n` +
          `echo "thread 'main' panicked at src/main.rs" >&2\nexit 101\n`,
      );
      chmodSync(bin, 0o755);
      await assert.rejects(
        runPreflight(planFor(cluster.providerBaseUrl, ["ok"]), { binary: bin }),
        (e) => {
          assert.ok(e instanceof PreflightRunError, `a PreflightRunError, not ${e?.constructor?.name}`);
          assert.equal(e.name, "PreflightRunError");
          assert.equal(
            e.message,
            "error: jr2-preflight exited 101, which is none of its documented exits (0, 1, 2, 129, 130, 143); its last line: thread 'main' panicked at src/main.rs",
          );
          assert.equal(e.exitCode, 101);
          assert.equal(e.signal, null);
          assert.equal(e.lastLine, "thread 'main' panicked at src/main.rs");
          return true;
        },
      );
    } finally {
      s.cleanup();
    }
  });

  test("an already aborted signal: rejects with its reason and starts nothing", async () => {
    const before = (await cluster.state()).created.length;
    const controller = new AbortController();
    controller.abort(new Error("stopped before the start"));
    const plan = planFor(cluster.providerBaseUrl, ["ok"]);
    await assert.rejects(
      runPreflight(plan, { kubeconfig: cluster.kubeconfig, signal: controller.signal, ...testDriver() }),
      /stopped before the start/,
    );
    assert.equal((await cluster.state()).created.length, before);
  });

  test("a driver that cannot be found rejects with one error: line", async () => {
    await assert.rejects(
      runPreflight(planFor(cluster.providerBaseUrl, ["ok"]), { binary: "/nonexistent/jr2-preflight" }),
      /^PreflightBinaryError: error: the binary option names \/nonexistent\/jr2-preflight, and there is no file there$/,
    );
  });

  test("the binary option is version-checked: another release's binary starts nothing", async () => {
    const s = scratch("jr2-npm-old-");
    try {
      const bin = join(s.dir, "jr2-preflight");
      writeFileSync(bin, "#!/bin/sh\necho 'jr2-preflight 0.0.1'\n");
      chmodSync(bin, 0o755);
      const before = (await cluster.state()).created.length;
      await assert.rejects(
        runPreflight(planFor(cluster.providerBaseUrl, ["ok"]), { kubeconfig: cluster.kubeconfig, binary: bin }),
        /says "jr2-preflight 0\.0\.1" to --version, and @jr2\/preflight is /,
      );
      assert.equal((await cluster.state()).created.length, before);
    } finally {
      s.cleanup();
    }
  });

  test("an abort mid-run: the driver is sent cancel, deletes its pod, exits 130 with the interrupted line", async () => {
    const controller = new AbortController();
    const plan = planFor(cluster.providerBaseUrl, ["stall"], { timeoutSeconds: 60, deadlineSeconds: 120 });
    const running = runPreflight(plan, { kubeconfig: cluster.kubeconfig, signal: controller.signal, binary: driverBin });
    const started = await Promise.race([
      cluster.waitProbe(),
      running.then((r) => assert.fail(`the driver exited ${r.exitCode} before its probe started:\n${r.lines.join("\n")}`)),
    ]);
    assert.equal(started, true, "the probe started in the check pod");
    const during = await cluster.state();
    assert.equal(during.pods.length, 1, "the check pod exists mid-run");
    controller.abort();
    const r = await running;
    assert.equal(r.exitCode, 130, r.lines.join("\n"));
    assert.equal(r.killed, false, "the driver exited by itself, not killed");
    assert.equal(r.lines.at(-1), INTERRUPTED);
    assert.ok(r.verdict);
    assertValid("driverVerdict", r.verdict);
    assert.equal(r.verdict.ok, false);
    assert.equal(r.verdict.exitCode, 130);
    await assertNoPodLeft(cluster);
  });

  test("the jr2-preflight bin passes SIGTERM on: the driver deletes its pod, exits 143, and the bin exits 143", { skip: process.platform === "win32" }, async () => {
    const s = scratch("jr2-npm-bin-");
    try {
      const plan = join(s.dir, "plan.json");
      writeFileSync(plan, JSON.stringify(planFor(cluster.providerBaseUrl, ["stall"], { timeoutSeconds: 60, deadlineSeconds: 120 })));
      const bin = spawn(process.execPath, [join(packageDir, "dist/cli.js"), "run", "--plan", plan, "--kubeconfig", cluster.kubeconfig], {
        env: { ...process.env, JR2_PREFLIGHT_BINARY: driverBin },
        stdio: ["ignore", "ignore", "pipe"],
      });
      let stderr = "";
      bin.stderr.on("data", (d) => (stderr += d));
      const exited = new Promise((r) => bin.on("close", (code, signal) => r({ code, signal })));
      const started = await Promise.race([
        cluster.waitProbe(),
        exited.then((e) => assert.fail(`the bin exited ${e.code} before the probe started:\n${stderr}`)),
      ]);
      assert.equal(started, true);
      bin.kill("SIGTERM");
      const e = await exited;
      assert.deepEqual(e, { code: 143, signal: null }, stderr);
      assert.match(stderr, /interrupted/);
      await assertNoPodLeft(cluster);
    } finally {
      s.cleanup();
    }
  });
});

describe("runPreflight, lines as they come", () => {
  let cluster;
  before(async () => {
    cluster = await startFakeCluster("image-pull");
  });
  after(async () => {
    await cluster?.stop();
  });

  test("a pending line reaches onLine while the driver still runs, the error line last", async () => {
    const seen = [];
    let firstSeenDuringRun;
    const plan = planFor(cluster.providerBaseUrl, ["ok"]);
    const r = await runPreflight(plan, {
      kubeconfig: cluster.kubeconfig,
      timeout: 3000,
      ...testDriver(),
      onLine: (l) => {
        if (seen.length === 0) firstSeenDuringRun = cluster.state();
        seen.push(l);
      },
    });
    assert.equal(r.exitCode, 1, r.lines.join("\n"));
    assert.deepEqual(seen, r.lines);
    assert.match(seen[0] ?? "", /^provider: the check pod is not running yet — /);
    const during = await firstSeenDuringRun;
    assert.equal(during.pods.length, 1, "when the first line came, the check pod was still there: the run was going on");
    assert.match(seen.at(-1) ?? "", /^error: provider preflight: the check pod did not start in 3 s/);
    assert.ok(r.verdict);
    assertValid("driverVerdict", r.verdict);
    assert.equal(r.verdict.pods[0]?.code, "PROVIDER_POD_NOT_STARTED");
    await assertNoPodLeft(cluster);
  });
});
