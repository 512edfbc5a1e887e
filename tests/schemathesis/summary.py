"""Prints the cases schemathesis generated per operation, over every run and phase, and the
failed ones, from the NDJSON reports of scripts/schemathesis.sh; exits 1 on any failure or on an
operation of the document that no run reached.

Usage: python summary.py [--some-kinds] OPENAPI_JSON REPORT.ndjson...

With --some-kinds (a run of some kinds of key only: FORGEBENCH_SCHEMATHESIS_KINDS), an operation
no case reached is reported but does not fail the run.
"""

import collections
import json
import sys

args = sys.argv[1:]
some_kinds = bool(args) and args[0] == "--some-kinds"
if some_kinds:
    args = args[1:]
document = json.load(open(args[0]))
expected = {
    f"{method.upper()} {path}"
    for path, operations in document["paths"].items()
    for method in operations
}
cases = collections.Counter()
failed = collections.Counter()
for report in args[1:]:
    for line in open(report):
        event = json.loads(line)
        finished = event.get("ScenarioFinished")
        if not finished:
            continue
        recorder = finished["recorder"]
        for case_id, case in recorder.get("cases", {}).items():
            value = case["value"]
            label = f"{value['method'].upper()} {value['path']}"
            cases[label] += 1
            checks = recorder.get("checks", {}).get(case_id, [])
            if any(check["status"] == "failure" for check in checks):
                failed[label] += 1

width = max(len(label) for label in expected)
for label in sorted(expected):
    print(f"schemathesis: {label:<{width}}  {cases[label]:>5} cases  {failed[label]} failed")
unreached = sorted(expected - set(cases))
print(f"schemathesis: {sum(cases.values())} cases over {len(set(cases) & expected)} of "
      f"{len(expected)} operations, {sum(failed.values())} failed")
if unreached:
    print("schemathesis: no case reached " + ", ".join(unreached))
sys.exit(1 if failed or (unreached and not some_kinds) else 0)
