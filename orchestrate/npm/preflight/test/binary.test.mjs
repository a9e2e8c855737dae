// resolveBinary: the platform package in a scratch node_modules (there, and missing), the JR2_PREFLIGHT_BINARY
// override, the version check. The package is copied as npm would lay it out; a child node process imports it by
// name from the scratch project, so the resolution is Node's own.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { chmodSync, cpSync, mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { after, describe, test } from "node:test";

import { BINARY_ENV, PreflightBinaryError, platformPackage, resolveBinary } from "../dist/index.js";
import { driverBin, packageDir, planFor, scratch, testDriver } from "./harness.mjs";

const { version } = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8"));

/** A scratch project whose node_modules holds @jr2/preflight and, with `binary`, the platform package around it. */
function project(binary) {
  const s = scratch("jr2-npm-project-");
  const main = join(s.dir, "node_modules/@jr2/preflight");
  mkdirSync(main, { recursive: true });
  for (const part of ["package.json", "dist", "types"]) cpSync(join(packageDir, part), join(main, part), { recursive: true });
  if (binary !== undefined) {
    const pkg = join(s.dir, "node_modules", platformPackage());
    mkdirSync(join(pkg, "bin"), { recursive: true });
    writeFileSync(
      join(pkg, "package.json"),
      JSON.stringify({ name: platformPackage(), version, os: [process.platform], cpu: [process.arch] }),
    );
    symlinkSync(binary, join(pkg, "bin", process.platform === "win32" ? "jr2-preflight.exe" : "jr2-preflight"));
  }
  return s;
}

/** Runs `code` (an ES module) in the scratch project; its stdout, parsed as JSON. */
function inProject(dir, code, env = process.env) {
  writeFileSync(join(dir, "main.mjs"), code);
  return JSON.parse(execFileSync(process.execPath, ["main.mjs"], { cwd: dir, env, encoding: "utf8" }));
}

const RESOLVE = `
import { resolveBinary } from "@jr2/preflight";
try { console.log(JSON.stringify(resolveBinary())); }
catch (e) { console.log(JSON.stringify({ name: e.name, message: e.message })); }
`;

const cleanups = [];
after(() => cleanups.forEach((c) => c()));

/** process.env without the override, so that a developer's own does not change what the tests see. */
function envWithout() {
  const env = { ...process.env };
  delete env[BINARY_ENV];
  return env;
}

describe("resolveBinary", () => {
  test("the platform package's bin/jr2-preflight, found by Node's resolution, its version checked", () => {
    const p = project(driverBin);
    cleanups.push(p.cleanup);
    const r = inProject(p.dir, RESOLVE, envWithout());
    assert.equal(r.source, "package", JSON.stringify(r));
    assert.equal(r.version, version);
    assert.equal(realpathSync(r.path), realpathSync(driverBin));
    assert.equal(relative(p.dir, r.path), join("node_modules", platformPackage(), "bin", "jr2-preflight"));
  });

  test("a run from the installed package: runPreflight finds the binary itself", () => {
    const { binary, env } = testDriver();
    const p = project(binary);
    cleanups.push(p.cleanup);
    const plan = planFor("http://127.0.0.1:9/v1", ["ok"]);
    const r = inProject(
      p.dir,
      `import { runPreflight } from "@jr2/preflight";
       const r = await runPreflight(${JSON.stringify(plan)}, { skip: true });
       console.log(JSON.stringify(r));`,
      { ...env, [BINARY_ENV]: "" },
    );
    assert.equal(r.exitCode, 0, r.lines?.join("\n"));
    assert.equal(r.verdict.skipped, true);
  });

  test("the platform package missing: one error: line naming it and its three usual causes", () => {
    const p = project(undefined);
    cleanups.push(p.cleanup);
    const r = inProject(p.dir, RESOLVE, envWithout());
    assert.equal(r.name, "PreflightBinaryError");
    assert.ok(!r.message.includes("\n"), "one line");
    assert.ok(r.message.startsWith(`error: ${platformPackage()} is not installed: `), r.message);
    for (const cause of ["--omit=optional", "lockfile was written on another platform", "node_modules was copied from another OS"]) {
      assert.ok(r.message.includes(cause), `names the cause ${JSON.stringify(cause)}: ${r.message}`);
    }
    assert.ok(r.message.includes(`npm install ${platformPackage()}@${version}`), r.message);
    assert.ok(r.message.includes(BINARY_ENV), r.message);
  });

  test("JR2_PREFLIGHT_BINARY wins over a missing package, and a relative path is taken from the working directory", () => {
    const p = project(undefined);
    cleanups.push(p.cleanup);
    const abs = inProject(p.dir, RESOLVE, { ...envWithout(), [BINARY_ENV]: driverBin });
    assert.deepEqual(abs, { path: driverBin, version, source: "override" });
    const rel = relative(p.dir, driverBin);
    const fromRel = inProject(p.dir, RESOLVE, { ...envWithout(), [BINARY_ENV]: rel });
    assert.equal(fromRel.source, "override");
    assert.equal(fromRel.path, driverBin);
  });

  test("JR2_PREFLIGHT_BINARY naming nothing: one error: line", () => {
    assert.throws(
      () => resolveBinary({ env: { [BINARY_ENV]: "/nonexistent/jr2-preflight" } }),
      (e) => e instanceof PreflightBinaryError && e.message === `error: ${BINARY_ENV} names /nonexistent/jr2-preflight, and there is no file there`,
    );
  });

  test("the version check: a binary of another release is refused, from the override or the package", () => {
    const s = scratch("jr2-npm-version-");
    cleanups.push(s.cleanup);
    const other = join(s.dir, "jr2-preflight");
    writeFileSync(other, "#!/bin/sh\necho 'jr2-preflight 9.9.9'\n");
    chmodSync(other, 0o755);
    assert.throws(
      () => resolveBinary({ env: { [BINARY_ENV]: other } }),
      (e) =>
        e instanceof PreflightBinaryError &&
        e.message.startsWith(`error: ${other} (from ${BINARY_ENV}) says "jr2-preflight 9.9.9" to --version, and @jr2/preflight is ${version}: `),
    );
    const p = project(other);
    cleanups.push(p.cleanup);
    const r = inProject(p.dir, RESOLVE, envWithout());
    assert.equal(r.name, "PreflightBinaryError");
    assert.match(r.message, /says "jr2-preflight 9\.9\.9" to --version/);
    assert.ok(r.message.includes(`(from ${platformPackage()})`), r.message);
  });

  test("a platform no package is built for: one error: line listing those there are", () => {
    assert.throws(
      () => resolveBinary({ env: {}, platform: "linux", arch: "ia32" }),
      (e) =>
        e instanceof PreflightBinaryError &&
        e.message.startsWith("error: @jr2/preflight has no jr2-preflight binary for linux-ia32 (it ships linux-x64, linux-arm64, darwin-x64, darwin-arm64, win32-x64)"),
    );
  });
});
