"""The functions' code under CPython 3.14, the Lambda runtime's version (python3.14), where this machine
has only 3.11: pyodide's CPython 3.14 (WebAssembly under node, `pyodide@314.0.7`, pinned in package.json and
already used for the asset's byte code), driven by `run_pyodide.js` and `inside.py`.

What runs there, in `make test` (test_cpython_314.py):
- an import of every module of the Lambda asset's code, `lambdas/` (85 modules at this writing): a syntax error, or a name
  3.14 removed (an `ast.Num`, a `pkgutil.find_loader`), fails the test;
- the pure-logic unit tests in `PURE_TESTS` (models and settings, backoff, SSRF rules, webhook signing, the
  store's codec, expressions and transactions, message shapes, upload keys, the job registry).

With what: the asset's pure-Python dependencies (boto3, botocore, Powertools, standardwebhooks...) from the
test virtualenv's site-packages (the same pinned versions the asset bundles), and pydantic-core, the one
native dependency they need, from its WebAssembly wheel for pyodide on PyPI, of the version pydantic pins
(`python -m tests.py314.wheels`, run by `make test` once).

What does not run there, and why:
- Pillow: it is native and PyPI has no pyodide wheel of it; `lambdas/jobs/files.py` imports it only when it
  decodes an image, so its module imports, but the image tests (tests/unit/jobs/test_files.py) run on 3.11;
- tests that start threads or processes (`NO_THREADS_OR_PROCESSES`): pyodide has neither (the SSRF
  module's parallel DNS look-ups, a subprocess that imports the handlers);
- anything that needs AWS (moto), sockets or the CDK: the integration, e2e and infra layers.
"""
