"""python -m atk_trainer.merge_lora ADAPTER_DIR OUT_DIR [--base BASE_DIR]: the adapter merged into its base
model's weights as a Hugging Face directory (train/merged_export.py); `atk export --merge-lora` runs it.
Prints what it wrote as one JSON line; a bad input is one line on stderr and exit status 2."""
from __future__ import annotations

import argparse
import json
import sys
from typing import List, Optional

from .train.merged_export import export_merged


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m atk_trainer.merge_lora", description=__doc__)
    parser.add_argument("adapter", help="a peft adapter directory (adapter_config.json, adapter_model.safetensors)")
    parser.add_argument("out", help="the directory to write")
    parser.add_argument("--base", help="the base model directory (default: the adapter's base_model_name_or_path)")
    args = parser.parse_args(argv)
    try:
        written = export_merged(args.adapter, args.out, args.base)
    except (ValueError, OSError) as e:
        print(f"merge_lora: {e}", file=sys.stderr)
        return 2
    print(json.dumps(written))
    return 0


if __name__ == "__main__":
    sys.exit(main())
