#!/usr/bin/env python3
"""Cut the small data slices under test/data/ from the full shared datasets.

Usage: python3 test/data/make-slices.py /path/to/shared/datasets

The slices keep upstream bytes and formats (rows are copied verbatim, JSON is re-dumped the way
upstream dumps it, indent 4 for tau2 and the rLLM raw files), so every loader reads them as it
reads the full data. The tests say which figures hold for the slice and which for the full data.
"""
import json
import re
import shutil
import sys
from pathlib import Path

SRC = Path(sys.argv[1])
OUT = Path(__file__).resolve().parent

# tau2 tasks the tests name (retail 19/22/24/88 and 0 in the reward and user-simulation tests),
# plus the first few of each domain; ids present in both releases.
TAU2_TASKS = {
    "airline": ["0", "1", "2", "3", "4", "5", "6"],
    "retail": ["0", "1", "2", "3", "4", "5", "9", "19", "22", "24", "88"],
}
# Rows the tool and db tests read by key, beyond what the tasks mention.
TAU2_EXTRA_KEYS = {"airline": ["mia_li_3668", "4WQ150", "Z7GOZK", "HAT018", "HAT001"], "retail": ["noah_brown_6181", "#W2611340", "#W8835847", "#W2378156", "6469567736"]}
GSM8K_ROWS = 40
# The DeepCoder problems with hand-written solutions (src/__fixtures__/deepcoder-solutions.ts) or named by tests.
DEEPCODER_IDS = {"lcbv5_test_5", "lcbv5_test_58", "lcbv5_test_88", "lcbv5_test_108", "lcbv5_test_117", "lcbv5_test_220", "lcbv5_test_243", "lcbv5_test_249", "lcbv5_test_263", "lcbv5_test_268"}
DEEPCODER_FIRST = {"codeforces": 6, "lcbv5": 6, "code_contests": 3}


def strings(value, into):
    if isinstance(value, str):
        into.add(value)
        into.update(re.findall(r"[#A-Za-z0-9_]+", value))
    elif isinstance(value, dict):
        for v in value.values():
            strings(v, into)
    elif isinstance(value, list):
        for v in value:
            strings(v, into)
    return into


def dump(path, value, indent=4):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=indent, ensure_ascii=False))


def tau2():
    for domain, ids in TAU2_TASKS.items():
        src = SRC / "tau2" / "domains" / domain
        dst = OUT / "tau2" / "domains" / domain
        wanted = set(ids)
        words = set(TAU2_EXTRA_KEYS[domain])
        for tasks_path, out_path in [(src / "tasks.json", dst / "tasks.json"), (SRC / "tau2" / "release_2025-06-10" / "domains" / domain / "tasks.json", OUT / "tau2" / "release_2025-06-10" / "domains" / domain / "tasks.json")]:
            kept = [t for t in json.loads(tasks_path.read_text()) if t["id"] in wanted]
            assert {t["id"] for t in kept} == wanted, (tasks_path, wanted)
            strings(kept, words)
            dump(out_path, kept)
        splits = json.loads((src / "split_tasks.json").read_text())
        dump(dst / "split_tasks.json", {name: [i for i in members if i in wanted] for name, members in splits.items()})
        shutil.copyfile(src / "policy.md", dst / "policy.md")
        db = json.loads((src / "db.json").read_text())
        if domain == "airline":
            users = {k: v for k, v in db["users"].items() if k in words}
            res_ids = {r for u in users.values() for r in u["reservations"]} | (words & db["reservations"].keys())
            reservations = {k: db["reservations"][k] for k in db["reservations"] if k in res_ids}
            users.update({r["user_id"]: db["users"][r["user_id"]] for r in reservations.values()})
            for u in list(users.values()):
                for r in u["reservations"]:
                    reservations[r] = db["reservations"][r]
            flight_ids = {f["flight_number"] for r in reservations.values() for f in r["flights"]} | (words & db["flights"].keys())
            # The tool tests search JFK->LAX direct and JFK->SEA with one stop.
            flight_ids |= {k for k, f in db["flights"].items() if f["origin"] == "JFK" or f["destination"] == "SEA"}
            sliced = {"flights": {k: v for k, v in db["flights"].items() if k in flight_ids}, "users": dict(sorted(users.items(), key=lambda kv: list(db["users"]).index(kv[0]))), "reservations": {k: v for k, v in db["reservations"].items() if k in reservations}}
        else:
            users = {k: v for k, v in db["users"].items() if k in words}
            orders = {k: v for k, v in db["orders"].items() if k in words or v["user_id"] in users}
            users.update({o["user_id"]: db["users"][o["user_id"]] for o in orders.values()})
            orders.update({o: db["orders"][o] for u in users.values() for o in u["orders"]})
            item_ids = {i["item_id"] for o in orders.values() for i in o["items"]} | words
            products = {k: v for k, v in db["products"].items() if k in words or item_ids & v["variants"].keys()}
            sliced = {"products": products, "users": {k: v for k, v in db["users"].items() if k in users}, "orders": {k: v for k, v in db["orders"].items() if k in orders}}
        dump(dst / "db.json", sliced)
        print(domain, {k: len(v) for k, v in sliced.items()})
    for name in ["simulation_guidelines.md", "simulation_guidelines_tools.md"]:
        (OUT / "tau2" / "user_simulator").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SRC / "tau2" / "user_simulator" / name, OUT / "tau2" / "user_simulator" / name)
    shutil.copyfile(SRC / "tau2" / "LICENSE.tau2-bench", OUT / "tau2" / "LICENSE.tau2-bench")


def gsm8k():
    (OUT / "gsm8k").mkdir(parents=True, exist_ok=True)
    for split in ["train", "test"]:
        lines = (SRC / "gsm8k" / f"{split}.jsonl").read_text().splitlines(keepends=True)
        final = [json.loads(line)["answer"].split("####")[-1].strip() for line in lines]
        # The first rows, plus the first two final answers with a thousands separator and the
        # first two negative ones (the loader strips the one and keeps the other), in file order.
        commas = [i for i, a in enumerate(final) if "," in a and i >= GSM8K_ROWS - 4][:2]
        negatives = [i for i, a in enumerate(final) if a.startswith("-") and i >= GSM8K_ROWS - 4][:2]
        keep = sorted(set(range(GSM8K_ROWS - 4)) | set(commas) | set(negatives))
        (OUT / "gsm8k" / f"{split}.jsonl").write_text("".join(lines[i] for i in keep))


def deepcoder():
    raw = {"codeforces": "rllm_test_code_codeforces.json", "lcbv5": "rllm_test_code_livecodebench_v5_2408-2502_public.json", "code_contests": "rllm_test_code_code_contests_first50.json"}
    for source, name in raw.items():
        problems = json.loads((SRC / "deepcoder" / "raw" / name).read_text())
        dump(OUT / "deepcoder" / "raw" / name, problems[: DEEPCODER_FIRST[source]])
    rows = (SRC / "deepcoder" / "normalized" / "code_sample.jsonl").read_text().splitlines(keepends=True)
    keep = []
    for line in rows:
        row = json.loads(line)
        prefix, index = row["id"].rsplit("_test_", 1)
        if row["id"] in DEEPCODER_IDS or int(index) < DEEPCODER_FIRST[prefix]:
            keep.append(line)
    (OUT / "deepcoder" / "normalized").mkdir(parents=True, exist_ok=True)
    (OUT / "deepcoder" / "normalized" / "code_sample.jsonl").write_text("".join(keep))
    shutil.copyfile(SRC / "deepcoder" / "LICENSE.rllm-MIT-at-source-commits", OUT / "deepcoder" / "LICENSE.rllm-MIT-at-source-commits")
    print("deepcoder", len(keep))


tau2()
gsm8k()
deepcoder()
