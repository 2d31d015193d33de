#!/usr/bin/python
"""Many files and directories on a host in one module call (each module call costs a round trip and a Python start:
fewer, bigger steps; plugins/module_utils/host/files.py)."""
from __future__ import annotations

DOCUMENTATION = r"""
module: host_files
short_description: Directories, files and removals on a host in one call, then what a few directories and files hold
description:
  - Each entry of I(files), in order, is brought to its state with the semantics of the controller's own files
    (plugins/module_utils/controller_io.py settle()) - C(file) writes I(content) atomically only when the text differs
    and puts the mode, owner and group right; C(directory) creates it with its parents; C(absent) removes a file
    (never a directory).
  - One call replaces a row of C(file), C(copy) and C(template) tasks, each of which cost a module start, an SSH round
    trip and a Python start (0.2-0.9 s on the project's 2-core machine, docs/lab/overhead-2026-12.md). The content
    comes from the controller (a C(template) or C(file) lookup), as the C(template) module renders it there.
  - I(look_in) then lists the names matching I(patterns) in each directory (after the writes), for the play to
    decide what is stale; a directory that does not exist lists nothing.
  - I(read) then returns the text of a few files (after the writes), as a row of C(slurp) tasks would, one call for
    all; a file that is missing or not UTF-8 text fails the call by name. I(read_if_present) does the same for files
    that may not exist yet (a record an earlier run left), naming a missing one in C(absent) instead of failing.
  - Check mode writes nothing and reports what would change; with --diff each changed file's diff is returned, as the
    C(template) module returns it. The result's C(invocation) names each file's size and SHA-256, never its content
    (the C(template) module's invocation names its source, not the text; a log or an AWX job event keeps the
    invocation). ansible-core 2.21 and later keep a result's invocation only with C(inject_invocation) on, and
    then this one.
options:
  files:
    description: The entries, each C(path) (absolute) with C(state) (file, directory or absent; default file),
      C(content) (file), C(mode) (an octal string; default 0644 for a file, 0755 for a directory), C(owner), C(group).
    type: list
    elements: dict
    required: true
  look_in:
    description: Directories to list after the writes, each C(path) and C(patterns) (shell patterns).
    type: list
    elements: dict
    default: []
  read:
    description: Files (absolute paths) whose text to return in C(read), after the writes.
    type: list
    elements: str
    default: []
  read_if_present:
    description: Files (absolute paths) whose text to return in C(read) when they exist, else named in C(absent).
    type: list
    elements: str
    default: []
author: eagle3 project
"""

EXAMPLES = r"""
- name: Write the configuration directory and its files
  eagle3.trn2.host_files:
    files:
      - {path: /etc/eagle3, state: directory, owner: root, group: eagle3, mode: "0750"}
      - {path: /etc/eagle3/vllm.env, content: "{{ lookup('ansible.builtin.template', 'vllm.env.j2') }}", mode: "0640"}
      - {path: /etc/eagle3/secrets.env, state: absent}
    look_in: [{path: /etc/eagle3, patterns: ["*.yaml"]}]
    read: [/etc/eagle3/vllm.env]
  register: written
"""

RETURN = r"""
changed_paths: {description: The paths that changed (or would change in check mode)., type: list, returned: always}
found: {description: Per I(look_in) path, the sorted names matching its patterns., type: dict, returned: always}
read: {description: Per I(read) path and per I(read_if_present) path that exists, the file's text., type: dict, returned: always}
absent: {description: The I(read_if_present) paths that do not exist., type: list, returned: always}
diff: {description: One diff per changed entry (with --diff)., type: list, returned: when changed and diff}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.eagle3.trn2.plugins.module_utils.host import files as F


def main() -> None:
    module = AnsibleModule(
        argument_spec={"files": {"type": "list", "elements": "dict", "required": True},
                       "look_in": {"type": "list", "elements": "dict", "default": []},
                       "read": {"type": "list", "elements": "str", "default": []},
                       "read_if_present": {"type": "list", "elements": "str", "default": []}},
        supports_check_mode=True)
    p = module.params
    shown = F.invocation(p)
    try:
        result = F.host_files(p["files"], p["look_in"], p["read"], p["read_if_present"], module.check_mode)
    except F.HostFilesError as exc:
        module.fail_json(msg=str(exc), **exc.result(), invocation=shown)
    diffs = result.pop("diff")
    result["invocation"] = shown
    if module._diff and diffs:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
