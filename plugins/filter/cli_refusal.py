"""The refusal of secrets given on the ansible-playbook command line, worded once for every rule that makes it."""
from __future__ import annotations

from typing import Any

DOCUMENTATION = r"""
  name: cli_refusal
  short_description: The message refusing secrets given on the command line
  description:
    - C(cli_secrets_refusal) turns the names the C(eagle3.trn2.cli_secrets) lookup found into the refusal the project
      preflight and the roles that write secrets (model_assets, vllm_service; their entry points run alone too) show;
      empty for no names. Names only, never values.
"""


def cli_secrets_refusal(names: list[str]) -> str:
    if not names:
        return ""
    return (", ".join(names) + " given on the ansible-playbook command line: every user of the controller sees it in"
            " the process list, and the shell history keeps it. Give eagle3_hf_token through the HF_TOKEN environment"
            " variable (eagle3_serve_api_key: EAGLE3_API_KEY) or an Ansible Vault file (-e @vault.yml) instead (the"
            " value is not shown).")


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"cli_secrets_refusal": cli_secrets_refusal}
