"""The trainer process over real HTTP on 127.0.0.1: the vLLM subset, the control API, errors and exits."""
import copy
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from atk_trainer.train import lora as lora_lib
from atk_trainer.train.config import LoraConfig
from atk_trainer.train.loss import token_logprobs
from atk_trainer.model.modeling import load_policy
from atk_trainer.model.safetensors_io import load_file, save_file

TRAINER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "vocab_size": 64,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 96,
    "tie_word_embeddings": True,
    "eos_token_id": 63,
}


def start_server(*args):
    env = {**os.environ, "PYTHONPATH": TRAINER_DIR, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "atk_trainer", "--port", "0", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    line = proc.stdout.readline()
    match = re.search(r"serving on (http://[\d.]+:\d+)", line)
    assert match, line
    return proc, match.group(1)


def call(url, path, body=None, method=None):
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    request = urllib.request.Request(url + path, data=data, method=method or ("POST" if data is not None else "GET"))
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            raw = r.read()
            return (
                r.status,
                json.loads(raw) if raw and r.headers["Content-Type"].startswith("application/json") else raw.decode(),
            )
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    model_dir = tmp_path_factory.mktemp("model")
    (model_dir / "config.json").write_text(json.dumps(CONFIG))
    proc, url = start_server()
    status, loaded = call(
        url,
        "/control/load_model",
        {
            "path": str(model_dir),
            "init": "random",
            "backend": "builtin",
            "device": "cpu",
            "dtype": "float32",
            "train": {"seed": 3, "learning_rate": 0.05},
        },
    )
    assert status == 200, loaded
    yield url, model_dir, loaded
    proc.terminate()
    proc.wait(10)


def completion(url, prompt, **params):
    body = {
        "model": "policy",
        "prompt": prompt,
        "max_tokens": 16,
        "temperature": 1.0,
        "top_p": 1.0,
        "top_k": -1,
        "n": 1,
        "logprobs": 0,
        "return_token_ids": True,
        "return_tokens_as_token_ids": True,
        "skip_special_tokens": False,
        "include_stop_str_in_output": True,
        "stream": False,
        **params,
    }
    return call(url, "/v1/completions", body)


def test_completions_logprobs_return_the_trainers_recompute_under_32_concurrent_requests(server, tmp_path):
    url, _, loaded = server
    assert call(url, "/control/save", {"dir": str(tmp_path / "ckpt")})[0] == 200
    policy = load_policy(str(tmp_path / "ckpt"), backend="builtin")  # the served weights, through a checkpoint
    prompts = [[(7 * i + j) % 60 + 1 for j in range(1 + i % 9)] for i in range(32)]
    with ThreadPoolExecutor(32) as pool:
        replies = list(pool.map(lambda i: completion(url, prompts[i], seed=i, max_tokens=12 + i % 10), range(32)))
    worst = 0.0
    for prompt, (status, reply) in zip(prompts, replies):
        assert status == 200, reply
        (choice,) = reply["choices"]
        tokens = choice["token_ids"]
        assert choice["prompt_token_ids"] == prompt and choice["logprobs"]["tokens"] == [
            f"token_id:{t}" for t in tokens
        ]
        ids = torch.tensor([prompt + tokens])
        with torch.no_grad():
            recomputed = token_logprobs(policy.logits(ids), ids)[0, len(prompt) :]
        worst = max(worst, max(abs(a - b) for a, b in zip(choice["logprobs"]["token_logprobs"], recomputed.tolist())))
    print(f"\nmax |engine logprob - trainer recompute| over 32 concurrent requests: {worst:.2e}")
    assert worst < 1e-4


def test_completions_returns_vllm_shapes_for_n_stop_and_top_logprobs(server):
    url = server[0]
    status, reply = completion(url, [[1, 2, 3], [4, 5]], n=2, seed=9, logprobs=3, max_tokens=5, stop_token_ids=[7])
    assert status == 200
    assert [c["index"] for c in reply["choices"]] == [0, 1, 2, 3]
    assert [c["prompt_token_ids"] for c in reply["choices"]] == [[1, 2, 3], [1, 2, 3], [4, 5], [4, 5]]
    for c in reply["choices"]:
        lp = c["logprobs"]
        assert len(lp["token_logprobs"]) == len(c["token_ids"]) == len(lp["top_logprobs"]) <= 5
        for token, top, value in zip(c["token_ids"], lp["top_logprobs"], lp["token_logprobs"]):
            assert top[f"token_id:{token}"] == value and 3 <= len(top) <= 4
        if c["finish_reason"] == "stop":
            assert c["token_ids"][-1] in (7, 63) and c["stop_reason"] in (7, None)
        else:
            assert (c["finish_reason"], len(c["token_ids"])) == ("length", 5)
    assert reply["usage"]["prompt_tokens"] == 5 and reply["object"] == "text_completion"
    status, greedy = completion(url, [1, 2, 3], temperature=0, logprobs=None, max_tokens=4, ignore_eos=True)
    assert greedy["choices"][0]["logprobs"] is None and len(greedy["choices"][0]["token_ids"]) == 4


def test_completions_report_the_prompt_tokens_taken_from_the_prefix_cache(server):
    url = server[0]
    head = [(5 * i + 11) % 60 for i in range(40)]
    completion(url, head, temperature=0, max_tokens=3)
    # A rewrite that keeps the first 30 tokens: vLLM's usage field counts the ones not computed again.
    _, rewritten = completion(url, head[:30] + [61, 62], temperature=0, max_tokens=3)
    assert rewritten["usage"]["prompt_tokens"] == 32
    assert rewritten["usage"]["prompt_tokens_details"] == {"cached_tokens": 30}


def test_malformed_requests_return_4xx_and_the_server_keeps_serving(server):
    url = server[0]
    cases = [
        (call(url, "/v1/completions", b"{not json"), 400, "not JSON"),
        (completion(url, "some text"), 400, "token IDs"),
        (completion(url, [1, 2, 99]), 400, r"prompt\[2\]"),
        (completion(url, [1], max_tokens=0), 400, "max_tokens"),
        (completion(url, [1], top_p=1.5), 400, "top_p"),
        (completion(url, [1], stream=True), 400, "stream"),
        (completion(url, [1], max_tokens=200), 400, "maximum context length is 96"),
        (completion(url, [1], model="atk-no-such-model"), 404, "atk-no-such-model"),
        (call(url, "/v1/nowhere", {}), 404, "no such route"),
        (call(url, "/v1/completions"), 405, "use POST"),
    ]
    for (status, reply), expected, pattern in cases:
        assert status == expected and set(reply["error"]) == {"message", "type", "code"}, reply
        assert re.search(pattern, reply["error"]["message"]), reply
    status, reply = call(
        url, "/control/train_step", {"loss": "pg", "sequences": [{"token_ids": [1, 2], "loss_mask": [0]}]}
    )
    assert status == 400 and "loss_mask" in reply["error"] and reply["traceback"] is None
    assert call(url, "/control/load_model", {"path": "/nonexistent"})[0] == 400
    assert call(url, "/control/save", {"dir": 5})[0] == 400
    status, reply = call(url, "/control/load_checkpoint", {"dir": "/nonexistent/step-00001"})
    assert (
        status == 400
        and "FileNotFoundError" in reply["error"]
        and "not a checkpoint written by atk_trainer" in reply["error"]
    )
    status, reply = call(url, "/control/load_model", {"path": "/nonexistent", "backend": "builtin", "lr": 1})
    assert status == 400 and reply["error"].startswith("unknown key lr")
    assert completion(url, [1, 2])[0] == 200 and call(url, "/health")[0] == 200


def test_train_step_changes_the_served_weights_and_policy_version(server):
    url = server[0]
    prompt = [1, 2, 3]
    before = completion(url, prompt, temperature=0, max_tokens=3, ignore_eos=True)[1]
    version = call(url, "/control/health")[1]["policy_version"]
    tokens = prompt + before["choices"][0]["token_ids"]
    step = {"loss": "sft", "sequences": [{"token_ids": tokens, "loss_mask": [0, 0, 0, 1, 1, 1]}]}
    status, reply = call(url, "/control/train_step", step)
    assert status == 200 and reply["policy_version"] == version + 1 == reply["metrics"]["policy_version"]
    after = completion(url, prompt, temperature=0, max_tokens=3, ignore_eos=True)[1]
    assert (before["policy_version"], after["policy_version"]) == (version, version + 1)
    # SFT on its own greedy output makes those tokens more likely.
    assert sum(after["choices"][0]["logprobs"]["token_logprobs"]) > sum(
        before["choices"][0]["logprobs"]["token_logprobs"]
    )
    assert call(url, "/control/health")[1] == {
        "status": "ok",
        "model_loaded": True,
        "policy_version": version + 1,
        "pid": call(url, "/control/health")[1]["pid"],
    }


def served_base(url, directory):
    """The weights the server serves now, through a checkpoint of them."""
    assert call(url, "/control/save", {"dir": str(directory)})[0] == 200
    return load_policy(str(directory), backend="builtin")


def greedy_logprobs(url, prompt, model):
    reply = completion(url, prompt, model=model, temperature=0, max_tokens=4, ignore_eos=True)[1]
    choice = reply["choices"][0]
    return prompt + choice["token_ids"], choice["logprobs"]["token_logprobs"]


@torch.no_grad()
def recompute(policy, ids, prompt_len):
    t = torch.tensor([ids])
    return token_logprobs(policy.logits(t), t)[0, prompt_len:].tolist()


def test_a_lora_adapter_is_served_under_its_name_as_base_plus_adapter(server, tmp_path):
    url, _, loaded = server
    assert loaded["model"] == "policy" and loaded["backend"] == "builtin"
    base = served_base(url, tmp_path / "base")
    tuned = copy.deepcopy(base)
    config = LoraConfig(rank=4, alpha=8.0, target_modules=["q_proj", "v_proj", "down_proj"])
    lora_lib.apply_lora(tuned.module, config, use_peft=False)
    torch.manual_seed(0)
    for layer in tuned.module.modules():
        if isinstance(layer, lora_lib.LoRALinear):
            torch.nn.init.normal_(layer.lora_B.weight, std=0.5)  # a trained adapter: B is no longer 0
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    lora_lib.write_adapter(tuned.module, config, str(tmp_path / "base"), str(adapter), save_file)

    status, text = call(url, "/v1/load_lora_adapter", {"lora_name": "policy@1", "lora_path": str(adapter)})
    assert (status, text) == (200, "Success: LoRA adapter 'policy@1' added successfully.")
    assert [m["id"] for m in call(url, "/v1/models")[1]["data"]] == ["policy", "policy@1"]
    prompt = [1, 2, 3]
    for model, policy in (("policy@1", tuned), ("policy", base)):
        ids, logprobs = greedy_logprobs(url, prompt, model)
        assert max(abs(a - b) for a, b in zip(logprobs, recompute(policy, ids, len(prompt)))) < 1e-5, model
    ids, logprobs = greedy_logprobs(url, prompt, "policy@1")
    assert max(abs(a - b) for a, b in zip(logprobs, recompute(base, ids, len(prompt)))) > 1e-2  # the adapter matters

    assert call(url, "/v1/load_lora_adapter", {"lora_name": "policy@1", "lora_path": str(adapter)})[0] == 400
    assert (
        call(url, "/v1/load_lora_adapter", {"lora_name": "policy@1", "lora_path": str(adapter), "load_inplace": True})[
            0
        ]
        == 200
    )
    assert call(url, "/v1/unload_lora_adapter", {"lora_name": "policy@1"})[0] == 200
    assert completion(url, prompt, model="policy@1")[0] == 404
    assert call(url, "/v1/unload_lora_adapter", {"lora_name": "policy@1"})[0] == 404
    assert call(url, "/reset_prefix_cache", {})[0] == 200


def test_an_adapter_that_does_not_fit_is_refused_with_the_reason(server, tmp_path):
    url = server[0]
    status, reply = call(url, "/v1/load_lora_adapter", {"lora_name": "x", "lora_path": str(tmp_path)})
    assert status == 400 and "adapter_config.json: no such file" in reply["error"]["message"]
    config = {"r": 4, "lora_alpha": 8}
    (tmp_path / "adapter_config.json").write_text(json.dumps(config))
    a, b = torch.zeros(4, 32), torch.zeros(32, 4)
    save_file(
        {
            "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight": torch.zeros(4, 31),
            "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight": b,
        },
        str(tmp_path / "adapter_model.safetensors"),
    )
    status, reply = call(url, "/v1/load_lora_adapter", {"lora_name": "x", "lora_path": str(tmp_path)})
    assert (
        status == 400
        and "has lora_A (4, 31) and lora_B (32, 4); with r=4 the layer needs (4, 32) and (32, 4)"
        in reply["error"]["message"]
    )
    save_file(
        {"base_model.model.model.layers.9.mlp.up_proj.lora_A.weight": a}, str(tmp_path / "adapter_model.safetensors")
    )
    status, reply = call(url, "/v1/load_lora_adapter", {"lora_name": "x", "lora_path": str(tmp_path)})
    assert status == 400 and "the model has no module 'model.layers.9.mlp.up_proj'" in reply["error"]["message"]
    assert [m["id"] for m in call(url, "/v1/models")[1]["data"]] == ["policy"]


def test_collective_rpc_without_a_worker_extension_names_the_missing_flag(server):
    status, reply = call(server[0], "/collective_rpc", {"method": "atk_weight_version"})
    assert status == 500 and "start the engine with --worker-extension-cls" in reply["error"]["message"]


def test_load_model_max_model_len_overrides_the_config_as_vllms_flag_does(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    proc, url = start_server()
    try:
        load = {"path": str(tmp_path), "init": "random", "backend": "builtin", "device": "cpu"}
        status, reply = call(url, "/control/load_model", {**load, "max_model_len": "long"})
        assert status == 400 and "max_model_len" in reply["error"]
        assert call(url, "/control/load_model", {**load, "max_model_len": 160})[0] == 200
        assert call(url, "/v1/models")[1]["data"][0]["max_model_len"] == 160
        status, reply = completion(url, list(range(1, 50)), max_tokens=100, ignore_eos=True)
        assert status == 200 and len(reply["choices"][0]["token_ids"]) == 100  # past the config's 96 positions
        assert completion(url, [1], max_tokens=160)[0] == 400
    finally:
        proc.terminate()
        proc.wait(10)


def test_sigterm_exits_cleanly():
    proc, url = start_server()
    assert call(url, "/control/health")[0] == 200
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(10) == 0
    assert "shutting down: signal 15" in proc.stdout.read()


def test_shutdown_and_parent_death_end_the_process():
    proc, url = start_server()
    for path in ("/control/train_step", "/control/save", "/control/load_checkpoint"):
        status, reply = call(url, path, {"dir": "/tmp/x"})
        assert status == 409 and reply["error"] == "no model loaded: POST /control/load_model first", path
    assert call(url, "/control/shutdown", {}) == (200, {"status": "shutting down"})
    assert proc.wait(10) == 0
    parent = subprocess.Popen(["sleep", "60"])
    proc, url = start_server("--parent-pid", str(parent.pid))
    assert call(url, "/health")[0] == 503  # up, but no model yet
    parent.kill()
    parent.wait()
    started = time.monotonic()
    assert proc.wait(10) == 0 and time.monotonic() - started < 5
    assert "parent process exited" in proc.stdout.read()


def test_parent_death_ends_the_process_when_its_output_pipe_is_gone_too():
    # A SIGKILLed atk also closes the pipe the trainer logs into: logging "shutting down" then fails
    # with EPIPE, which once killed the watcher thread and left the trainer running forever.
    parent = subprocess.Popen(["sleep", "60"])
    proc, url = start_server("--parent-pid", str(parent.pid))
    assert call(url, "/health")[0] == 503
    proc.stdout.close()
    parent.kill()
    parent.wait()
    assert proc.wait(10) == 0


def fixture(name):
    with open(os.path.join(TRAINER_DIR, "protocol", name)) as f:
        return json.load(f)


def shape(value):
    """Keys (recursively) and JSON types: what a fixture promises, without its made-up numbers (nor the
    sampled token ids that key top_logprobs)."""
    if isinstance(value, dict):
        return {re.sub(r"^token_id:\d+$", "token_id:N", k): shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return "number" if isinstance(value, (int, float)) and not isinstance(value, bool) else type(value).__name__


def test_engine_replies_have_the_protocol_fixtures_shapes(server):
    url = server[0]
    status, reply = call(url, "/v1/completions", fixture("completions.request.json"))
    expected = fixture("completions.response.json")
    assert status == 200
    assert shape(reply["choices"][1]) == shape(expected["choices"][1]) or shape(reply["choices"][1]) == shape(
        expected["choices"][0]
    )
    assert shape({**reply, "choices": []}) == shape({**expected, "choices": []})
    status, models = call(url, "/v1/models")
    assert shape(models) == shape(fixture("models.response.json"))
    status, error = completion(url, [1], model="atk-no-such-model")
    assert (status, error) == (404, fixture("engine_error.response.json"))


def test_a_weights_only_save_writes_what_an_engine_loads_and_is_no_checkpoint(server, tmp_path):
    url = server[0]
    status, reply = call(url, "/control/save", {"dir": str(tmp_path / "sync"), "weights_only": True})
    assert status == 200 and sorted(os.listdir(tmp_path / "sync")) == ["config.json", "model.safetensors"]
    status, reply = call(url, "/control/load_checkpoint", {"dir": str(tmp_path / "sync")})
    assert status == 400 and "not a checkpoint written by atk_trainer" in reply["error"]
    assert call(url, "/control/save", {"dir": str(tmp_path / "x"), "weights_only": "yes"})[0] == 400
    # In the dtype the engine serves: bf16 halves the bytes, and the engine would round to bf16 anyway.
    assert (
        call(url, "/control/save", {"dir": str(tmp_path / "bf16"), "weights_only": True, "dtype": "bfloat16"})[0] == 200
    )
    fp32, bf16 = (load_file(str(tmp_path / d / "model.safetensors")) for d in ("sync", "bf16"))
    assert {t.dtype for t in bf16.values()} == {torch.bfloat16}
    assert all(torch.equal(bf16[k], v.to(torch.bfloat16)) for k, v in fp32.items())
    assert json.loads((tmp_path / "bf16" / "config.json").read_text())["torch_dtype"] == "bfloat16"
    status, reply = call(url, "/control/save", {"dir": str(tmp_path / "y"), "dtype": "bfloat16"})
    assert status == 400 and "with weights_only true" in reply["error"]  # a resumable checkpoint keeps fp32 weights


def test_completions_prompt_logprobs_score_each_prompt_token_as_the_trainer_recomputes(server, tmp_path):
    url = server[0]
    assert call(url, "/control/save", {"dir": str(tmp_path / "ckpt")})[0] == 200
    policy = load_policy(str(tmp_path / "ckpt"), backend="builtin")
    prompt = [5, 9, 11, 2, 40, 7]
    status, reply = completion(url, prompt, max_tokens=1, prompt_logprobs=0)
    assert status == 200, reply
    scored = reply["choices"][0]["prompt_logprobs"]
    assert scored[0] is None and [list(entry) for entry in scored[1:]] == [[str(t)] for t in prompt[1:]]
    ids = torch.tensor([prompt])
    with torch.no_grad():
        expected = token_logprobs(policy.logits(ids), ids)[0, 1:].tolist()
    got = [entry[str(t)]["logprob"] for entry, t in zip(scored[1:], prompt[1:])]
    assert max(abs(a - b) for a, b in zip(got, expected)) < 1e-5
    assert scored[1][str(prompt[1])]["decoded_token"] == f"token_id:{prompt[1]}"
    status, reply = completion(url, prompt, max_tokens=1, prompt_logprobs=2)
    assert status == 400 and "prompt_logprobs" in reply["error"]["message"]
    status, reply = completion(url, prompt, max_tokens=1)
    assert reply["choices"][0]["prompt_logprobs"] is None


def test_control_logprobs_return_the_trainers_own_on_the_weights_the_engine_serves(server):
    url = server[0]
    ids = [5, 9, 11, 2, 40, 7, 7, 30]
    status, reply = call(url, "/control/logprobs", {"token_ids": ids})
    assert status == 200, reply
    version = call(url, "/control/health")[1]["policy_version"]
    assert reply["policy_version"] == version and reply["logprobs"][0] is None and len(reply["logprobs"]) == len(ids)
    # On one CPU the engine serves the trainer's own weights: its prompt logprobs are the same forward.
    scored = completion(url, ids, max_tokens=1, prompt_logprobs=0)[1]["choices"][0]["prompt_logprobs"]
    engine = [entry[str(t)]["logprob"] for entry, t in zip(scored[1:], ids[1:])]
    assert max(abs(a - b) for a, b in zip(engine, reply["logprobs"][1:])) < 1e-6
    assert call(url, "/control/logprobs", {"token_ids": [5]})[0] == 400
    status, reply = call(url, "/control/logprobs", {"token_ids": [5, 64]})
    assert status == 400 and reply["error"] == "token_ids[1]: expected a token ID in [0, 64), got 64"
