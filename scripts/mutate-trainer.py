"""Mutation testing of the trainer's update (trainer/atk_trainer/train/), run by `npm run mutate`.

Plants one small, plausible bug at a time in a copy of the trainer -- an operator swapped (+ -, * /,
< <=, == !=, and or), a term dropped from a sum, a sign flipped, a number off by one, min for max -- runs
the trainer's pytest files that cover the module against it, and counts the mutant killed when they fail
(or time out). Prints the score per file and every surviving mutant: a survivor is a change to what is
trained that no test notices. Results are cached by file, mutant and test-file contents, so a rerun
only runs mutants whose code or tests changed (reports/mutation/trainer.json).

usage: python3 scripts/mutate-trainer.py [FILE[:FIRST-LAST] ...] [--tests TEST ...] [--max N] [--timeout S]
  FILE: modules under trainer/atk_trainer/train/ (default: loss.py train.py batch.py); a line range
  (train.py:238-302) plants only mutants that start on those lines, as Stryker's file:lines does
"""

import argparse
import ast
import copy
import hashlib
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import pytest
import torch  # noqa: F401  imported once here, so each forked test run starts with it loaded

ROOT = Path(__file__).resolve().parent.parent
TRAIN = ROOT / "trainer" / "atk_trainer" / "train"
CACHE = ROOT / "reports" / "mutation" / "trainer.json"
DEFAULT_FILES = ["loss.py", "train.py", "batch.py"]
# The tests that exercise the update as the trainer assembles it.
DEFAULT_TESTS = ["test_loss.py", "test_loss_algorithms.py", "test_train.py", "test_train_update.py", "test_batch.py"]

SWAPS = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.And: ast.Or,
    ast.Or: ast.And,
}


def mutants(source: str):
    """Every (line, col, end_line, end_col, replacement, description) of one small bug in `source`."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if not hasattr(node, "lineno") or isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            continue
        for replacement, what in variants(node):
            yield node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, replacement, what


def variants(node):
    """The mutated forms of one node, as source text, with what was changed."""
    if isinstance(node, ast.BinOp) and type(node.op) in SWAPS:
        yield swapped(node, "op", SWAPS[type(node.op)]()), f"{op_name(node.op)} -> {op_name(SWAPS[type(node.op)]())}"
        if isinstance(node.op, (ast.Add, ast.Sub)):
            yield f"({ast.unparse(node.left)})", f"dropped term {ast.unparse(node.right)[:40]}"
    elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in SWAPS:
        new = copy.deepcopy(node)
        new.ops = [SWAPS[type(node.ops[0])]()]
        yield f"({ast.unparse(new)})", f"{op_name(node.ops[0])} -> {op_name(new.ops[0])}"
    elif isinstance(node, ast.BoolOp):
        yield swapped(node, "op", SWAPS[type(node.op)]()), f"{op_name(node.op)} -> {op_name(SWAPS[type(node.op)]())}"
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        yield f"({ast.unparse(node.operand)})", "sign flipped"
    elif isinstance(node, ast.Constant) and type(node.value) is int and not isinstance(node.value, bool):
        yield str(node.value + 1), f"{node.value} -> {node.value + 1}"
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("min", "max"):
        other = "max" if node.func.id == "min" else "min"
        yield f"{other}({', '.join(ast.unparse(a) for a in node.args)})", f"{node.func.id} -> {other}"


def swapped(node, field, value) -> str:
    new = copy.deepcopy(node)
    setattr(new, field, value)
    return f"({ast.unparse(new)})"


def op_name(op) -> str:
    return type(op).__name__


def apply(source: str, line: int, col: int, end_line: int, end_col: int, replacement: str) -> str:
    """`source` with the node at (line, col)-(end_line, end_col) replaced (columns are UTF-8 byte offsets)."""
    lines = source.splitlines(keepends=True)
    start = sum(len(x.encode()) for x in lines[: line - 1]) + col
    end = sum(len(x.encode()) for x in lines[: end_line - 1]) + end_col
    data = source.encode()
    return (data[:start] + replacement.encode() + data[end:]).decode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="*", default=DEFAULT_FILES)
    parser.add_argument("--tests", nargs="*", default=DEFAULT_TESTS)
    parser.add_argument("--max", type=int, default=0, help="at most N mutants per file (0: all)")
    parser.add_argument("--timeout", type=float, default=0, help="seconds per mutant (default: 4x the clean run)")
    args = parser.parse_args()

    targets = [(spec, *parse_target(spec)) for spec in args.files]
    work = Path(tempfile.mkdtemp(prefix="atk-mutate-"))
    try:
        shutil.copytree(ROOT / "trainer", work / "trainer", ignore=shutil.ignore_patterns("__pycache__"))
        tests = [str(work / "trainer" / "tests" / t) for t in args.tests]
        clean, seconds = run_tests(work, tests, timeout=None)
        if not clean:
            print("mutate-trainer: the tests fail on the unmutated trainer; fix them first", file=sys.stderr)
            return 1
        timeout = args.timeout or max(30.0, 4 * seconds)
        tests_hash = digest(*(Path(t).read_text() for t in tests))
        cache = json.loads(CACHE.read_text()) if CACHE.exists() else {}
        totals = {"killed": 0, "total": 0}
        for spec, name, lines in targets:
            target = work / "trainer" / "atk_trainer" / "train" / name
            source = (TRAIN / name).read_text()
            found = [m for m in mutants(source) if lines[0] <= m[0] <= lines[1]]
            if args.max:
                found = found[: args.max]
            killed, survivors = 0, []
            for line, col, end_line, end_col, replacement, what in found:
                key = digest(name, source, str((line, col, end_line, end_col, replacement)), tests_hash)
                if key not in cache:
                    mutated = apply(source, line, col, end_line, end_col, replacement)
                    try:
                        ast.parse(mutated)
                    except SyntaxError:
                        continue
                    target.write_text(mutated)
                    passed, _ = run_tests(work, tests, timeout)
                    target.write_text(source)
                    cache[key] = "survived" if passed else "killed"
                    # Saved after every mutant: an interrupted run (hours on 2 cores) keeps what it measured.
                    save(cache)
                if cache[key] == "killed":
                    killed += 1
                else:
                    survivors.append(f"trainer/atk_trainer/train/{name}:{line}:{col + 1}  {what}")
            total = killed + len(survivors)
            totals["killed"] += killed
            totals["total"] += total
            print(f"train/{spec}: {score(killed, total)} ({killed} of {total} mutants killed)", flush=True)
            for s in survivors:
                print(f"  survived: {s}", flush=True)
        save(cache)
        print(f"trainer/atk_trainer/train: {score(totals['killed'], totals['total'])} mutation score")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def save(cache) -> None:
    """Writes the cache merged with what is on disk, so runs over different files at once keep each other's results."""
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    cache.update({k: v for k, v in (json.loads(CACHE.read_text()) if CACHE.exists() else {}).items() if k not in cache})
    CACHE.with_suffix(f".{os.getpid()}.tmp").write_text(json.dumps(cache))
    CACHE.with_suffix(f".{os.getpid()}.tmp").replace(CACHE)


def parse_target(spec: str):
    """("train.py", (first, last)) from "train.py:238-302"; a bare file name covers every line."""
    name, _, lines = spec.partition(":")
    if not lines:
        return name, (1, sys.maxsize)
    first, _, last = lines.partition("-")
    if not first.isdigit() or not (last or first).isdigit():
        raise SystemExit(f"mutate-trainer: {spec}: a line range is FIRST-LAST, as in train.py:238-302")
    return name, (int(first), int(last or first))


def run_tests(work: Path, tests, timeout):
    """(passed, seconds) of pytest over `tests` against the trainer copy in `work`; a timeout is a failure.

    Each run is a fork of this process, which has imported torch and pytest once: a fresh interpreter per
    mutant spent most of its time importing torch. The child imports the trainer (and its mutant) from
    `work`; this process never imports it, so no child inherits the unmutated module."""
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.chdir(work)
            os.environ["PYTHONPATH"] = str(work / "trainer")
            sys.path.insert(0, str(work / "trainer"))
            sys.dont_write_bytecode = True
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            code = pytest.main(["-x", "-q", "-p", "no:cacheprovider", *tests])
        finally:
            os._exit(int(code))
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status) == 0, time.monotonic() - started
        if timeout is not None and time.monotonic() - started > timeout:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return False, time.monotonic() - started
        time.sleep(0.05)


def digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]


def score(killed: int, total: int) -> str:
    return f"{100 * killed / total:.0f}%" if total else "n/a"


if __name__ == "__main__":
    sys.exit(main())
