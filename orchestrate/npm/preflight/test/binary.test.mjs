// resolveBinary: the platform package in a scratch node_modules (there, and missing), the JR2_PREFLIGHT_BINARY
// override, the version check. The package is copied as npm would lay it out; a child node process imports it by
// name from the scratch project, so the resolution is Node's own.

import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, cpSync, mkdirSync, readFileSync, realpathSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { after, describe, test } from "node:test";

import { BINARY_ENV, PLATFORMS, PreflightBinaryError, builtFor, lockfileRepair, platformPackage, resolveBinary } from "../dist/index.js";
import { driverBin, packageDir, planFor, scratch, testDriver } from "./harness.mjs";

const { version } = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8"));

/**
 * A scratch project whose node_modules holds @jr2/preflight and, with `binary`, the platform package around it;
 * `others`: platform packages of other platforms (`darwin-arm64`...) beside it; `lockfile`: the package-lock.json
 * `packages` entries to write (absent: no lockfile).
 */
function project(binary, { others = [], lockfile } = {}) {
  const s = scratch("jr2-npm-project-");
  const main = join(s.dir, "node_modules/@jr2/preflight");
  mkdirSync(main, { recursive: true });
  for (const part of ["package.json", "dist", "types"]) cpSync(join(packageDir, part), join(main, part), { recursive: true });
  writeFileSync(join(s.dir, "package.json"), JSON.stringify({ name: "scratch", private: true, dependencies: { "@jr2/preflight": version } }));
  for (const other of others) {
    const dir = join(s.dir, "node_modules", `@jr2/preflight-${other}`);
    mkdirSync(join(dir, "bin"), { recursive: true });
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: `@jr2/preflight-${other}`, version }));
  }
  if (lockfile !== undefined) {
    writeFileSync(join(s.dir, "package-lock.json"), JSON.stringify({ name: "scratch", lockfileVersion: 3, packages: lockfile }));
  }
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

  test("the platform package missing, optional packages omitted: one error: line, the repair, no direct dependency", () => {
    const p = project(undefined);
    cleanups.push(p.cleanup);
    const r = inProject(p.dir, RESOLVE, envWithout());
    assert.equal(r.name, "PreflightBinaryError");
    assert.ok(!r.message.includes("\n"), "one line");
    assert.ok(r.message.startsWith(`error: ${platformPackage()} is not installed: `), r.message);
    assert.ok(r.message.includes("--omit=optional"), r.message);
    assert.ok(r.message.includes(`npm install @jr2/preflight@${version} --package-lock-only && npm install`), r.message);
    assert.equal(lockfileRepair(), `npm install @jr2/preflight@${version} --package-lock-only && npm install`);
    // Never the advice that makes the platform package a direct dependency (a Mac's npm ci would then install it).
    assert.ok(!r.message.includes(`npm install ${platformPackage()}`), r.message);
    assert.ok(r.message.includes(BINARY_ENV), r.message);
  });

  test("another platform's package in its place: named, with npm ci where it runs", () => {
    const other = PLATFORMS.find((p) => p !== `${process.platform}-${process.arch}`);
    const p = project(undefined, { others: [other] });
    cleanups.push(p.cleanup);
    const r = inProject(p.dir, RESOLVE, envWithout());
    assert.equal(r.name, "PreflightBinaryError");
    assert.ok(!r.message.includes("\n"), "one line");
    assert.ok(r.message.startsWith(`error: ${platformPackage()} is not installed: `), r.message);
    assert.ok(r.message.includes(`@jr2/preflight-${other} (for ${other}) is installed in its place`), r.message);
    assert.ok(r.message.includes("run npm ci where it runs"), r.message);
    assert.ok(!r.message.includes(`npm install ${platformPackage()}`), r.message);
  });

  test("a lockfile that lacks this platform: names the lockfile and gives the repair", () => {
    const here = `${process.platform}-${process.arch}`;
    const lockfile = {
      "": { name: "scratch", dependencies: { "@jr2/preflight": version } },
      "node_modules/@jr2/preflight": { version },
      // What an install from the tarballs offline writes: one platform, or none.
      ...Object.fromEntries(PLATFORMS.filter((p) => p !== here).slice(0, 1).map((p) => [`node_modules/@jr2/preflight-${p}`, { version, optional: true }])),
    };
    const p = project(undefined, { lockfile });
    cleanups.push(p.cleanup);
    const r = inProject(p.dir, RESOLVE, envWithout());
    assert.equal(r.name, "PreflightBinaryError");
    assert.ok(!r.message.includes("\n"), "one line");
    assert.ok(r.message.includes(`the lockfile ${join(realpathSync(p.dir), "package-lock.json")} lacks it`), r.message);
    assert.ok(r.message.includes(`repair the lockfile: npm install @jr2/preflight@${version} --package-lock-only && npm install`), r.message);
    // The same lockfile with every platform: the cause is the omitted optional packages, not the lockfile.
    const full = { ...lockfile, ...Object.fromEntries(PLATFORMS.map((q) => [`node_modules/@jr2/preflight-${q}`, { version, optional: true }])) };
    writeFileSync(join(p.dir, "package-lock.json"), JSON.stringify({ lockfileVersion: 3, packages: full }));
    const omitted = inProject(p.dir, RESOLVE, envWithout());
    assert.ok(!omitted.message.includes("npm ci cannot install it"), omitted.message);
    assert.ok(omitted.message.includes("--omit=optional"), omitted.message);
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

  test("the binary option gets the version check JR2_PREFLIGHT_BINARY gets, and wins over it", () => {
    const s = scratch("jr2-npm-option-");
    cleanups.push(s.cleanup);
    const other = join(s.dir, "jr2-preflight");
    writeFileSync(other, "#!/bin/sh\necho 'jr2-preflight 9.9.9'\n");
    chmodSync(other, 0o755);
    assert.throws(
      () => resolveBinary({ env: { [BINARY_ENV]: driverBin }, binary: other }),
      (e) => e instanceof PreflightBinaryError && e.message.startsWith(`error: ${other} (from the binary option) says "jr2-preflight 9.9.9" to --version`),
    );
    assert.deepEqual(resolveBinary({ env: { [BINARY_ENV]: other }, binary: driverBin }), { path: driverBin, version, source: "option" });
    assert.throws(
      () => resolveBinary({ binary: join(s.dir, "none") }),
      (e) => e instanceof PreflightBinaryError && e.message === `error: the binary option names ${join(s.dir, "none")}, and there is no file there`,
    );
  });

  test("--version runs once per path, and again when the file changes", () => {
    const s = scratch("jr2-npm-cache-");
    cleanups.push(s.cleanup);
    const bin = join(s.dir, "jr2-preflight");
    const count = join(s.dir, "count");
    const script = (extra) => `#!/bin/sh\necho x >> '${count}'\necho 'jr2-preflight ${version}'\n${extra}`;
    writeFileSync(bin, script(""));
    chmodSync(bin, 0o755);
    const runs = () => readFileSync(count, "utf8").split("\n").filter(Boolean).length;
    for (let i = 0; i < 3; i++) assert.equal(resolveBinary({ env: { [BINARY_ENV]: bin } }).version, version);
    assert.equal(runs(), 1, "three resolves, one --version");
    writeFileSync(bin, script("# another build\n"));
    utimesSync(bin, new Date(), new Date(Date.now() + 5000));
    resolveBinary({ env: { [BINARY_ENV]: bin } });
    assert.equal(runs(), 2, "the file changed: --version again");
  });

  test("a binary of another platform: its cause, not a bare 'Command failed'", () => {
    const s = scratch("jr2-npm-arch-");
    cleanups.push(s.cleanup);
    const bin = join(s.dir, "jr2-preflight");
    const here = `${process.platform}-${process.arch}`;
    // A Mach-O arm64 header (on a Mac, an ELF of the other CPU): a file the kernel refuses to run here.
    const head = Buffer.alloc(4096);
    let expected;
    if (process.platform === "darwin") {
      head.set([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]);
      head.writeUInt16LE(2, 16);
      head.writeUInt16LE(process.arch === "arm64" ? 0x3e : 0xb7, 18);
      expected = process.arch === "arm64" ? "linux-x64" : "linux-arm64";
    } else {
      head.writeUInt32LE(0xfeedfacf, 0);
      head.writeUInt32LE(0x0100000c, 4);
      head.writeUInt32LE(2, 12);
      expected = "darwin-arm64";
    }
    writeFileSync(bin, head);
    chmodSync(bin, 0o755);
    assert.equal(builtFor(bin), expected);
    assert.equal(builtFor(driverBin), here, "the driver of this checkout is this machine's");
    assert.throws(
      () => resolveBinary({ env: { [BINARY_ENV]: bin } }),
      (e) => {
        assert.ok(e instanceof PreflightBinaryError);
        assert.ok(!e.message.includes("\n"), "one line");
        assert.ok(
          e.message.startsWith(`error: cannot run ${bin} --version (from ${BINARY_ENV}): it is a binary for ${expected}, and this machine is ${here} (`),
          e.message,
        );
        return true;
      },
    );
  });

  test("the jr2-preflight bin runs the resolved binary with its arguments, and exits as it does", () => {
    const p = project(driverBin);
    cleanups.push(p.cleanup);
    const cli = join(p.dir, "node_modules/@jr2/preflight/dist/cli.js");
    const run = (args, env = envWithout()) =>
      spawnSync(process.execPath, [cli, ...args], { cwd: p.dir, env, encoding: "utf8" });
    const rbac = run(["rbac", "-n", "jr2"]);
    assert.equal(rbac.status, 0, rbac.stderr);
    assert.match(rbac.stdout, /^kind: Role$/m);
    assert.match(rbac.stdout, /^  namespace: jr2$/m);
    const images = run(["images"]);
    assert.equal(images.status, 0, images.stderr);
    assert.match(images.stdout, new RegExp(`jr2-probe:${version.replace(/\./g, "\\.")}$`, "m"));
    const bad = run(["run", "--plan", join(p.dir, "none.json")]);
    assert.equal(bad.status, 2, "the driver's usage exit, passed on");
    assert.match(bad.stderr, /^error: /m);
    const missing = project(undefined);
    cleanups.push(missing.cleanup);
    const none = spawnSync(process.execPath, [join(missing.dir, "node_modules/@jr2/preflight/dist/cli.js"), "rbac"], {
      cwd: missing.dir,
      env: envWithout(),
      encoding: "utf8",
    });
    assert.equal(none.status, 2);
    assert.match(none.stderr, new RegExp(`^error: ${platformPackage().replace("/", "\\/")} is not installed: `));
  });

  test("a platform no package is built for: one error: line listing those there are", () => {
    assert.throws(
      () => resolveBinary({ env: {}, platform: "linux", arch: "ia32" }),
      (e) =>
        e instanceof PreflightBinaryError &&
        e.message.startsWith("error: @jr2/preflight has no jr2-preflight binary for linux-ia32 (it ships linux-x64, linux-arm64, darwin-x64, darwin-arm64, win32-x64, win32-arm64)"),
    );
  });
});
