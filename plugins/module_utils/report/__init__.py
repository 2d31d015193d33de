"""One run's report and verdict: the engine (engine.py) that validates, compares (compare.py), gates (gates.py) and
lays out the fleet's timeline (timeline.py); which schedulers each speedup compares (scheduling.py); what the report files say and how they are escaped (output.py); the
parity check's prompts (parity_prompts.py); the verdict's summary for set_stats (run_stats.py); the work of the
actions run_report (run_report.py: its options checked, the engine run) and report_files (files.py: the files written,
verdict.json last)."""
