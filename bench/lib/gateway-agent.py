# The bench's external agent: standard library only, calls `add` until the model answers (at most
# MAX_TURNS model calls, from argv), sending every reply back unchanged.
import http.client, json, os, sys, urllib.parse

max_turns = int(sys.argv[1])
task = json.load(sys.stdin)
tools = [{"type": "function", "function": {"name": "add", "description": "Add two numbers", "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}}]
messages = [{"role": "system", "content": "You are a careful calculator."}, {"role": "user", "content": task["prompt"]}]
base = urllib.parse.urlsplit(os.environ["OPENAI_BASE_URL"])
connection = http.client.HTTPConnection(base.netloc)  # one connection for the episode (keep-alive), as HTTP clients do
for _ in range(max_turns):
    body = json.dumps({"model": "policy", "messages": messages, "tools": tools}).encode()
    connection.request("POST", base.path + "/chat/completions", body, {"content-type": "application/json", "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]})
    message = json.load(connection.getresponse())["choices"][0]["message"]
    messages.append(message)
    if not message.get("tool_calls"):
        break
    for call in message["tool_calls"]:
        args = json.loads(call["function"]["arguments"])
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps({"sum": args["a"] + args["b"]})})
print(json.dumps({"answer": messages[-1].get("content") or ""}))
