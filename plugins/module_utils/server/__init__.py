"""Each host's vLLM server: the profiles it runs and the names and paths the roles share (profiles.py), the server
inputs judged against what `vllm serve` knows (vllm_inputs.py) and the models' fit (model_fit.py), what the engine
really runs (vllm_effective.py), and which profile a host serves after the run, checked against what was measured
(serving.py)."""
