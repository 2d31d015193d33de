"""The fleet's infrastructure and what it costs: the checks and wording of its AWS inputs and refusals (infra.py:
CIDRs, the compile cache's disk, DLAMIs, capacity advice, the end-of-run teardown) and the dead-man
switch that powers an idle host off (deadman.py, shared by the module eagle3.trn2.deadman and the EC2 launch's user
data)."""
