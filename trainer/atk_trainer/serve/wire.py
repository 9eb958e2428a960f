"""The shapes that cross the HTTP boundary (trainer/PROTOCOL.md): what a handler receives before it is
parsed, and what each route answers. Handlers take `Body` (unparsed JSON: they must check it, see
errors.expect_object) and return one of the replies below, which server.py writes as JSON."""
from __future__ import annotations

from typing import Dict, List, Mapping, Optional, TypedDict, Union

Json = Union[None, bool, int, float, str, List["Json"], Dict[str, "Json"]]
Body = Json  # a request body as parsed by json.loads, not yet checked
JsonObject = Dict[str, Json]  # a body known to be an object (errors.expect_object)
Metrics = Dict[str, float]
Reply = Union[None, str, Mapping[str, object]]  # None: an empty 200; str: text/plain; else one of the TypedDicts below


# -- /control ---------------------------------------------------------------------------------------
class HealthReply(TypedDict):
    status: str
    model_loaded: bool
    policy_version: int
    pid: int


class LoadModelReply(TypedDict):
    model: str  # the name completions must use
    backend: str
    device: str
    parameters: int
    trainable_parameters: int
    policy_version: int
    # as set, or as chosen when the config left it unset (8192 on CPU, from free memory on CUDA)
    micro_batch_tokens: int


class TrainStepReply(TypedDict):
    policy_version: int
    metrics: Metrics


class CheckpointReply(TypedDict):
    """What save and load_checkpoint answer: where, and the counters the checkpoint holds."""

    dir: str
    policy_version: int
    step: int


class LogprobsReply(TypedDict):
    policy_version: int
    logprobs: List[Optional[float]]  # log p(token_ids[t] | token_ids[:t]); None at t = 0, which nothing predicts


class ShutdownReply(TypedDict):
    status: str


# -- /v1 (the vLLM/OpenAI subset) --------------------------------------------------------------------
class ModelCard(TypedDict):
    id: str
    object: str
    created: int
    owned_by: str
    root: Optional[str]
    parent: Optional[str]
    max_model_len: int
    permission: List[Json]


class ModelList(TypedDict):
    object: str
    data: List[ModelCard]


class ChoiceLogprobs(TypedDict):
    text_offset: List[int]
    token_logprobs: List[float]
    tokens: List[str]  # "token_id:<id>", as vLLM writes them with return_tokens_as_token_ids
    top_logprobs: List[Dict[str, float]]


class CompletionChoice(TypedDict):
    index: int
    text: str
    logprobs: Optional[ChoiceLogprobs]
    finish_reason: str
    stop_reason: Optional[int]
    # with prompt_logprobs 0: None for the first token, then {"<id>": {logprob, rank, decoded_token}} per position
    prompt_logprobs: Optional[List[Optional[Dict[str, Json]]]]
    prompt_token_ids: Optional[List[int]]
    token_ids: Optional[List[int]]


class PromptTokensDetails(TypedDict):
    cached_tokens: int  # prompt tokens whose keys and values came from the prefix cache (vLLM's field)


class Usage(TypedDict):
    prompt_tokens: int
    total_tokens: int
    completion_tokens: int
    prompt_tokens_details: PromptTokensDetails


class CompletionReply(TypedDict):
    id: str
    object: str
    created: int
    model: str
    choices: List[CompletionChoice]
    usage: Usage
    policy_version: Union[int, List[int]]  # atk's addition: the version(s) that sampled these choices


class RpcReply(TypedDict):
    results: List[Json]  # one entry per worker, as vLLM answers
