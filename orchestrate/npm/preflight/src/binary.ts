// Finds the jr2-preflight binary: the platform package npm installed beside this one (one of the five
// optionalDependencies, chosen by their `os` and `cpu`), or the path JR2_PREFLIGHT_BINARY names; then checks that the
// binary's version is this package's, so that a stale override or a mixed install is one clear line, not an odd run.

import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";

const require = createRequire(import.meta.url);

/** The main package's name and version, from its own package.json. */
const own = require("../package.json") as { name: string; version: string };

/** The platforms a platform package is built for, as `<process.platform>-<process.arch>`. */
export const PLATFORMS = ["linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64", "win32-x64"] as const;

/** The variable that names a binary to use in place of the platform package's. */
export const BINARY_ENV = "JR2_PREFLIGHT_BINARY";

/** One `error:` line: what cannot be found or run, and what to do. */
export class PreflightBinaryError extends Error {
  override name = "PreflightBinaryError";
}

export interface ResolvedBinary {
  /** The binary's absolute path. */
  path: string;
  /** Its version (`jr2-preflight --version`), equal to this package's. */
  version: string;
  /** Where it came from: the platform package, or JR2_PREFLIGHT_BINARY. */
  source: "package" | "override";
}

export interface ResolveOptions {
  /** The environment read for JR2_PREFLIGHT_BINARY (default: process.env). */
  env?: NodeJS.ProcessEnv | undefined;
  /** The platform and CPU to look for (default: this process's). */
  platform?: string | undefined;
  arch?: string | undefined;
}

/** `@jr2/preflight-<platform>-<arch>`, the package that holds the binary for that platform. */
export function platformPackage(platform: string = process.platform, arch: string = process.arch): string {
  return `${own.name}-${platform}-${arch}`;
}

/**
 * The binary to run: JR2_PREFLIGHT_BINARY when set (a path, relative to the working directory or absolute), else
 * `bin/jr2-preflight` (`bin/jr2-preflight.exe` on Windows) of the platform package. Throws a
 * {@link PreflightBinaryError} whose message is one `error:` line when there is none, or when its version is not
 * this package's. Runs `<binary> --version` once (synchronously, a few milliseconds).
 */
export function resolveBinary(options: ResolveOptions = {}): ResolvedBinary {
  const env = options.env ?? process.env;
  const platform = options.platform ?? process.platform;
  const arch = options.arch ?? process.arch;
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
    throw new PreflightBinaryError(
      `error: ${pkg} is not installed: it holds jr2-preflight for ${key}, an optional dependency of ${own.name} ` +
        `that npm leaves out when optional packages are omitted (--omit=optional, --no-optional, optional=false ` +
        `in .npmrc), when the lockfile was written on another platform and lacks it (npm install ${pkg}@${own.version} ` +
        `adds it), or when node_modules was copied from another OS (Docker, WSL: run npm ci where it runs); or set ` +
        `${BINARY_ENV} to a jr2-preflight binary`,
    );
  }
  const path = join(dirname(manifest), "bin", platform === "win32" ? "jr2-preflight.exe" : "jr2-preflight");
  if (!existsSync(path)) {
    throw new PreflightBinaryError(
      `error: ${pkg} is installed at ${dirname(manifest)} without its binary ${path}: reinstall it (npm ci)`,
    );
  }
  return { path, version: checkVersion(path, pkg), source: "package" };
}

/** `<path> --version` is `jr2-preflight <this package's version>`; returns the version. */
function checkVersion(path: string, what: string): string {
  let out: string;
  try {
    out = execFileSync(path, ["--version"], {
      encoding: "utf8",
      timeout: 30_000,
      stdio: ["ignore", "pipe", "pipe"],
      windowsHide: true,
    });
  } catch (e) {
    const why = e instanceof Error ? e.message.split("\n")[0] : String(e);
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
  return version;
}
