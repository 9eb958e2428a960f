"""Full-weight sync over a gloo group: the trainer process (real HTTP, its own process) broadcasts to two
stand-in engine workers running atk's vLLM worker extension; their weights must equal the trainer's in
the served dtype, bit for bit. NCCL (the CUDA path) takes the same code with another backend: not here."""
import json
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from atk_trainer.errors import HttpError
from atk_trainer.model.modeling import load_policy
from atk_trainer.model.safetensors_io import load_file
from atk_trainer.serve.engine_api import EngineApi
from atk_trainer.serve.engine import Engine
from atk_trainer.vllm_worker import WeightReload
from test_server import CONFIG, call, start_server


@pytest.fixture(scope="module")
def trainer(tmp_path_factory):
    model_dir = tmp_path_factory.mktemp("model")
    (model_dir / "config.json").write_text(json.dumps(CONFIG))
    proc, url = start_server()
    status, loaded = call(
        url,
        "/control/load_model",
        {
            "path": str(model_dir),
            "init": "random",
            "backend": "builtin",
            "device": "cpu",
            "dtype": "float32",
            "train": {"seed": 3},
        },
    )
    assert status == 200, loaded
    yield url, model_dir
    proc.terminate()
    proc.wait(timeout=30)


def standin(model_dir, seed):
    """An engine serving the same architecture with other weights, with atk's worker extension."""
    engine = Engine().start()
    engine.set_policy(load_policy(str(model_dir), init="random", seed=seed, backend="builtin"))
    api = EngineApi(engine)
    api.use_worker_extension(WeightReload)
    return api


def rpc(api, method, *args):
    return api.collective_rpc({"method": method, "args": list(args)})["results"][0]


def test_a_broadcast_leaves_every_engine_serving_the_trainers_weights_in_the_served_dtype(trainer, tmp_path):
    url, model_dir = trainer
    engines = [standin(model_dir, seed) for seed in (11, 12)]
    try:
        status, opened = call(
            url, "/control/weights/open", {"master_addr": "127.0.0.1", "dtype": "bfloat16", "timeout_s": 60}
        )
        assert status == 200, opened
        assert opened["backend"] == "gloo" and all(dtype == "bfloat16" for _n, dtype, _s in opened["tensors"])
        names = [name for name, _d, _s in opened["tensors"]]
        assert "lm_head.weight" not in names and "model.embed_tokens.weight" in names  # tied head: sent once
        with ThreadPoolExecutor(3) as pool:
            joined = pool.submit(call, url, "/control/weights/join", {"world_size": 3})
            ranks = [
                pool.submit(rpc, api, "atk_join_weight_group", "127.0.0.1", opened["port"], 1 + i, 3, "gloo", 60)
                for i, api in enumerate(engines)
            ]
            assert joined.result()[0] == 200 and [int(r.result()) for r in ranks] == [1, 2]
            for version in ("policy@1", "policy@2"):  # the group serves every later sync too
                sent = pool.submit(call, url, "/control/weights/send", {})
                received = [pool.submit(rpc, api, "atk_receive_weights", opened["tensors"], version) for api in engines]
                assert [r.result() for r in received] == [version, version]
                status, figures = sent.result()
                assert status == 200 and figures["tensors"] == len(names) and figures["bytes"] == opened["bytes"]
        # The disk sync writes the same weights in the same dtype: the engines hold exactly those.
        assert (
            call(url, "/control/save", {"dir": str(tmp_path / "w"), "weights_only": True, "dtype": "bfloat16"})[0]
            == 200
        )
        expected = load_file(str(tmp_path / "w" / "model.safetensors"))
        assert opened["bytes"] == sum(t.numel() * t.element_size() for t in expected.values())
        for api in engines:
            served = api.engine.policy.module.state_dict()
            assert all(torch.equal(served[k].to(torch.bfloat16), v) for k, v in expected.items())
            assert all(torch.equal(served[k], v.to(served[k].dtype)) for k, v in expected.items())
            assert rpc(api, "atk_weight_version") == "policy@2"
    finally:
        for api in engines:
            api.engine.close()


def test_a_worker_that_refuses_a_tensor_fails_its_sync_and_the_sender_still_finishes(trainer):
    url, model_dir = trainer
    engine = standin(model_dir, 5)
    before = {k: v.clone() for k, v in engine.engine.policy.module.state_dict().items()}
    try:
        status, opened = call(url, "/control/weights/open", {"master_addr": "127.0.0.1", "timeout_s": 60})
        assert status == 200 and all(dtype == "float32" for _n, dtype, _s in opened["tensors"])
        with ThreadPoolExecutor(2) as pool:
            joined = pool.submit(call, url, "/control/weights/join", {"world_size": 2})
            rpc(engine, "atk_join_weight_group", "127.0.0.1", opened["port"], 1, 2, "gloo", 60)
            assert joined.result()[0] == 200
            sent = pool.submit(call, url, "/control/weights/send", {})
            renamed = [
                ["model.not_there" if i == 1 else name, d, s] for i, (name, d, s) in enumerate(opened["tensors"])
            ]
            with pytest.raises(HttpError, match="'model.not_there' is not a parameter of the served model"):
                rpc(engine, "atk_receive_weights", renamed, "policy@1")
            assert sent.result()[0] == 200  # the receiver drained the rest instead of leaving the sender hanging
        assert rpc(engine, "atk_weight_version") is None
        assert all(torch.equal(v, before[k]) for k, v in engine.engine.policy.module.state_dict().items())
    finally:
        engine.engine.close()


def test_a_member_that_never_joins_fails_the_join_within_the_timeout(trainer):
    url, _model_dir = trainer
    status, opened = call(url, "/control/weights/open", {"master_addr": "127.0.0.1", "timeout_s": 3})
    assert status == 200
    started = time.monotonic()
    status, reply = call(url, "/control/weights/join", {"world_size": 2})
    assert status == 500 and reply["error"].startswith(
        "RuntimeError: weight sync group: not all 2 members joined within 3 s"
    ), reply
    assert time.monotonic() - started < 30
    assert call(url, "/control/weights/send", {})[0] == 409  # no group: nothing half-made is used
