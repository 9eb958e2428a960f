"""The shared protocol fixtures (trainer/protocol/*.json, also read by vitest) match what the trainer
takes and returns."""
import json
import os

from atk_trainer.train.batch import build_batch
from atk_trainer.train.config import config_dict, parse_config
from atk_trainer.train.train import Trainer
from tiny import tiny_policy

PROTOCOL = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "protocol")


def fixture(name):
    with open(os.path.join(PROTOCOL, name)) as f:
        return json.load(f)


def test_load_model_request_train_section_parses_as_train_config():
    config = parse_config(fixture("load_model.request.json")["train"])
    assert (config.learning_rate, config.total_steps, config.lora) == (2e-4, 100, None)


def test_objective_train_configs_parse_with_their_policy_loss_clip_and_mismatch():
    # The same file vitest builds from recipes (src/trainer/train-config.test.ts).
    for case in fixture("train_config.objectives.json")["cases"]:
        train = case["train"]
        config = parse_config(train)
        assert (config.loss, config.policy_loss, config.loss_aggregation) == (
            train["loss"],
            train["policy_loss"],
            train["loss_aggregation"],
        )
        assert (config.clip_low, config.clip_high, config.dual_clip, config.kl_coef, config.kl_estimator) == (
            train["clip_low"],
            train["clip_high"],
            train["dual_clip"],
            train["kl_coef"],
            train["kl_estimator"],
        )
        mismatch = None if config.mismatch is None else config_dict(config)["mismatch"]
        assert mismatch == train["mismatch"]


def test_train_step_request_parses_as_a_batch():
    batch = build_batch(fixture("train_step.request.json"), "pg", "token-mean", 8192)
    assert (batch.loss, batch.tokens, batch.sequences) == ("pg", 5, 2)


def test_trainer_returns_the_fixtures_response_shapes(tmp_path):
    trainer = Trainer(tiny_policy(), parse_config(fixture("load_model.request.json")["train"]))
    expected = fixture("train_step.response.json")
    metrics = trainer.step(fixture("train_step.request.json"))
    assert sorted(metrics) == sorted(expected["metrics"])
    assert metrics["policy_version"] == expected["policy_version"]
    saved = trainer.save(str(tmp_path / "step-00001"))
    assert sorted(saved) == sorted(fixture("checkpoint.response.json"))
    assert {k: v for k, v in saved.items() if k != "dir"} == {"policy_version": 1, "step": 1}


def test_trainer_logprobs_have_the_fixtures_shape():
    trainer = Trainer(tiny_policy(), parse_config({}))
    ids = [t % 32 for t in fixture("logprobs.request.json")["token_ids"]]  # the tiny model's vocabulary is 32
    reply = {"policy_version": trainer.policy_version, "logprobs": [None, *trainer.sequence_logprobs(ids)]}
    expected = fixture("logprobs.response.json")
    assert sorted(reply) == sorted(expected) and len(reply["logprobs"]) == len(expected["logprobs"]) == len(ids)
    assert reply["logprobs"][0] is None and all(isinstance(lp, float) and lp < 0 for lp in reply["logprobs"][1:])
