import pytest

from atk_trainer.train.config import ConfigError, LoraConfig, MismatchConfig, TrainConfig, parse_config


def test_parse_config_returns_defaults_for_no_overrides():
    assert parse_config({}) == TrainConfig()


def test_parse_config_returns_typed_values_and_nested_lora():
    config = parse_config({"learning_rate": 1, "tis_cap": 2, "lora": {"rank": 4, "target_modules": ["q_proj"]}})
    assert config.learning_rate == 1.0 and isinstance(config.learning_rate, float)
    # tis_cap's meaning, its trust region at the engine included
    assert config.mismatch == MismatchConfig(mode="tis", level="token", low=0.0, high=2.0, trust_region=True)
    assert config.lora == LoraConfig(rank=4, target_modules=["q_proj"])


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"learning_rat": 1e-5}, "unknown key learning_rat"),
        ({"lora": {"rank": 4, "rnak": 2}}, "unknown key lora.rnak"),
        ({"learning_rate": "1e-5"}, "learning_rate: expected float, got str"),
        ({"warmup_steps": 1.5}, "warmup_steps: expected int, got float"),
        ({"warmup_steps": True}, "warmup_steps: expected int, got bool"),
        ({"gradient_checkpointing": 1}, "gradient_checkpointing: expected bool, got int"),
        ({"lora": {"target_modules": "q_proj"}}, "lora.target_modules: expected a list"),
        ({"loss_aggregation": "mean"}, "loss_aggregation: expected one of"),
        ({"learning_rate": 0}, "learning_rate: must be > 0"),
        ({"lr_schedule": "cosine", "warmup_steps": 5, "total_steps": 5}, "total_steps: cosine needs"),
        ({"__class__": 1}, "unknown key __class__"),
        ({"policy_loss": "grpo"}, "policy_loss: expected one of ppo, gspo, cispo"),
        ({"mismatch": {"mode": "clip"}}, "mismatch: mode must be one of tis, mask, reject"),
        ({"mismatch": {"mode": "mask", "masked_tokens": "skip"}}, "masked_tokens one of count, drop"),
        ({"mismatch": {"mode": "mask", "level": "mean"}}, "level one of token, sequence, geometric"),
        ({"dual_clip": 1.0}, "dual_clip: must be > 1"),
        ({"kl_estimator": "k4"}, "kl_estimator: expected one of k1, k2, k3"),
        ({"mismatch": {"mode": "mask", "low": 2.0, "high": 2.0}}, "mismatch: needs 0 <= low < high"),
        ({"tis_cap": 2.0, "mismatch": {"mode": "mask"}}, "tis_cap: give mismatch or tis_cap, not both"),
        ({"tis_cap": 0}, "tis_cap: must be a number > 0"),
    ],
)
def test_parse_config_rejects_unknown_keys_wrong_types_and_values(overrides, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        parse_config(overrides)
