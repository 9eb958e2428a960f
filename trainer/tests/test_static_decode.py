"""The static decode step (static_decode.py): fixed shapes, tensor-indexed cache writes, padded batch
buckets. On CPU it runs eagerly and must give what the dynamic step gives: the same greedy tokens,
logprobs within float32 rounding, seeded samples that do not depend on the batch. On CUDA the same step
is captured as CUDA graphs (the last test, skipped here); a capture that fails falls back with one line."""
import json
import re
import time
from types import SimpleNamespace

import pytest
import torch

from atk_trainer.errors import HttpError
from atk_trainer.model import decoder
from atk_trainer.model.attention_cache import AttentionCache, LayerCache
from atk_trainer.model.modeling import random_policy
from atk_trainer.serve.control import ControlApi
from atk_trainer.serve.decoders import BuiltinDecoder
from atk_trainer.serve.engine_api import EngineApi
from atk_trainer.serve.engine import Engine
from atk_trainer.serve.kv_cache import KVCache
from atk_trainer.serve.sampling_params import SamplingParams
from atk_trainer.serve.static_decode import CudaGraphs, StaticDecodeStep, _StepCache, bucket, decode_step_for
from test_decoders import CONFIG, CONFIGS, SLIDING, check
from test_row_sampling import counting_host_reads
from tiny import TINY_CONFIG

PROMPTS = [[1, 2, 3], [5, 6, 7, 8, 9, 10, 11], [4], [9, 9, 9, 9], [30, 31], [12, 13, 14, 15, 16]]


def test_buckets_pad_to_1_2_4_then_multiples_of_8():
    assert [bucket(n) for n in (1, 2, 3, 4, 5, 8, 9, 17, 64, 65, 256)] == [1, 2, 4, 4, 8, 8, 16, 24, 64, 72, 256]


def test_graphs_are_picked_on_cuda_only_and_when_asked():
    assert decode_step_for(torch.device("cuda", 0), True) == "graphs"
    assert decode_step_for(torch.device("cuda", 0), False) == "dynamic"
    assert decode_step_for(torch.device("cpu"), True) == "dynamic"


def test_the_dynamic_and_the_static_cache_are_what_the_models_forward_asks_for():
    cache = KVCache(layers=2, batch=3, kv_heads=1, head_dim=4, device="cpu", dtype=torch.float32)
    step = _StepCache(cache, 2, torch.zeros(1, dtype=torch.long), torch.ones(2, 1, dtype=torch.bool))
    for attention_cache in (cache, step):
        assert isinstance(attention_cache, AttentionCache)
        assert isinstance(attention_cache.layer(1), LayerCache)


def test_load_model_takes_cuda_graphs_and_keeps_the_dynamic_step_on_cpu(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(TINY_CONFIG))
    engine = Engine()
    control = ControlApi(engine, EngineApi(engine))
    try:
        with pytest.raises(HttpError, match="cuda_graphs: expected bool"):
            control.load_model(
                {"path": str(tmp_path), "init": "random", "device": "cpu", "train": {"cuda_graphs": "yes"}}
            )
        control.load_model({"path": str(tmp_path), "init": "random", "device": "cpu", "train": {"cuda_graphs": True}})
        assert control.trainer.config.cuda_graphs and engine.decode_step == "dynamic"
    finally:
        engine.close()


def run_engine(policy, decode_step, requests, stagger_s=0.003, engines=None):
    """Completions of `requests` ((prompt, SamplingParams)), submitted a few ms apart so later ones
    join a batch that is decoding, from an engine with this decode step (appended to `engines`)."""
    engine = Engine(max_batch=8)
    if engines is not None:
        engines.append(engine)
    engine.set_policy(policy, decode_step=decode_step)
    engine.start()
    try:
        submitted = []
        for prompt, params in requests:
            submitted.append(engine.submit(prompt, params))
            time.sleep(stagger_s)
        return [r.wait(60) for r in submitted]
    finally:
        engine.close()


@CONFIGS
def test_static_engine_gives_the_dynamic_engines_greedy_tokens_and_logprobs(config):
    policy = random_policy(config, seed=4)
    requests = [
        (p, SamplingParams(max_tokens=12 + 3 * i, temperature=0, ignore_eos=True, logprobs=2))
        for i, p in enumerate(PROMPTS)
    ]
    dynamic = run_engine(policy, "dynamic", requests)
    static = run_engine(policy, "static", requests)
    for (d,), (s,) in zip(dynamic, static):
        assert s.token_ids == d.token_ids
        assert s.logprobs == pytest.approx(d.logprobs, abs=1e-5)
        for dt, st in zip(d.top_logprobs, s.top_logprobs):
            assert st.keys() == dt.keys() and list(st.values()) == pytest.approx(list(dt.values()), abs=1e-5)


def test_static_engine_seeded_samples_do_not_depend_on_the_batch():
    policy = random_policy(CONFIG, seed=5)
    seeded = SamplingParams(max_tokens=20, temperature=1.0, top_k=20, seed=1234, ignore_eos=True)
    (alone,) = run_engine(policy, "static", [([3, 1, 4, 1, 5], seeded)])[0]
    others = [(p, SamplingParams(max_tokens=10 + i, temperature=0.8, ignore_eos=True)) for i, p in enumerate(PROMPTS)]
    batched = run_engine(policy, "static", others[:3] + [([3, 1, 4, 1, 5], seeded)] + others[3:])
    (dynamic,) = run_engine(policy, "dynamic", [([3, 1, 4, 1, 5], seeded)])[0]
    assert batched[3][0].token_ids == alone.token_ids == dynamic.token_ids
    assert batched[3][0].logprobs == pytest.approx(alone.logprobs, abs=1e-5)


class Shapes:
    """Records the shapes attention sees (keys and mask) at each forward of the model."""

    def __init__(self, monkeypatch):
        self.seen = []
        attention = decoder.attention

        def record(q, k, v, mask=None):
            self.seen.append((tuple(q.shape), tuple(k.shape), None if mask is None else tuple(mask.shape)))
            return attention(q, k, v, mask)

        monkeypatch.setattr(decoder, "attention", record)


@CONFIGS
@torch.no_grad()
def test_static_step_has_fixed_shapes_and_reads_no_host_state(config, monkeypatch):
    policy = random_policy(config, seed=6)
    step = StaticDecodeStep(policy.module)
    decoder = BuiltinDecoder(policy.module, step)
    prompts = PROMPTS[:3]  # 3 rows: bucket 4, one padding row
    logits = decoder.prefill(prompts, budget=30)
    seqs = [list(p) for p in prompts]
    shapes = Shapes(monkeypatch)
    for _ in range(25):
        tokens = [int(t) for t in logits.argmax(-1)]
        for seq, t in zip(seqs, tokens):
            seq.append(t)
        with counting_host_reads() as reads:
            logits = decoder.decode(tokens)
        assert reads == {}, reads
    capacity, D = decoder.cache.capacity, policy.module.config.head_dim
    assert set(shapes.seen) == {((4, 4, 1, D), (4, 2, capacity, D), (4, 1, 1, capacity))}  # one shape for 25 steps
    check(policy, logits, seqs)
    # The step proper sees keys, values and valid only: no slot count, no row count (what a graph replays).
    cache = decoder.cache
    inputs = torch.tensor(
        [seqs[0][-1], seqs[1][-1], seqs[2][-1], 0] + [len(s) - 1 for s in seqs] + [0] + [1, 1, 1, 0] + [cache.used - 1]
    )
    bare = SimpleNamespace(
        keys=[k.clone() for k in cache.keys], values=[v.clone() for v in cache.values], valid=cache.valid.clone()
    )
    bare.valid[:, cache.used - 1] = False  # as before the last step wrote it
    again = step.forward(bare, 4, inputs)[:3]
    assert torch.allclose(again, logits, atol=1e-6)


@torch.no_grad()
def test_compaction_keeps_the_cache_storage_in_place():
    policy = random_policy(SLIDING, seed=7)
    decoder = BuiltinDecoder(policy.module, StaticDecodeStep(policy.module))
    seqs = [list(p) for p in PROMPTS]
    logits = decoder.prefill(seqs, budget=20)

    def storage():
        return [t.data_ptr() for t in decoder.cache.keys + decoder.cache.values] + [decoder.cache.valid.data_ptr()]

    for step in range(12):
        tokens = [int(t) for t in logits.argmax(-1)]
        for seq, t in zip(seqs, tokens):
            seq.append(t)
        logits = decoder.decode(tokens)
        if step == 0:  # the first step grew the rows to the bucket (8) for its padding rows
            first = storage()
        if step in (3, 6):  # rows 0 and 2 leave, then another two: compacted (a quarter retired)
            keep = [i for i in range(len(seqs)) if i not in (0, 2)]
            decoder.keep(keep)
            seqs, logits = [seqs[i] for i in keep], logits[keep]
    assert decoder.cache.rows == 2
    assert storage() == first
    check(policy, logits, seqs)


@torch.no_grad()
@pytest.mark.skipif(torch.cuda.is_available(), reason="the capture fails for real only where torch has no CUDA")
def test_a_failed_capture_logs_one_line_and_decodes_with_the_dynamic_step(capsys):
    # torch without CUDA cannot instantiate CUDAGraph: the real failure path of a capture. (A CPU model
    # is refused graphs up front, so the graphs are attached here as if the model were on CUDA.)
    policy = random_policy(CONFIG, seed=8)
    step = StaticDecodeStep(policy.module)
    step.graphs, step.enabled = CudaGraphs(), True
    decoder = BuiltinDecoder(policy.module, step)
    seqs = [list(p) for p in PROMPTS[:2]]
    logits = decoder.prefill(seqs, budget=10)
    for i in range(4):
        tokens = [int(t) for t in logits.argmax(-1)]
        for seq, t in zip(seqs, tokens):
            seq.append(t)
        logits = decoder.decode(tokens)
        check(policy, logits, seqs)  # eager, then the failed capture step's own (eager) result, then dynamic
        assert step.enabled == (i == 0)  # a bucket is captured at its second step (CudaGraphs.CAPTURE_AT)
    lines = capsys.readouterr().out.splitlines()
    # The exception's class is torch's to choose (RuntimeError; AcceleratorError in a CUDA build without a GPU).
    assert len(lines) == 1 and re.search(r"CUDA graphs off \(capture failed: \w+Error: \S", lines[0])
    assert step.graphs is None and not step.enabled


def test_a_model_off_cuda_gets_no_graphs_and_one_line_saying_why(capsys):
    step = StaticDecodeStep(random_policy(CONFIG, seed=9).module, capture=True)
    assert step.graphs is None and not step.enabled
    assert "CUDA graphs off (the model is on cpu, graphs capture CUDA work only)" in capsys.readouterr().out


def test_torch_without_cuda_graphs_logs_one_line_and_keeps_the_dynamic_step(monkeypatch, capsys):
    monkeypatch.delattr(torch.cuda, "graph")
    step = StaticDecodeStep(random_policy(CONFIG, seed=9).module, capture=True)
    assert step.graphs is None and not step.enabled
    assert "has no torch.cuda.graph" in capsys.readouterr().out


@CONFIGS
@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a CUDA device")
def test_cuda_graph_engine_gives_the_dynamic_engines_greedy_tokens(config):
    policy = random_policy(config, seed=10, device="cuda")
    requests = [(p, SamplingParams(max_tokens=16, temperature=0, ignore_eos=True)) for p in PROMPTS]
    dynamic = run_engine(policy, "dynamic", requests)
    engines = []
    graphs = run_engine(policy, "graphs", requests, engines=engines)
    for (d,), (g,) in zip(dynamic, graphs):
        assert g.token_ids == d.token_ids
        assert g.logprobs == pytest.approx(d.logprobs, abs=1e-4)
    step = engines[0]._static
    assert step.enabled and step.graphs.graphs  # captured and replayed, not fallen back
