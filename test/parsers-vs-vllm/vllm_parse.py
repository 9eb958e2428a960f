"""Reads model outputs with vLLM's own tool-call parsers, for the differential test against atk's
(test/parsers-vs-vllm/run.ts). Runs in the vLLM venv's Python; reads one JSON object from stdin:

    {"tokenizer": DIR, "formats": {NAME: {"parser": VLLM_NAME, "tokens": [SPECIAL, ...]}},
     "cases": [{"id": ID, "format": NAME, "text": TEXT, "tools": [OPENAI TOOL, ...]}]}

and writes one JSON line per case: {"id", "calls": [{"name", "arguments"}], "content"} with the
arguments parsed from vLLM's JSON string (the raw string where it is not JSON), or {"id", "error"}
where vLLM's parser raised. The tokenizer is DIR's with each format's special tokens added (vLLM's
parsers look their markers up in the vocabulary). gpt-oss (parser "openai") is read from token ids
of the harmony encoding, as vLLM serves it."""
import json
import sys

from transformers import AutoTokenizer
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
from vllm.tool_parsers import ToolParserManager


def main() -> None:
    job = json.load(sys.stdin)
    tokenizers = {}
    parsers = {}
    for case in job["cases"]:
        spec = job["formats"][case["format"]]
        try:
            calls, content = parse(spec, case, job["tokenizer"], tokenizers, parsers)
            out = {"id": case["id"], "calls": calls, "content": content}
        except Exception as e:  # noqa: BLE001 - a parser that raises is a result of the comparison
            out = {"id": case["id"], "error": f"{type(e).__name__}: {e}"[:300]}
        sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()


def parse(spec, case, base, tokenizers, parsers):
    request = ChatCompletionRequest(
        model="m", messages=[{"role": "user", "content": "x"}], tools=case.get("tools") or None
    )
    if spec["parser"] == "openai":
        return harmony(case["text"], request, tokenizers, spec)
    key = (spec["parser"], tuple(spec.get("tokens", [])), json.dumps(case.get("tools"), sort_keys=True))
    parser = parsers.get(key)
    if parser is None:
        tokenizer = tokenizer_with(base, spec.get("tokens", []), tokenizers)
        parser = ToolParserManager.get_tool_parser(spec["parser"])(tokenizer)
        # The engine parsers reset themselves for each output (and take ~0.5 s to build); the others keep
        # state across calls (Granite 4's stays inside a call after an unterminated one), so each output gets
        # a new one.
        if hasattr(parser, "_reset"):
            parsers[key] = parser
    result = parser.extract_tool_calls(case["text"], request)
    calls = [{"name": c.function.name, "arguments": arguments(c.function.arguments)} for c in result.tool_calls]
    return (calls if result.tools_called else []), result.content


def harmony(text, request, tokenizers, spec):
    from openai_harmony import HarmonyEncodingName, load_harmony_encoding
    from vllm.parser.harmony import HarmonyParser

    encoding = tokenizers.setdefault("harmony", load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS))
    tokenizer = tokenizer_with(spec["tokenizer"], [], tokenizers)
    HarmonyParser.tool_parser_cls = ToolParserManager.get_tool_parser("openai")
    parser = HarmonyParser(tokenizer, request.tools)
    ids = encoding.encode(text, allowed_special="all")
    _, content, calls = parser.parse(text, request, enable_auto_tools=True, model_output_token_ids=ids)
    return [{"name": c.name, "arguments": arguments(c.arguments)} for c in calls or []], content


def tokenizer_with(base, tokens, cache):
    key = (base, tuple(tokens))
    if key not in cache:
        tokenizer = AutoTokenizer.from_pretrained(base)
        if tokens:
            tokenizer.add_special_tokens({"additional_special_tokens": list(tokens)})
        cache[key] = tokenizer
    return cache[key]


def arguments(raw):
    try:
        return json.loads(raw)
    except (TypeError, ValueError):
        return raw


if __name__ == "__main__":
    main()
