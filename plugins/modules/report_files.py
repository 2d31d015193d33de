#!/usr/bin/python
"""Documentation of the action plugin plugins/action/report_files.py (it runs on the controller, no module)."""
from __future__ import annotations

DOCUMENTATION = r"""
module: report_files
short_description: Write a run's report files on the controller, verdict.json last
description:
  - Writes each file of a run's report into O(dir) on the controller, atomically (temporary file, then
    rename) and only when its content differs from the file on disk.
  - "When the new verdict differs from the one on disk, verdict.json is first replaced by an
    in-progress verdict (ok false, status in progress), then the other files are written, then the new
    verdict, so an interrupted report never leaves an OK verdict beside reports of another result."
  - "With O(failure), the report could not be made: verdict.json, summary.json, report.md and report.html are replaced
    by versions that say the report failed and why (verdict.json first) and report.csv is removed, so no file of the
    run says OK; O(files) and O(verdict) are not used."
  - Supports check mode and diff mode. Action plugin; runs on the controller whatever the host.
options:
  dir: {description: The run directory (absolute path; created with mode 0755 if missing)., type: path, required: true}
  files:
    description: File names (plain names, not verdict.json) mapped to their text (required without O(failure)).
    type: dict
  verdict: {description: The text of verdict.json (required without O(failure))., type: str}
  failure:
    description: Why the report could not be made ("the report could not be made from FILE, REASON"); see above.
    type: str
  run_id: {description: Run id recorded in the in-progress verdict., type: str, default: ""}
  mode: {description: Mode of every file written., type: str, default: "0644"}
author: eagle3 project
"""

EXAMPLES = r"""
- name: Write the report of run r1
  eagle3.trn2.report_files:
    dir: /srv/results/r1
    files:
      report.md: "{{ lookup('ansible.builtin.template', 'report.md.j2') }}"
    verdict: "{{ verdict | to_nice_json }}\n"
    run_id: r1
"""

RETURN = r"""
written: {description: Names of the files whose content changed (in check mode, would change)., type: list, elements: str, returned: always}
"""
