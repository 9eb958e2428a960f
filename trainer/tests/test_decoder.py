"""The built-in qwen2 (and qwen3, llama, mistral) against a loop-by-loop reference, its KV cache, and
checkpoints in HF layout."""
import json
import math

import pytest
import torch

from atk_trainer.model.modeling import load_policy, random_policy
from atk_trainer.model.decoder import DecoderConfig, RopeScaling, RotaryEmbedding
from atk_trainer.serve.kv_cache import KVCache

GQA_UNTIED = {
    "model_type": "qwen2",
    "vocab_size": 40,
    "hidden_size": 24,
    "intermediate_size": 40,
    "num_hidden_layers": 2,
    "num_attention_heads": 6,
    "num_key_value_heads": 2,
    "max_position_embeddings": 64,
    "rms_norm_eps": 1e-6,
    "rope_theta": 500.0,
    "tie_word_embeddings": False,
}
MHA_TIED = {**GQA_UNTIED, "num_key_value_heads": 6, "tie_word_embeddings": True, "rope_theta": 1e6}
# Layer 0 attends fully, layer 1 to its last 3 tokens (transformers: layers from max_window_layers on slide).
SLIDING = {**GQA_UNTIED, "use_sliding_window": True, "sliding_window": 3, "max_window_layers": 1}
# qwen3: q/k normed per head, no biases, head_dim 8 where hidden_size / heads is 4.
QWEN3 = {**GQA_UNTIED, "model_type": "qwen3", "num_attention_heads": 4, "head_dim": 8, "rope_theta": 1e4}
# Llama 3.1's rope: with head_dim 8 and theta 500, the 4 wavelengths are 6.3, 30, 140 and 664 tokens;
# against an original context of 32 (low/high wavelength bounds 32 and 8) one is kept, one smoothed, two scaled.
LLAMA = {
    **GQA_UNTIED,
    "model_type": "llama",
    "num_attention_heads": 3,
    "num_key_value_heads": 1,
    "max_position_embeddings": 256,
    "rope_scaling": {
        "rope_type": "llama3",
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 32,
    },
}
LLAMA_BIASED = {**LLAMA, "attention_bias": True, "mlp_bias": True}
MISTRAL = {**GQA_UNTIED, "model_type": "mistral", "sliding_window": 3}  # every layer slides
ARCHITECTURES = {"qwen3": QWEN3, "llama": LLAMA, "llama-biased": LLAMA_BIASED, "mistral": MISTRAL}
YARN = {
    **GQA_UNTIED,
    "rope_theta": 1e4,
    "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 16},
}


def perturbed(policy, seed=1):
    """Random norm gains and biases too (random init leaves them at 1 and 0, which would hide bugs)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in policy.module.named_parameters():
            if name.endswith("norm.weight") or name.endswith(".bias"):
                p.copy_(torch.randn(p.shape, generator=g) * 0.5 + (1.0 if name.endswith("norm.weight") else 0.0))
    return policy


def reference_logits(sd, cfg, ids, inv_freq=None, scale=1.0, sliding_layers=None):
    """Qwen2 written out per head and per rotary pair, in float64. `inv_freq` (D/2 numbers) and `scale`
    (cos and sin multiplied by it) stand for a scaled rope; a sliding layer (qwen2's rule, or the
    `sliding_layers` given) attends to its last `sliding_window` tokens. A bias or per-head q/k norm
    weight in `sd` is applied (the other architectures' differences)."""
    sd = {k: v.double() for k, v in sd.items()}
    H, Hkv, C = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["hidden_size"]
    D = cfg.get("head_dim") or C // H
    T = len(ids)

    def rms(x, w):
        return w * x / torch.sqrt((x * x).mean(-1, keepdim=True) + cfg["rms_norm_eps"])

    def linear(x, name):
        return x @ sd[name + ".weight"].T + sd.get(name + ".bias", 0)

    def rotate(v, pos):  # v (D,): pairs (i, i + D/2) rotate by pos * theta^(-2i/D)
        out = v.clone()
        for i in range(D // 2):
            angle = pos * (cfg["rope_theta"] ** (-2 * i / D) if inv_freq is None else float(inv_freq[i]))
            cos, sin = scale * math.cos(angle), scale * math.sin(angle)
            a, b = v[i], v[i + D // 2]
            out[i], out[i + D // 2] = a * cos - b * sin, b * cos + a * sin
        return out

    x = sd["model.embed_tokens.weight"][ids]  # (T, C)
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        if sliding_layers is None:
            sliding = cfg.get("use_sliding_window") and layer >= cfg["max_window_layers"]
        else:
            sliding = sliding_layers[layer]
        h = rms(x, sd[p + "input_layernorm.weight"])
        q, k, v = (linear(h, p + f"self_attn.{n}_proj") for n in "qkv")

        def head_of(x, i, name):  # (D,) the i-th head, RMS-normed per head when the model has q/k norms
            w = sd.get(p + f"self_attn.{name}_norm.weight")
            return x[i * D : (i + 1) * D] if w is None else rms(x[i * D : (i + 1) * D], w)

        heads = []
        for head in range(H):
            kv = head // (H // Hkv)
            qs = torch.stack([rotate(head_of(q[t], head, "q"), t) for t in range(T)])
            ks = torch.stack([rotate(head_of(k[t], kv, "k"), t) for t in range(T)])
            vs = v[:, kv * D : (kv + 1) * D]
            out = torch.zeros(T, D, dtype=torch.float64)
            for t in range(T):
                first = max(0, t - cfg["sliding_window"] + 1) if sliding else 0
                scores = torch.stack([qs[t] @ ks[s] / math.sqrt(D) for s in range(first, t + 1)])
                out[t] = torch.softmax(scores, 0) @ vs[first : t + 1]
            heads.append(out)
        x = x + linear(torch.cat(heads, -1), p + "self_attn.o_proj")
        h = rms(x, sd[p + "post_attention_layernorm.weight"])
        gate, up = linear(h, p + "mlp.gate_proj"), linear(h, p + "mlp.up_proj")
        x = x + linear(gate * torch.sigmoid(gate) * up, p + "mlp.down_proj")
    x = rms(x, sd["model.norm.weight"])
    head = sd["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else sd["lm_head.weight"]
    return x @ head.T


@pytest.mark.parametrize(
    "cfg",
    [GQA_UNTIED, MHA_TIED, SLIDING, YARN, *ARCHITECTURES.values()],
    ids=["gqa-untied", "mha-tied", "sliding-window", "yarn", *ARCHITECTURES],
)
def test_logits_returns_the_reference_computation(cfg):
    policy = perturbed(random_policy(cfg, seed=3))
    rotary = policy.module.model.rotary
    sliding = policy.module.config.sliding_layers
    ids = [5, 0, 39, 7, 7, 12, 1, 30, 2]
    with torch.no_grad():
        got = policy.logits(torch.tensor([ids, ids[::-1]]))  # (2, T, V)
    for row, seq in zip(got, (ids, ids[::-1])):
        want = reference_logits(policy.module.state_dict(), cfg, seq, rotary.inv_freq.tolist(), rotary.scale, sliding)
        assert (row.double() - want).abs().max().item() < 1e-4


@pytest.mark.parametrize(
    "cfg", [GQA_UNTIED, SLIDING, QWEN3, LLAMA, MISTRAL], ids=["full", "sliding-window", "qwen3", "llama", "mistral"]
)
def test_kv_cache_returns_the_full_forward_logits_for_rows_of_different_lengths(cfg):
    policy = perturbed(random_policy(cfg, seed=4))
    module = policy.module
    prompts = [[1, 2, 3, 4, 5], [6, 7], [8, 9, 10]]
    follow = [[11, 12], [13, 14], [15, 16]]
    with torch.no_grad():
        # Left-padded prefill of all three, then a fourth row joins by merge, then two decode steps.
        cache = KVCache.for_model(module, 3)
        T = max(map(len, prompts))
        ids = torch.tensor([[0] * (T - len(p)) + p for p in prompts])
        valid = torch.tensor([[False] * (T - len(p)) + [True] * len(p) for p in prompts])
        positions = (valid.long().cumsum(-1) - 1).clamp(min=0)
        last = [module(ids, positions, cache, valid)[:, -1]]
        late = KVCache.for_model(module, 1)
        module(torch.tensor([[20, 21, 22, 23, 24, 25, 26]]), None, late)
        cache.merge(late)
        lengths = [5, 2, 3, 7]
        rows = follow + [[27, 28]]
        steps = []
        for step in range(2):
            tokens = torch.tensor([[r[step]] for r in rows])
            steps.append(module(tokens, torch.tensor([[n + step] for n in lengths]), cache)[:, -1])
        cache.select(torch.tensor([0, 3]))  # retire two rows; the others keep decoding correctly
        after = module(torch.tensor([[30], [31]]), torch.tensor([[7], [9]]), cache)[:, -1]
        full = [
            prompts[0] + follow[0],
            prompts[1] + follow[1],
            prompts[2] + follow[2],
            [20, 21, 22, 23, 24, 25, 26, 27, 28],
        ]
        for i, seq in enumerate(full):
            ref = policy.logits(torch.tensor([seq]))[0]
            if i < 3:
                assert torch.allclose(last[0][i], ref[len(prompts[i]) - 1], atol=1e-5)
            for step in range(2):
                assert torch.allclose(steps[step][i], ref[lengths[i] + step], atol=1e-5)
        for row, seq, token in ((0, full[0], 30), (1, full[3], 31)):
            assert torch.allclose(after[row], policy.logits(torch.tensor([seq + [token]]))[0, -1], atol=1e-5)


def test_save_pretrained_then_load_policy_returns_the_same_logits(tmp_path):
    for cfg in (GQA_UNTIED, MHA_TIED):
        policy = perturbed(random_policy(cfg, seed=5))
        policy.save_pretrained(str(tmp_path / "m"))
        loaded = load_policy(str(tmp_path / "m"), backend="builtin")
        ids = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6]])
        assert torch.equal(loaded.logits(ids), policy.logits(ids))
        written = json.loads((tmp_path / "m" / "config.json").read_text())
        assert written["num_key_value_heads"] == cfg["num_key_value_heads"] and written["torch_dtype"] == "float32"


def test_load_policy_rejects_what_the_builtin_model_lacks(tmp_path):
    with pytest.raises(
        ValueError, match="rope_scaling type 'longrope' is not a built-in rope type.*backend: transformers"
    ):
        DecoderConfig.from_dict({**GQA_UNTIED, "rope_scaling": {"rope_type": "longrope", "factor": 8.0}})
    with pytest.raises(ValueError, match="type 'llama3' needs a number for 'high_freq_factor'"):
        DecoderConfig.from_dict({**GQA_UNTIED, "rope_scaling": {"rope_type": "llama3", "factor": 8.0}})
    with pytest.raises(ValueError, match="rope_scaling key 'mscale' does not apply to rope type 'yarn'"):
        DecoderConfig.from_dict({**GQA_UNTIED, "rope_scaling": {"type": "yarn", "factor": 4.0, "mscale": 0.7}})
    with pytest.raises(ValueError, match="factor must be a number >= 1, got 0.5"):
        DecoderConfig.from_dict({**GQA_UNTIED, "rope_scaling": {"type": "dynamic", "factor": 0.5}})
    with pytest.raises(ValueError, match="sliding_window must be a positive integer, got 0"):
        DecoderConfig.from_dict({**GQA_UNTIED, "use_sliding_window": True, "sliding_window": 0})
    with pytest.raises(ValueError, match="layer_types must list 2"):
        DecoderConfig.from_dict({**SLIDING, "layer_types": ["sliding_attention"]})
    with pytest.raises(
        ValueError, match=r"model_type 'gemma2' is not built in \(qwen2, qwen3, llama, mistral\); it runs on"
    ):
        DecoderConfig.from_dict({**GQA_UNTIED, "model_type": "gemma2"})
    with pytest.raises(FileNotFoundError, match="config.json"):
        load_policy(str(tmp_path), backend="builtin")
    with pytest.raises(ValueError, match="backend"):
        load_policy(str(tmp_path), backend="vllm")


def test_sliding_layers_returns_transformers_choice_of_layers():
    def layers(**keys):
        return DecoderConfig.from_dict({**GQA_UNTIED, "num_hidden_layers": 4, **keys}).sliding_layers

    assert layers(use_sliding_window=True, sliding_window=3, max_window_layers=1) == (False, True, True, True)
    assert layers(use_sliding_window=True, sliding_window=3) == (False,) * 4  # max_window_layers defaults to 28
    assert layers(use_sliding_window=False, sliding_window=3, max_window_layers=0) == (False,) * 4  # released Qwen2.5
    types = ["full_attention", "sliding_attention", "full_attention", "sliding_attention"]
    assert layers(use_sliding_window=True, sliding_window=3, max_window_layers=0, layer_types=types) == (
        False,
        True,
        False,
        True,
    )


def test_sliding_window_returns_logits_blind_to_tokens_out_of_reach():
    """Two sliding layers of window 3: position p sees tokens p-4..p, so a change at position 0 reaches
    positions 0..4 only; with full attention it reaches every position."""
    ids = torch.tensor([[5, 0, 39, 7, 7, 12, 1, 30, 2]])
    changed = ids.clone()
    changed[0, 0] = 6
    for cfg, reached in (({**SLIDING, "max_window_layers": 0}, 5), (GQA_UNTIED, 9)):
        policy = perturbed(random_policy(cfg, seed=5))
        with torch.no_grad():
            moved = (policy.logits(ids) - policy.logits(changed)).abs().amax(-1)[0]  # (T,)
        assert (moved > 1e-6).tolist() == [True] * reached + [False] * (9 - reached)
    # every layer at or past max_window_layers: no layer slides, the same model as without the window
    no_window, plain = random_policy({**SLIDING, "max_window_layers": 2}, seed=5), random_policy(GQA_UNTIED, seed=5)
    assert torch.equal(no_window.logits(ids), plain.logits(ids))


def test_yarn_returns_qwen25s_long_context_frequencies():
    """Qwen2.5's documented YaRN setting (head_dim 128, theta 1e6, factor 4 over a 32768 context). In the
    original context, dimensions up to 23 turn more than beta_fast = 32 times and keep their frequency,
    dimensions from 40 turn less than beta_slow = 1 time and are divided by the factor, and the ones
    between are interpolated linearly in the dimension index; cos and sin are scaled by 0.1 ln 4 + 1."""
    yarn = RopeScaling.from_config(
        {
            "max_position_embeddings": 32768,
            "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
        }
    )
    inv_freq, scale = yarn.frequencies(128, 1e6)
    plain, _ = RopeScaling().frequencies(128, 1e6)
    rotations = 32768 * plain / (2 * math.pi)  # turns of each dimension over the original context
    assert rotations[23] > 32 > rotations[24] and rotations[39] > 1 > rotations[40]
    assert torch.equal(inv_freq[:24], plain[:24]) and torch.allclose(inv_freq[40:], plain[40:] / 4, rtol=1e-6)
    kept = 1 - (31 - 23) / (40 - 23)
    assert torch.allclose(inv_freq[31], plain[31] * kept + plain[31] / 4 * (1 - kept), rtol=1e-6)
    assert scale == pytest.approx(1 + 0.1 * math.log(4))
    # transformers' attention_factor replaces the scale; vLLM's attn_factor multiplies it
    assert RopeScaling("yarn", 4.0, 32768, attention_factor=1.0).frequencies(128, 1e6)[1] == 1.0
    assert RopeScaling("yarn", 4.0, 32768, attn_factor=2.0).frequencies(128, 1e6)[1] == pytest.approx(2 * scale)


def test_dynamic_rope_returns_vllms_frequencies_for_the_extended_context():
    """vLLM's dynamic NTK raises the base once, for factor x max_position_embeddings: the highest
    frequency stays, the lowest is divided by factor^2 - factor + 1."""
    dynamic = RopeScaling.from_config(
        {"max_position_embeddings": 64, "rope_scaling": {"type": "dynamic", "factor": 2.0}}
    )
    inv_freq, scale = dynamic.frequencies(8, 1e4)
    plain, _ = RopeScaling().frequencies(8, 1e4)
    assert inv_freq[0] == plain[0] == 1.0 and scale == 1.0
    assert inv_freq[-1].item() == pytest.approx(plain[-1].item() / 3, rel=1e-5)
    assert (inv_freq[1:] < plain[1:]).all()


def test_random_policy_returns_the_transformers_logits():
    pytest.importorskip("transformers")
    builtin = perturbed(random_policy(GQA_UNTIED, seed=6))
    hf = random_policy(GQA_UNTIED, seed=6, backend="transformers")
    hf.module.load_state_dict(builtin.module.state_dict(), strict=False)
    ids = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6]])
    with torch.no_grad():
        assert (hf.logits(ids) - builtin.logits(ids)).abs().max().item() < 1e-4


def test_pad_token_embedding_returns_zero_at_init_and_no_gradient_from_lookups():
    # transformers builds qwen2's embedding with padding_idx=pad_token_id; the built-in model matches it.
    policy = random_policy({**GQA_UNTIED, "pad_token_id": 7}, seed=8)
    embedding = policy.module.model.embed_tokens.weight
    assert embedding[7].abs().sum().item() == 0 and embedding[8].abs().sum().item() > 0
    policy.logits(torch.tensor([[7, 8, 7, 3]])).sum().backward()
    assert embedding.grad[7].abs().sum().item() == 0 and embedding.grad[8].abs().sum().item() > 0
    assert random_policy(GQA_UNTIED, seed=8).module.model.embed_tokens.padding_idx is None


def test_load_policy_returns_random_weights_for_init_random(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(GQA_UNTIED))  # no weights needed
    policy = load_policy(str(tmp_path), backend="builtin", init="random", seed=3)
    same = random_policy(GQA_UNTIED, seed=3)
    ids = torch.tensor([[1, 2, 3]])
    assert torch.equal(policy.logits(ids), same.logits(ids)) and policy.path == str(tmp_path)
    with pytest.raises(ValueError, match="init"):
        load_policy(str(tmp_path), init="zeros")


def test_linear_rope_scaling_returns_the_unscaled_rotation_at_positions_divided_by_the_factor():
    config = DecoderConfig.from_dict({**GQA_UNTIED, "rope_scaling": {"rope_type": "linear", "factor": 4.0}})
    assert (config.rope_scaling.type, config.rope_scaling.factor) == ("linear", 4.0) and DecoderConfig.from_dict(
        GQA_UNTIED
    ).rope_scaling == RopeScaling()
    scaled, plain = RotaryEmbedding(8, 10000.0, config.rope_scaling), RotaryEmbedding(8, 10000.0)
    positions = torch.arange(0, 40, 4).unsqueeze(0)
    for a, b in zip(scaled(positions, torch.float32), plain(positions // 4, torch.float32)):
        assert torch.allclose(a, b, atol=1e-6)
    # and the model uses it: same weights, different positions' logits
    policy = random_policy({**GQA_UNTIED, "rope_scaling": {"type": "linear", "factor": 4.0}}, seed=1)
    unscaled = random_policy(GQA_UNTIED, seed=1)
    ids = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6]])
    assert not torch.allclose(policy.logits(ids), unscaled.logits(ids))


def test_sdpa_decode_reads_the_kv_cache_once_per_kv_head_and_equals_the_grouped_path(monkeypatch):
    """torch >= 2.0 attends with scaled_dot_product_attention; torch 1.13 here has none, so a plain
    reference stands in for it to check how atk shapes the call: a decode step folds the query heads of
    each kv head into rows instead of repeating the cache, and every path gives the same attention."""
    from atk_trainer.model import decoder

    seen = []

    def reference_sdpa(q, k, v, attn_mask=None, is_causal=False):
        seen.append(k.shape[1])
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        if is_causal:
            attn_mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
        scores = scores.masked_fill(~attn_mask, float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v
        return out.transpose(1, 2).contiguous().transpose(1, 2)  # the (B, L, H, D)-major layout fused kernels return

    torch.manual_seed(0)
    B, H, Hkv, S, D = 3, 6, 2, 5, 8
    k, v = torch.randn(B, Hkv, S, D), torch.randn(B, Hkv, S, D)
    cases = [(1, torch.rand(B, 1, 1, S) > 0.3), (4, torch.rand(B, 1, 4, S) > 0.3)]
    for T, mask in cases:
        mask[..., -1] = True  # every query may attend to something
        q = torch.randn(B, T, H, D).transpose(1, 2)  # as the attention layer makes it: a transposed projection
        grouped = decoder.attention(q, k, v, mask)  # torch 1.13's path, no SDPA
        monkeypatch.setattr(decoder, "HAS_SDPA", True)
        monkeypatch.setattr(decoder.F, "scaled_dot_product_attention", reference_sdpa, raising=False)
        assert torch.allclose(decoder.attention(q, k, v, mask), grouped, atol=1e-6)
        monkeypatch.undo()
    assert seen == [Hkv, H]  # the decode step saw the cache as it is; the 4-token step saw it repeated


def test_llama3_rope_returns_kept_smoothed_and_scaled_frequencies():
    """LLAMA's 4 frequencies: wavelength 6.3 is under 32 / high_freq_factor and kept; 140 and 664 are over
    32 / low_freq_factor and divided by the factor; 30 lies between and is interpolated by 32 / wavelength."""
    config = DecoderConfig.from_dict(LLAMA)
    inv_freq, scale = config.rope_scaling.frequencies(config.head_dim, config.rope_theta)
    plain, _ = RopeScaling().frequencies(8, 500.0)
    wavelength = 2 * math.pi / plain
    assert [round(w) for w in wavelength.tolist()] == [6, 30, 140, 664] and scale == 1.0
    smooth = (32 / wavelength[1] - 1.0) / (4.0 - 1.0)
    assert inv_freq[0] == plain[0] and torch.allclose(inv_freq[2:], plain[2:] / 8)
    assert inv_freq[1].item() == pytest.approx(((1 - smooth) * plain[1] / 8 + smooth * plain[1]).item(), rel=1e-6)


def test_architectures_returns_each_families_parameters_under_transformers_names():
    def names(cfg):
        return {n.replace("model.layers.0.", "") for n in random_policy(cfg).module.state_dict() if ".layers.0." in n}

    common = (
        {f"{m}.weight" for m in ("input_layernorm", "post_attention_layernorm")}
        | {
            f"{m}_proj.weight"
            for m in ("self_attn.q", "self_attn.k", "self_attn.v", "self_attn.o", "mlp.gate", "mlp.up")
        }
        | {"mlp.down_proj.weight"}
    )
    qkv_bias = {f"self_attn.{m}_proj.bias" for m in "qkv"}
    assert names(GQA_UNTIED) == common | qkv_bias
    assert names(QWEN3) == common | {"self_attn.q_norm.weight", "self_attn.k_norm.weight"}
    assert names(LLAMA) == names(MISTRAL) == common
    assert names(LLAMA_BIASED) == common | qkv_bias | {"self_attn.o_proj.bias"} | {
        f"mlp.{m}_proj.bias" for m in ("gate", "up", "down")
    }
    assert names({**QWEN3, "attention_bias": True}) - names(QWEN3) == qkv_bias | {"self_attn.o_proj.bias"}
    assert names({**MISTRAL, "mlp_bias": True}) == common  # only llama reads mlp_bias


def test_architectures_returns_transformers_defaults_and_sliding_layers():
    qwen3 = {k: v for k, v in QWEN3.items() if k != "head_dim"}
    assert DecoderConfig.from_dict(qwen3).head_dim == 128  # Qwen3Config's default, not hidden_size / heads
    assert DecoderConfig.from_dict({**LLAMA, "head_dim": 16}).head_dim == 16
    assert DecoderConfig.from_dict(MISTRAL).sliding_layers == (True, True)
    assert DecoderConfig.from_dict({**MISTRAL, "sliding_window": None}).sliding_window is None
    # llama has no sliding window; qwen3 slides by qwen2's rule
    assert DecoderConfig.from_dict({**LLAMA, "sliding_window": 3, "use_sliding_window": True}).sliding_window is None
    assert DecoderConfig.from_dict({**QWEN3, **{k: SLIDING[k] for k in SLIDING if "window" in k}}).sliding_layers == (
        False,
        True,
    )
