#!/usr/bin/python
"""Documentation of the action plugin plugins/action/run_report.py (it runs on the controller, no module)."""
from __future__ import annotations

DOCUMENTATION = r"""
module: run_report
short_description: Make one run's report from its result directory on the controller
description:
  - Reads the run directory O(dir) as the vllm_bench role fetched it (each host's result, completions, manifest,
    timeline and failure files, and run.json), validates every result file, then compares each EAGLE3 profile with
    the baseline per host, checks greedy parity, aggregates the fleet, judges the gates and plans what serves.
  - A file that fails validation is listed with its reasons and its host fails; no gate reads its figures.
  - A report that cannot be made fails the task with "the report could not be made from FILE, REASON", FILE being
    the smallest part of the run without which it is made.
  - Changes nothing (the bench_report role writes the files with eagle3.trn2.report_files). Action plugin; runs on
    the controller whatever the host.
options:
  dir:
    description: The run directory on the controller (absolute path).
    type: path
    required: true
  run_id:
    description: The run id the files must carry.
    type: str
    required: true
  hosts:
    description: The hosts expected when the run has no run.json (run.json's list wins).
    type: list
    elements: str
  gates:
    description: The gate settings as eagle3.trn2.eagle3_gate_settings makes them from eagle3_gates.
    type: dict
  reference:
    description: "The reference results to compare with (an empty mapping for none)."
    type: dict
  baseline:
    description: The baseline profile's name.
    type: str
    default: baseline
  outlier_tolerance:
    description: Fraction below the fleet median throughput that flags a host as an outlier.
    type: float
    default: 0.10
  price:
    description: "The instance price (usd_per_hour, instance_type, source, date) for the cost lines."
    type: dict
  serve:
    description: "What serves after the run: none, best or a profile name (the serving plan)."
    type: str
    default: none
  band_key:
    description: "The acceptance band key (target, draft, engine) of the run's models."
    type: dict
  bands:
    description: The acceptance bands (recorded and shipped) the run's acceptance is judged against.
    type: list
    elements: dict
author: eagle3 project
"""

EXAMPLES = r"""
- name: Report run r1
  eagle3.trn2.run_report:
    dir: /srv/results/r1
    run_id: r1
    hosts: "{{ groups['vllm_hosts'] }}"
  register: made

- name: Show the verdict
  ansible.builtin.debug:
    msg: "{{ made.report.lines }}"
"""

RETURN = r"""
report:
  description: The report (summary, verdict, lines, serving plan and what the templates render).
  type: dict
  returned: success
"""
