/**
 * The Python program that runs one functional test inside the sandbox. It reads
 * `{"fn_name", "input"}` from stdin, executes `solution.py` (beside it) after the imports
 * LeetCode-style solutions assume, calls `Solution().<fn_name>` or the function `<fn_name>` with
 * one JSON-decoded argument per input line, and writes the JSON of the result to stdout. The
 * solution's own prints go to stderr so they cannot corrupt the result. Expected outputs never
 * enter the sandbox: the comparison happens on the host.
 */
export const FUNCTIONAL_HARNESS = `import json, os, sys

PRELUDE = """
from typing import *
from collections import *
from functools import *
from itertools import *
from heapq import *
from bisect import *
import bisect, collections, copy, functools, heapq, itertools, math, operator, random, re, string, sys
"""


def main():
    spec = json.loads(sys.stdin.read())
    result_out = sys.stdout
    sys.stdout = sys.stderr
    namespace = {"__name__": "solution", "__builtins__": __builtins__}
    exec(PRELUDE, namespace)
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "solution.py"), encoding="utf-8") as f:
        source = f.read()
    exec(compile(source, "solution.py", "exec"), namespace)
    name = spec["fn_name"]
    target = None
    cls = namespace.get("Solution")
    if isinstance(cls, type):
        target = getattr(cls(), name, None)
    if target is None:
        target = namespace.get(name)
    if not callable(target):
        sys.stderr.write("AtkHarnessError: the code defines no function or Solution method named %r\\n" % name)
        sys.exit(2)
    args = [json.loads(line) for line in spec["input"].split("\\n") if line.strip()]
    result = target(*args)
    try:
        text = json.dumps(result, allow_nan=False)
    except (TypeError, ValueError) as error:
        sys.stderr.write("AtkHarnessError: the result is not JSON-serialisable: %s\\n" % error)
        sys.exit(2)
    result_out.write(text)
    result_out.flush()


main()
`;
