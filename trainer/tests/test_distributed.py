"""Two trainer ranks under torchrun (atk_trainer.torchrun) on CPU (gloo), over real HTTP: rank 0 serves, rank 1 follows.

The FSDP wrap needs CUDA and is not exercised here; everything around it is: command broadcast,
micro-batch shares, gradient all-reduce, metric merge, rank-0-only checkpoints, errors and shutdown.
One rank's side alone (OneRankOfTwo, in this process) shows the forwards an idle rank runs to keep FSDP's
collectives matched.
"""
import json
import os
import re
import subprocess
import sys
import time

import pytest
import torch

from atk_trainer.serve import server
from atk_trainer.train.config import parse_config
from atk_trainer.train.distributed import Peers, RankError, check_ranks
from atk_trainer.train.grad_checkpoint import decoder_layers
from atk_trainer.model.modeling import load_policy, random_policy
from atk_trainer.train.train import Trainer
from test_server import CONFIG, TRAINER_DIR, call, start_server
from tiny import FIXED_SEQUENCES, pg_batch, tiny_policy

# micro_batch_tokens 16 packs the batch below into 3 micro-batches: rank 0 takes two, rank 1 one and an empty one.
# grad_clip 0.05 sits below every step's norm here (0.7-0.8), so each rank path must clip as one process does.
TRAIN = {"seed": 3, "learning_rate": 0.01, "micro_batch_tokens": 16, "weight_decay": 0.1, "grad_clip": 0.05}
LOAD = {"init": "random", "backend": "builtin", "device": "cpu", "dtype": "float32", "train": TRAIN}


def batch(shift):
    rows = [
        ([1, 2, 3, 4, 5, 6, 7, 8], 3, 1.0),
        ([1, 9, 10, 11, 12, 13, 14], 2, -0.5),
        ([2, 3, 5, 7, 11, 13], 4, 0.75),
        ([4, 4, 20, 21, 22], 1, -1.25),
        ([30, 29, 28, 27], 2, 0.25),
    ]
    sequences = []
    for ids, prompt, advantage in rows:
        ids = [(t + shift) % 60 + 1 for t in ids]
        mask = [0] * prompt + [1] * (len(ids) - prompt)
        sequences.append(
            {"token_ids": ids, "loss_mask": mask, "logprobs": [-3.5 * m for m in mask], "advantage": advantage}
        )
    return {"loss": "pg", "sequences": sequences}


# Imported by every rank at start-up (sitecustomize): rank 1 fails a micro-batch that holds token 61, a
# failure on one rank alone with a valid batch (every rank refuses an invalid one before it trains).
FAULT_ON_RANK_1 = """
import os
if os.environ.get("RANK") == "1":
    from atk_trainer.train import train
    real = train.Trainer._micro_step
    def failing(self, batch, mb, *args, **kwargs):
        if bool((mb.input_ids == 61).any()):
            raise IndexError("injected on rank 1")
        return real(self, batch, mb, *args, **kwargs)
    train.Trainer._micro_step = failing
"""


def start_ranks(nproc=2, site=None):
    """`python -m atk_trainer.torchrun --standalone --nproc_per_node 2 -m atk_trainer --port 0`, as launch.ts runs it;
    `site`, a directory, goes on PYTHONPATH first (its sitecustomize.py runs in every process)."""
    path = os.pathsep.join(p for p in (site, TRAINER_DIR) if p)
    # Pinned to CPU (gloo): on a GPU machine the ranks would otherwise pick CUDA, one GPU each.
    env = {
        **os.environ,
        "PYTHONPATH": path,
        "PYTHONUNBUFFERED": "1",
        "OMP_NUM_THREADS": "1",
        "CUDA_VISIBLE_DEVICES": "",
    }
    command = [
        sys.executable,
        "-m",
        "atk_trainer.torchrun",
        "--standalone",
        "--nproc_per_node",
        str(nproc),
        "-m",
        "atk_trainer",
        "--port",
        "0",
    ]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    match = re.search(r"serving on (http://[\d.]+:\d+)", line)
    assert match, line
    return proc, match.group(1)


def workers(proc):
    """Pids of torchrun's worker processes (its children)."""
    with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
        return [int(pid) for pid in f.read().split()]


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(")")[-1].split()[0] != "Z"


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    model_dir = tmp_path_factory.mktemp("model")
    (model_dir / "config.json").write_text(json.dumps(CONFIG))
    site = tmp_path_factory.mktemp("site")
    (site / "sitecustomize.py").write_text(FAULT_ON_RANK_1)
    proc, url = start_ranks(site=str(site))
    status, loaded = call(url, "/control/load_model", {"path": str(model_dir), **LOAD})
    assert status == 200, loaded
    yield proc, url, model_dir
    if proc.poll() is None:
        proc.terminate()
        proc.wait(20)


def single_process_trainer():
    return Trainer(random_policy(dict(CONFIG), seed=3, backend="builtin"), parse_config(TRAIN))


def test_two_ranks_train_to_the_weights_of_one_process_and_save_from_rank_0(ranks, tmp_path):
    proc, url, _ = ranks
    assert len(workers(proc)) == 2
    trainer = single_process_trainer()
    for shift in (0, 7):
        status, reply = call(url, "/control/train_step", batch(shift))
        assert status == 200, reply
        expected = trainer.step(batch(shift))
        assert reply["metrics"]["micro_batches"] == 3
        for key in ("loss", "entropy", "clip_fraction", "grad_norm", "mismatch_mean", "mismatch_max", "tokens"):
            assert reply["metrics"][key] == pytest.approx(expected[key], abs=1e-5), key
    assert call(url, "/control/save", {"dir": str(tmp_path / "step-2")}) == (
        200,
        {"dir": str(tmp_path / "step-2"), "policy_version": 2, "step": 2},
    )
    assert sorted(os.listdir(tmp_path)) == ["step-2"]  # rank 1 wrote nothing beside it
    saved = load_policy(str(tmp_path / "step-2"), backend="builtin").module.state_dict()
    worst = max((saved[k] - v).abs().max().item() for k, v in trainer.policy.module.state_dict().items())
    print(f"\nmax |2-rank weight - 1-process weight| after 2 steps: {worst:.2e}")
    assert worst < 1e-5
    # The engine on rank 0 serves the trained weights.
    status, reply = call(
        url, "/v1/completions", {"model": "policy", "prompt": [1, 2, 3], "max_tokens": 2, "logprobs": 0}
    )
    assert status == 200 and reply["policy_version"] == 2


def test_a_two_rank_checkpoint_resumes_in_one_process_exactly(ranks, tmp_path):
    proc, url, model_dir = ranks
    assert call(url, "/control/save", {"dir": str(tmp_path / "ckpt")})[0] == 200
    assert call(url, "/control/load_checkpoint", {"dir": str(tmp_path / "ckpt")})[0] == 200  # every rank reads it
    single, single_url = start_server()
    try:
        assert call(single_url, "/control/load_model", {"path": str(model_dir), **LOAD})[0] == 200
        status, reply = call(single_url, "/control/load_checkpoint", {"dir": str(tmp_path / "ckpt")})
        assert status == 200, reply
        one = call(single_url, "/control/train_step", batch(3))[1]
        two = call(url, "/control/train_step", batch(3))[1]
        assert one["policy_version"] == two["policy_version"] == reply["policy_version"] + 1
        for key in ("loss", "grad_norm", "entropy"):
            assert two["metrics"][key] == pytest.approx(one["metrics"][key], abs=1e-5), key
    finally:
        single.terminate()
        single.wait(10)


def test_bad_requests_answer_4xx_or_5xx_and_leave_both_ranks_in_step(ranks):
    proc, url, _ = ranks
    pids = workers(proc)
    version = call(url, "/control/health")[1]["policy_version"]
    status, reply = call(
        url, "/control/train_step", {"loss": "pg", "sequences": [{"token_ids": [1, 2], "loss_mask": [0]}]}
    )
    assert status == 400 and "loss_mask" in reply["error"]
    assert call(url, "/control/load_checkpoint", {"dir": "/nonexistent/step-1"})[0] == 400
    # refused before rank 1 hears of it
    assert call(url, "/control/load_model", {"path": "/nonexistent", "bogus": 1})[0] == 400
    out_of_vocabulary = batch(0)
    out_of_vocabulary["sequences"][3]["token_ids"][2] = 999
    status, reply = call(url, "/control/train_step", out_of_vocabulary)  # refused by every rank before training
    assert status == 400 and "token id 999 is outside the model's vocabulary (vocab_size 64)" in reply["error"], reply
    # Token 61 fails rank 1's micro-batch only (FAULT_ON_RANK_1): rank 0 reports rank 1's error.
    bad = batch(0)
    bad["sequences"][3]["token_ids"][2] = 61
    status, reply = call(url, "/control/train_step", bad)
    assert status == 500 and re.match(r"RuntimeError: rank 1: IndexError: injected on rank 1", reply["error"]), reply
    assert all(alive(pid) for pid in pids)
    status, reply = call(url, "/control/train_step", batch(1))  # both ranks still answer collectives
    assert status == 200 and reply["policy_version"] == version + 1


def test_shutdown_ends_every_rank(ranks):
    proc, url, _ = ranks
    pids = workers(proc)
    assert call(url, "/control/shutdown", {}) == (200, {"status": "shutting down"})
    assert proc.wait(15) == 0
    deadline = time.time() + 5
    while any(alive(pid) for pid in pids) and time.time() < deadline:
        time.sleep(0.1)
    assert not any(alive(pid) for pid in pids)


class OneRankOfTwo:
    """Rank `rank` of two, alone in this process: Peers' own micro-batch shares, and collectives that see
    a peer which added nothing. Enough to count what each rank runs; the FSDP ranks whose forwards are
    collectives need several GPUs."""

    size = 2
    my_micro_batches = Peers.my_micro_batches

    def __init__(self, rank):
        self.rank = rank
        self.leader = rank == 0

    def check(self, failure):
        if failure is not None:
            raise failure

    def sum_gradients(self, params):
        pass

    def gather_totals(self, totals):
        return [totals, totals]


@pytest.mark.parametrize("kl_coef, lora", [(0.1, {"rank": 2}), (0.0, {"rank": 2}), (0.1, None)])
def test_a_rank_with_no_micro_batch_left_runs_the_same_forwards_as_a_rank_with_one(kl_coef, lora):
    # Under FSDP each forward of the sharded module is a collective (its layers' all-gathers): a rank that
    # ran one more or one fewer, or in another order, would hang the others. Three micro-batches over two
    # ranks leave rank 1 an empty slot after its one; there it still runs the policy's forward, and the
    # reference's where that is the sharded module with its adapters disabled (LoRA with a KL penalty) on
    # the first update only, as rank 0 does. Each forward is recorded as grad-enabled (the policy) or not
    # (the reference).
    forwards = forwards_of_each_rank({"kl_coef": kl_coef, "lora": lora, "updates_per_step": 2})
    assert OneRankOfTwo(1).my_micro_batches(3) == [1, None]
    reference = kl_coef > 0 and lora is not None
    first, later = ([True, False] if reference else [True]), [True]
    assert forwards[0] == forwards[1] == 2 * first + 2 * later


def test_check_ranks_rejects_more_ranks_than_visible_gpus_in_one_line(monkeypatch):
    check_ranks(2, cuda=True, gpus=2)
    check_ranks(4, cuda=False, gpus=0)  # CPU ranks (gloo) need no GPU
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    with pytest.raises(
        RankError,
        match=r"^WORLD_SIZE 2 is more than the 1 visible GPU \(CUDA_VISIBLE_DEVICES=0\): "
        r"start at most one rank per GPU",
    ):
        check_ranks(2, cuda=True, gpus=1)


def test_server_exits_2_with_one_line_when_ranks_outnumber_gpus(monkeypatch, capsys):
    # What a one-GPU machine shows the trainer under `torchrun --nproc_per_node 2`: it stops before
    # set_device or init_process_group, with one line on stderr and no traceback.
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "set_device", lambda _: pytest.fail("set_device reached"))
    assert server.main(["--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "atk_trainer: WORLD_SIZE 2 is more than the 1 visible GPU: start at most one rank per GPU "
        "(model.trainer.gpus), or set CUDA_VISIBLE_DEVICES= to train on CPU\n"
    )


def test_a_rank_with_no_micro_batch_left_joins_the_forwards_masked_tokens_drop_runs_first():
    # mismatch.masked_tokens drop reads every micro-batch's logprobs (without gradient) before the first update;
    # an idle slot still runs one, so both ranks run the same forwards in the same order.
    forwards = forwards_of_each_rank({"mismatch": {"mode": "mask", "masked_tokens": "drop"}, "updates_per_step": 2})
    assert forwards[0] == forwards[1] == [False, False, True, True, True, True]


def forwards_of_each_rank(config):
    """The forwards each of two ranks runs for one step on three micro-batches, in order, each recorded as
    grad-enabled or not."""
    batch = pg_batch(tiny_policy(), FIXED_SEQUENCES)
    forwards = []
    for rank in (0, 1):
        t = Trainer(tiny_policy(), parse_config({**config, "micro_batch_tokens": 4096}), OneRankOfTwo(rank))
        seen = []
        decoder_layers(t.train_policy.module)[0].register_forward_hook(lambda *_: seen.append(torch.is_grad_enabled()))
        assert t.step(batch)["micro_batches"] == 3
        forwards.append(seen)
    return forwards
