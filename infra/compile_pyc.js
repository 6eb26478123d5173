// Writes byte code for every module under a directory with pyodide's CPython (WebAssembly, pinned in
// package.json), for when the build machine has no native Python of the Lambda runtime's version.
// A .pyc depends only on the minor version (its magic number and marshal format), not on the platform
// that wrote it, so Lambda's native interpreter of the same minor version reads these as its own.
// Usage: node infra/compile_pyc.js <python minor version, e.g. 3.14> <directory>
const { loadPyodide } = require("pyodide");

const COMPILE = `
import compileall, py_compile, sys
found = "%d.%d" % sys.version_info[:2]
if found != wanted:
    raise SystemExit(f"pyodide runs Python {found}, the Lambda runtime is {wanted}: pin a matching pyodide")
# Unchecked hash-based, as the native path writes them: the asset never changes under its byte code.
mode = py_compile.PycInvalidationMode.UNCHECKED_HASH
if not compileall.compile_dir("/bundle", quiet=1, invalidation_mode=mode):
    raise SystemExit("compileall could not compile every module")
`;

async function main([wanted, directory]) {
  if (!wanted || !directory) {
    throw new Error("usage: node infra/compile_pyc.js <python version> <directory>");
  }
  const pyodide = await loadPyodide();
  pyodide.FS.mkdirTree("/bundle");
  pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: directory }, "/bundle");
  pyodide.globals.set("wanted", wanted);
  pyodide.runPython(COMPILE);
}

main(process.argv.slice(2)).catch((error) => {
  console.error(String(error.message || error));
  process.exit(1);
});
