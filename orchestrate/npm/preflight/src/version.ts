// Written by build.sh from package.json: this package's name and version, compiled in, so that nothing reads a
// package.json at run time (a bundle of the client has none beside it, and the app's own is not this one).
export const NAME = "@jr2/preflight";
export const VERSION = "0.1.0";
