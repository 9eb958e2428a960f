#!/usr/bin/env python3
"""A tool-using agent atk can train, written with Python's standard library only.

atk runs it once per episode (recipe `agent.external.command: [python3, agent.py]`) with
OPENAI_BASE_URL, OPENAI_API_KEY and ATK_EPISODE_ID in its environment and the task as JSON on stdin
({"id", "prompt", "answer", "data", "system_prompt"?}). It talks to the model through atk's
OpenAI-compatible gateway, runs its calculator tool itself, and prints its result as the last stdout
line: {"answer": "..."}. Nothing here is atk-specific but the environment variables: point
OPENAI_BASE_URL at any OpenAI-compatible server and it runs the same way.
"""
import ast
import http.client
import json
import operator
import os
import sys
import urllib.parse
from fractions import Fraction

MAX_TURNS = 3  # call the calculator, read its result, answer (as the recipe's agent.max_turns)

CALCULATOR = {
    "type": "function",
    "function": {
        "name": "calculator",
        "description": "Evaluate an arithmetic expression exactly: numbers, + - * / % ** and parentheses "
        "(write percentages as /100). Returns the number.",
        "parameters": {
            "type": "object",
            "properties": {"expression": {"type": "string", "description": "The expression, e.g. 12 * (3 + 4)"}},
            "required": ["expression"],
        },
    },
}

OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


def calculator(expression: str) -> str:
    """Exact arithmetic on fractions; integers print as integers, others with up to 10 decimals."""
    def value(node: ast.AST) -> Fraction:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return Fraction(str(node.value))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            return -value(node.operand) if isinstance(node.op, ast.USub) else value(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
            left, right = value(node.left), value(node.right)
            if isinstance(node.op, ast.Pow) and (right.denominator != 1 or abs(right) > 100):
                raise ValueError("exponent must be a whole number up to 100")
            return OPERATORS[type(node.op)](left, right)
        raise ValueError(f"unsupported expression: {ast.dump(node)[:60]}")

    try:
        result = value(ast.parse(expression.replace(",", ""), mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError) as error:
        return f"Error: {error}"
    if result.denominator == 1:
        return str(result.numerator)
    return f"{float(round(result, 10)):.10f}".rstrip("0").rstrip(".")


def connect() -> tuple:
    """One connection for the whole episode (HTTP keep-alive) and the path of the chat endpoint: a new
    connection per call costs the server about half a millisecond of CPU each time (npm run bench gateway)."""
    base = urllib.parse.urlsplit(os.environ["OPENAI_BASE_URL"].rstrip("/"))
    kind = http.client.HTTPSConnection if base.scheme == "https" else http.client.HTTPConnection
    return kind(base.netloc, timeout=120), base.path + "/chat/completions"


def chat(connection: http.client.HTTPConnection, path: str, messages: list) -> dict:
    """One Chat Completions call; returns the assistant message."""
    body = json.dumps({"model": os.environ.get("OPENAI_MODEL", "policy"), "messages": messages, "tools": [CALCULATOR]})
    headers = {"content-type": "application/json", "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]}
    try:
        connection.request("POST", path, body.encode(), headers)
        response = connection.getresponse()
    except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
        # The server closed the connection while it sat idle (a long tool call): the request never
        # reached it, so send it again on a new connection.
        connection.close()
        connection.request("POST", path, body.encode(), headers)
        response = connection.getresponse()
    payload = response.read()
    if response.status != 200:
        # The gateway answers refusals in OpenAI's error shape; stderr ends up in atk's trajectory file.
        sys.exit(f"model call failed: HTTP {response.status}: {payload.decode(errors='replace')}")
    return json.loads(payload)["choices"][0]["message"]


def main() -> None:
    task = json.load(sys.stdin)
    messages = [{"role": "system", "content": task["system_prompt"]}] if task.get("system_prompt") else []
    messages.append({"role": "user", "content": task["prompt"]})
    answer = ""
    connection, path = connect()
    for _ in range(MAX_TURNS):
        message = chat(connection, path, messages)
        messages.append(message)  # the reply goes back unchanged, so atk appends only what follows it
        calls = message.get("tool_calls") or []
        if not calls:
            answer = message.get("content") or ""
            break
        for call in calls:
            try:
                expression = json.loads(call["function"]["arguments"]).get("expression", "")
            except (json.JSONDecodeError, AttributeError):
                expression = ""
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": calculator(str(expression))})
    print(json.dumps({"answer": answer}))


if __name__ == "__main__":
    main()
