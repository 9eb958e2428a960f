"""The FSDP path on CUDA, as several GPUs run it, with one rank (NCCL, world size 1): the wrap, bf16 mixed
precision, FSDP's clip_grad_norm_, the refresh of rank 0's serving copy after a step, and a checkpoint with
the gathered optimizer state that resumes exactly. The CPU tests (test_distributed.py, gloo) cover
everything around it; FSDP itself needs CUDA and torch >= 2 here, so without them every test is skipped
with that reason."""
import os
import socket

import pytest
import torch

from atk_trainer.model.modeling import random_policy
from atk_trainer.train.config import parse_config
from atk_trainer.train.train import Trainer
from test_distributed import batch
from test_server import CONFIG

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available() or int(torch.__version__.split(".")[0]) < 2,
    reason="FSDP on CUDA needs a CUDA GPU and torch >= 2 (this machine: "
    f"torch {torch.__version__}, CUDA {'available' if torch.cuda.is_available() else 'not available'})",
)

# grad_clip small enough that every step is clipped: the clipped update must still match one process's.
TRAIN = {"seed": 3, "learning_rate": 0.01, "micro_batch_tokens": 16, "weight_decay": 0.1, "grad_clip": 0.05}


@pytest.fixture(scope="module")
def peers():
    """One NCCL rank, as torchrun would start it with --nproc_per_node 1."""
    import torch.distributed as dist

    from atk_trainer.train.distributed import Peers

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    saved = {k: os.environ.get(k) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
    os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    yield Peers()
    dist.destroy_process_group()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def trainer(peers=None, lora=False):
    config = dict(TRAIN, **({"lora": {"rank": 4, "alpha": 8}} if lora else {}))
    return Trainer(random_policy(dict(CONFIG), seed=3, device="cuda"), parse_config(config), peers)


def weights(module):
    return {k: v.detach().float().cpu() for k, v in module.state_dict().items()}


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
def test_a_sharded_step_matches_one_process_and_refreshes_the_serving_copy(peers, lora):
    sharded, single = trainer(peers, lora), trainer(None, lora)
    assert sharded.sharded and not single.sharded
    assert type(sharded.train_policy.module).__name__ == "FullyShardedDataParallel"
    before = weights(sharded.policy.module)
    for shift in (0, 7):
        got, expected = sharded.step(batch(shift)), single.step(batch(shift))
        # bf16 compute on both sides (FSDP's MixedPrecision, autocast); the norm is the clipped-over one.
        for key in ("loss", "grad_norm", "entropy"):
            assert got[key] == pytest.approx(expected[key], rel=5e-2, abs=5e-3), key
    after, reference = weights(sharded.policy.module), weights(single.policy.module)
    changed = [k for k in after if not torch.equal(after[k], before[k])]
    assert changed, "the serving copy was not refreshed after the step"
    worst = max((after[k] - reference[k]).abs().max().item() for k in after)
    assert worst < 5e-2, f"serving copy differs from one process's weights by {worst:.2e}"


def test_a_sharded_checkpoint_with_its_gathered_optimizer_state_resumes_exactly(peers, tmp_path):
    first = trainer(peers)
    first.step(batch(0))
    saved = first.save(str(tmp_path / "step-1"))
    assert saved["step"] == 1 and os.path.exists(tmp_path / "step-1" / "trainer_state.pt")
    state = torch.load(tmp_path / "step-1" / "trainer_state.pt", map_location="cpu")
    moments = [s for s in state["optimizer"]["state"].values() if "exp_avg" in s]
    assert moments, "the checkpoint holds no AdamW moments"
    resumed = trainer(peers)
    resumed.load(str(tmp_path / "step-1"))
    assert resumed.step_count == 1
    for key, value in weights(first.policy.module).items():
        assert torch.equal(weights(resumed.policy.module)[key], value), key
    continued, again = first.step(batch(5)), resumed.step(batch(5))
    for key in ("loss", "grad_norm", "entropy"):
        assert again[key] == pytest.approx(continued[key], abs=1e-6), key
