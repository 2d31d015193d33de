"""The fleet's infrastructure and what it costs: the checks and wording of its AWS inputs and refusals (infra.py:
CIDRs, the compile cache's disk, DLAMIs, capacity advice, the end-of-run teardown), the dead-man
switch that powers an idle host off (deadman.py, shared by the module eagle3.trn2.deadman and the EC2 launch's user
data), the launch into a capacity reservation or Capacity Block (capacity.py, the module
eagle3.trn2.ec2_capacity_target), and the read-only EC2 questions amazon.aws cannot ask: deprecated DLAMIs included,
an instance type's offering (ec2.py, the modules eagle3.trn2.ec2_ami_find and eagle3.trn2.ec2_instance_type_offering)."""
