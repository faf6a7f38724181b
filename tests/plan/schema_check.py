#!/usr/bin/env python3
"""Checks docs/plan.schema.json with python3-jsonschema (optional).

The schema must be a valid draft 2020-12 schema, the example in
docs/plan-format.md (its first ```json block) must satisfy it, and a few
broken copies of the example must not. Exits 77 (ctest: skipped) when the
jsonschema module is not installed; it is not a dependency of the project.

Usage: schema_check.py SOURCE_DIR
"""

import copy
import json
import pathlib
import sys

SKIP = 77


def example(doc: str) -> dict:
    start = doc.index("```json\n") + len("```json\n")
    end = doc.index("\n```", start)
    return json.loads(doc[start:end])


def main() -> int:
    try:
        import jsonschema  # noqa: PLC0415 (optional dependency)
    except ImportError:
        print("skipped: python3-jsonschema is not installed")
        return SKIP

    root = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2]
    schema = json.loads((root / "docs/plan.schema.json").read_text())
    plan = example((root / "docs/plan-format.md").read_text())

    validator_class = jsonschema.Draft202012Validator
    validator_class.check_schema(schema)
    validator = validator_class(schema)

    failures = []
    errors = sorted(validator.iter_errors(plan), key=lambda e: list(map(str, e.path)))
    if errors:
        e = errors[0]
        failures.append(f"example: {'/'.join(map(str, e.path)) or '(top level)'}: {e.message}"
                        f" ({len(errors)} error(s) in all)")

    checks = 1  # the example itself

    def broken(name, mutate):
        nonlocal checks
        checks += 1
        p = copy.deepcopy(plan)
        mutate(p)
        if validator.is_valid(p):
            failures.append(f"broken copy accepted: {name}")

    broken("unknown key", lambda p: p["layout"].__setitem__("foo", 1))
    broken("missing required", lambda p: p["layout"].pop("tp"))
    broken("bad step", lambda p: p["layout"]["schedule_steps"][0].__setitem__(0, "F0c0"))
    broken("lowercase step kind", lambda p: p["layout"]["schedule_steps"][0].__setitem__(0, "f0@c0"))
    broken("bad sha256", lambda p: p["model"].__setitem__("sha256", "ABC"))
    broken("bad profile_hash", lambda p: p["cluster"].__setitem__("profile_hash", "47DB48BEBC3D3669"))
    broken("bad framework", lambda p: p["training"].__setitem__("framework", "jax"))
    broken("bad precision", lambda p: p["training"]["precision_by_class"].__setitem__("loss", "fp64"))
    broken("wrong format", lambda p: p.__setitem__("format", "planner.plan/v2"))
    broken("negative bytes", lambda p: p["prediction"].__setitem__("capacity_bytes", -1))
    broken("empty instances", lambda p: p["layout"]["strategies"][0].__setitem__("instances", []))
    broken("zero degree", lambda p: p["layout"].__setitem__("dp", 0))
    broken("string integer", lambda p: p["layout"]["chunks"][0].__setitem__("first_layer", "0"))

    for f in failures:
        print(f)
    print(f"{checks - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
