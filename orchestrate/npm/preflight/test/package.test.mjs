// The main package's manifest: the crate's version, an exact-version optional dependency per platform, no script
// that would run at install, ESM with its types, Node 20 or newer.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { PLATFORMS } from "../dist/index.js";
import { packageDir, repo } from "./harness.mjs";

const manifest = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8"));
const crateVersion = /\[workspace\.package\][^[]*?\nversion = "([^"]+)"/.exec(readFileSync(join(repo, "Cargo.toml"), "utf8"))?.[1];

test("the package is the crate's version, and depends on each platform package at exactly that version", () => {
  assert.ok(crateVersion, "the workspace's version in Cargo.toml");
  assert.equal(manifest.version, crateVersion);
  assert.deepEqual(
    manifest.optionalDependencies,
    Object.fromEntries(PLATFORMS.map((p) => [`@jr2/preflight-${p}`, crateVersion]).sort(([a], [b]) => a.localeCompare(b))),
  );
  assert.equal(manifest.dependencies, undefined, "nothing else is installed with it");
});

test("no install script, ESM with its types, Node 20 or newer", () => {
  assert.equal(manifest.scripts, undefined);
  assert.equal(manifest.type, "module");
  assert.deepEqual(manifest.exports["."], { types: "./dist/index.d.ts", default: "./dist/index.js" });
  assert.equal(manifest.types, "./dist/index.d.ts");
  assert.equal(manifest.engines.node, ">=20");
  for (const part of ["dist/", "types/", "schemas/"]) assert.ok(manifest.files.includes(part), part);
});
