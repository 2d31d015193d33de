"""Compile once per fleet: the key of a profile's compile cache (key.py: what the compiled artifacts depend on), the
fleet's manifest on the controller and the other hosts' wait for the canary (manifest.py), and where a host's cache
comes from (plan.py: this host, the controller, S3, the canary, or a compile of its own). The roles/compile_cache
tasks run it through the actions compile_cache_plan and compile_cache_state and the filters of
plugins/filter/compile_cache.py; the host's side (look, pack, unpack) is roles/compile_cache/files/probes/compile_cache.py."""
