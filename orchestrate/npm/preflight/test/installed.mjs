// The client as jr2 up meets it: installed from the tarballs, offline, into a scratch project. orchestrate/npm/test.sh
// copies this file into that project and runs it there, so `@jr2/preflight` resolves from the project's node_modules
// (the tarball's dist/ and schemas/, the platform package's binary), never from this checkout.
//
//   node installed.mjs full      both tarballs installed: resolveBinary finds the platform package's binary, the
//                                shipped schemas resolve, and runPreflight passes against the fake cluster, no pod left
//   node installed.mjs lockfile-lacks   only the main tarball installed offline: npm leaves the optional platform
//                                package out and the lockfile lacks every platform; resolveBinary throws the one error:
//                                line naming the package, the lockfile and the repair (npm install @jr2/preflight@<v>
//                                --package-lock-only && npm install)
//   node installed.mjs other-platform   `npm ci --os/--cpu` of another platform: the line names the package there
//   node installed.mjs omit-optional    `npm ci --omit=optional`: the lockfile has the platform, the line says omitted
//   node installed.mjs binary   the platform package's binary found and run (a dry run: no cluster), on whatever Node
//                                runs this (install-test.sh: Node 20.18, below the main package's engines)
//   node installed.mjs old-node  on a Node below 20.19, no platform package: the line names the Node's version
//
// JR2_NPM_HARNESS is the absolute path of test/harness.mjs (the fake cluster and the schemas' validators); the binaries
// it starts are the workspace's debug ones, as in check.sh.

import assert from "node:assert/strict";
import { existsSync, realpathSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

import { PLATFORMS, PreflightBinaryError, lockfileRepair, platformPackage, resolveBinary, runPreflight } from "@jr2/preflight";

const mode = process.argv[2];
const project = process.cwd();
const env = { ...process.env };
delete env.JR2_PREFLIGHT_BINARY;
const pkg = platformPackage();

/** resolveBinary throws one error: line naming the missing package, with `includes` in it and never the advice to
 * install the platform package directly (a Mac's npm ci would then install it too). */
function assertMissing(includes, excludes = []) {
  assert.equal(existsSync(join(project, "node_modules", pkg)), false, `${pkg} was not installed`);
  assert.throws(
    () => resolveBinary({ env }),
    (e) => {
      assert.ok(e instanceof PreflightBinaryError);
      assert.match(e.message, new RegExp(`^error: ${pkg.replace("/", "\\/")} is not installed: `));
      assert.ok(!e.message.includes("\n"), "one line");
      for (const part of includes) assert.ok(e.message.includes(part), `${JSON.stringify(part)} in: ${e.message}`);
      for (const part of [`npm install ${pkg}`, ...excludes]) assert.ok(!e.message.includes(part), `no ${JSON.stringify(part)} in: ${e.message}`);
      return true;
    },
  );
}

if (mode === "lockfile-lacks") {
  assertMissing([`the lockfile ${join(realpathSync(project), "package-lock.json")} lacks it`, `repair the lockfile: ${lockfileRepair()}`]);
  console.log(`installed (${mode}): resolveBinary names ${pkg} and the repair`);
} else if (mode === "other-platform") {
  const others = PLATFORMS.filter((p) => existsSync(join(project, "node_modules", `@jr2/preflight-${p}`)));
  assert.equal(others.length, 1, `one other platform's package installed: ${others}`);
  assertMissing([`@jr2/preflight-${others[0]} (for ${others[0]}) is installed in its place`, "run npm ci where it runs"]);
  console.log(`installed (${mode}): resolveBinary names ${pkg} and @jr2/preflight-${others[0]} in its place`);
} else if (mode === "omit-optional") {
  assertMissing(["--omit=optional"], ["npm ci cannot install it"]);
  console.log(`installed (${mode}): resolveBinary names ${pkg}, omitted`);
} else if (mode === "old-node") {
  assertMissing([`this Node is ${process.versions.node}, older than @jr2/preflight supports (20.19 or newer`]);
  console.log(`installed (${mode}): resolveBinary names ${pkg} and Node ${process.versions.node}`);
} else if (mode === "binary") {
  const { planFor } = await import(pathToFileURL(process.env.JR2_NPM_HARNESS).href);
  const bin = resolveBinary({ env });
  assert.equal(bin.source, "package");
  assert.equal(realpathSync(bin.path), realpathSync(join(project, "node_modules", pkg, "bin", "jr2-preflight")));
  const r = await runPreflight(planFor("http://127.0.0.1:9/v1", ["ok"]), { dryRun: true, env });
  assert.equal(r.exitCode, 0, r.lines.join("\n"));
  assert.match(r.dryRunPods ?? "", /^kind: Pod$/m);
  console.log(`installed (binary, Node ${process.versions.node}): ${bin.path} ${bin.version} ran a dry run`);
} else if (mode === "full") {
  const { assertValid, planFor, startFakeCluster } = await import(pathToFileURL(process.env.JR2_NPM_HARNESS).href);
  const bin = resolveBinary({ env });
  assert.equal(bin.source, "package");
  assert.equal(realpathSync(bin.path), realpathSync(join(project, "node_modules", pkg, "bin", "jr2-preflight")));
  const require = createRequire(join(project, "index.js"));
  for (const schema of ["plan.v1", "driver-verdict.v1", "verdict.v1", "events.v1", "summary.v1", "run-spec.v1"]) {
    const file = require.resolve(`@jr2/preflight/schemas/${schema}.schema.json`);
    assert.ok(realpathSync(file).startsWith(realpathSync(join(project, "node_modules"))), file);
  }
  const cluster = await startFakeCluster("ok");
  try {
    const lines = [];
    const r = await runPreflight(planFor(cluster.providerBaseUrl, ["ok"]), {
      kubeconfig: cluster.kubeconfig,
      env,
      onLine: (l) => lines.push(l),
    });
    assert.equal(r.exitCode, 0, r.lines.join("\n"));
    assertValid("driverVerdict", r.verdict);
    assert.deepEqual(
      r.verdict.models.map((m) => [m.model, m.code]),
      [["vllm/ok", "PROVIDER_OK"]],
    );
    assert.deepEqual(lines, r.lines);
    const state = await cluster.state();
    assert.deepEqual(state.pods, [], "no check pod is left");
    assert.equal(state.created.length, 1);
  } finally {
    await cluster.stop();
  }
  console.log(`installed (full): ${bin.path} ${bin.version} passed against the fake cluster`);
} else {
  throw new Error(`usage: node installed.mjs full|binary|lockfile-lacks|other-platform|omit-optional (not ${mode})`);
}
