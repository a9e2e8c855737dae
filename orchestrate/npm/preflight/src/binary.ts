// Finds the jr2-preflight binary: the path the caller gives (`binary`), else the path JR2_PREFLIGHT_BINARY names,
// else the platform package npm installed beside this one (one of the six optionalDependencies, chosen by their `os`
// and `cpu`); then checks that the binary's version is this package's, so that a stale override or a mixed install is
// one clear line, not an odd run. When the platform package is missing, it tells the three causes apart (another
// platform's package installed, a lockfile that lacks this platform, optional packages omitted) and gives the repair.

import { spawnSync } from "node:child_process";
import { closeSync, existsSync, openSync, readFileSync, readSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { NAME, VERSION } from "./version.js";

/**
 * Where this module is: its own URL, or, bundled into a CommonJS file (esbuild leaves `import.meta` empty there), the
 * script Node runs. The platform packages are looked for from here, by their own names (`@jr2/preflight-<platform>`),
 * and nothing is read from this package's package.json: a bundle has none beside it, and the app's own one is not
 * this package's.
 */
const moduleUrl: string =
  typeof import.meta.url === "string" ? import.meta.url : pathToFileURL(resolve(process.argv[1] ?? "index.js")).href;
const require = createRequire(moduleUrl);

/** This package's name and version (src/version.ts, written from package.json by build.sh). */
const own = { name: NAME, version: VERSION } as const;

/** The platforms a platform package is built for, as `<process.platform>-<process.arch>`. */
export const PLATFORMS = ["linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64", "win32-x64", "win32-arm64"] as const;

/** The variable that names a binary to use in place of the platform package's. */
export const BINARY_ENV = "JR2_PREFLIGHT_BINARY";

/** One `error:` line: what cannot be found or run, and what to do. */
export class PreflightBinaryError extends Error {
  override name = "PreflightBinaryError";
}

/**
 * An environment, as `process.env` is one: written out (not the ProcessEnv of Node's types), so that these types need no
 * `@types/node` (TypeScript 7 includes none by default: `types: []`).
 */
export type Environment = { readonly [name: string]: string | undefined };

export interface ResolvedBinary {
  /** The binary's absolute path. */
  path: string;
  /** Its version (`jr2-preflight --version`), equal to this package's. */
  version: string;
  /** Where it came from: the platform package, JR2_PREFLIGHT_BINARY, or the caller's `binary`. */
  source: "package" | "override" | "option";
}

export interface ResolveOptions {
  /** The environment read for JR2_PREFLIGHT_BINARY (default: process.env). */
  env?: Environment | undefined;
  /** The platform and CPU to look for (default: this process's). */
  platform?: string | undefined;
  arch?: string | undefined;
  /** A binary to use (a path, relative to the working directory or absolute): wins over JR2_PREFLIGHT_BINARY. */
  binary?: string | undefined;
}

/** `@jr2/preflight-<platform>-<arch>`, the package that holds the binary for that platform. */
export function platformPackage(platform: string = process.platform, arch: string = process.arch): string {
  return `${own.name}-${platform}-${arch}`;
}

/**
 * The binary to run: `options.binary` when given, else JR2_PREFLIGHT_BINARY when set (a path, relative to the
 * working directory or absolute), else `bin/jr2-preflight` (`bin/jr2-preflight.exe` on Windows) of the platform
 * package. Throws a {@link PreflightBinaryError} whose message is one `error:` line when there is none, when it
 * cannot run here, or when its version is not this package's. Runs `<binary> --version` once per path (a few
 * milliseconds; again only when the file changes).
 */
export function resolveBinary(options: ResolveOptions = {}): ResolvedBinary {
  const env = options.env ?? process.env;
  const platform = options.platform ?? process.platform;
  const arch = options.arch ?? process.arch;
  if (options.binary !== undefined) {
    const path = resolve(options.binary);
    if (!existsSync(path)) {
      throw new PreflightBinaryError(`error: the binary option names ${path}, and there is no file there`);
    }
    return { path, version: checkVersion(path, "the binary option"), source: "option" };
  }
  const override = env[BINARY_ENV];
  if (override !== undefined && override !== "") {
    const path = resolve(override);
    if (!existsSync(path)) {
      throw new PreflightBinaryError(`error: ${BINARY_ENV} names ${path}, and there is no file there`);
    }
    return { path, version: checkVersion(path, BINARY_ENV), source: "override" };
  }
  const key = `${platform}-${arch}`;
  const pkg = platformPackage(platform, arch);
  if (!(PLATFORMS as readonly string[]).includes(key)) {
    throw new PreflightBinaryError(
      `error: ${own.name} has no jr2-preflight binary for ${key} (it ships ${PLATFORMS.join(", ")}); ` +
        `build one (cargo build --release -p jr2-preflight) and set ${BINARY_ENV} to its path`,
    );
  }
  let manifest: string;
  try {
    manifest = require.resolve(`${pkg}/package.json`);
  } catch {
    throw new PreflightBinaryError(missing(pkg, key));
  }
  const path = join(dirname(manifest), "bin", platform === "win32" ? "jr2-preflight.exe" : "jr2-preflight");
  if (!existsSync(path)) {
    throw new PreflightBinaryError(
      `error: ${pkg} is installed at ${dirname(manifest)} without its binary ${path}: reinstall it (npm ci)`,
    );
  }
  return { path, version: checkVersion(path, pkg), source: "package" };
}

/** The repair of a lockfile that lacks a platform: npm writes every platform's entry when it resolves the package. */
export function lockfileRepair(): string {
  return `npm install ${own.name}@${own.version} --package-lock-only && npm install`;
}

/**
 * The one line for a platform package that is not installed, by its cause: another platform's package in its place
 * (node_modules installed for another OS or CPU, or copied from one), a lockfile that lacks this platform (written
 * from a tarball or by an npm that dropped it), or optional packages omitted.
 */
function missing(pkg: string, key: string): string {
  const head = `error: ${pkg} is not installed: it holds jr2-preflight for ${key}, an optional dependency of ${own.name}`;
  const fallback = `; or set ${BINARY_ENV} to a jr2-preflight binary`;
  const others = PLATFORMS.filter((p) => p !== key).filter((p) => {
    try {
      require.resolve(`${own.name}-${p}/package.json`);
      return true;
    } catch {
      return false;
    }
  });
  if (others.length > 0) {
    return (
      `${head}, and ${others.map((p) => `${own.name}-${p}`).join(", ")} (for ${others.join(", ")}) is installed in its ` +
      `place: node_modules was installed for another platform (npm --os/--cpu) or copied from another OS (Docker, ` +
      `WSL); run npm ci where it runs${fallback}`
    );
  }
  const lock = findLockfile(join(dirname(fileURLToPath(moduleUrl)), ".."));
  if (lock !== undefined) {
    const { path, packages } = lock;
    const has = (p: string): boolean => Object.keys(packages).some((k) => k.endsWith(`node_modules/${own.name}-${p}`));
    const lacking = PLATFORMS.filter((p) => !has(p));
    if (lacking.includes(key as (typeof PLATFORMS)[number])) {
      return (
        `${head}, and the lockfile ${path} lacks it (it lacks ${lacking.join(", ")}: written from a tarball, or by an ` +
        `npm that dropped the other platforms), so npm ci cannot install it; repair the lockfile: ` +
        `${lockfileRepair()}${fallback}`
      );
    }
  }
  const node = process.versions.node;
  const [major = 0, minor = 0] = node.split(".").map(Number);
  if (major < 20 || (major === 20 && minor < 19)) {
    // The platform packages set no `engines` (the binary needs no Node), so npm installs them on any Node; still,
    // below the main package's floor the Node is what to name first (and then what else leaves a package out).
    return (
      `${head}, and this Node is ${node}, older than ${own.name} supports (20.19 or newer, its engines): install ` +
      `Node 20.19 or newer, then reinstall (npm ci, without --omit=optional)${fallback}`
    );
  }
  return (
    `${head} that npm leaves out when optional packages are omitted (--omit=optional, --no-optional, ` +
    `optional=false in .npmrc): install them (npm ci without --omit=optional); if the lockfile lacks it, repair ` +
    `it: ${lockfileRepair()}${fallback}`
  );
}

/** The package-lock.json (or npm-shrinkwrap.json) of the project whose node_modules holds `dir`, if it has one. */
function findLockfile(dir: string): { path: string; packages: Record<string, unknown> } | undefined {
  let d = dir;
  for (;;) {
    const up = dirname(d);
    if (up === d) return undefined;
    d = up;
    if (d.endsWith("node_modules")) continue;
    if (!existsSync(join(d, "node_modules"))) continue;
    for (const name of ["npm-shrinkwrap.json", "package-lock.json"]) {
      const path = join(d, name);
      if (!existsSync(path)) continue;
      try {
        const lock = JSON.parse(readFileSync(path, "utf8")) as { packages?: Record<string, unknown> };
        if (lock.packages !== undefined) return { path, packages: lock.packages };
      } catch {
        // Not JSON: npm will say so itself.
      }
    }
    if (existsSync(join(d, "package.json"))) return undefined;
  }
}

/** What `--version` said per path, with the file's identity: run again only when the file changes. */
const versions = new Map<string, { id: string; version: string }>();

/** `<path> --version` is `jr2-preflight <this package's version>`; returns the version. */
function checkVersion(path: string, what: string): string {
  let id: string;
  try {
    const st = statSync(path);
    id = `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`;
  } catch {
    id = "";
  }
  const cached = versions.get(path);
  if (cached !== undefined && cached.id === id) return cached.version;
  const run = spawnSync(path, ["--version"], {
    encoding: "utf8",
    timeout: 30_000,
    stdio: ["ignore", "pipe", "pipe"],
    windowsHide: true,
  });
  const out = run.stdout ?? "";
  if (run.error !== undefined || run.status !== 0) {
    const built = builtFor(path);
    const here = `${process.platform}-${process.arch}`;
    const why =
      run.error !== undefined
        ? run.error.message
        : run.status !== null
          ? `it exited ${run.status}${firstLine(run.stderr) ? `: ${firstLine(run.stderr)}` : ""}`
          : `it was ended by ${run.signal ?? "a signal"}`;
    if (built !== undefined && built !== here) {
      throw new PreflightBinaryError(
        `error: cannot run ${path} --version (from ${what}): it is a binary for ${built}, and this machine is ${here} ` +
          `(${why}); install ${own.name} here (npm ci), or point ${what === "the binary option" ? "it" : BINARY_ENV} at the ${here} binary`,
      );
    }
    throw new PreflightBinaryError(`error: cannot run ${path} --version (from ${what}): ${why}`);
  }
  const version = /^jr2-preflight (\S+)\s*$/.exec(out)?.[1];
  if (version !== own.version) {
    const said = JSON.stringify(out.trim().slice(0, 200));
    throw new PreflightBinaryError(
      `error: ${path} (from ${what}) says ${said} to --version, and ${own.name} is ${own.version}: ` +
        `the binary and the package must be the same release (npm ci, or point ${BINARY_ENV} at a ${own.version} binary)`,
    );
  }
  versions.set(path, { id, version });
  return version;
}

function firstLine(text: string | null | undefined): string {
  return (text ?? "").split(/\r?\n/).find((l) => l.trim() !== "")?.trim().slice(0, 300) ?? "";
}

/**
 * The `<platform>-<arch>` an executable's header says it is for (ELF, Mach-O, PE), or undefined when it is none of
 * these (a script) or cannot be read.
 */
export function builtFor(path: string): string | undefined {
  const head = Buffer.alloc(64);
  let n: number;
  try {
    const fd = openSync(path, "r");
    try {
      n = readSync(fd, head, 0, head.length, 0);
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
  const b = head.subarray(0, n);
  // ELF: e_machine at 18, little- or big-endian by EI_DATA.
  if (b.length >= 20 && b[0] === 0x7f && b[1] === 0x45 && b[2] === 0x4c && b[3] === 0x46) {
    const machine = b[5] === 2 ? b.readUInt16BE(18) : b.readUInt16LE(18);
    const arch = ({ 0x3e: "x64", 0xb7: "arm64", 0x03: "ia32", 0x28: "arm", 0xf3: "riscv64" } as Record<number, string>)[machine];
    return `linux-${arch ?? `machine ${machine}`}`;
  }
  // Mach-O 64-bit, little-endian (0xfeedfacf); a universal binary (0xcafebabe) runs on both Macs.
  if (b.length >= 8 && b.readUInt32LE(0) === 0xfeedfacf) {
    const cpu = b.readUInt32LE(4);
    const arch = ({ 0x01000007: "x64", 0x0100000c: "arm64" } as Record<number, string>)[cpu];
    return `darwin-${arch ?? `cpu ${cpu}`}`;
  }
  if (b.length >= 4 && b.readUInt32BE(0) === 0xcafebabe) return "darwin (universal)";
  // PE: "MZ", the PE header's offset at 0x3c, its machine after "PE\0\0".
  if (b.length >= 64 && b[0] === 0x4d && b[1] === 0x5a) {
    const at = b.readUInt32LE(0x3c);
    const pe = Buffer.alloc(6);
    try {
      const fd = openSync(path, "r");
      try {
        readSync(fd, pe, 0, 6, at);
      } finally {
        closeSync(fd);
      }
    } catch {
      return "win32";
    }
    const machine = pe.readUInt16LE(4);
    const arch = ({ 0x8664: "x64", 0xaa64: "arm64", 0x14c: "ia32" } as Record<number, string>)[machine];
    return `win32-${arch ?? `machine ${machine}`}`;
  }
  return undefined;
}
