"""A tiny random qwen2 policy and batches for fast trainer tests."""
import torch

from atk_trainer.train.loss import token_logprobs
from atk_trainer.model.modeling import random_policy

TINY_CONFIG = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "vocab_size": 32,
    "hidden_size": 16,
    "intermediate_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "max_position_embeddings": 64,
    "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0,
    "tie_word_embeddings": True,
    "torch_dtype": "float32",
}


def tiny_policy(seed=0):
    return random_policy(dict(TINY_CONFIG), seed=seed)


@torch.no_grad()
def behaviour_logprobs(policy, token_ids):
    """The policy's own logprobs for one sequence, as an engine sampling from it would report them."""
    ids = torch.tensor([token_ids])
    return token_logprobs(policy.logits(ids), ids)[0].tolist()


def pg_batch(policy, sequences):
    """A pg batch from (token_ids, prompt_len, advantage) with on-policy behaviour logprobs."""
    out = []
    for ids, prompt, advantage in sequences:
        mask = [0] * prompt + [1] * (len(ids) - prompt)
        logprobs = [lp * m for lp, m in zip(behaviour_logprobs(policy, ids), mask)]
        out.append({"token_ids": ids, "loss_mask": mask, "logprobs": logprobs, "advantage": advantage})
    return {"loss": "pg", "sequences": out}


FIXED_SEQUENCES = [
    ([1, 2, 3, 4, 5, 6, 7, 8], 3, 1.0),
    ([1, 9, 10, 11, 12], 2, -0.5),
    ([2, 3, 5, 7, 11, 13, 17], 4, 0.75),
    ([4, 4, 20, 21], 1, -1.25),
    ([30, 29, 28, 27, 26, 25], 2, 0.25),
]
