"""BuiltinDecoder: rows retire and join in any order and every running row still gets the logits of a
full forward pass over its own sequence (retired rows stay in the cache, masked, until compaction)."""
import random

import torch

from atk_trainer.decoders import BuiltinDecoder
from atk_trainer.modeling import random_policy

CONFIG = {
    "model_type": "qwen2", "vocab_size": 40, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 256, "tie_word_embeddings": False,
}


@torch.no_grad()
def test_decoder_returns_full_forward_logits_while_rows_retire_and_join():
    policy = random_policy(CONFIG, seed=7)
    rng = random.Random(0)
    decoder = BuiltinDecoder(policy.module)
    running = []  # token sequences of the running rows, in the decoder's row order
    retired_in_cache = []  # cache rows left idle after each keep(): exercises the masked path and compaction

    def check(logits, seqs):
        assert logits.shape[0] == len(seqs)
        for row, seq in zip(logits, seqs):
            full = policy.logits(torch.tensor([seq]))[0, -1]
            assert torch.allclose(row, full, atol=1e-5), (seq, (row - full).abs().max())

    def join(count, longer=False):
        prompts = [[rng.randrange(40) for _ in range(rng.randint(1, 12))] for _ in range(count)]
        if longer:  # longer than every running row: the others get masked slots before their next token
            prompts[0] = [rng.randrange(40) for _ in range(decoder.cache.used + 5)]
        check(decoder.prefill(prompts), prompts)  # the new rows' logits, after each prompt's last token
        running[:] = running + prompts

    join(6)
    for step in range(150):
        if step % 6 == 4:
            join(rng.randint(1, 3), longer=step == 10)
        tokens = [rng.randrange(40) for _ in running]
        for seq, token in zip(running, tokens):
            seq.append(token)
        check(decoder.decode(tokens), running)
        if step % 4 == 2 and len(running) > 1:  # retire the oldest row or any other
            gone = 0 if step % 8 == 2 else rng.randrange(len(running))
            keep = [i for i in range(len(running)) if i != gone]
            decoder.keep(keep)
            running[:] = [running[i] for i in keep]
            retired_in_cache.append(decoder.cache.batch - len(running))
    assert max(retired_in_cache) > 0 and min(retired_in_cache) == 0  # idle rows existed and were compacted away
    assert decoder.cache.used < 150  # 150 decode steps: slots of retired rows were dropped, not kept forever
    decoder.keep([])
    assert decoder.cache is None
