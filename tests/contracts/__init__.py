"""Contract tests: one set of tests that every implementation of a port must pass.

A contract is a class whose name does not start with `Test` (so it is not collected where it is
defined); each implementation's test file subclasses it in its own layer (the in-memory twin in
tests/unit, the real thing in tests/integration) and supplies the fixtures the contract names.
"""
