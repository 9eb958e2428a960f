"""Hugging Face TRL's GRPOTrainer on atk's tasks, for `npm run bench algorithms` and `npm run bench real`.

Runs in the bench's own venv (bench/requirements-trl.txt), never in atk's trainer. Two commands:
  train: GRPO on the given prompts, in their order (one optimizer step per `tasks_per_step` prompts x `group_size`
         completions), then saves the model; prints {"seconds": ..., "train_seconds": ..., "samples": ...}.
  eval:  greedy first turn of each task, scored by `first_turn_call`; prints {"accuracy": ..., "tasks": ...}.
Both score the model's first turn as atk's reward does, by --scorer: first_turn_call (bench/lib/first-turn-call.ts: 1
when its first <tool_call> calls `calculator` with an expression whose value is the task's answer) or last_number
(atk's math_answer with no marked format: 1 when the last number of the text is the answer).
"""

import argparse
import ast
import json
import operator
import re
import sys
import time
from fractions import Fraction

STARTED = time.perf_counter()

TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


def evaluate(node):
    """The exact value of an arithmetic expression tree (numbers, + - * / % ** and parentheses, like atk's
    calculator); ValueError for anything else."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return Fraction(str(node.value))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = evaluate(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
        left, right = evaluate(node.left), evaluate(node.right)
        if isinstance(node.op, ast.Pow) and (right.denominator != 1 or abs(right) > 64):
            raise ValueError("exponent")
        return OPERATORS[type(node.op)](left, right)
    raise ValueError("not arithmetic")


def first_turn_call(text, answer):
    """1.0 when the first tool call in `text` is a calculator call whose expression evaluates to `answer`."""
    match = TOOL_CALL.search(text)
    if not match:
        return 0.0
    try:
        call = json.loads(match.group(1))
        expression = call["arguments"]["expression"]
        if call["name"] != "calculator" or not isinstance(expression, str):
            return 0.0
        return (
            1.0
            if evaluate(ast.parse(expression, mode="eval").body) == Fraction(answer)
            else 0.0
        )
    except (
        ValueError,
        TypeError,
        KeyError,
        SyntaxError,
        ZeroDivisionError,
        OverflowError,
        RecursionError,
    ):
        return 0.0


NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def last_number(text, answer):
    """1.0 when the last number in `text` equals `answer` exactly (commas, $ and typographic minus signs ignored, as
    atk's math_answer reads numbers)."""
    numbers = NUMBER.findall(text.replace("\u2212", "-").replace("$", ""))
    if not numbers:
        return 0.0
    try:
        return (
            1.0 if Fraction(numbers[-1].replace(",", "")) == Fraction(answer) else 0.0
        )
    except (ValueError, ZeroDivisionError):
        return 0.0


SCORERS = {"first_turn_call": first_turn_call, "last_number": last_number}


def read_tasks(path):
    with open(path, encoding="utf8") as f:
        return [json.loads(line) for line in f if line.strip()]


def render_prompts(tokenizer, tasks, tools_file):
    """Each task's first prompt, rendered with the model's chat template and the tool list as atk renders it; where
    atk's own prompt token ids are given, a prompt that tokenizes otherwise is an error, not a silent difference.
    """
    with open(tools_file, encoding="utf8") as f:
        tools = json.load(f)
    prompts = []
    for task in tasks:
        messages = [{"role": "user", "content": task["prompt"]}]
        prompt = tokenizer.apply_chat_template(
            messages, tools=tools or None, add_generation_prompt=True, tokenize=False
        )
        if (
            "atk_prompt_ids" in task
            and tokenizer(prompt)["input_ids"] != task["atk_prompt_ids"]
        ):
            raise SystemExit(
                f"trl_peer.py: the prompt of {task['prompt']!r} differs from atk's: {prompt!r}"
            )
        prompts.append(prompt)
    return prompts


def train(args):
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    import trl

    tasks = read_tasks(args.tasks)
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    prompts = render_prompts(tokenizer, tasks, args.tools)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)

    score = SCORERS[args.scorer]

    def reward(completions, answer, **_):
        return [score(c, a) for c, a in zip(completions, answer)]

    config = GRPOConfig(
        output_dir=args.out,
        seed=args.seed,
        use_cpu=True,
        max_steps=args.steps,
        per_device_train_batch_size=args.tasks_per_step * args.group_size,
        gradient_accumulation_steps=1,
        steps_per_generation=1,
        num_generations=args.group_size,
        shuffle_dataset=False,  # the prompts come in the order atk drew them
        learning_rate=args.lr,
        lr_scheduler_type="cosine",
        warmup_steps=0,
        weight_decay=0.0,
        max_grad_norm=1.0,
        # atk's grpo preset: group-std advantages, PPO clip [0.8, 1.28], token-mean over the batch, no KL, 1 update
        scale_rewards="group",
        epsilon=0.2,
        epsilon_high=0.28,
        loss_type="dapo",
        beta=0.0,
        num_iterations=1,
        temperature=args.temperature,
        top_p=1.0,
        top_k=0,
        max_completion_length=args.max_new_tokens,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
    )
    # atk's own samples of these tasks, scored here: the two rewards must agree for the comparison to mean anything
    atk_samples = [
        (s["completion_ids"], s["reward"], t["answer"])
        for t in tasks
        for s in t.get("atk_samples", [])
    ]
    agree = sum(
        score(tokenizer.decode(ids), answer) == r for ids, r, answer in atk_samples
    )
    dataset = Dataset.from_list(
        [{"prompt": p, "answer": t["answer"]} for p, t in zip(prompts, tasks)]
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=reward,
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
    )
    began = time.perf_counter()
    trainer.train()
    train_seconds = time.perf_counter() - began
    trainer.save_model(args.out)
    tokenizer.save_pretrained(args.out)
    rewards = [log["reward"] for log in trainer.state.log_history if "reward" in log]
    samples = args.steps * args.tasks_per_step * args.group_size
    figures = {
        "seconds": time.perf_counter() - STARTED,
        "train_seconds": train_seconds,
        "samples": samples,
    }
    figures.update(trl=trl.__version__, reward_agreement=[agree, len(atk_samples)])
    print(json.dumps({**figures, "rewards": rewards}))


def evaluate_model(args):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(args.threads)
    tasks = read_tasks(args.tasks)
    tokenizer = AutoTokenizer.from_pretrained(args.model, padding_side="left")
    prompts = render_prompts(tokenizer, tasks, args.tools)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32).eval()
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    scores = []
    for start in range(0, len(tasks), 64):
        batch = tasks[start : start + 64]
        inputs = tokenizer(
            prompts[start : start + 64], return_tensors="pt", padding=True
        )
        with torch.no_grad():
            out = model.generate(
                **inputs,
                do_sample=False,
                max_new_tokens=args.max_new_tokens,
                eos_token_id=eos,
                pad_token_id=tokenizer.pad_token_id,
            )
        texts = tokenizer.batch_decode(
            out[:, inputs["input_ids"].shape[1] :], skip_special_tokens=False
        )
        scores += [
            SCORERS[args.scorer](text, t["answer"]) for text, t in zip(texts, batch)
        ]
    print(json.dumps({"accuracy": sum(scores) / len(scores), "tasks": len(scores)}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    t = commands.add_parser("train")
    t.add_argument("--model", required=True)
    t.add_argument(
        "--tasks",
        required=True,
        help="JSONL of {prompt, answer, atk_prompt_ids}, in training order",
    )
    t.add_argument(
        "--tools",
        required=True,
        help="JSON of the tool list as atk gives the chat template",
    )
    t.add_argument("--out", required=True)
    t.add_argument("--steps", type=int, required=True)
    t.add_argument("--tasks-per-step", type=int, required=True)
    t.add_argument("--group-size", type=int, required=True)
    t.add_argument("--lr", type=float, required=True)
    t.add_argument("--temperature", type=float, default=1.0)
    t.add_argument("--max-new-tokens", type=int, required=True)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--threads", type=int, default=1)
    t.add_argument("--scorer", choices=sorted(SCORERS), default="first_turn_call")
    e = commands.add_parser("eval")
    e.add_argument("--model", required=True)
    e.add_argument("--tasks", required=True, help="JSONL of {prompt, answer}")
    e.add_argument("--tools", required=True)
    e.add_argument("--max-new-tokens", type=int, required=True)
    e.add_argument("--threads", type=int, default=1)
    e.add_argument("--scorer", choices=sorted(SCORERS), default="first_turn_call")
    args = parser.parse_args()
    train(args) if args.command == "train" else evaluate_model(args)


if __name__ == "__main__":
    sys.exit(main())
