"""What the report writes, so every reader can parse it and no text can inject markup: strict JSON, text escaped for
Markdown, HTML and CSV, and the failure version of every report file.

- `json_text(value)`: JSON that jq, JavaScript and Go read: no NaN or Infinity (a number that is not finite is
  written as null, and the top-level object lists each such path with the reason under `nulls`);
- `md(text)`: a string from a result (model output, a file's reason, a host's name) as Markdown text: no HTML, no
  table cell break, no link, code span or emphasis of its own, one line;
- `csv_cell(value)`: one CSV field (RFC 4180 quoting; a text a spreadsheet would run as a formula starts with ');
- `failure_files(run_id, error)`: verdict.json, summary.json, report.md and report.html saying the report failed
  and why (report.csv has no failure version: it is removed).
"""
from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from ansible_collections.eagle3.trn2.plugins.module_utils.settings.schema import path_name, plain

MD_SPECIAL = re.compile(r"([\\`*\[\]|#])")
FORMULA = ("=", "+", "-", "@", "\t", "\r")
FAILED_STATUS = "report failed"
REPORT_FILES = ("verdict.json", "summary.json", "report.md", "report.html", "report.csv")


def strict(value: Any, parts: list[Any] | None = None, nulls: list[dict[str, str]] | None = None) -> Any:
    """`value` with every non-finite float replaced by None, each recorded in `nulls` as {"path", "reason"}."""
    parts = parts if parts is not None else []
    if isinstance(value, float) and not math.isfinite(value):
        if nulls is not None:
            shown = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
            nulls.append({"path": path_name(parts) or "(the value)",
                          "reason": f"{shown} cannot be given in strict JSON (jq, JavaScript and Go refuse it)"})
        return None
    if isinstance(value, Mapping):
        return {k: strict(v, [*parts, k], nulls) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict(v, [*parts, i], nulls) for i, v in enumerate(value)]
    return value


def json_text(value: Any) -> str:
    """Strict JSON text (indent 4, sorted keys, a final newline); see the module's doc for non-finite numbers."""
    nulls: list[dict[str, str]] = []
    clean = strict(plain(value), [], nulls)
    if nulls and isinstance(clean, dict):
        clean["nulls"] = list(clean.get("nulls") or []) + nulls
    return json.dumps(clean, indent=4, sort_keys=True, separators=(",", ": "), allow_nan=False) + "\n"


def md(value: Any) -> str:
    """A string as Markdown text (see the module's doc); None is "-"."""
    if value is None:
        return "-"
    text = " ".join(str(value).split())
    text = html.escape(text, quote=False)
    return MD_SPECIAL.sub(r"\\\1", text)


def csv_cell(value: Any) -> str:
    """One CSV field: None is empty, numbers as Python writes them, text quoted when it must be."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value) if isinstance(value, float) else str(value)
    text = str(value)
    if text.startswith(FORMULA):
        text = "'" + text
    if any(c in text for c in ',"\n\r'):
        text = '"' + text.replace('"', '""') + '"'
    return text


def failure_files(run_id: str, error: str) -> dict[str, str]:
    """Every report file (but report.csv) as the failure of the report: not OK, naming the file and the reason."""
    record = {"ok": False, "status": FAILED_STATUS, "run_id": run_id, "error": error}
    page = html.escape(error)
    return {
        "verdict.json": json_text(record),
        "summary.json": json_text(record),
        "report.md": (f"# EAGLE3 benchmark report: run {md(run_id)}\n\n**Verdict: FAILED** (report failed)\n\n"
                      f"{md(error)}\n"),
        "report.html": ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                        f"<title>EAGLE3 report {html.escape(run_id)}</title>\n</head>\n<body>\n"
                        f"<h1>EAGLE3 benchmark report: run {html.escape(run_id)}</h1>\n"
                        "<p><span id=\"verdict\" class=\"verdict failed\">FAILED</span> (report failed)</p>\n"
                        f"<p class=\"text\">{page}</p>\n</body>\n</html>\n"),
    }
