"""The tokenizer files of a Hugging Face directory (tokenizer.json, tokenizer_config.json with the chat
template, generation_config.json) rebuilt from a GGUF file's `tokenizer.*` metadata.

llama.cpp keeps the vocabulary, the merges (byte-level BPE) or scores (SentencePiece), the token types and
the special ids, but only a name for the pre-tokenizer (`tokenizer.ggml.pre`): the split each name stands
for is written out below as the Hugging Face tokenizers library spells it for the same models, and a name
not listed is refused rather than guessed, since a wrong split changes every token id.
"""
from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Tuple

# llama.cpp's token types (gguf.TokenType)
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6

GPT2_SPLIT = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
TEKKEN_SPLIT = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?"
    r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def _byte_level(use_regex: bool) -> Dict[str, Any]:
    return {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": use_regex}


def _split_then_bytes(pattern: str) -> Dict[str, Any]:
    split = {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False}
    return {"type": "Sequence", "pretokenizers": [split, _byte_level(False)]}


# tokenizer.ggml.pre -> (normalizer, pre_tokenizer) of the models llama.cpp gives that name
PRE_TOKENIZERS: Dict[str, Tuple[Optional[Dict[str, Any]], Dict[str, Any]]] = {
    "default": (None, _byte_level(True)),
    "gpt-2": (None, _byte_level(True)),
    "smollm": (
        None,
        {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True}, _byte_level(True)]},
    ),
    "starcoder": (
        None,
        {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": True}, _byte_level(True)]},
    ),
    "llama-bpe": (None, _split_then_bytes(LLAMA3_SPLIT)),
    "qwen2": ({"type": "NFC"}, _split_then_bytes(QWEN2_SPLIT)),
    "deepseek-r1-qwen": ({"type": "NFC"}, _split_then_bytes(QWEN2_SPLIT)),
    "tekken": (None, _split_then_bytes(TEKKEN_SPLIT)),
}


class GgufImportError(ValueError):
    """A GGUF file atk cannot turn into a model directory exactly (the message names the file and why)."""


def tokenizer_files(meta: Any, config: Mapping[str, Any]) -> Dict[str, str]:
    """{file name: text} for tokenizer.json, tokenizer_config.json and generation_config.json; `meta` is
    gguf_import.Metadata (get/has/int/str and `path`)."""
    kind = meta.get("tokenizer.ggml.model")
    tokens: List[str] = list(meta.get("tokenizer.ggml.tokens") or [])
    if not tokens:
        raise GgufImportError(f"{meta.path}: no tokenizer.ggml.tokens; the GGUF holds no tokenizer")
    types: List[int] = [int(t) for t in (meta.get("tokenizer.ggml.token_type") or [NORMAL] * len(tokens))]
    if kind == "gpt2":
        tokenizer = _byte_level_bpe(meta, tokens, types)
        add_bos_default = False
    elif kind == "llama":
        tokenizer = _sentencepiece_bpe(meta, tokens, types)
        add_bos_default = True
    else:
        raise GgufImportError(
            f"{meta.path}: tokenizer.ggml.model {kind!r} is not one atk rebuilds (gpt2: byte-level BPE; "
            "llama: SentencePiece BPE)"
        )
    special = {
        name: tokens[meta.int(f"tokenizer.ggml.{key}_token_id")]
        for name, key in (("bos", "bos"), ("eos", "eos"), ("pad", "padding"), ("unk", "unknown"))
        if meta.has(f"tokenizer.ggml.{key}_token_id") and meta.int(f"tokenizer.ggml.{key}_token_id") < len(tokens)
    }
    add_bos = bool(meta.get("tokenizer.ggml.add_bos_token", add_bos_default))
    add_eos = bool(meta.get("tokenizer.ggml.add_eos_token", False))
    tokenizer["post_processor"] = _post_processor(kind, add_bos, special.get("bos"), tokens)
    tokenizer_config: Dict[str, Any] = {
        "add_bos_token": add_bos,
        "add_eos_token": add_eos,
        "added_tokens_decoder": {
            str(t["id"]): {k: v for k, v in t.items() if k != "id"} for t in tokenizer["added_tokens"]
        },
        **{f"{name}_token": special.get(name) for name in ("bos", "eos", "pad", "unk")},
        "clean_up_tokenization_spaces": False,
        "model_max_length": int(config["max_position_embeddings"]),
        "tokenizer_class": "PreTrainedTokenizerFast" if kind == "gpt2" else "LlamaTokenizerFast",
    }
    template = _chat_template(meta)
    if template is not None:
        tokenizer_config["chat_template"] = template
    generation = {
        key: config[key] for key in ("bos_token_id", "eos_token_id", "pad_token_id") if config.get(key) is not None
    }
    return {
        "tokenizer.json": json.dumps(tokenizer, ensure_ascii=False, indent=2) + "\n",
        "tokenizer_config.json": json.dumps(tokenizer_config, ensure_ascii=False, indent=2) + "\n",
        "generation_config.json": json.dumps(generation, indent=2) + "\n",
    }


def _added_tokens(tokens: List[str], types: List[int]) -> List[Dict[str, Any]]:
    """Control, unknown and user-defined tokens, which the tokenizer matches whole before it splits text."""
    return [
        {
            "id": i,
            "content": token,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": kind == USER_DEFINED,
            "special": kind != USER_DEFINED,
        }
        for i, (token, kind) in enumerate(zip(tokens, types))
        if kind in (UNKNOWN, CONTROL, USER_DEFINED)
    ]


def _byte_level_bpe(meta: Any, tokens: List[str], types: List[int]) -> Dict[str, Any]:
    pre = meta.get("tokenizer.ggml.pre", "default")
    if pre not in PRE_TOKENIZERS:
        raise GgufImportError(
            f"{meta.path}: tokenizer.ggml.pre {pre!r} is not a pre-tokenizer atk knows "
            f"({', '.join(sorted(PRE_TOKENIZERS))}); its split of text into words is not in the file"
        )
    normalizer, pre_tokenizer = PRE_TOKENIZERS[pre]
    merges = [m.split(" ", 1) for m in meta.get("tokenizer.ggml.merges") or []]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": _added_tokens(tokens, types),
        "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": pre == "llama-bpe",  # Llama 3's tokenizer.json sets it: a whole word in the vocab wins
            "vocab": {token: i for i, token in enumerate(tokens)},
            "merges": merges,
        },
    }


def _sentencepiece_bpe(meta: Any, tokens: List[str], types: List[int]) -> Dict[str, Any]:
    """SentencePiece BPE (Llama 2, Mistral 7B) as transformers' LlamaConverter writes it: merges recovered
    from the pieces' scores (a pair merges in the order of its merged piece's score), byte fallback for
    <0xNN> pieces, spaces as U+2581 with one prepended when llama.cpp adds a space prefix."""
    scores = [float(s) for s in (meta.get("tokenizer.ggml.scores") or [0.0] * len(tokens))]
    vocab = {token: i for i, token in enumerate(tokens)}
    merges: List[Tuple[str, str, float]] = []
    for piece, score in zip(tokens, scores):
        local = [
            (piece[:k], piece[k:], score) for k in range(1, len(piece)) if piece[:k] in vocab and piece[k:] in vocab
        ]
        merges.extend(sorted(local, key=lambda m: (vocab[m[0]], vocab[m[1]])))
    merges.sort(key=lambda m: (m[2], len(m[0]), len(m[1])), reverse=True)
    unknown = next((t for t, k in zip(tokens, types) if k == UNKNOWN), None)
    prefix = bool(meta.get("tokenizer.ggml.add_space_prefix", True))
    replace = {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}
    normalizer = {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"}, replace]}
    decoders: List[Dict[str, Any]] = [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
        {"type": "ByteFallback"},
        {"type": "Fuse"},
    ]
    if prefix:
        decoders.append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": _added_tokens(tokens, types),
        "normalizer": normalizer if prefix else replace,
        "pre_tokenizer": None,
        "post_processor": None,
        "decoder": {"type": "Sequence", "decoders": decoders},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": unknown,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": True,
            "byte_fallback": True,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": [[left, right] for left, right, _ in merges],
        },
    }


def _post_processor(kind: str, add_bos: bool, bos: Optional[str], tokens: List[str]) -> Optional[Dict[str, Any]]:
    """What `tokenizer(text)` adds: the BOS token where the model wants one (the chat template writes
    its own), and for byte-level BPE the offsets' byte-level trimming."""
    steps: List[Dict[str, Any]] = []
    if kind == "gpt2":
        steps.append({"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True})
    if add_bos and bos is not None:
        single = [{"SpecialToken": {"id": bos, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}]
        pair = single + [{"SpecialToken": {"id": bos, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}]
        ids = {bos: {"id": bos, "ids": [tokens.index(bos)], "tokens": [bos]}}
        steps.append({"type": "TemplateProcessing", "single": single, "pair": pair, "special_tokens": ids})
    if not steps:
        return None
    return steps[0] if len(steps) == 1 else {"type": "Sequence", "processors": steps}


def _chat_template(meta: Any) -> Any:
    """`tokenizer.chat_template`, with llama.cpp's named ones (`tokenizer.chat_template.<name>`, e.g.
    tool_use) as transformers' list of {name, template}; None when the file has none."""
    default = meta.get("tokenizer.chat_template")
    named = {
        key[len("tokenizer.chat_template.") :]: meta.get(key)
        for key in meta.fields
        if key.startswith("tokenizer.chat_template.") and key != "tokenizer.chat_templates"
    }
    if not named:
        return default
    listed = [{"name": "default", "template": default}] if default is not None else []
    return listed + [{"name": name, "template": text} for name, text in sorted(named.items())]
