"""A scripted model endpoint on 127.0.0.1 for driving the real Claude Code and Codex: the
Anthropic Messages API and the OpenAI Responses API, both streamed as SSE, as far as those
programs use them. The script: when the request offers the `ask_user` tool and carries no
result of it yet, call it with `QUESTIONS`; once its result is there, end the turn with a
line that quotes the result (`ANSWERED: …`); any other request (titles, summaries) gets "ok".
Claude Code offers MCP tools deferred (only their names, in a system message): the script then
loads the tool with ToolSearch first, as a model does.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

QUESTIONS = {
    "questions": [
        {
            "id": "color",
            "header": "Color",
            "question": "Which theme should the app use?",
            "options": [{"label": "Dark (Recommended)"}, {"label": "Light"}],
        }
    ],
    "timeoutSeconds": 300,
}
# Claude Code's own question tool, as a model calls it (label and description required).
CLAUDE_QUESTIONS = {
    "questions": [
        {
            "question": "Which theme should the app use?",
            "header": "Theme",
            "multiSelect": False,
            "options": [
                {"label": "Dark", "description": "Easy on the eyes at night"},
                {"label": "Light", "description": "Readable in the sun"},
            ],
        }
    ]
}
BUILTIN_TOOL = "AskUserQuestion"
TOOL_SUFFIX = "ask_user"
TOOL_NAMES = ("ask_user", "ask_the_user")  # the second: ours, as Gemini CLI is offered it
# Each call its own id (`toolu_ask_7`): Claude Code mixes up a later turn's call that shares
# an earlier one's.
ASK_ID, SEARCH_ID = "toolu_ask", "toolu_search_1"
_DEFERRED = re.compile(r"mcp__[\w-]+?__ask_user\b")


def _is_ours(name: str) -> bool:
    return name.endswith(TOOL_NAMES)


def _tool_name(tools: list[dict[str, Any]] | None) -> str | None:
    return next((name for _, name in _tools(tools) if _is_ours(name)), None)


def _tools(tools: list[dict[str, Any]] | None, namespace: str | None = None) -> list:
    """(namespace, name) of every function offered, inside namespaces too (Codex groups an
    MCP server's tools in one: `mcp__ask_user` holding `ask_user`)."""
    found = []
    for tool in tools or []:
        if tool.get("type") == "namespace":
            found += _tools(tool.get("tools"), tool.get("name"))
        elif name := tool.get("name") or (tool.get("function") or {}).get("name"):
            found.append((namespace, name))
    return found


_IDS = itertools.count(1)


def message_id(prefix: str = "msg_scripted") -> str:
    """Every reply its own id: Claude Code merges messages that share one."""
    return f"{prefix}_{next(_IDS)}"


def _sse(events: list[tuple[str, dict[str, Any]]]) -> bytes:
    return b"".join(
        f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events
    )


# ---- Anthropic Messages (Claude Code) ------------------------------------------------------


def _anthropic_results(messages: list[dict[str, Any]]) -> dict[str, str]:
    """The tool results in the last user message: tool_use_id → text. Claude Code 2.1.332
    may put a system message after it (tools that became available meanwhile)."""
    said = [m for m in messages if m.get("role") != "system"]
    if not said or said[-1].get("role") != "user":
        return {}
    content = said[-1].get("content")
    results = {}
    for block in content if isinstance(content, list) else []:
        if block.get("type") == "tool_result":
            inner = block.get("content")
            if isinstance(inner, list):
                inner = "".join(part.get("text", "") for part in inner)
            results[block.get("tool_use_id", "")] = str(inner)
    return results


def anthropic_reply(
    request: dict[str, Any],
    builtin: bool = False,
    claude_questions: dict | None = None,
    call: tuple[str, dict[str, Any]] | None = None,
) -> tuple[list[dict[str, Any]], str]:
    """The content blocks of the scripted answer, and its stop reason. `builtin`: ask with
    Claude Code's own AskUserQuestion (`claude_questions`, else CLAUDE_QUESTIONS) instead of
    our MCP tool; `call`: use that built-in tool with that input instead (Bash, say)."""
    tool = _tool_name(request.get("tools"))
    results = _anthropic_results(request.get("messages") or [])
    if answered := [text for key, text in results.items() if key.startswith(ASK_ID)]:
        return [{"type": "text", "text": f"ANSWERED: {answered[-1]}"}], "end_turn"
    if builtin or call:
        name, given = call or (BUILTIN_TOOL, claude_questions or CLAUDE_QUESTIONS)
        offered = _tool_name_is(request, name) or SEARCH_ID in results
        if not offered and call and not results and _tool_name_is(request, "ToolSearch"):
            search = {"query": f"select:{name}"}  # a deferred built-in (ExitPlanMode)
            return [{"type": "tool_use", "id": SEARCH_ID, "name": "ToolSearch",
                     "input": search}], "tool_use"  # fmt: skip
        if not offered or (results and SEARCH_ID not in results):
            return [{"type": "text", "text": "ok"}], "end_turn"
        return [{"type": "tool_use", "id": message_id(ASK_ID), "name": name,
                 "input": given}], "tool_use"  # fmt: skip
    if tool is None:
        deferred = _DEFERRED.search(json.dumps(request.get("messages") or []))
        if deferred and not results and _tool_name_is(request, "ToolSearch"):
            search = {"query": f"select:{deferred.group(0)}"}
            return [{"type": "tool_use", "id": SEARCH_ID, "name": "ToolSearch",
                     "input": search}], "tool_use"  # fmt: skip
        if deferred and SEARCH_ID in results:
            tool = deferred.group(0)
    if tool is not None:
        return [{"type": "tool_use", "id": message_id(ASK_ID), "name": tool,
                 "input": QUESTIONS}], "tool_use"  # fmt: skip
    return [{"type": "text", "text": "ok"}], "end_turn"


def _tool_name_is(request: dict[str, Any], name: str) -> bool:
    return any(tool.get("name") == name for tool in request.get("tools") or [])


def anthropic_stream(
    request: dict[str, Any],
    builtin: bool = False,
    claude_questions: dict | None = None,
    call: tuple[str, dict[str, Any]] | None = None,
) -> bytes:
    blocks, stop = anthropic_reply(request, builtin, claude_questions, call)
    usage = {"input_tokens": 10, "output_tokens": 10}
    message = {
        "id": message_id(),
        "type": "message",
        "role": "assistant",
        "model": request.get("model", "scripted"),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": message})
    ]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            ("content_block_start", {"type": "content_block_start", "index": index,
                                     "content_block": start}),
            ("content_block_delta", {"type": "content_block_delta", "index": index,
                                     "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]  # fmt: skip
    events += [
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": {"output_tokens": 10}}),
        ("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip
    return _sse(events)


# ---- OpenAI Responses (Codex) --------------------------------------------------------------


def _responses_result(items: list[dict[str, Any]]) -> str | None:
    """The last tool result of this turn (since the person's last message), as text."""
    for item in reversed(items):
        if item.get("role") == "user":
            return None
        if item.get("type") == "function_call_output":
            output = item.get("output")
            if isinstance(output, dict):
                output = output.get("content", output)
            if isinstance(output, list):
                output = "".join(part.get("text", "") for part in output)
            return str(output)
    return None


def responses_stream(
    request: dict[str, Any], call: tuple[str, dict[str, Any]] | None = None
) -> bytes:
    """Codex's turn: our tool called with QUESTIONS, or `call` (a built-in: `exec_command`,
    `request_user_input`) when Codex offers it; then the result quoted."""
    offered = _tools(request.get("tools"))
    namespace, tool = next(((ns, n) for ns, n in offered if _is_ours(n)), (None, None))
    arguments: dict[str, Any] = QUESTIONS
    if call is not None:
        namespace, tool = (None, call[0]) if (None, call[0]) in offered else (None, None)
        arguments = call[1]
    result = _responses_result(request.get("input") or [])
    if result is not None:
        text = f"ANSWERED: {result}"
        item: dict[str, Any] = {
            "type": "message",
            "id": message_id(),
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
    elif tool is not None:
        item = {
            "type": "function_call",
            "id": message_id("fc_scripted"),
            "call_id": message_id("call_ask"),
            "name": tool,
            "arguments": json.dumps(arguments),
        }
        if namespace:
            item["namespace"] = namespace
    else:
        item = {
            "type": "message",
            "id": message_id(),
            "role": "assistant",
            "content": [{"type": "output_text", "text": "ok", "annotations": []}],
        }
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 10,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 20,
    }
    response_id = message_id("resp_scripted")
    return _sse(
        [
            ("response.created", {"type": "response.created",
                                  "response": {"id": response_id}}),
            ("response.output_item.added", {"type": "response.output_item.added",
                                            "output_index": 0, "item": item}),
            ("response.output_item.done", {"type": "response.output_item.done",
                                           "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed",
                                    "response": {"id": response_id, "usage": usage}}),
        ]
    )  # fmt: skip


# ---- OpenAI Chat Completions (opencode, Copilot CLI) ----------------------------------------


def _chat_result(messages: list[dict[str, Any]]) -> str | None:
    for message in reversed(messages):
        if message.get("role") == "tool":
            content = message.get("content")
            if isinstance(content, list):
                content = "".join(part.get("text", "") for part in content)
            return str(content)
    return None


def chat_reply(request: dict[str, Any]) -> dict[str, Any]:
    """The assistant message of the scripted answer (a tool call, or text)."""
    result = _chat_result(request.get("messages") or [])
    tool = _tool_name(request.get("tools"))
    if result is not None:
        return {"role": "assistant", "content": f"ANSWERED: {result}"}
    if tool is not None:
        call = {"id": "call_ask_1", "type": "function",
                "function": {"name": tool, "arguments": json.dumps(QUESTIONS)}}  # fmt: skip
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    return {"role": "assistant", "content": "ok"}


def chat_stream(request: dict[str, Any]) -> bytes:
    message = chat_reply(request)
    chunk_id, model = message_id("chatcmpl"), request.get("model", "scripted")

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        body = {"id": chunk_id, "object": "chat.completion.chunk", "created": 0, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}  # fmt: skip
        return f"data: {json.dumps(body)}\n\n".encode()

    parts = [chunk({"role": "assistant", "content": ""})]
    if message.get("tool_calls"):
        call = message["tool_calls"][0]
        parts.append(chunk({"tool_calls": [{"index": 0, **call}]}))
        parts.append(chunk({}, "tool_calls"))
    else:
        parts.append(chunk({"content": message["content"]}))
        parts.append(chunk({}, "stop"))
    usage = {"id": chunk_id, "object": "chat.completion.chunk", "created": 0, "model": model,
             "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 10,
                                      "total_tokens": 20}}  # fmt: skip
    parts.append(f"data: {json.dumps(usage)}\n\n".encode())
    return b"".join(parts) + b"data: [DONE]\n\n"


# ---- Gemini generateContent (Gemini CLI) ----------------------------------------------------


def _gemini_tools(request: dict[str, Any]) -> list[str]:
    return [
        declaration.get("name", "")
        for tool in request.get("tools") or []
        for declaration in tool.get("functionDeclarations") or []
    ]


def _filled(schema: dict[str, Any]) -> Any:
    """Some value a JSON schema accepts: what Gemini CLI's side calls (its model router) ask
    for, answered at once (they retry for a minute otherwise)."""
    kind = str(schema.get("type", "object")).lower()
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object":
        properties = schema.get("properties") or {}
        return {name: _filled(sub) for name, sub in properties.items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    return "simple"


def gemini_reply(request: dict[str, Any]) -> dict[str, Any]:
    """The scripted answer as a `GenerateContentResponse`."""
    config = request.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    if schema is not None:
        return _gemini_text(json.dumps(_filled(schema)))
    contents = request.get("contents") or []
    results = [
        part["functionResponse"]
        for content in contents
        for part in content.get("parts") or []
        if "functionResponse" in part and _is_ours(part["functionResponse"].get("name", ""))
    ]
    tool = next((name for name in _gemini_tools(request) if _is_ours(name)), None)
    if results:
        return _gemini_text(f"ANSWERED: {json.dumps(results[-1].get('response'))}")
    if tool is not None:
        return _gemini_parts({"functionCall": {"name": tool, "args": QUESTIONS}})
    return _gemini_text("ok")


def _gemini_text(text: str) -> dict[str, Any]:
    return _gemini_parts({"text": text})


def _gemini_parts(part: dict[str, Any]) -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 10,
                          "totalTokenCount": 20},
        "modelVersion": "scripted",
        "responseId": message_id("gemini"),
    }  # fmt: skip


# ---- the server ----------------------------------------------------------------------------


class ScriptedModels:
    """Both APIs on one port; `requests` keeps (path, body) of every call, for the test.
    `builtin`: Claude's script asks with AskUserQuestion rather than our MCP tool."""

    def __init__(
        self,
        builtin: bool = False,
        claude_questions: dict | None = None,
        call: tuple[str, dict[str, Any]] | None = None,
    ) -> None:
        requests: list[tuple[str, dict[str, Any]]] = []
        self.requests = requests

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                path = self.path.split("?", 1)[0]
                requests.append((path, body))
                if path.endswith("/messages/count_tokens"):
                    self._json({"input_tokens": 10})
                elif path.endswith("/messages"):
                    if body.get("stream"):
                        self._stream(anthropic_stream(body, builtin, claude_questions, call))
                    else:
                        blocks, stop = anthropic_reply(body, builtin, claude_questions, call)
                        self._json({
                            "id": message_id(), "type": "message", "role": "assistant",
                            "model": body.get("model", "scripted"), "content": blocks,
                            "stop_reason": stop, "stop_sequence": None,
                            "usage": {"input_tokens": 10, "output_tokens": 10},
                        })  # fmt: skip
                elif path.endswith("/responses"):
                    self._stream(responses_stream(body, call))
                elif path.endswith(":streamGenerateContent"):
                    self._stream(f"data: {json.dumps(gemini_reply(body))}\r\n\r\n".encode())
                elif path.endswith(":generateContent"):
                    self._json(gemini_reply(body))
                elif path.endswith(":countTokens"):
                    self._json({"totalTokens": 10})
                elif path.endswith("/chat/completions"):
                    if body.get("stream"):
                        self._stream(chat_stream(body))
                    else:
                        self._json({"id": message_id("chatcmpl"), "object": "chat.completion",
                                    "created": 0, "model": body.get("model", "scripted"),
                                    "choices": [{"index": 0, "message": chat_reply(body),
                                                 "finish_reason": "stop"}],
                                    "usage": {"prompt_tokens": 10, "completion_tokens": 10,
                                              "total_tokens": 20}})  # fmt: skip
                else:
                    self._json({"error": {"type": "not_found", "message": path}}, 404)

            def do_GET(self) -> None:
                requests.append((self.path, {}))
                self._json({"data": []} if self.path.endswith("/models") else {}, 200)

            def _json(self, value: Any, status: int = 200) -> None:
                data = json.dumps(value).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, data: bytes) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
