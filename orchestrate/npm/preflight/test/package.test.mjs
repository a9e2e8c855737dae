// The packages' manifests: the crate's version, an exact-version optional dependency per platform, no script that
// would run at install, ESM with its types (every generated .d.ts reachable through `exports`), a `bin`, Node 20.19 or
// newer; the publish metadata of all six packages against the one repository URL (Cargo.toml's [workspace.package]
// `repository`), and their READMEs' links.

import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { test } from "node:test";

import ts from "typescript";

import { EXIT_CODES, PLATFORMS, VERSION } from "../dist/index.js";
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

test("publish metadata: one repository URL (Cargo.toml's) in every package.json, public with provenance, engines on the main one only, no example.invalid", () => {
  assert.ok(repository, "[workspace.package] repository in Cargo.toml");
  assert.match(repository, /^https:\/\/github\.com\/[^/]+\/jr2-preflight$/);
  for (const [dir, p] of packages) {
    assert.equal(p.license, "Apache-2.0", dir);
    assert.deepEqual(p.repository, { type: "git", url: `git+${repository}.git`, directory: dir }, dir);
    assert.equal(p.homepage, `${repository}#readme`, dir);
    assert.deepEqual(p.bugs, { url: `${repository}/issues` }, dir);
    // The binary needs no Node: a platform package with engines is one npm silently leaves out on an older Node
    // (it drops an optional package that fails engines), and the user is told the wrong cause.
    if (dir === "orchestrate/npm/preflight") assert.equal(p.engines?.node, ">=20.19", dir);
    else assert.equal(p.engines, undefined, `${dir}: engines on a platform package`);
    assert.deepEqual(p.publishConfig, { access: "public", provenance: true }, dir);
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

test("the version is a constant (src/version.ts, written by build.sh), and nothing in dist/ reads a package.json", () => {
  assert.equal(VERSION, manifest.version);
  for (const f of readdirSync(join(packageDir, "dist")).filter((f) => f.endsWith(".js"))) {
    assert.doesNotMatch(readFileSync(join(packageDir, "dist", f), "utf8"), /["'`]\.{1,2}\/(?:\.\.\/)*package\.json["'`]/, `dist/${f} reads a package.json by a relative path`);
  }
});

test("no .d.ts of the package names Node's own types (TypeScript 7 includes none by default: types: [])", () => {
  const dts = [
    ...readdirSync(join(packageDir, "dist")).filter((f) => f.endsWith(".d.ts")).map((f) => join("dist", f)),
    ...readdirSync(join(packageDir, "types")).map((f) => join("types", f)),
  ];
  for (const f of dts) {
    const code = readFileSync(join(packageDir, f), "utf8").replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, "");
    assert.doesNotMatch(code, /\bNodeJS\.|\bBuffer\b|\bAbortSignal\b|["']node:/, f);
  }
});

/** The ```ts blocks of a Markdown file. */
const snippets = (file) => [...readFileSync(file, "utf8").matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]);

test("the package README's TypeScript snippets compile (strict, exactOptionalPropertyTypes, the package by its name)", () => {
  const blocks = snippets(join(packageDir, "README.md"));
  assert.ok(blocks.length >= 2, "the README has its snippets");
  // Under the package folder, so that "@jr2/preflight" resolves to this package through its exports; the Kubernetes
  // client's types are the consumer project's stand-ins (test/consumer/kubernetes.ts).
  const dir = join(packageDir, ".cache/readme");
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const files = blocks.map((code, i) => {
    const file = join(dir, `snippet${i}.ts`);
    writeFileSync(file, code);
    return file;
  });
  const program = ts.createProgram(files, {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    lib: ["lib.es2022.d.ts"],
    types: ["node"],
    typeRoots: [join(packageDir, "node_modules/@types")],
    strict: true,
    noUncheckedIndexedAccess: true,
    exactOptionalPropertyTypes: true,
    verbatimModuleSyntax: true,
    noEmit: true,
    skipLibCheck: false,
    baseUrl: packageDir,
    paths: { "@kubernetes/client-node": ["./test/consumer/kubernetes.ts"] },
  });
  const errors = ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file ? `${d.file.fileName.replace(`${packageDir}/`, "")}(${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1})` : "";
    return `${where}: TS${d.code}: ${ts.flattenDiagnosticMessageText(d.messageText, " ")}`;
  });
  assert.deepEqual(errors, []);
  rmSync(dir, { recursive: true, force: true });
});

test("the READMEs' exit codes are the documented ones, 129 among them", () => {
  assert.deepEqual(EXIT_CODES, [0, 1, 2, 129, 130, 143]);
  const root = readFileSync(join(repo, "README.md"), "utf8").replace(/\s+/g, " ");
  assert.ok(root.includes(`\`${EXIT_CODES.join(" | ")}\``), `README.md writes ExitCode as \`${EXIT_CODES.join(" | ")}\``);
  assert.ok(readFileSync(join(packageDir, "README.md"), "utf8").replace(/\s+/g, " ").includes(EXIT_CODES.join(", ")));
});

test("the release section (orchestrate/README.md) publishes the seven packages as package.json says: platforms first, public, with provenance", () => {
  const readme = readFileSync(join(repo, "orchestrate/README.md"), "utf8");
  const section = /^### Releasing the npm packages$([\s\S]*?)(?=^##)/m.exec(readme)?.[1];
  assert.ok(section, 'orchestrate/README.md has a "### Releasing the npm packages" section');
  const block = /^```sh\n([\s\S]*?)^```$/m.exec(section)?.[1];
  assert.ok(block, "the section holds the commands, in a sh block");
  // Every `npm publish` names a tarball, in order; each is one of the seven, each once, the main package last.
  const published = [...block.matchAll(/^npm publish (\S+)(.*)$/gm)].map((m) => ({ tgz: m[1], flags: m[2] }));
  const expected = [...Object.keys(manifest.optionalDependencies), manifest.name];
  assert.equal(expected.length, 7);
  const tarballName = (name) => `${name.replace(/^@/, "").replace("/", "-")}-$V.tgz`;
  assert.deepEqual(
    published.map((p) => p.tgz.replace(/^.*\//, "")).sort(),
    expected.map(tarballName).sort(),
    "the seven tarballs, each once",
  );
  assert.equal(published.at(-1)?.tgz.replace(/^.*\//, ""), tarballName(manifest.name), "the main package is published last");
  for (const p of published) {
    assert.match(p.flags, /--provenance\b/, `${p.tgz}: --provenance`);
    assert.match(p.flags, /--access public\b/, `${p.tgz}: --access public`);
  }
  // What the flags repeat is what package.json says (publishConfig), on every package.
  for (const [dir, p] of packages) assert.deepEqual(p.publishConfig, { access: "public", provenance: true }, dir);
  assert.equal(packages.length, 7);
  assert.match(section, /platform packages first/);
});
