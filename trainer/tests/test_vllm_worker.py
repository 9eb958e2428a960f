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


class _PackedCopy:
    """The CPU backend's post-load processing of an embedding, reduced to what matters here: it keeps its
    own copy of the weight for the logits (vLLM packs it for oneDNN)."""

    def process_weights_after_loading(self, layer):
        layer.packed = layer.weight.detach().clone()


class _TiedModel(torch.nn.Module):
    """A model as vLLM holds one with tied embeddings: lm_head shares embed_tokens' weight Parameter and is
    absent from the checkpoint; `load_weights` returns the parameter names it loaded."""

    def __init__(self):
        super().__init__()
        self.embed_tokens = torch.nn.Embedding(5, 3)
        self.norm = torch.nn.LayerNorm(3)
        self.lm_head = torch.nn.Module()
        self.lm_head.weight = self.embed_tokens.weight
        for layer in (self.embed_tokens, self.lm_head):
            layer.quant_method = _PackedCopy()
            layer.quant_method.process_weights_after_loading(layer)

    def load_weights(self, weights):
        params = dict(self.named_parameters())
        loaded = set()
        with torch.no_grad():
            for name, tensor in weights:
                params[name].copy_(tensor)
                loaded.add(name)
        return loaded


class _ReloadingWorker(WeightReload):
    """vLLM's worker as the extension sees it where vLLM offers `reload_weights` (>= 0.16): the reload
    streams the checkpoint through the model's `load_weights` and processes the layers that loaded."""

    def __init__(self, served_dir):
        model = _TiedModel()
        self.model_runner = type("Runner", (), {"get_model": lambda _self: model})()
        self.model_runner.model_config = type("Config", (), {"model": served_dir})()
        self.model = model

    def reload_weights(self, weights_iterator, is_checkpoint_format):
        assert is_checkpoint_format
        self.model.load_weights(weights_iterator)
        self.model.embed_tokens.quant_method.process_weights_after_loading(self.model.embed_tokens)


def _save_tied(directory, seed, drop=()):
    directory.mkdir()
    torch.manual_seed(seed)
    state = {k: v for k, v in _TiedModel().state_dict().items() if not k.startswith("lm_head.") and k not in drop}
    save_file(state, str(directory / "model.safetensors"))
    return state


def test_reload_in_place_reprocesses_the_tied_output_embedding(tmp_path):
    _save_tied(tmp_path / "served", 0)
    worker = _ReloadingWorker(str(tmp_path / "served"))
    new = _save_tied(tmp_path / "new", 1)
    assert worker.atk_reload_weights(str(tmp_path / "new"), "policy@1") == "policy@1"
    model = worker.model
    assert torch.equal(model.embed_tokens.weight, new["embed_tokens.weight"])
    # lm_head was never in the checkpoint; its own processed copy must follow the shared weight.
    assert torch.equal(model.lm_head.packed, new["embed_tokens.weight"])
    assert worker.atk_weight_version() == "policy@1"


def test_reload_in_place_refuses_a_partial_checkpoint_before_loading_anything(tmp_path):
    _save_tied(tmp_path / "served", 0)
    worker = _ReloadingWorker(str(tmp_path / "served"))
    before = worker.model.embed_tokens.weight.detach().clone()
    _save_tied(tmp_path / "partial", 1, drop=("norm.weight",))
    with pytest.raises(ValueError, match=r"lacks 1 of the 3 tensors the served model was loaded from \(norm\.weight\)"):
        worker.atk_reload_weights(str(tmp_path / "partial"), "policy@1")
    assert torch.equal(worker.model.embed_tokens.weight, before)
    assert worker.atk_weight_version() is None
    # Served from a hub id (no local files to compare with): what load_weights reports is checked instead.
    worker.model_runner.model_config.model = "org/model"
    with pytest.raises(ValueError, match=r"the checkpoint has no weights for 1 parameters \(norm\.weight"):
        worker.atk_reload_weights(str(tmp_path / "partial"), "policy@1")
    assert worker.atk_weight_version() is None


def test_torch_version_is_a_plain_str_that_vllms_rpc_can_serialize(api):
    # vLLM's msgspec encoder refuses str subclasses such as torch's TorchVersion, and the call never answers.
    (version,) = api.collective_rpc({"method": "atk_torch_version"})["results"]
    assert type(version) is str and version == torch.__version__
