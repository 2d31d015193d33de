"""Each host's vLLM server: the profiles it runs and the names and paths the roles share (profiles.py), the server
inputs judged against what `vllm serve` knows (vllm_inputs.py) and the models' fit (model_fit.py), what the engine
really runs (vllm_effective.py), what a failed start's journal says to change (start_failure.py), which profile a host
serves after the run, checked against what was measured (serving.py), and the greedy completions it is asked for, the
smoke test and the parity prompts (greedy.py, the module eagle3.trn2.greedy_completions)."""
