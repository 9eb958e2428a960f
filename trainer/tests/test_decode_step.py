"""The built-in decoder's steady decode step: its KV cache is allocated at prefill for the prompts and
their whole token budget, so decode steps write in place, build only the valid-slot mask and read
nothing back to the host; the logits stay those of full forward passes."""
import torch

from atk_trainer.model.modeling import random_policy
from atk_trainer.serve.decoders import BuiltinDecoder
from test_decoders import CONFIG, LLAMA, MISTRAL, QWEN3, SLIDING, check
from test_row_sampling import counting_host_reads


@torch.no_grad()
def test_decode_steps_write_in_place_without_host_reads():
    for config in (CONFIG, SLIDING, QWEN3, LLAMA, MISTRAL):
        policy = random_policy(config, seed=3)
        decoder = BuiltinDecoder(policy.module)
        prompts = [[1, 2, 3, 4, 5, 6, 7], [8, 9], [10, 11, 12, 13]]
        budget = 80  # past the 64 spare slots a cache gets without a budget, and past 64 slots in use
        logits = decoder.prefill(prompts, budget)
        storage = decoder.cache.keys[0].data_ptr()
        seqs = [list(p) for p in prompts]
        for step in range(budget - 1):
            tokens = [int(t) for t in logits.argmax(-1)]
            for seq, t in zip(seqs, tokens):
                seq.append(t)
            with counting_host_reads() as counts:
                logits = decoder.decode(tokens)
            assert counts == {}, counts
            assert decoder.cache.keys[0].data_ptr() == storage  # no growth copy: the budget was reserved
        check(policy, logits, seqs)
