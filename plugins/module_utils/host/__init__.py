"""What a host is given to run on: its locked Python stack (host_lock.py), the pip and apt pins compared the way pip
and apt compare them (pins.py), and the free-space check that runs on the hosts and on the controller alike
(free_space.py, stdlib only: vllm_bench runs the file itself with `python -c`)."""
