#!/usr/bin/env python3
"""A Python Strands Agents agent, as in the guides, trained by atk through its gateway.

Needs `pip install 'strands-agents[openai]'` (`npm run test:agents` installs it with the pins in
examples/requirements-agents.txt and trains through this file). atk runs it once per episode (recipe
`agent.external.command: [python3, agent.py]`) with OPENAI_BASE_URL, OPENAI_API_KEY and ATK_EPISODE_ID
set and the task as JSON on stdin; it prints {"answer": ...} as its last stdout line.
The only change from an agent that calls OpenAI or vLLM is the base URL, read from the environment.
"""
import json
import os
import sys

from strands import Agent, tool
from strands.models.openai import OpenAIModel
from strands.types.exceptions import MaxTokensReachedException

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "external-python"))
from agent import calculator as evaluate  # noqa: E402  (the standard-library example's exact calculator)


@tool
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression exactly: numbers, + - * / % ** and parentheses (write percentages as /100). Returns the number.

    Args:
        expression: The expression, e.g. 12 * (3 + 4)
    """
    return evaluate(expression)


def main() -> None:
    task = json.load(sys.stdin)
    model = OpenAIModel(
        client_args={"api_key": os.environ["OPENAI_API_KEY"], "base_url": os.environ["OPENAI_BASE_URL"]},
        model_id="policy",  # the gateway serves one model whatever the name
    )
    # No callback handler: Strands would print the streamed reply to stdout, and the last stdout line is the result.
    agent = Agent(model=model, tools=[calculator], system_prompt=task.get("system_prompt"), callback_handler=None)
    try:
        answer = str(agent(task["prompt"])).strip()
    except MaxTokensReachedException:
        # A reply cut at the recipe's agent.max_new_tokens (finish_reason "length"): Strands raises, and the
        # episode ends with the cut text as its answer, as the built-in agent's would.
        last = agent.messages[-1]["content"] if agent.messages else []
        answer = "".join(block.get("text", "") for block in last).strip()
    print(json.dumps({"answer": answer}))


if __name__ == "__main__":
    main()
