"""What a host is given to run on: its locked Python stack (host_lock.py), the pip and apt pins compared the way pip
and apt compare them (pins.py), the free-space check that runs on the hosts and on the controller alike
(free_space.py, stdlib only: vllm_bench runs the file itself with `python -c`), the wait on a long async job on the
host, its progress read from its log (job_wait.py, the module eagle3.trn2.job_wait), and a role's directories and files
written, listed and read on the host in one call (files.py, the module eagle3.trn2.host_files)."""
