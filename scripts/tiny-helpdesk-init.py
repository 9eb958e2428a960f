"""Initial weights of models/tiny-helpdesk, from tiny-arith (run after scripts/make-tiny-helpdesk.ts).

  PYTHONPATH=trainer /usr/bin/python3 scripts/tiny-helpdesk-init.py

tiny-arith already copies digits from the user's message into a tool call; a help-desk model must copy
an order id the same way. Warm-started from random weights, the help-desk model had not learnt to use
its context at all after 5,000 conversations; started from tiny-arith's transformer it copied order
ids after ~2,500 (docs/helpdesk.md). Every transformer weight is copied (both models are 4 layers of
width 128); the embedding of each token both vocabularies share (the 256 bytes, common merges, the
specials) is copied, and each other merged token's is the mean of its symbols' embeddings.
"""

import json
import os

from atk_trainer.model.safetensors_io import load_file, save_file

MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models")
SOURCE = os.path.join(MODELS, "tiny-arith")
TARGET = os.path.join(MODELS, "tiny-helpdesk")


def vocab(directory):
    """Token string -> id, the added (special) tokens included."""
    with open(os.path.join(directory, "tokenizer.json")) as f:
        tokenizer = json.load(f)
    ids = dict(tokenizer["model"]["vocab"])
    ids.update({a["content"]: a["id"] for a in tokenizer["added_tokens"]})
    return ids


def main():
    weights = load_file(os.path.join(SOURCE, "model.safetensors"))
    key = next(k for k in weights if "embed_tokens" in k)
    source = weights[key]  # (V_arith, H)
    known, wanted = vocab(SOURCE), vocab(TARGET)
    with open(os.path.join(TARGET, "config.json")) as f:
        config = json.load(f)
    assert config["hidden_size"] == source.shape[1], "tiny-helpdesk must be as wide as tiny-arith"
    embeddings = source.new_empty(config["vocab_size"], source.shape[1])  # (V_helpdesk, H)
    for token, i in wanted.items():
        if token in known:
            embeddings[i] = source[known[token]]
        else:
            parts = [known[symbol] for symbol in token if symbol in known]
            embeddings[i] = source[parts].mean(0) if parts else source.mean(0)
    weights[key] = embeddings
    save_file({k: v.contiguous() for k, v in weights.items()}, os.path.join(TARGET, "model.safetensors"))
    print(f"models/tiny-helpdesk: {len(weights)} tensors from tiny-arith, {len(wanted)} embeddings")


if __name__ == "__main__":
    main()
