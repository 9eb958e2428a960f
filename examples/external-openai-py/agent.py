#!/usr/bin/env python3
"""A function-calling agent written with the official openai client, trained by atk through its gateway.

Needs `pip install openai` (`npm run test:agents` installs it with the pins in examples/requirements-agents.txt).
atk runs it once per episode (recipe `agent.external.command: [python3, agent.py]`) with OPENAI_BASE_URL,
OPENAI_API_KEY and ATK_EPISODE_ID set and the task as JSON on stdin; it prints {"answer": ...} as its last
stdout line. `OpenAI()` reads the base URL and key from the environment, so this file is what would call
OpenAI or vLLM unchanged.
"""
import json
import os
import sys

from openai import OpenAI

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "external-python"))
from agent import CALCULATOR, MAX_TURNS, calculator  # noqa: E402  (the standard-library example's tool)


def main() -> None:
    task = json.load(sys.stdin)
    client = OpenAI()
    messages = [{"role": "system", "content": task["system_prompt"]}] if task.get("system_prompt") else []
    messages.append({"role": "user", "content": task["prompt"]})
    answer = ""
    for _ in range(MAX_TURNS):
        message = (
            client.chat.completions.create(model="policy", messages=messages, tools=[CALCULATOR]).choices[0].message
        )
        # The reply object goes back as it came, as OpenAI's guide does: the client serialises it.
        messages.append(message)
        if not message.tool_calls:
            answer = message.content or ""
            break
        for call in message.tool_calls:
            try:
                expression = json.loads(call.function.arguments).get("expression", "")
            except (json.JSONDecodeError, AttributeError):
                expression = ""
            messages.append({"role": "tool", "tool_call_id": call.id, "content": calculator(str(expression))})
    print(json.dumps({"answer": answer}))


if __name__ == "__main__":
    main()
