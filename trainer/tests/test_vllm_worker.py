"""atk's vLLM worker extension (full-weight reload through /collective_rpc), run against the embedded
engine's stand-in of vLLM's worker: the extension's own code on real weights; vLLM itself is not here."""
import pytest
import torch

from atk_trainer.serve.engine_api import EngineApi
from atk_trainer.errors import HttpError
from atk_trainer.serve.engine import Engine
from atk_trainer.model.safetensors_io import save_file
from atk_trainer.vllm_worker import WeightReload, checkpoint_weights
from tiny import tiny_policy


@pytest.fixture
def api():
    engine = Engine().start()
    engine.set_policy(tiny_policy(0))
    api = EngineApi(engine)
    api.use_worker_extension(WeightReload)
    yield api
    engine.close()


def served_state(api):
    return {k: v.clone() for k, v in api.engine.policy.module.state_dict().items()}


def test_reload_serves_the_checkpoints_weights_and_reports_its_version(api, tmp_path):
    assert api.collective_rpc({"method": "atk_weight_version"}) == {"results": [None]}  # the weights it started with
    trained = tiny_policy(1)
    trained.save_pretrained(str(tmp_path))
    reply = api.collective_rpc({"method": "atk_reload_weights", "args": [str(tmp_path), "policy@3"]})
    assert reply == {"results": ["policy@3"]}
    assert api.collective_rpc({"method": "atk_weight_version"}) == {"results": ["policy@3"]}
    expected = trained.module.state_dict()
    assert all(torch.equal(v, expected[k]) for k, v in served_state(api).items())


def test_checkpoint_weights_streams_every_shard_of_a_sharded_checkpoint(tmp_path):
    save_file({"b": torch.ones(2)}, str(tmp_path / "model-00002-of-00002.safetensors"))
    save_file({"a": torch.zeros(3)}, str(tmp_path / "model-00001-of-00002.safetensors"))
    assert [(name, t.shape[0]) for name, t in checkpoint_weights(str(tmp_path))] == [("a", 3), ("b", 2)]


def test_a_failed_reload_names_the_problem_and_leaves_the_weights_as_they_were(api, tmp_path):
    before = served_state(api)
    with pytest.raises(
        HttpError, match=r"atk_reload_weights failed: FileNotFoundError: .*no \*\.safetensors checkpoint"
    ):
        api.collective_rpc({"method": "atk_reload_weights", "args": [str(tmp_path), "policy@1"]})
    state = tiny_policy(1).module.state_dict()
    save_file({**state, "model.extra.weight": torch.zeros(1)}, str(tmp_path / "model.safetensors"))
    with pytest.raises(HttpError, match="'model.extra.weight' is not a parameter of the served model"):
        api.collective_rpc({"method": "atk_reload_weights", "args": [str(tmp_path), "policy@1"]})
    assert all(torch.equal(v, before[k]) for k, v in served_state(api).items())
    # A checkpoint without some parameters is refused rather than reported as the new version.
    partial = {k: v for k, v in state.items() if not k.startswith("model.layers.1.")}
    save_file(partial, str(tmp_path / "model.safetensors"))
    with pytest.raises(HttpError, match=r"the checkpoint has no weights for \d+ parameters \(model\.layers\.1\."):
        api.collective_rpc({"method": "atk_reload_weights", "args": [str(tmp_path), "policy@1"]})
    assert api.collective_rpc({"method": "atk_weight_version"}) == {"results": [None]}
    with pytest.raises(HttpError, match="'_atk_weight_version' is not implemented"):
        api.collective_rpc({"method": "_atk_weight_version"})
