"""A recording stand-in for the `wandb` package's client interface (init, Run.log, Run.finish).

No W&B client or server can run where atk's tests run; this records each call, as JSON lines, to
$ATK_WANDB_RECORD so a test sees exactly what atk's logger asked of the client. Setting
$ATK_WANDB_FAIL_AT to `init` or `log` makes that call raise, as the client does offline or with a bad key.
"""
import json
import os


def _record(call, **fields):
    with open(os.environ["ATK_WANDB_RECORD"], "a") as out:
        out.write(json.dumps({"call": call, **fields}) + "\n")


class Run:
    def log(self, data, step=None):
        if os.environ.get("ATK_WANDB_FAIL_AT") == "log":
            raise ConnectionError("api.wandb.ai unreachable")
        _record("log", data=data, step=step)

    def finish(self):
        _record("finish")


def init(project=None, entity=None, name=None, tags=None, config=None, dir=None):
    if os.environ.get("ATK_WANDB_FAIL_AT") == "init":
        raise PermissionError("invalid API key")
    _record("init", project=project, entity=entity, name=name, tags=tags, config=config, dir=dir)
    return Run()
