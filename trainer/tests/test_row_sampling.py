"""One engine sampling step for all running rows (serve/row_sampling.py): each row sampled by its own
settings and seed as if alone, top logprobs for those that ask, and one host synchronisation per step."""
import contextlib

import torch

from atk_trainer.serve.sampling_params import SamplingParams
from atk_trainer.serve.row_sampling import RowSampling
from atk_trainer.serve.sampling import LOGPROB_FLOOR, processed_logprobs, sample

PARAMS = [
    SamplingParams(temperature=0.0, logprobs=2),
    SamplingParams(temperature=0.8, top_k=4),
    SamplingParams(temperature=1.0, top_p=0.5, logprobs=0),
    SamplingParams(temperature=1.3),
]


def alone(logits, p, seed, step):
    """What a batch of one row returns for this row."""
    logp = processed_logprobs(
        logits.unsqueeze(0), torch.tensor([p.temperature]), torch.tensor([p.top_k]), torch.tensor([p.top_p])
    )
    token = sample(logp, torch.tensor([p.temperature == 0]), torch.tensor([seed]), torch.tensor([step]))
    return int(token), max(float(logp[0, token]), LOGPROB_FLOOR), logp[0]


@contextlib.contextmanager
def counting_host_reads():
    """Counts the Tensor methods that copy a value to the host (each one a synchronisation on a GPU)."""
    counts = {}
    names = ("tolist", "item", "__bool__", "__int__", "__float__", "cpu", "numpy")
    saved = {name: getattr(torch.Tensor, name) for name in names}

    def counted(name):
        def call(self, *args, **kwargs):
            counts[name] = counts.get(name, 0) + 1
            return saved[name](self, *args, **kwargs)

        return call

    for name in names:
        setattr(torch.Tensor, name, counted(name))
    try:
        yield counts
    finally:
        for name, method in saved.items():
            setattr(torch.Tensor, name, method)


def test_step_returns_each_rows_own_sample_as_if_alone_with_one_host_read():
    logits = torch.randn(len(PARAMS), 30, generator=torch.Generator().manual_seed(0))
    rows = RowSampling()
    seeds = [11, 12, 13, 14]
    rows.join(PARAMS, seeds, torch.device("cpu"))
    for step in range(3):
        with counting_host_reads() as counts:
            sampled = rows.step(logits, 0)
        assert counts == {"tolist": 1}
        for i, p in enumerate(PARAMS):
            token, logprob, logp = alone(logits[i], p, seeds[i], step)
            assert sampled.tokens[i] == token and abs(sampled.logprobs[i] - logprob) < 1e-6
            top_values, top_ids = logp.topk(2)
            assert sampled.top_ids[i] == top_ids.tolist()  # the most any row asked for; the engine cuts per row
            assert torch.allclose(torch.tensor(sampled.top_logprobs[i]), top_values.clamp(min=LOGPROB_FLOOR))
    assert sampled.tokens[0] == int(logits[0].argmax())  # greedy


def test_rows_keep_their_settings_and_steps_as_others_join_and_leave():
    logits = torch.randn(3, 30, generator=torch.Generator().manual_seed(1))
    rows = RowSampling()
    rows.join(PARAMS[1:2], [5], torch.device("cpu"))
    rows.step(logits[:1], 0)  # row 0 has sampled one token
    rows.join(PARAMS[3:4] + PARAMS[2:3], [6, 7], torch.device("cpu"))
    joined = rows.step(logits[1:], 1)  # only the new rows (a prefill's step)
    assert joined.tokens == [alone(logits[1], PARAMS[3], 6, 0)[0], alone(logits[2], PARAMS[2], 7, 0)[0]]
    rows.keep([0, 2])  # the middle row finished
    assert rows.steps.tolist() == [1, 1] and rows.seeds.tolist() == [5, 7]
    sampled = rows.step(logits[[0, 2]], 0)
    assert sampled.tokens == [alone(logits[0], PARAMS[1], 5, 1)[0], alone(logits[2], PARAMS[2], 7, 1)[0]]
    assert sampled.top_ids == [[], []]  # nobody asks for top logprobs any more
