"""The 144 KB streamed-argument workload read from Python, in one run:

- toolwire (this package): ``toolwire.replay`` on the whole body, and a ``StreamReader`` fed
  the body in 16 KiB network-sized chunks;
- openai-python's ``ChatCompletionStreamState`` (what ``client.chat.completions.stream()`` uses):
  each SSE event's JSON parsed and built into a ``ChatCompletionChunk`` as its ``Stream`` does
  (``construct_type``, no validation), then ``handle_chunk``; and its assembler alone over
  chunks built beforehand;
- LiteLLM's ``stream_chunk_builder`` over the parsed chunk dicts.

The body is an OpenAI Chat Completions SSE stream with one tool call whose ~144 KB of
arguments arrive in 4-character fragments (about 8 MB of SSE), the same stream the Rust
bench `benches/turn.rs` (`one_call/144k`) generates. Each reader's result is checked to hold
the same argument text. Run: ``python python/bench/streamed_arguments.py`` in a venv with
``toolwire``, ``openai`` and ``litellm`` installed.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Callable, Dict, List

import toolwire

ENVELOPE = '"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1763700000,"model":"gpt-4o"'


def argument(call: int, arg_len: int) -> str:
    head = '{"call":%d,"text":"' % call
    tail = '"}'
    filler = 'lorem ipsum dolor sit amet, consectetur \\"quoted\\" adipiscing elit; '
    text = head
    while len(text) + len(tail) < arg_len:
        room = arg_len - len(tail) - len(text)
        piece = filler[: min(len(filler), room)].rstrip("\\")
        text += piece if piece else " "
    return text + tail


def workload(arg_len: int = 144 * 1024, fragment: int = 4) -> bytes:
    arg = argument(0, arg_len)
    out = [
        "data: {%s,\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_bench_0\","
        "\"type\":\"function\",\"function\":{\"name\":\"write_file\",\"arguments\":\"\"}}]},\"logprobs\":null,"
        "\"finish_reason\":null}]}\n\n" % ENVELOPE
    ]
    for i in range(0, len(arg), fragment):
        piece = json.dumps(arg[i : i + fragment])
        out.append(
            "data: {%s,\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":"
            "{\"arguments\":%s}}]},\"logprobs\":null,\"finish_reason\":null}]}\n\n" % (ENVELOPE, piece)
        )
    out.append(
        "data: {%s,\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"tool_calls\"}]}\n\n"
        "data: {%s,\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\n"
        "data: [DONE]\n\n" % (ENVELOPE, ENVELOPE, arg_len // 4, 100 + arg_len // 4)
    )
    return "".join(out).encode()


def sse_payloads(body: bytes) -> List[Dict[str, Any]]:
    """The SSE events' JSON, parsed (what every Python client does before assembling)."""
    out = []
    for line in body.split(b"\n"):
        if line.startswith(b"data: ") and line != b"data: [DONE]":
            out.append(json.loads(line[6:]))
    return out


def best_of(fn: Callable[[], str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    body = workload()
    expected = argument(0, 144 * 1024)

    def toolwire_replay() -> str:
        return str(toolwire.replay("openai", body)["tool_calls"][0]["raw_arguments"])

    def toolwire_stream() -> str:
        reader = toolwire.StreamReader("openai")
        for i in range(0, len(body), 16384):
            reader.feed(body[i : i + 16384])
        return str(reader.finish()["tool_calls"][0]["raw_arguments"])

    results: Dict[str, float] = {}
    results["toolwire.replay"] = best_of(toolwire_replay, 15)
    results["toolwire.StreamReader (16 KiB chunks)"] = best_of(toolwire_stream, 15)
    assert toolwire_replay() == expected and toolwire_stream() == expected

    from openai._models import construct_type
    from openai.lib.streaming.chat._completions import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    def openai_from_bytes() -> str:
        state: Any = ChatCompletionStreamState()
        for payload in sse_payloads(body):
            state.handle_chunk(construct_type(type_=ChatCompletionChunk, value=payload))
        return str(state.get_final_completion().choices[0].message.tool_calls[0].function.arguments)

    chunks = [construct_type(type_=ChatCompletionChunk, value=p) for p in sse_payloads(body)]

    def openai_assembler_only() -> str:
        state: Any = ChatCompletionStreamState()
        for chunk in chunks:
            state.handle_chunk(chunk)
        return str(state.get_final_completion().choices[0].message.tool_calls[0].function.arguments)

    assert openai_from_bytes() == expected
    results["openai-python ChatCompletionStreamState (from bytes)"] = best_of(openai_from_bytes, 3)
    results["openai-python ChatCompletionStreamState (assembler only)"] = best_of(openai_assembler_only, 3)

    # LiteLLM fetches a model price list at import unless told to use its local copy.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    def litellm_builder() -> str:
        payloads = sse_payloads(body)
        resp: Any = litellm.stream_chunk_builder(payloads)
        return str(resp.choices[0].message.tool_calls[0].function.arguments)

    assert litellm_builder() == expected
    results["LiteLLM stream_chunk_builder (from bytes)"] = best_of(litellm_builder, 3)

    base = results["toolwire.replay"]
    print(f"workload: one call, {len(expected)} argument bytes in 4-character fragments, {len(body)} bytes of SSE")
    print(f"python {sys.version.split()[0]}, toolwire {toolwire.__version__}")
    print("| reader | best time | × toolwire.replay |")
    print("|---|---|---|")
    for name, t in results.items():
        print(f"| {name} | {t * 1000:.1f} ms | {t / base:.1f}× |")


if __name__ == "__main__":
    main()
