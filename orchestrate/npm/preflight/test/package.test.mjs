// The packages' manifests: the crate's version, an exact-version optional dependency per platform, no script that
// would run at install, ESM with its types (every generated .d.ts reachable through `exports`), a `bin`, Node 20.19 or
// newer; the publish metadata of all six packages against the one repository URL (Cargo.toml's [workspace.package]
// `repository`), and their READMEs' links.

import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { test } from "node:test";

import ts from "typescript";

import { PLATFORMS } from "../dist/index.js";
import { packageDir, repo } from "./harness.mjs";

const manifest = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8"));
const cargo = readFileSync(join(repo, "Cargo.toml"), "utf8");
const workspaceField = (key) => new RegExp(`\\[workspace\\.package\\][^[]*?\\n${key} = "([^"]+)"`).exec(cargo)?.[1];
const crateVersion = workspaceField("version");
const repository = workspaceField("repository");

/** The six package folders, relative to the repository, with their manifests. */
const packages = [
  ["orchestrate/npm/preflight", manifest],
  ...PLATFORMS.map((p) => {
    const dir = `orchestrate/npm/platforms/${p}`;
    return [dir, JSON.parse(readFileSync(join(repo, dir, "package.json"), "utf8"))];
  }),
];

test("the package is the crate's version, and depends on each platform package at exactly that version", () => {
  assert.ok(crateVersion, "the workspace's version in Cargo.toml");
  assert.equal(manifest.version, crateVersion);
  assert.deepEqual(
    manifest.optionalDependencies,
    Object.fromEntries(PLATFORMS.map((p) => [`@jr2/preflight-${p}`, crateVersion]).sort(([a], [b]) => a.localeCompare(b))),
  );
  assert.equal(manifest.dependencies, undefined, "nothing else is installed with it");
});

test("no install script, ESM with its types, the jr2-preflight bin, Node 20.19 or newer", () => {
  assert.equal(manifest.scripts, undefined);
  assert.equal(manifest.type, "module");
  assert.deepEqual(manifest.exports["."], { types: "./dist/index.d.ts", default: "./dist/index.js" });
  assert.deepEqual(manifest.exports["./types/*"], { types: "./types/*.d.ts" });
  assert.equal(manifest.types, "./dist/index.d.ts");
  assert.deepEqual(manifest.bin, { "jr2-preflight": "dist/cli.js" });
  assert.match(readFileSync(join(packageDir, "dist/cli.js"), "utf8"), /^#!\/usr\/bin\/env node\n/);
  assert.equal(manifest.engines.node, ">=20.19");
  for (const part of ["dist/", "types/", "schemas/", "README.md", "LICENSE"]) assert.ok(manifest.files.includes(part), part);
});

test("require() of the package works on this Node (engines says >=20.19: require of ESM)", () => {
  const [major, minor] = process.versions.node.split(".").map(Number);
  assert.ok(major > 20 || (major === 20 && minor >= 19), `this Node ${process.version} is below the engines floor`);
  const required = createRequire(import.meta.url)(join(packageDir, "dist/index.js"));
  assert.equal(typeof required.resolveBinary, "function");
  assert.equal(typeof required.runPreflight, "function");
});

test("every generated .d.ts is reachable through exports, by TypeScript's own resolution of the package's name", () => {
  const files = readdirSync(join(packageDir, "types")).filter((f) => f.endsWith(".d.ts"));
  assert.ok(files.length >= 7, files.join(" "));
  const options = { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext };
  const from = join(packageDir, "test/consumer/jr2-up.ts");
  for (const f of files) {
    const name = `@jr2/preflight/types/${f.replace(/\.d\.ts$/, "")}`;
    const r = ts.resolveModuleName(name, from, options, ts.sys).resolvedModule;
    assert.equal(r?.resolvedFileName, join(packageDir, "types", f), name);
  }
  const main = ts.resolveModuleName("@jr2/preflight", from, options, ts.sys).resolvedModule;
  assert.equal(main?.resolvedFileName, join(packageDir, "dist/index.d.ts"));
});

test("each type is declared once: the shared definitions in common.v1.d.ts, no generator artifacts (Timings1, Try1)", () => {
  const declared = new Map();
  for (const f of readdirSync(join(packageDir, "types"))) {
    const text = readFileSync(join(packageDir, "types", f), "utf8");
    for (const [, name] of text.matchAll(/^export (?:type|interface) ([A-Za-z0-9_]+)/gm)) {
      assert.doesNotMatch(name, /[A-Za-z]\d+$/, `${f}: ${name} looks like a duplicate the generator numbered`);
      declared.set(name, [...(declared.get(name) ?? []), f]);
    }
  }
  for (const shared of ["Code", "Outcome", "Cause", "ApiKind", "Route", "Try", "Timings", "Endpoint", "ModelResult", "Level", "Origin"]) {
    assert.deepEqual(declared.get(shared), ["common.v1.d.ts"], shared);
  }
  // The two `Model`s are different things (a plan's model, a run spec's): exported as PlanModel and RunSpecModel.
  for (const [name, files] of declared) if (name !== "Model") assert.equal(files.length, 1, `${name} in ${files.join(", ")}`);
});

test("publish metadata: one repository URL (Cargo.toml's) in every package.json, engines on each, no example.invalid", () => {
  assert.ok(repository, "[workspace.package] repository in Cargo.toml");
  assert.match(repository, /^https:\/\/github\.com\/[^/]+\/jr2-preflight$/);
  for (const [dir, p] of packages) {
    assert.equal(p.license, "Apache-2.0", dir);
    assert.deepEqual(p.repository, { type: "git", url: `git+${repository}.git`, directory: dir }, dir);
    assert.equal(p.homepage, `${repository}#readme`, dir);
    assert.deepEqual(p.bugs, { url: `${repository}/issues` }, dir);
    assert.equal(p.engines?.node, ">=20.19", dir);
    assert.ok(!JSON.stringify(p).includes("example.invalid"), `${dir}/package.json names example.invalid`);
    const readme = readFileSync(join(repo, dir, "README.md"), "utf8");
    assert.ok(readme.includes(`(${repository}#from-jr2-up)`), `${dir}/README.md links to the repository's "From jr2 up"`);
    assert.ok(!readme.includes("example.invalid"), `${dir}/README.md names example.invalid`);
  }
  // The section the links point at.
  assert.match(readFileSync(join(repo, "README.md"), "utf8"), /^## From jr2 up$/m);
  // The probe image's source label, when built without images/build, is the same URL.
  assert.match(readFileSync(join(repo, "images/probe/Dockerfile"), "utf8"), new RegExp(`^ARG SOURCE=${repository}$`, "m"));
});

test("the repository's LICENSE is the Apache License 2.0, and the main package ships it (build.sh copies it)", () => {
  const license = readFileSync(join(repo, "LICENSE"), "utf8");
  assert.match(license, /^\s*Apache License\n\s*Version 2\.0, January 2004\n/);
  assert.match(license, /END OF TERMS AND CONDITIONS/);
  assert.ok(existsSync(join(packageDir, "LICENSE")), "build.sh copied LICENSE into the package");
  assert.equal(readFileSync(join(packageDir, "LICENSE"), "utf8"), license);
});
