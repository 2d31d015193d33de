"""What a rerun skips: a host phase's recorded state and the inputs it is compared by (phase_state.py on the host,
phase_inputs.py on the controller), and whether each benchmark of a run is already done (bench_state.py) with the
plan and reconciliation of a host's benchmarks built on it (bench_plan.py)."""
