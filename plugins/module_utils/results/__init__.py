"""A run's measurements once they are on the controller: each `vllm bench serve` result file checked
(result_checks.py, result_schema.yml), a run directory read (run_dir.py), rounds pooled with their intervals
(rounds.py, intervals.py), the acceptance bands a draft is held to (bands.py), the collection's provenance each
result records (provenance.py), and the number helpers they share (numbers.py). Where a run's files are is the flat
module results_layout.py (scripts outside the collection import it by that name)."""
