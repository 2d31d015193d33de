#!/usr/bin/python
"""Send greedy chat completions to the vLLM server of the host, all prompts in one module call."""
from __future__ import annotations

DOCUMENTATION = r"""
module: greedy_completions
short_description: Greedy chat completions of a list of prompts from one vLLM server, in one call
description:
  - POSTs each prompt as one user message to C(<base_url>/v1/chat/completions) with temperature 0 and
    I(max_tokens), at most I(concurrency) requests at a time, each with its own I(timeout), and returns the
    completions in prompt order. It talks to I(base_url) only, without a proxy (the server the play started on
    the host, C(http://127.0.0.1:8000) in the rehearsal); it runs on the host, as M(ansible.builtin.uri) did.
  - One call instead of one M(ansible.builtin.uri) loop item per prompt (each module call costs about 0.4 s of
    Ansible's own time, so 100 prompts would cost 40 s per profile).
  - Fails, naming the prompts and their errors, when any request fails (an HTTP error, a timeout, an answer
    without C(choices[0].message.content)); the completions of the others are returned too.
  - With I(smoke_prompt), first the tutorial's smoke test in the same call, one greedy text completion
    (C(<base_url>/v1/completions), I(smoke_max_tokens)), its text returned as C(smoke); a smoke test that fails
    fails the call before any chat completion is sent (one module call a profile instead of two).
  - Sends no state-changing request; not run in check mode.
options:
  base_url: {description: "The server's base URL (C(http://host:port)); only http and https.", type: str, required: true}
  model: {description: The served model name (the request's C(model))., type: str, required: true}
  prompts: {description: The user messages, one request each (none with only the smoke test)., type: list, elements: str, default: []}
  smoke_prompt: {description: The smoke test's prompt (a text completion sent first); none to send no smoke test., type: str}
  smoke_max_tokens: {description: C(max_tokens) of the smoke test., type: int, default: 10}
  max_tokens: {description: C(max_tokens) of every request., type: int, default: 10}
  concurrency:
    description: Requests in flight at most (the server's C(max-num-seqs) is a good bound; 1 sends them one by one).
    type: int
    default: 2
  timeout: {description: Seconds each request may take., type: float, default: 300}
author: eagle3 project
"""

EXAMPLES = r"""
- name: Greedy completions of the parity prompts
  eagle3.trn2.greedy_completions:
    base_url: http://127.0.0.1:8000
    model: meta-llama/Llama-3.1-8B-Instruct
    prompts: "{{ ['Count from 1 to 10, separated by commas.'] + (100 | eagle3.trn2.eagle3_vllm_test_prompts) }}"
    max_tokens: 10
    concurrency: 2
  register: completions
"""

RETURN = r"""
prompts: {description: The prompts sent, in order., type: list, elements: str, returned: always}
completions:
  description: The text of each prompt's completion (C(choices[0].message.content)), in prompt order; null where the request failed.
  type: list
  elements: str
  returned: always
finish_reasons: {description: Each completion's C(finish_reason) (C(length) at I(max_tokens)); null where it failed., type: list, elements: str, returned: always}
completion_tokens: {description: Each completion's C(usage.completion_tokens); null where not given., type: list, elements: int, returned: always}
errors: {description: "One line per failed request: its index, prompt and error.", type: list, elements: str, returned: always}
smoke:
  description: The smoke test's C(prompt) and C(text) (C(choices[0].text)), or its C(error).
  type: dict
  returned: when smoke_prompt is given
elapsed: {description: Seconds all requests took., type: float, returned: always}
"""

import json
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from ansible.module_utils.basic import AnsibleModule

ERROR_BODY = 300  # characters of an error response kept in the message


def chat_request(base_url: str, model: str, prompt: str, max_tokens: int) -> urllib.request.Request:
    """The POST of one greedy chat completion."""
    body = {"model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
            "temperature": 0}
    return urllib.request.Request(base_url.rstrip("/") + "/v1/chat/completions", json.dumps(body).encode(),
                                  {"Content-Type": "application/json"}, method="POST")


# Straight to the server: a proxy from the environment must not see (or break) requests to the host's own server.
def text_request(base_url: str, model: str, prompt: str, max_tokens: int) -> urllib.request.Request:
    """The POST of one greedy text completion (the tutorial's smoke test)."""
    body = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0}
    return urllib.request.Request(base_url.rstrip("/") + "/v1/completions", json.dumps(body).encode(),
                                  {"Content-Type": "application/json"}, method="POST")


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


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "base_url": {"type": "str", "required": True},
            "model": {"type": "str", "required": True},
            "prompts": {"type": "list", "elements": "str", "default": []},
            "smoke_prompt": {"type": "str"},
            "smoke_max_tokens": {"type": "int", "default": 10},
            "max_tokens": {"type": "int", "default": 10},
            "concurrency": {"type": "int", "default": 2},
            "timeout": {"type": "float", "default": 300},
        },
        supports_check_mode=False,
    )
    p = module.params
    if not p["base_url"].startswith(("http://", "https://")):
        module.fail_json(msg=f"base_url must be an http:// or https:// URL (got {p['base_url']!r})")
    if p["concurrency"] < 1 or p["max_tokens"] < 1 or p["smoke_max_tokens"] < 1 or p["timeout"] <= 0:
        module.fail_json(msg="concurrency, max_tokens and smoke_max_tokens must be at least 1 and timeout above 0 "
                             f"(got {p['concurrency']}, {p['max_tokens']}, {p['smoke_max_tokens']}, {p['timeout']})")
    smoke = {}
    if p["smoke_prompt"] is not None:
        answer = send(text_request(p["base_url"], p["model"], p["smoke_prompt"], p["smoke_max_tokens"]), p["timeout"])
        smoke = {"prompt": p["smoke_prompt"], **({"error": answer["error"]} if "error" in answer else {"text": answer["text"]})}
        if "error" in answer:
            module.fail_json(msg=f"smoke test ({p['base_url']}/v1/completions, {p['smoke_prompt']!r}): {answer['error']}",
                             smoke=smoke)
    result = complete_all(p["base_url"], p["model"], p["prompts"], p["max_tokens"], p["concurrency"], p["timeout"])
    if result["errors"]:
        shown = "; ".join(result["errors"][:3]) + ("; ..." if len(result["errors"]) > 3 else "")
        module.fail_json(msg=f"{len(result['errors'])} of {len(p['prompts'])} greedy completions failed "
                             f"({p['base_url']}): {shown}", **result, **({"smoke": smoke} if smoke else {}))
    module.exit_json(changed=False, **result, **({"smoke": smoke} if smoke else {}))


if __name__ == "__main__":
    main()
