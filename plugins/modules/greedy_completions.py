#!/usr/bin/python
"""Send greedy chat completions to the vLLM server of the host, all prompts in one module call
(plugins/module_utils/server/greedy.py)."""
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

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.eagle3.trn2.plugins.module_utils.server import greedy as G


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
        smoke = G.smoke_test(p["base_url"], p["model"], p["smoke_prompt"], p["smoke_max_tokens"], p["timeout"])
        if "error" in smoke:
            module.fail_json(msg=f"smoke test ({p['base_url']}/v1/completions, {p['smoke_prompt']!r}): {smoke['error']}",
                             smoke=smoke)
    result = G.complete_all(p["base_url"], p["model"], p["prompts"], p["max_tokens"], p["concurrency"], p["timeout"])
    if result["errors"]:
        module.fail_json(msg=G.failure_message(result, p["base_url"]), **result, **({"smoke": smoke} if smoke else {}))
    module.exit_json(changed=False, **result, **({"smoke": smoke} if smoke else {}))


if __name__ == "__main__":
    main()
