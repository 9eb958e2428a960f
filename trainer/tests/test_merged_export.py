"""`atk export --merge-lora`'s Python side: a LoRA adapter merged into its base's weight files gives the logits
of base + adapter, in the base's dtype, shards and key names; transformers loads it without peft."""
import copy
import json

import pytest
import torch

from atk_trainer import merge_lora
from atk_trainer.model.modeling import load_policy, random_policy
from atk_trainer.model.safetensors_io import INDEX_FILE, load_file, save_file
from atk_trainer.train import lora as lora_lib
from atk_trainer.train.config import LoraConfig
from atk_trainer.train.merged_export import export_merged
from test_decoder import QWEN3, perturbed

IDS = torch.tensor([[5, 0, 39, 7, 7, 12, 1, 30, 2]])
LORA = LoraConfig(rank=4, alpha=8.0, target_modules=["q_proj", "v_proj", "o_proj", "down_proj"])


def base_and_adapter(tmp_path, dtype=None):
    """A qwen3 base saved in `dtype` and a trained-looking adapter over it (B no longer 0); returns the
    base + adapter model (the base's weights as saved, in float32) and the two directories."""
    base = perturbed(random_policy(QWEN3, seed=3))
    base.save_pretrained(str(tmp_path / "base"), dtype=dtype)
    tuned = load_policy(str(tmp_path / "base"), backend="builtin")
    lora_lib.apply_lora(tuned.module, LORA, use_peft=False)
    torch.manual_seed(0)
    for layer in tuned.module.modules():
        if isinstance(layer, lora_lib.LoRALinear):
            torch.nn.init.normal_(layer.lora_B.weight, std=0.5)
    (tmp_path / "adapter").mkdir()
    lora_lib.write_adapter(tuned.module, LORA, str(tmp_path / "base"), str(tmp_path / "adapter"), save_file)
    return tuned, tmp_path / "base", tmp_path / "adapter"


def test_merged_directory_returns_the_logits_of_base_plus_adapter(tmp_path):
    tuned, base_dir, adapter_dir = base_and_adapter(tmp_path)
    written = export_merged(str(adapter_dir), str(tmp_path / "out"))
    assert written["base"] == str(base_dir) and written["dtypes"] == ["float32"]
    assert len(written["merged"]) == 2 * len(LORA.target_modules)
    merged = load_policy(str(tmp_path / "out"), backend="builtin")
    base = load_policy(str(base_dir), backend="builtin")
    with torch.no_grad():
        want = tuned.logits(IDS)
        assert (merged.logits(IDS) - want).abs().max().item() < 1e-5
        assert (base.logits(IDS) - want).abs().max().item() > 1e-2  # the adapter matters
    assert json.loads((tmp_path / "out" / "config.json").read_text()) == json.loads(
        (base_dir / "config.json").read_text()
    )


def test_merged_weights_keep_the_bases_dtype_and_key_names(tmp_path):
    tuned, base_dir, adapter_dir = base_and_adapter(tmp_path, dtype=torch.bfloat16)
    export_merged(str(adapter_dir), str(tmp_path / "out"))
    base, out = load_file(str(base_dir / "model.safetensors")), load_file(str(tmp_path / "out" / "model.safetensors"))
    assert {k: v.dtype for k, v in out.items()} == {k: torch.bfloat16 for k in base}
    name = "model.layers.1.self_attn.o_proj"
    layer = tuned.module.get_submodule(name)
    delta = layer.lora_B.weight @ layer.lora_A.weight * (LORA.alpha / LORA.rank)  # (out, in)
    assert torch.equal(out[name + ".weight"], (base[name + ".weight"].float() + delta).to(torch.bfloat16))
    assert torch.equal(out["model.layers.1.self_attn.k_proj.weight"], base["model.layers.1.self_attn.k_proj.weight"])


def test_a_sharded_base_is_merged_shard_by_shard_with_its_index(tmp_path):
    tuned, base_dir, adapter_dir = base_and_adapter(tmp_path)
    weights = load_file(str(base_dir / "model.safetensors"))
    (base_dir / "model.safetensors").unlink()
    shards = {"model-00001-of-00002.safetensors": {}, "model-00002-of-00002.safetensors": {}}
    for i, (name, tensor) in enumerate(sorted(weights.items())):
        list(shards.values())[i % 2][name] = tensor
    for file, tensors in shards.items():
        save_file(tensors, str(base_dir / file))
    index = {"metadata": {}, "weight_map": {n: f for f, ts in shards.items() for n in ts}}
    (base_dir / INDEX_FILE).write_text(json.dumps(index))
    export_merged(str(adapter_dir), str(tmp_path / "out"))
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(["config.json", INDEX_FILE, *shards])
    for file, tensors in shards.items():
        assert set(load_file(str(tmp_path / "out" / file))) == set(tensors)
    with torch.no_grad():
        merged = load_policy(str(tmp_path / "out"), backend="builtin").logits(IDS)
        assert (merged - tuned.logits(IDS)).abs().max().item() < 1e-5


def test_export_merged_rejects_what_it_cannot_merge_naming_the_file(tmp_path):
    _, base_dir, adapter_dir = base_and_adapter(tmp_path)
    with pytest.raises(ValueError, match="adapter_config.json: no such file"):
        export_merged(str(tmp_path / "nowhere"), str(tmp_path / "out"))
    other = copy.deepcopy(QWEN3)
    other["num_hidden_layers"] = 1  # the adapter's layer-1 modules have no weights here
    small = tmp_path / "small"
    random_policy(other).save_pretrained(str(small))
    with pytest.raises(
        ValueError, match=r"adapter_model.safetensors: the base model .*small has no weight model.layers.1"
    ):
        export_merged(str(adapter_dir), str(tmp_path / "out"), str(small))
    (tmp_path / "random").mkdir()
    (tmp_path / "random" / "config.json").write_text(json.dumps(QWEN3))
    with pytest.raises(ValueError, match="no model.safetensors.*init: random has no base weights"):
        export_merged(str(adapter_dir), str(tmp_path / "out"), str(tmp_path / "random"))


def test_merge_lora_main_prints_one_json_line_or_one_error_line(tmp_path, capsys):
    _, base_dir, adapter_dir = base_and_adapter(tmp_path)
    assert merge_lora.main([str(adapter_dir), str(tmp_path / "out")]) == 0
    assert json.loads(capsys.readouterr().out)["out"] == str(tmp_path / "out")
    assert merge_lora.main([str(tmp_path / "missing"), str(tmp_path / "out2")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("merge_lora: ") and "adapter_config.json: no such file" in err


def test_transformers_loads_the_merged_directory_with_the_logits_peft_gives(tmp_path):
    transformers = pytest.importorskip(
        "transformers", reason="transformers is not installed here; npm run test:transformers runs this"
    )
    peft = pytest.importorskip("peft", reason="peft is not installed here; npm run test:transformers runs this")
    if "qwen3" not in transformers.models.auto.configuration_auto.CONFIG_MAPPING:
        pytest.skip(f"transformers {transformers.__version__} has no qwen3 (it came in 4.51)")
    tuned, base_dir, adapter_dir = base_and_adapter(tmp_path)
    export_merged(str(adapter_dir), str(tmp_path / "out"))
    merged = transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path / "out"), torch_dtype=torch.float32)
    base = transformers.AutoModelForCausalLM.from_pretrained(str(base_dir), torch_dtype=torch.float32)
    with_adapter = peft.PeftModel.from_pretrained(base, str(adapter_dir))
    with torch.no_grad():
        want = tuned.logits(IDS)
        assert (merged.eval()(input_ids=IDS).logits - want).abs().max().item() < 1e-5
        assert (with_adapter.eval()(input_ids=IDS).logits - want).abs().max().item() < 1e-5
