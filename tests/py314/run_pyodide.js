// Imports every module under a directory of a repository and runs chosen tests under CPython 3.14:
// pyodide's (WebAssembly, pinned in package.json), the interpreter infra/compile_pyc.js writes the
// Lambda asset's byte code with. What runs, what cannot and why: tests/py314/__init__.py.
// Usage: node tests/py314/run_pyodide.js <repo> <site-packages> <wheel dir> <package dir> [pytest args...]
const path = require("path");
const { loadPyodide } = require("pyodide");

async function main([repo, site, wheels, root, ...pytestArgs]) {
  if (!repo || !site || !wheels || !root) {
    throw new Error("usage: node tests/py314/run_pyodide.js <repo> <site-packages> <wheel dir> <package dir> [pytest args...]");
  }
  const pyodide = await loadPyodide({ stdout: (line) => console.log(line), stderr: (line) => console.error(line) });
  for (const [from, to] of [[repo, "/repo"], [site, "/site"], [wheels, "/wheels"], [__dirname, "/runner"]]) {
    pyodide.FS.mkdirTree(to);
    pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: path.resolve(from) }, to);
  }
  pyodide.globals.set("package_dir", root);
  pyodide.globals.set("pytest_args", pyodide.toPy(pytestArgs));
  pyodide.FS.chdir("/repo");
  const code = pyodide.runPython(
    "import runpy; runpy.run_path('/runner/inside.py')['main'](package_dir, list(pytest_args))",
  );
  process.exit(code);
}

main(process.argv.slice(2)).catch((error) => {
  console.error(String(error.message || error));
  process.exit(2);
});
