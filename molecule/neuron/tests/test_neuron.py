"""The neuron path on a host playing trn2, against FIXTURE repositories (see molecule.yml)."""
from __future__ import annotations

import json
import re
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import testinfra
import yaml

NAME = "molecule-neuron-1"
HOST = testinfra.get_host(f"podman://{NAME}")
ROOT = Path(os.environ["MOLECULE_PROJECT_DIRECTORY"])
EPHEMERAL = Path(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"])
# The row's pins (public versions, as the release manifest gives them) ...
PINNED = {"aws-neuronx-dkms": "2.30.2.0", "aws-neuronx-runtime-lib": "2.34.10.0",
          "aws-neuronx-collectives": "2.34.10.0", "aws-neuronx-tools": "2.32.28.0"}
# ... and what the repository really serves for them: build-suffixed debs (files/build_fixtures.py).
SERVED = {"aws-neuronx-dkms": "2.30.2.0-9f4c2a8e1", "aws-neuronx-runtime-lib": "2.34.10.0-ac18d186d",
          "aws-neuronx-collectives": "2.34.10.0-74eaafac6", "aws-neuronx-tools": "2.32.28.0-526c2b7f6"}
PY313 = Path("/root/.pyenv/versions/3.13.0/bin/python3")
ROW_231 = {"deb": {"aws-neuronx-dkms": "2.29.41.0", "aws-neuronx-runtime-lib": "2.33.21.0",
                   "aws-neuronx-collectives": "2.33.21.0", "aws-neuronx-tools": "2.31.30.0"},
           "pip": ["vllm-neuron==0.24.0.1.1.0", "neuronx-cc==2.27.5334.0", "nki==0.6.0"]}


def play(*extra: str, playbook: str = "playbooks/host.yml", token: str | None = None) -> tuple[int, str]:
    """ansible-playbook on the scenario's inventory (`playbook`: one or several, space-separated); `token` is given as
    operators give it, in HF_TOKEN (a secret on the command line is refused)."""
    env = dict(os.environ)
    env.pop("HF_TOKEN", None)
    if token is not None:
        env["HF_TOKEN"] = token
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(EPHEMERAL / "inventory"),
                           *[str(ROOT / book) for book in playbook.split()], *extra],
                          capture_output=True, text=True, timeout=900, cwd=ROOT, env=env)
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


def releases(**rows: dict) -> str:
    base = yaml.safe_load((ROOT / "roles/settings/defaults/main/neuron_releases.yml").read_text())["eagle3_neuron_releases"]
    return json.dumps({"eagle3_neuron_releases": dict(base, **rows)})


def test_a_rerun_skips_both_phases_and_a_changed_file_runs_the_host_phase():
    """First: the host is as the idempotence pass left it (every phase run in full, eagle3_rerun_shortcut off, each
    recorded). After the preflight's checks, with the shortcut on as in real runs, both phases are skipped after one
    check each; the venv's constraints file edited by hand makes the host phase run again (in check mode, which keeps
    the record: the file is put back after). A phase playbook alone checks its own inputs, so it runs in full."""
    checked = "playbooks/preflight.yml playbooks/host.yml playbooks/service.yml"
    rc, out = play(playbook=checked)
    assert rc == 0, out[-2000:]
    for phase in ("host", "service"):
        assert f"{NAME}: the {phase} phase is skipped, the host is as its last run left it" in out, out[-2000:]
    assert "changed=0" in out.split("PLAY RECAP")[-1]
    constraints = "/opt/eagle3/venv/eagle3-constraints.txt"
    kept = HOST.file(constraints).content_string
    assert HOST.run(f"echo 'six==1.0' >> {constraints}").rc == 0
    try:
        rc, out = play("--check", playbook="playbooks/preflight.yml playbooks/host.yml")
    finally:
        HOST.run(f"printf %s {shlex.quote(kept)} > {constraints}")
    assert rc == 0, out[-2000:]
    assert f"{NAME}: the host phase runs: changed on the host since its last run: {constraints}" in out, out[-2000:]
    rc, out = play(playbook="playbooks/preflight.yml playbooks/host.yml")
    assert f"{NAME}: the host phase is skipped" in out, out[-2000:]
    rc, out = play("--check", playbook="playbooks/service.yml")
    assert rc == 0 and (f"{NAME}: the service phase runs: the phase playbook runs without playbooks/preflight.yml, so it "
                        "checks its own inputs") in out, out[-2000:]


def test_repository_line_and_keyring_as_documented():
    assert HOST.file("/etc/apt/sources.list.d/neuron.list").content_string == (
        "deb [signed-by=/etc/apt/keyrings/neuron.asc] http://127.0.0.1:8741 bookworm main\n")
    key = HOST.file("/etc/apt/keyrings/neuron.asc")
    assert key.mode == 0o644 and key.user == "root"
    fpr = (EPHEMERAL / "fixtures" / "fingerprint").read_text().strip()
    assert fpr in HOST.run("gpg --batch --show-keys --with-colons /etc/apt/keyrings/neuron.asc").stdout
    assert not HOST.file("/etc/apt/trusted.gpg").exists  # no apt-key


@pytest.mark.parametrize(("package", "version"), SERVED.items())
def test_pinned_versions_installed_and_held(package, version):
    # Pinned "2.34.10.0*" as AWS's install page does; the suffixed build is what got installed.
    assert HOST.package(package).version == version
    assert HOST.run(f"dpkg --get-selections {package}").stdout.split() == [package, "hold"]


def test_headers_installed_before_the_driver():
    kernel = HOST.run("uname -r").stdout.strip()
    assert HOST.package(f"linux-headers-{kernel}").is_installed


def test_plugin_pins_in_the_venv():
    found = json.loads(HOST.run("/opt/eagle3/venv/bin/python -m pip list --format json").stdout)
    versions = {p["name"].lower(): p["version"] for p in found}
    # The Neuron repository's local labels satisfy the row's public pins (PEP 440).
    assert versions["vllm-neuron"] == "0.24.0.1.1.0+e8242a9"
    assert versions["neuronx-cc"] == "2.27.5334.0+f702b353" and versions["nki"] == "0.6.0+31049202112.g85070674"
    # The row's constraints hold the open dependencies (the index also serves islpy 2026.2.1 and a newer lite).
    assert versions["islpy"] == "2026.1" and versions["libtorch-neuronx-lite"] == "2.11.0.1.0.1284+f49d8626"
    # pip's constraints: the whole committed lock of the host's Python, less the row's packages, with the row's
    # constraints winning over the resolve (every host installs the same, verified versions).
    lock = (ROOT / "roles/vllm_install/files/locks/neuron-2.32.0-py3.11.txt").read_text().splitlines()
    def canonical(pin: str) -> str:  # pip's names compare canonically (typing_extensions is typing-extensions)
        name, version = pin.split("==")
        return re.sub(r"[-_.]+", "-", name).lower() + "==" + version
    locked = {canonical(line).split("==")[0]: canonical(line) for line in lock if "==" in line and not line.startswith("#")}
    constraints = {canonical(pin) for pin in HOST.file("/opt/eagle3/venv/eagle3-constraints.txt").content_string.split()}
    assert constraints == {pin for name, pin in locked.items() if name not in ("vllm-neuron", "neuronx-cc", "nki")}
    assert {"libtorch-neuronx-lite==2.11.0.1.0.1284", "islpy==2026.1"} <= set(constraints)
    # vllm-neuron's `six; python_version > "3.11"` is evaluated by the host's pip (Python 3.11 here).
    assert "six" not in versions


def test_the_run_records_the_locked_stack_it_ran():
    # The provenance probe every benchmark pass records in its manifest (deployed.stack), run on the host.
    probe = (ROOT / "roles/vllm_bench/files/probes/versions.py").read_text()
    stack = json.loads(HOST.check_output("/opt/eagle3/venv/bin/python - /opt/eagle3/venv.stack.json <<'PY'\n" + probe + "\nPY"))["stack"]
    assert stack["stack"] == "neuron-2.32.0" and stack["lock"] == "neuron-2.32.0-py3.11.txt" and stack["verified"] is False
    # The default source (auto) on a host without the release's DLAMI venv: the project's venv, from the indexes.
    assert stack["ran"] == "venv" and stack["installed_from"] == "index"
    # Every package in the venv is the lock's, at its version; setuptools is the lock's, not the venv's bootstrap.
    assert stack["differ"] == [] and stack["unlocked"] == []
    lock = (ROOT / "roles/vllm_install/files/locks/neuron-2.32.0-py3.11.txt").read_text()
    assert f"setuptools=={stack['freeze']['setuptools']}" in lock.split()


def test_neuron_units_carry_tp8_path_and_cache():
    cfg = yaml.safe_load(HOST.file("/etc/eagle3/eagle3.yaml").content_string)
    assert cfg["tensor-parallel-size"] == 8
    # vLLM's --config loader drops `false` (0.24 and 0.29): prefix caching goes off through its no- form.
    assert cfg["no-enable-prefix-caching"] is True and "enable-prefix-caching" not in cfg
    assert cfg["speculative-config"] == {"method": "eagle3", "model": "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3",
                                         "num_speculative_tokens": 3}
    env = HOST.file("/etc/eagle3/vllm.env").content_string
    assert "PATH=/opt/eagle3/venv/bin:" in env and "VLLM_CACHE_ROOT=/var/lib/eagle3/cache" in env
    # inductor's cache inside vLLM's, so compile once per fleet ships it (torch's default is /tmp: PrivateTmp=yes).
    assert "TORCHINDUCTOR_CACHE_DIR=/var/lib/eagle3/cache/torchinductor\n" in env
    assert "NEURON_SKIP_EFA_AFFINITY=1\n" in env  # the host has no EFA device
    # The runtime's and EFA's libraries, as AWS's container for this stack sets them (Dockerfile.neuronx).
    assert "LD_LIBRARY_PATH=/opt/aws/neuron/lib:/opt/amazon/efa/lib:/opt/amazon/efa/lib64\n" in env
    unit = HOST.file("/etc/systemd/system/vllm-eagle3.service").content_string
    props = HOST.service("vllm-eagle3.service").systemd_properties
    assert props["LimitMEMLOCK"] == "infinity"
    # systemd's own reading of the unit: vLLM raises its soft limit to 65535 at start, the unit allows it.
    assert int(props["LimitNOFILE"]) >= 65535 and int(props["LimitNOFILESoft"]) >= 65535
    # VLLM_CACHE_ROOT is under the home: one writable path; ProtectHome on its own line (it was run into this one).
    assert props["ReadWritePaths"] == "/var/lib/eagle3" and props["ProtectHome"] == "yes"
    assert "DeviceAllow=/dev/neuron15 rw" in unit and "PrivateDevices" not in unit
    # systemd reads the cache-hit-only file vllm_bench writes before a later host's start, optional, after
    # vllm.env; the key hashes vllm.env alone, so one cache serves both modes.
    files = HOST.check_output("systemctl show -p EnvironmentFiles vllm-eagle3.service").splitlines()
    assert files.index("EnvironmentFiles=/etc/eagle3/cache-hit-only.env (ignore_errors=yes)") > \
        files.index("EnvironmentFiles=/etc/eagle3/vllm.env (ignore_errors=no)")
    assert "Environment=PROMETHEUS_MULTIPROC_DIR=%t/vllm-eagle3" in unit and "RuntimeDirectory=vllm-eagle3" in unit
    assert HOST.file("/var/lib/eagle3/data/sonnet.txt").exists


def test_the_first_apt_task_waited_for_cloud_init():
    # The FIXTURE cloud-init (create.yml) was still configuring the host for 8 s after the role's first look.
    calls = HOST.file("/var/lib/fixture-cloud-init/calls").content_string.split("\n")
    assert any(line.endswith(" status --wait") for line in calls), calls
    done_at = float(HOST.file("/var/lib/fixture-cloud-init/done_at").content_string)
    # apt's own record of every install run (Start-Date, local time of the host): none before cloud-init was done.
    starts = HOST.run("sed -n 's/^Start-Date: //p' /var/log/apt/history.log").stdout.split("\n")
    epochs = [int(HOST.run(f"date -d '{s}' +%s").stdout) for s in starts if s.strip()]
    assert epochs and min(epochs) >= int(done_at), (epochs, done_at)


def test_sdk_older_than_232_is_refused():
    rc, out = play("-e", releases(**{"2.31.0": ROW_231}), "-e", "eagle3_neuron_sdk_version=2.31.0")
    assert rc != 0 and "neuron_sdk_version (eagle3_neuron_sdk_version) 2.31.0 is older than 2.32.0" in out


def test_release_without_a_row_is_refused():
    rc, out = play("-e", "eagle3_neuron_sdk_version=2.40.0")
    assert rc != 0 and "neuron_sdk_version (eagle3_neuron_sdk_version) 2.40.0 has no row in the release table" in out


def test_foreign_process_holding_cores_is_named():
    HOST.run("mkdir -p /etc/eagle3-fixture && echo '[{\"pid\": 4242, \"command\": \"python3 train.py\"}]'"
             " > /etc/eagle3-fixture/neuron-processes.json")
    try:
        # The host phase's own check, so with the shortcut off: the host has not changed since its record (the
        # benchmark checks again before every server start, vllm_bench's profile_start.yml).
        rc, out = play("-e", "eagle3_rerun_shortcut=false")
        assert rc != 0
        assert "NeuronCores are held by" in out and '"pid": 4242' in out and "python3 train.py" in out
    finally:
        HOST.run("rm -f /etc/eagle3-fixture/neuron-processes.json")


def test_dlami_is_verified_not_reinstalled():
    HOST.run("mkdir -p /opt/aws_neuronx_venv_pytorch_2_9")
    try:
        rc, out = play("--tags", "neuron")
        assert rc == 0, out[-2000:]
        assert "Neuron DLAMI detected" in out and "verifying, not reinstalling" in out
        assert "changed=0" in out.split("PLAY RECAP")[-1]
    finally:
        HOST.run("rmdir /opt/aws_neuronx_venv_pytorch_2_9")


@pytest.mark.parametrize(("runtime", "expected"), [
    # Older than the minimum: the version gate names both versions.
    ("2.33.21.0", ["installed aws-neuronx-runtime-lib 2.33.21.0-5c1e9a7d3 is older than 2.34.10.0 (Neuron SDK 2.32.0)"]),
    # Newer (the SSM path's latest DLAMI): passes the minimum but is not the row asked for.
    ("2.35.30.0", ["the DLAMI's Neuron SDK differs from neuron_sdk_version (eagle3_neuron_sdk_version) 2.32.0",
                   "aws-neuronx-runtime-lib installed 2.35.30.0-1f3e5d7c9, the 2.32.0 row pins 2.34.10.0*"]),
])
def test_dlami_with_another_sdk_is_refused_naming_versions(runtime, expected):
    HOST.run("mkdir -p /opt/aws_neuronx_venv_pytorch_2_9")
    change = HOST.run("DEBIAN_FRONTEND=noninteractive apt-get install -y --allow-downgrades --allow-change-held-packages"
                      f" 'aws-neuronx-runtime-lib={runtime}*'")
    assert change.rc == 0, change.stderr
    try:
        rc, out = play("--tags", "neuron")
        assert rc != 0
        assert all(text in out for text in expected), out[-2000:]
        assert "changed=0" in out.split("PLAY RECAP")[-1]
    finally:
        HOST.run("rmdir /opt/aws_neuronx_venv_pytorch_2_9")
        rc, out = play("--tags", "neuron")  # the pinned release comes back
        assert rc == 0 and HOST.package("aws-neuronx-runtime-lib").version == SERVED["aws-neuronx-runtime-lib"]


def test_the_233_patch_release_installs_and_the_superseded_233_is_refused_then_explained():
    """The 2.33.1 row (a patch of 2.33.0: its driver, runtime and collectives updated, its tools 2.33.0's) installs
    from the repository; 2.33.0 is refused before any change, naming 2.33.1 and what it fixes; allowed by
    eagle3_neuron_allow_superseded, its fixture driver fails in postinst like a DKMS build without headers, and the
    role explains it. The pinned 2.32 release comes back after."""
    row = yaml.safe_load((ROOT / "roles/settings/defaults/main/neuron_releases.yml").read_text())["eagle3_neuron_releases"]
    try:
        rc, out = play("-e", "eagle3_neuron_sdk_version=2.33.1", "--tags", "neuron")
        assert rc == 0, out[-2000:]
        for name, version in row["2.33.1"]["deb"].items():
            installed = HOST.package(name).version
            assert installed.split("-", 1)[0] == version, (name, installed)
        assert HOST.package("aws-neuronx-tools").version == "2.33.38.0-2b4d6f8a0"  # 2.33.0's own package
        before = HOST.run("dpkg-query -W -f '${Package} ${Version}\\n' 'aws-neuronx-*'").stdout
        rc, out = play("-e", "eagle3_neuron_sdk_version=2.33.0", "--tags", "neuron")
        assert rc != 0
        assert ("eagle3_neuron_sdk_version 2.33.0 is superseded by the patch release 2.33.1 of 2026-11-11, which fixes: "
                "Neuron Runtime: Corrects the internal execution order") in out, out[-2000:]
        assert HOST.run("dpkg-query -W -f '${Package} ${Version}\\n' 'aws-neuronx-*'").stdout == before
        rc, out = play("-e", "eagle3_neuron_sdk_version=2.33.0", "-e", "eagle3_neuron_allow_superseded=true",
                       "--tags", "neuron")
        assert rc != 0
        assert "The Neuron driver (aws-neuronx-dkms) is built by DKMS against linux-headers-" in out
        assert "Bad return status for module build" in out
    finally:
        HOST.run("dpkg --remove --force-all aws-neuronx-dkms")
        rc, out = play("--tags", "neuron")  # the pinned 2.32 release comes back
        assert rc == 0, out[-2000:]
        assert HOST.package("aws-neuronx-dkms").version == SERVED["aws-neuronx-dkms"]


def test_a_pypi_placeholder_pin_is_refused_before_any_change():
    # The fixture index serves vllm-neuron 0.1.0 with the real placeholder's metadata (Summary UNKNOWN): nothing in it
    # tells, so the pin itself is refused, by name and version, before pip runs.
    before = HOST.run("/opt/eagle3/venv/bin/python -m pip list --format json").stdout
    row = {"deb": PINNED, "pip": ["vllm-neuron==0.1.0", "neuronx-cc==2.27.5334.0", "nki==0.6.0"]}
    rc, out = play("-e", releases(**{"2.32.0": row}), "--tags", "vllm")
    assert rc != 0
    assert "names PyPI placeholders, which hold no code: vllm-neuron==0.1.0" in out, out[-2000:]
    assert "changed=0" in out.split("PLAY RECAP")[-1]
    assert HOST.run("/opt/eagle3/venv/bin/python -m pip list --format json").stdout == before


def test_hf_token_only_in_a_root_only_environment_file():
    canary = "hf_CANARY0123456789abcdef"
    rc, out = play("-v", playbook="playbooks/service.yml", token=canary)
    assert rc == 0, out[-2000:]
    secrets = HOST.file("/etc/eagle3/secrets.env")
    assert (secrets.mode, secrets.user, secrets.group) == (0o600, "root", "root")
    assert secrets.content_string == f"HF_TOKEN={canary}\n"
    assert canary not in out
    leaks = HOST.run(f"grep -rl {canary} /etc /var/lib/eagle3 /opt/eagle3 2>/dev/null").stdout.split()
    assert leaks == ["/etc/eagle3/secrets.env"]


@pytest.mark.skipif(not PY313.exists(), reason="needs a Python 3.13 on the controller (pyenv) to resolve a wheelhouse")
def test_wheelhouse_for_another_python_is_refused_before_any_change():
    # The controller resolves with Python 3.13 while the host runs 3.11 (pip would evaluate
    # vllm-neuron's `six; python_version > "3.11"` for the wrong interpreter).
    rc, out = play("-e", "eagle3_install_source=wheelhouse", "-e", f"vllm_install_wheelhouse_python={PY313}", "--tags", "vllm")
    assert rc != 0
    assert (f"resolved on the controller by {PY313} (Python 3.13, linux-x86_64), but molecule-neuron-1 runs python3 = "
            "Python 3.11, linux-x86_64") in out
    assert "Nothing was changed" in out and "changed=0" in out.split("PLAY RECAP")[-1]


def test_a_wheelhouse_interpreter_that_does_not_run_is_refused_before_any_change():
    # Read in the controller's own process (a pipe lookup): a path that is no interpreter is named, not a template error.
    rc, out = play("-e", "eagle3_install_source=wheelhouse", "-e", "vllm_install_wheelhouse_python=/nonexistent/python3",
                   "--tags", "vllm")
    assert rc != 0
    assert "is /nonexistent/python3, which does not run on the controller: set it to a Python 3.11 there" in out
    assert "Nothing was changed" in out and "changed=0" in out.split("PLAY RECAP")[-1]


def test_wheelhouse_resolved_by_a_matching_python_installs_the_constrained_set():
    # The same Python minor and platform as the host's: the controller resolves the set (with the
    # row's constraints), ships one archive, the host installs it with --no-index.
    HOST.run("rm -rf /opt/eagle3/venv")
    rc, out = play("-e", "eagle3_install_source=wheelhouse", "--tags", "vllm")
    assert rc == 0, out[-3000:]
    found = json.loads(HOST.run("/opt/eagle3/venv/bin/python -m pip list --format json").stdout)
    versions = {p["name"].lower(): p["version"] for p in found}
    assert versions["vllm-neuron"] == "0.24.0.1.1.0+e8242a9" and versions["islpy"] == "2026.1"
    assert versions["libtorch-neuronx-lite"] == "2.11.0.1.0.1284+f49d8626" and "six" not in versions
    assert not HOST.file("/var/tmp/eagle3-wheelhouse").exists


def test_a_token_on_the_command_line_is_refused_by_the_phase_playbook_alone():
    # playbooks/service.yml alone runs no project preflight: vllm_service's own rules refuse it, before any change.
    before = HOST.run("cat /etc/eagle3/secrets.env 2>/dev/null").stdout
    rc, out = play("-e", "eagle3_hf_token=hf_CANARY0123456789abcdef", playbook="playbooks/service.yml")
    assert rc != 0
    assert "eagle3_hf_token given on the ansible-playbook command line" in out and "HF_TOKEN environment variable" in out
    assert "CANARY" not in out
    assert "changed=0" in out.split("PLAY RECAP")[-1]
    assert HOST.run("cat /etc/eagle3/secrets.env 2>/dev/null").stdout == before


def test_hf_token_of_another_shape_is_refused_unshown():
    before = HOST.run("cat /etc/eagle3/secrets.env 2>/dev/null").stdout
    rc, out = play("-vvv", playbook="playbooks/service.yml", token="hf_CANARY0123456789abcdef\nLD_PRELOAD=evil.so")
    assert rc != 0
    # the phase playbook alone checks the settings first (the settings role): the schema's rule for every string
    assert "eagle3_hf_token holds a newline at position 25: a unit file, an environment file, a YAML config or a " \
           "command line cannot hold it (the value is not shown)" in out
    assert "LD_PRELOAD" not in out and "CANARY" not in out
    assert "changed=0" in out.split("PLAY RECAP")[-1]
    assert HOST.run("cat /etc/eagle3/secrets.env 2>/dev/null").stdout == before


def test_no_token_on_a_host_that_does_not_download():
    rc, out = play("-e", "eagle3_model_source=rehearsal", playbook="playbooks/service.yml", token="hf_CANARY0123456789abcdef")
    assert rc == 0, out[-2000:]
    assert not HOST.file("/etc/eagle3/secrets.env").exists


def test_the_host_yields_the_cpu_to_other_containers():
    """eagle3_podman_cpu_shares 2 (this scenario's inventory) reached the kernel: the container's own cgroup, which is
    what weighs against molecule default's host (a nice on the command that started it would not)."""
    v1 = HOST.file("/sys/fs/cgroup/cpu/cpu.shares")
    if v1.exists:
        assert v1.content_string.strip() == "2"
    else:  # cgroup v2: podman converts shares 2 to the lowest weight
        assert HOST.file("/sys/fs/cgroup/cpu.weight").content_string.strip() == "1"
