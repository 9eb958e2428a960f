#!/usr/bin/env python3
"""A LangChain agent (ChatOpenAI with a bound tool), trained by atk through its gateway.

Needs `pip install langchain-openai` (`npm run test:agents` installs it with the pins in
examples/requirements-agents.txt). atk runs it once per episode (recipe `agent.external.command:
[python3, agent.py]`) with OPENAI_BASE_URL, OPENAI_API_KEY and ATK_EPISODE_ID set and the task as JSON on
stdin; it prints {"answer": ...} as its last stdout line.
"""
import json
import os
import sys

from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "external-python"))
from agent import MAX_TURNS  # noqa: E402
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
    # The base URL is passed on: LangChain reads OPENAI_API_BASE, not the OPENAI_BASE_URL atk sets.
    model = ChatOpenAI(model="policy", base_url=os.environ["OPENAI_BASE_URL"]).bind_tools([calculator])
    messages = [SystemMessage(task["system_prompt"])] if task.get("system_prompt") else []
    messages.append(HumanMessage(task["prompt"]))
    answer = ""
    for _ in range(MAX_TURNS):
        reply = model.invoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            answer = reply.text  # the reply's text parts joined (a property since langchain-core 1.0)
            break
        for call in reply.tool_calls:
            try:
                output = calculator.invoke(call["args"])
            except Exception as error:  # arguments that do not fit the tool's schema: the model sees why
                output = f"Error: {error}"
            messages.append(ToolMessage(output, tool_call_id=call["id"]))
    print(json.dumps({"answer": answer}))


if __name__ == "__main__":
    main()
