"""Packed rows (pack_sequences: sequences end to end in one row, per-sequence positions, block-diagonal
causal mask) against padded rows: the same loss, metrics and gradients."""
import pytest
import torch

from atk_trainer.model.modeling import random_policy, segment_positions
from atk_trainer.model.decoder import block_causal_mask
from atk_trainer.train.batch import build_batch, pack_rows, packed_row_tokens
from atk_trainer.train.config import parse_config
from atk_trainer.train.train import Trainer
from tiny import FIXED_SEQUENCES, TINY_CONFIG, pg_batch, tiny_policy


def test_pack_rows_returns_first_fit_decreasing_rows_within_the_budget():
    assert pack_rows([8, 5, 7, 4, 6], 12) == [[0, 3], [2, 1], [4]]
    assert pack_rows([20, 3], 12) == [[0], [1]]  # longer than the budget: a row of its own


def test_segment_positions_restart_at_each_sequence():
    segments = torch.tensor([[0, 0, 0, 1, 1, 2, 2, 2, 2]])
    positions, starts = segment_positions(segments)
    assert positions.tolist() == [[0, 1, 2, 0, 1, 0, 1, 2, 3]]
    assert starts.tolist() == [[True, False, False, True, False, True, False, False, False]]
    mask = block_causal_mask(segments)[0, 0]
    assert mask[4].tolist() == [False, False, False, True, True, False, False, False, False]


def step_with_grads(policy, overrides, batch):
    # grad_clip out of the way: the gradients compared are the raw sums over micro-batches.
    trainer = Trainer(policy, parse_config({"learning_rate": 1e-2, "seed": 5, "grad_clip": 1e9, **overrides}))
    captured = {}
    real_step = trainer.optimizer.step

    def capture(*args, **kwargs):
        captured.update({n: p.grad.clone() for n, p in trainer.policy.module.named_parameters() if p.grad is not None})
        return real_step(*args, **kwargs)

    trainer.optimizer.step = capture
    return trainer.step(batch), captured


@pytest.mark.filterwarnings("ignore:Seems like `optimizer.step\\(\\)` has been overridden")
@pytest.mark.parametrize(
    "overrides",
    [
        {"loss_aggregation": "seq-mean-token-mean", "kl_coef": 0.1},
        {"loss_aggregation": "token-mean", "tis_cap": 2.0, "lora": {"rank": 4, "alpha": 8}},
    ],
)
def test_packed_step_returns_the_padded_loss_and_gradients(overrides):
    batch = pg_batch(tiny_policy(seed=3), FIXED_SEQUENCES)
    budget = {"micro_batch_tokens": 16}
    padded, padded_grads = step_with_grads(tiny_policy(seed=3), {**overrides, **budget}, batch)
    packed, packed_grads = step_with_grads(tiny_policy(seed=3), {**overrides, **budget, "pack_sequences": True}, batch)
    assert packed["padded_tokens"] == sum(len(ids) for ids, _, _ in FIXED_SEQUENCES) < padded["padded_tokens"]
    for key in ("loss", "entropy", "clip_fraction", "mismatch_mean", "grad_norm"):
        assert packed[key] == pytest.approx(padded[key], abs=1e-5), key
    assert packed_grads.keys() == padded_grads.keys() and packed_grads
    for name, grad in padded_grads.items():
        assert torch.allclose(packed_grads[name], grad, atol=1e-5, rtol=0), name


def test_packed_rows_respect_a_sliding_window():
    config = dict(TINY_CONFIG, use_sliding_window=True, sliding_window=3, max_window_layers=0)
    policy = random_policy(config, seed=4)
    ids = [[1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11]]
    padded = torch.tensor([ids[0], ids[1] + [0]])
    logp, _, _ = policy.token_stats(padded)
    packed, _, _ = policy.token_stats(torch.tensor([ids[0] + ids[1]]), segments=torch.tensor([[0] * 6 + [1] * 5]))
    assert torch.allclose(packed[0, :6], logp[0], atol=1e-6) and torch.allclose(packed[0, 6:], logp[1, :5], atol=1e-6)


def test_build_batch_packs_each_micro_batch_into_one_row_without_padding():
    batch = build_batch(
        pg_batch(tiny_policy(), FIXED_SEQUENCES), "pg", "token-mean", 16, pack_sequences=True, model_width=32
    )
    assert all(mb.input_ids.shape[0] == 1 and mb.segments.shape == mb.input_ids.shape for mb in batch.micro_batches)
    assert batch.padded_tokens == sum(len(ids) for ids, _, _ in FIXED_SEQUENCES)


def test_trainer_rejects_packing_where_it_cannot_mask():
    policy = tiny_policy()
    policy.backend = "transformers"
    with pytest.raises(ValueError, match="pack_sequences: packed rows need the builtin backend"):
        Trainer(policy, parse_config({"pack_sequences": True}))


def test_packed_rows_span_the_longest_sequence_or_the_model_width_within_the_micro_batch():
    # One 8192-token row of 80- to 150-token sequences cost a CPU step 40x the padded one (width 128).
    assert packed_row_tokens([80] * 100 + [150], 8192, 128) == 150
    assert packed_row_tokens([80] * 100, 8192, 896) == 896
    assert packed_row_tokens([80, 20], 200, 896) == 200  # never past the micro-batch
    assert packed_row_tokens([300, 20], 200, 896) == 300  # a sequence longer than the micro-batch gets its row


@pytest.mark.filterwarnings("ignore:Seems like `optimizer.step\\(\\)` has been overridden")
def test_several_packed_rows_per_micro_batch_with_padding_return_the_padded_loss_and_gradients():
    # Row budget 14 (a model 14 wide): rows [8, 6] [7, 5] [4]; the first micro-batch holds two rows, the
    # second padded by 2 positions that form a segment of their own.
    batch = pg_batch(tiny_policy(seed=3), FIXED_SEQUENCES)
    packed_batch = build_batch(batch, "pg", "token-mean", 40, pack_sequences=True, model_width=14)
    first = packed_batch.micro_batches[0]
    assert first.input_ids.shape == (2, 14) and len(packed_batch.micro_batches) == 2
    assert first.segments[1].tolist() == [0] * 7 + [1] * 5 + [2, 2] and first.loss_mask[1, 12:].tolist() == [0, 0]
    overrides = {"micro_batch_tokens": 40, "loss_aggregation": "seq-mean-token-mean"}
    padded, padded_grads = step_with_grads(tiny_policy(seed=3), overrides, batch)
    narrow = tiny_policy(seed=3)
    narrow.config = {**narrow.config, "hidden_size": 14}  # what the trainer sizes its rows from
    packed, packed_grads = step_with_grads(narrow, {**overrides, "pack_sequences": True}, batch)
    assert packed["padded_tokens"] == 2 * 14 + 4
    for key in ("loss", "entropy", "clip_fraction", "mismatch_mean", "grad_norm"):
        assert packed[key] == pytest.approx(padded[key], abs=1e-5), key
    for name, grad in padded_grads.items():
        assert torch.allclose(packed_grads[name], grad, atol=1e-5, rtol=0), name
