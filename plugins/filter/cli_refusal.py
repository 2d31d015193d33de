"""The preflight's refusals, worded once: secrets given on the ansible-playbook command line, and the settings behind
the role inputs a refusal names."""
from __future__ import annotations

from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.settings.controller_checks import cli_secrets_refusal
from ansible_collections.eagle3.trn2.plugins.module_utils.settings.settings import refusal_sources

DOCUMENTATION = r"""
  name: cli_refusal
  short_description: The message refusing secrets given on the command line
  description:
    - C(cli_secrets_refusal) turns the names the C(eagle3.trn2.cli_secrets) lookup found into the refusal the project
      preflight and the roles that write secrets (model_assets, vllm_service; their entry points run alone too) show;
      empty for no names. Names only, never values.
    - C(refusal_sources) takes a refusal's text and gives, for each role input it names (a whole token), the line
      "<input> is set from <eagle3_* settings>", as the schema's inputs and the roles' defaults make that input (input_sources of
      plugins/module_utils/settings/settings.py), so the refusal names the settings an operator changes.
      playbooks/tasks/refuse.yml adds them to every refusal.
"""


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"cli_secrets_refusal": cli_secrets_refusal, "refusal_sources": refusal_sources}
