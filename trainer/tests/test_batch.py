import pytest
import torch

from atk_trainer.train.batch import BatchError, build_batch, pack


def seq(n, trained, advantage=1.0):
    """n tokens, the last `trained` of them generated."""
    mask = [0] * (n - trained) + [1] * trained
    return {
        "token_ids": list(range(1, n + 1)),
        "loss_mask": mask,
        "logprobs": [-0.5 * m for m in mask],
        "advantage": advantage,
    }


def test_pack_returns_longest_first_groups_within_the_budget():
    # lengths 5, 3, 8, 2 with budget 10: [8] (2*8 > 10), [5, 3] (2*5 = 10), [2].
    assert pack([5, 3, 8, 2], 10, min_fill=0) == [[2], [0, 1], [3]]


def test_pack_returns_an_oversized_sequence_alone():
    assert pack([20, 2], 10) == [[0], [1]]


def test_pack_returns_groups_whose_shortest_sequence_is_within_min_fill_of_the_longest():
    lengths = [143, 80, 79, 140, 60, 82, 118]
    groups = pack(lengths, 10_000)
    assert groups == [[0, 3, 6], [5, 1, 2], [4]]  # 118 >= 0.8 * 143; 60 < 0.8 * 82
    assert sum(len(g) * lengths[g[0]] for g in groups) < len(lengths) * max(lengths) * 0.75


def test_build_batch_returns_padded_tensors_trimmed_after_the_last_trained_token():
    body = {
        "loss": "pg",
        "sequences": [
            {
                "token_ids": [5, 6, 7, 8],
                "loss_mask": [0, 1, 0, 0],
                "logprobs": [0, -1, 0, 0],
                "advantages": [0, 2, 0, 0],
            },
            {"token_ids": [1, 2, 3], "loss_mask": [0, 1, 1], "logprobs": [0, -2, -3], "advantage": -1},
        ],
    }
    batch = build_batch(body, "pg", "token-mean", micro_batch_tokens=100, min_fill=0)
    assert (batch.loss, batch.tokens, batch.sequences, len(batch.micro_batches)) == ("pg", 3, 2, 1)
    mb = batch.micro_batches[0]
    assert mb.input_ids.tolist() == [[1, 2, 3], [5, 6, 0]]  # longest first; the 2nd lost its trailing context
    assert mb.loss_mask.tolist() == [[0, 1, 1], [0, 1, 0]]
    assert mb.behaviour_logprobs.tolist() == [[0, -2, -3], [0, -1, 0]]
    assert mb.advantages.tolist() == [[-1, -1, -1], [0, 2, 0]]
    assert torch.allclose(mb.weights, mb.loss_mask / 3)


def test_build_batch_returns_weights_that_sum_the_same_however_it_is_split():
    body = {"sequences": [seq(9, 4), seq(6, 2), seq(5, 4), seq(3, 1)]}
    for mode in ("token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"):
        whole = build_batch(body, "pg", mode, micro_batch_tokens=1000, min_fill=0)
        split = build_batch(body, "pg", mode, micro_batch_tokens=10, min_fill=0)  # [9], [6], [5, 3]
        assert len(whole.micro_batches) == 1 and len(split.micro_batches) == 3
        total = lambda b: sum(float(mb.weights.sum()) for mb in b.micro_batches)  # noqa: E731
        assert total(split) == pytest.approx(total(whole))


def test_build_batch_returns_sft_defaults_for_logprobs_and_advantages():
    body = {"loss": "sft", "sequences": [{"token_ids": [1, 2, 3], "loss_mask": [0, 1, 1]}]}
    mb = build_batch(body, "pg", "token-mean", 100).micro_batches[0]
    assert mb.behaviour_logprobs.tolist() == [[0, 0, 0]] and mb.advantages.tolist() == [[1, 1, 1]]


@pytest.mark.parametrize(
    "body, message",
    [
        ([], "batch: expected an object"),
        ({"sequences": []}, "batch.sequences: expected a non-empty list"),
        ({"sequences": [seq(3, 1)], "extra": 1}, "unknown key 'extra'"),
        ({"loss": "ppo", "sequences": [seq(3, 1)]}, "batch.loss: expected pg or sft"),
        ({"sequences": [{**seq(3, 1), "loss_mask": [0, 1]}]}, r"sequences\[0\].loss_mask: expected 3 values"),
        ({"sequences": [{**seq(3, 1), "loss_mask": [1, 1, 1]}]}, "first token has no context"),
        ({"sequences": [{**seq(3, 1), "loss_mask": [0, 0, 0]}]}, "no trained token"),
        ({"sequences": [{**seq(3, 1), "token_ids": [1, 2.5, 3]}]}, "expected integers"),
        ({"sequences": [{**seq(3, 1), "logprobs": [0, 0, float("nan")]}]}, "expected finite numbers"),
        (
            {"sequences": [{k: v for k, v in seq(3, 1).items() if k != "logprobs"}]},
            "logprobs: required for the pg loss",
        ),
        ({"sequences": [{k: v for k, v in seq(3, 1).items() if k != "advantage"}]}, "advantage .* required"),
        ({"sequences": [{**seq(3, 1), "advantages": [0, 0, 1]}]}, "not both"),
    ],
)
def test_build_batch_rejects_malformed_bodies(body, message):
    with pytest.raises(BatchError, match=message):
        build_batch(body, "pg", "token-mean", 100)
