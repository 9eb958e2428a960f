import pytest

from atk_trainer.train.config import ConfigError, LoraConfig, TrainConfig, parse_config


def test_parse_config_returns_defaults_for_no_overrides():
    assert parse_config({}) == TrainConfig()


def test_parse_config_returns_typed_values_and_nested_lora():
    config = parse_config({"learning_rate": 1, "tis_cap": 2, "lora": {"rank": 4, "target_modules": ["q_proj"]}})
    assert config.learning_rate == 1.0 and isinstance(config.learning_rate, float)
    assert config.tis_cap == 2.0
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
    ],
)
def test_parse_config_rejects_unknown_keys_wrong_types_and_values(overrides, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        parse_config(overrides)
