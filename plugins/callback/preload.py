"""Load the collection's controller-side plugins once, in ansible-playbook's own process, before any task runs."""
from __future__ import annotations

DOCUMENTATION = """
    name: preload
    type: aggregate
    short_description: load this collection's filter, lookup and action plugins once, before the first task
    description:
        - Ansible runs each task in a worker process forked from ansible-playbook's process, and the worker loads the
          plugins the task uses. To find one filter of a collection, Ansible 2.19 loads every filter file of the
          collection (C(Jinja2Loader.get_with_context) imports each file to read which filters it holds), so every
          task whose templates used one of this collection's filters loaded all its filter files again, with their
          imports, about 100 ms a task on 2 cores (docs/performance.md, "Plugins loaded once").
        - At the playbook's start this callback loads, in ansible-playbook's process, every filter, lookup and action
          plugin of eagle3.trn2, Ansible's own filters and tests (the first template that uses one loads all of
          them, in its worker too), the settings and result files' schema validator (jsonschema) and the parsed
          settings and result schemas with the roles' inputs; the workers,
          forked from it, find them loaded. It prints nothing (at -vvv, what it loaded) and changes nothing else.
          Without it (another ansible.cfg) runs are the same, only slower.
        - A plugin that fails to load is left to fail where a task uses it, with Ansible's own message.
    requirements:
        - enabled in callbacks_enabled (the project's ansible.cfg and molecule scenarios enable it)
"""

import pkgutil
from importlib import import_module

from ansible.plugins.callback import CallbackBase
from ansible.plugins.loader import action_loader, filter_loader, lookup_loader, test_loader

COLLECTION = "eagle3.trn2"


def plugin_names(kind: str) -> list[str]:
    """The module names (file stems) of this collection's plugins of a kind."""
    package = import_module(f"ansible_collections.{COLLECTION}.plugins.{kind}")
    return sorted(name for _, name, is_package in pkgutil.iter_modules(package.__path__) if not is_package)


def preload() -> dict[str, list[str]]:
    """Load each filter file (through one of its filters, as a template does), each lookup and each action plugin of
    the collection, Ansible's own filters and tests, and the schema validator; returns what loaded, by kind."""
    loaded: dict[str, list[str]] = {"filter": [], "lookup": [], "action": [], "ansible": [], "schema": []}
    for stem in plugin_names("filter"):
        module = import_module(f"ansible_collections.{COLLECTION}.plugins.filter.{stem}")
        names = sorted(module.FilterModule().filters())
        if names and filter_loader.get(f"{COLLECTION}.{names[0]}") is not None:
            loaded["filter"].append(stem)
    for kind, loader in (("lookup", lookup_loader), ("action", action_loader)):
        for stem in plugin_names(kind):
            if loader.get(f"{COLLECTION}.{stem}", class_only=True) is not None:
                loaded[kind].append(stem)
    for kind, loader in (("filters", filter_loader), ("tests", test_loader)):
        if any(True for _ in loader.all()):
            loaded["ansible"].append(kind)
    schema = import_module(f"ansible_collections.{COLLECTION}.plugins.module_utils.settings.schema")
    if schema.validator_class() is not None:
        loaded["schema"].append("jsonschema")
    # The settings and result schemas, parsed once here: each task that checks settings read them again otherwise.
    for module in ("settings.settings", "results.result_checks"):
        import_module(f"ansible_collections.{COLLECTION}.plugins.module_utils.{module}").warm()
        loaded["schema"].append(module.rsplit(".", 1)[-1])
    return loaded


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "eagle3.trn2.preload"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_start(self, playbook) -> None:
        try:
            loaded = preload()
        except Exception as exc:  # noqa: BLE001 - a task that uses the plugin reports the failure itself
            self._display.vvv(f"eagle3.trn2.preload: not preloaded ({exc})")
            return
        self._display.vvv("eagle3.trn2.preload: " + "; ".join(f"{k} {', '.join(v)}" for k, v in loaded.items()))
