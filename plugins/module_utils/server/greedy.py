"""Greedy completions from a vLLM server's OpenAI-style API: the requests (chat completions and the tutorial's smoke
test, a text completion), sent straight to the server at bounded concurrency, and their answers in prompt order (the
module eagle3.trn2.greedy_completions, which runs on the host)."""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

ERROR_BODY = 300  # characters of an error response kept in the message


def _post(base_url: str, path: str, body: dict[str, Any]) -> urllib.request.Request:
    return urllib.request.Request(base_url.rstrip("/") + path, json.dumps(body).encode(),
                                  {"Content-Type": "application/json"}, method="POST")


def chat_request(base_url: str, model: str, prompt: str, max_tokens: int) -> urllib.request.Request:
    """The POST of one greedy chat completion."""
    return _post(base_url, "/v1/chat/completions", {"model": model, "messages": [{"role": "user", "content": prompt}],
                                                    "max_tokens": max_tokens, "temperature": 0})


def text_request(base_url: str, model: str, prompt: str, max_tokens: int) -> urllib.request.Request:
    """The POST of one greedy text completion (the tutorial's smoke test)."""
    return _post(base_url, "/v1/completions", {"model": model, "prompt": prompt, "max_tokens": max_tokens,
                                               "temperature": 0})


# Straight to the server: a proxy from the environment must not see (or break) requests to the host's own server.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def send(request: urllib.request.Request, timeout: float) -> dict[str, Any]:
    """One request: {"text", "finish_reason", "tokens"} or {"error"}; the text is a chat answer's
    choices[0].message.content, or a text completion's choices[0].text."""
    try:
        with OPENER.open(request, timeout=timeout) as response:
            data = json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", "replace")[:ERROR_BODY]
        return {"error": f"HTTP {exc.code}: {detail}"}
    except (urllib.error.URLError, OSError) as exc:  # refused, reset, timed out (socket.timeout is an OSError)
        return {"error": f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"}
    except ValueError as exc:
        return {"error": f"not JSON: {exc}"}
    chat = request.full_url.endswith("/chat/completions")
    where = "choices[0].message.content" if chat else "choices[0].text"
    try:
        choice = data["choices"][0]
        text = choice["message"]["content"] if chat else choice["text"]
    except (KeyError, IndexError, TypeError):
        return {"error": f"no {where} in {json.dumps(data)[:ERROR_BODY]}"}
    if not isinstance(text, str):
        return {"error": f"{where} is {text!r}, not text"}
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    return {"text": text, "finish_reason": choice.get("finish_reason"), "tokens": usage.get("completion_tokens")}


def complete_all(base_url: str, model: str, prompts: list[str], max_tokens: int, concurrency: int, timeout: float,
                 sender: Callable[[urllib.request.Request, float], dict[str, Any]] = send) -> dict[str, Any]:
    """Every prompt's completion, in prompt order, at most `concurrency` requests in flight."""
    started = time.monotonic()
    requests = [chat_request(base_url, model, p, max_tokens) for p in prompts]
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        answers = list(pool.map(lambda r: sender(r, timeout), requests))
    return {
        "prompts": list(prompts),
        "completions": [a.get("text") for a in answers],
        "finish_reasons": [a.get("finish_reason") for a in answers],
        "completion_tokens": [a.get("tokens") for a in answers],
        "errors": [f"prompt {i} {p!r}: {a['error']}" for i, (p, a) in enumerate(zip(prompts, answers)) if "error" in a],
        "elapsed": round(time.monotonic() - started, 3),
    }


def smoke_test(base_url: str, model: str, prompt: str, max_tokens: int, timeout: float) -> dict[str, Any]:
    """The tutorial's smoke test, one greedy text completion: {"prompt", "text"} or {"prompt", "error"}."""
    answer = send(text_request(base_url, model, prompt, max_tokens), timeout)
    return {"prompt": prompt, **({"error": answer["error"]} if "error" in answer else {"text": answer["text"]})}


def failure_message(result: dict[str, Any], base_url: str) -> str:
    """The message of a call whose requests failed: how many, and the first three errors."""
    errors = result["errors"]
    shown = "; ".join(errors[:3]) + ("; ..." if len(errors) > 3 else "")
    return f"{len(errors)} of {len(result['prompts'])} greedy completions failed ({base_url}): {shown}"
