"""The official OpenAI (Chat Completions and Responses) and Anthropic SDKs as clients of the
toolwire gateway, run by tests/gateway_sdk.rs.

For each model named in argv[2] (comma-separated) on the gateway at argv[1], each client wire, streamed and not:
turn one (tool calls as the SDK assembles them), then turn two with the tool results (sent the
way each SDK's users send them back). Prints one JSON object: the calls per case and the second
turn's text. With argv[3] == "429", expects every call to raise the SDK's RateLimitError and
prints the status and retry-after each saw.
"""

import json
import sys

import anthropic
import openai

BASE, MODELS = sys.argv[1], sys.argv[2].split(",")
MODEL = MODELS[0]
MODE = sys.argv[3] if len(sys.argv) > 3 else "calls"

oa = openai.OpenAI(base_url=BASE + "/v1", api_key="unused", max_retries=0)
an = anthropic.Anthropic(base_url=BASE, api_key="unused", max_retries=0)

PARAMS = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
}
QUESTION = "Weather in Paris and Tokyo?"
CHAT_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": PARAMS}}]
RESP_TOOLS = [{"type": "function", "name": "get_weather", "parameters": PARAMS}]
ANT_TOOLS = [{"name": "get_weather", "input_schema": PARAMS}]


def chat(stream, MODEL):
    messages = [{"role": "user", "content": QUESTION}]
    if stream:
        with oa.chat.completions.stream(model=MODEL, messages=messages, tools=CHAT_TOOLS) as s:
            for _ in s:
                pass
            message = s.get_final_completion().choices[0].message
    else:
        message = oa.chat.completions.create(
            model=MODEL, messages=messages, tools=CHAT_TOOLS
        ).choices[0].message
    calls = [
        {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
        for c in message.tool_calls or []
    ]
    messages.append(message.model_dump(exclude_none=True))
    for c in calls:
        messages.append({"role": "tool", "tool_call_id": c["id"], "content": "sunny"})
    second = oa.chat.completions.create(model=MODEL, messages=messages, tools=CHAT_TOOLS)
    return calls, second.choices[0].message.content


def responses(stream, MODEL):
    items = [{"role": "user", "content": QUESTION}]
    if stream:
        with oa.responses.stream(model=MODEL, input=items, tools=RESP_TOOLS) as s:
            for _ in s:
                pass
            response = s.get_final_response()
    else:
        response = oa.responses.create(model=MODEL, input=items, tools=RESP_TOOLS)
    calls = [
        {"id": o.call_id, "name": o.name, "arguments": o.arguments}
        for o in response.output
        if o.type == "function_call"
    ]
    items += [o.model_dump(exclude_none=True) for o in response.output]
    for c in calls:
        items.append({"type": "function_call_output", "call_id": c["id"], "output": "sunny"})
    second = oa.responses.create(model=MODEL, input=items, tools=RESP_TOOLS)
    return calls, second.output_text


def messages(stream, MODEL):
    history = [{"role": "user", "content": QUESTION}]
    if stream:
        with an.messages.stream(
            model=MODEL, max_tokens=256, messages=history, tools=ANT_TOOLS
        ) as s:
            for _ in s:
                pass
            message = s.get_final_message()
    else:
        message = an.messages.create(
            model=MODEL, max_tokens=256, messages=history, tools=ANT_TOOLS
        )
    uses = [b for b in message.content if b.type == "tool_use"]
    calls = [
        {"id": b.id, "name": b.name, "arguments": json.dumps(b.input, separators=(",", ":"))}
        for b in uses
    ]
    history.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]})
    history.append(
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": b.id, "content": "sunny"} for b in uses],
        }
    )
    second = an.messages.create(model=MODEL, max_tokens=256, messages=history, tools=ANT_TOOLS)
    return calls, "".join(b.text for b in second.content if b.type == "text")


CASES = {"chat": chat, "responses": responses, "messages": messages}


def settings(model):
    """Each SDK sends sampling and reasoning settings in its own names; the header the gateway
    answers with (toolwire-dropped) is returned per wire."""
    hi = [{"role": "user", "content": "hi"}]
    seen = {}
    r = oa.chat.completions.with_raw_response.create(
        model=model, messages=hi, top_p=0.5, stop=["END"], seed=7, presence_penalty=0,
        frequency_penalty=0, n=1, reasoning_effort="high", max_completion_tokens=64000,
    )
    r.parse()
    seen["chat"] = r.headers.get("toolwire-dropped")
    r = oa.responses.with_raw_response.create(
        model=model, input="hi", top_p=0.5, max_output_tokens=64000,
        reasoning={"effort": "high", "summary": "auto"},
    )
    r.parse()
    seen["responses"] = r.headers.get("toolwire-dropped")
    r = an.messages.with_raw_response.create(
        model=model, max_tokens=20000, messages=hi, stop_sequences=["END"],
        # Fields this SDK version has no keyword for go as extra body fields, as its users
        # send them.
        extra_body={"top_p": 0.5, "top_k": 40, "thinking": {"type": "adaptive"},
                    "output_config": {"effort": "high"}},
    )
    r.parse()
    seen["messages"] = r.headers.get("toolwire-dropped")
    return seen


if MODE == "settings":
    print(json.dumps({model: settings(model) for model in MODELS}))
elif MODE == "429":
    seen = {}
    for name, client_call in [
        ("chat", lambda: oa.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])),
        ("responses", lambda: oa.responses.create(model=MODEL, input="hi")),
        ("messages", lambda: an.messages.create(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "hi"}])),
    ]:
        try:
            client_call()
            seen[name] = "no error"
        except (openai.RateLimitError, anthropic.RateLimitError) as e:
            seen[name] = {"status": e.status_code, "retry_after": e.response.headers.get("retry-after")}
    print(json.dumps(seen))
else:
    out = {}
    for model in MODELS:
        for name, case in CASES.items():
            for stream in (False, True):
                calls, text = case(stream, model)
                key = f"{model}/{name}/{'stream' if stream else 'whole'}"
                out[key] = {"calls": calls, "second": text}
    print(json.dumps(out))
