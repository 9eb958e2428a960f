"""`python -m atk_trainer.torchrun <torchrun args>`: torchrun (torch.distributed.run) as is, except on
torch < 2.0 under Python >= 3.11, where iterating an IntFlag skips NONE and ALL, so torchrun parses its
default `--redirects 0` / `--tee 0` to None and crashes before starting a worker (Debian's torch 1.13
on Python 3.11). There Std.from_str is replaced by one that builds the flag directly."""
import re

from torch.distributed.elastic.multiprocessing import api
from torch.distributed.run import main


def _from_str(cls, value):
    if re.match(api._VALUE_REGEX, value):
        return cls(int(value))
    if re.match(api._MAPPING_REGEX, value):
        return {int(rank): cls(int(std)) for rank, std in (item.split(":") for item in value.split(","))}
    raise ValueError(f"{value} does not match: <{api._VALUE_REGEX}> or <{api._MAPPING_REGEX}>")


if api.Std.from_str("0") is None:
    api.Std.from_str = classmethod(_from_str)

if __name__ == "__main__":
    main()
