"""The bad inputs whose refusal the project's Python makes, refused by calling that code as the preflight calls it.

tests/integration/test_bad_inputs.py runs the real preflight (or site.yml) once per case; a run costs seconds of CPU, and most
cases are refused by Python the preflight only calls: the settings schema and the rules between settings
(plugins/module_utils/settings/settings.py settings_problems, through the lookup eagle3.trn2.settings_problems), the filter
that judges vllm serve's options (vllm_inputs), the results directory's check (dir_problem) and the command line's
secrets (cli_secrets). Those cases are here: the same values on top of the rehearsal's settings as that file's
inventory and environment make them for the same hosts (the project's defaults, inventories/rehearsal's group_vars,
the host's vars, the case given as -e), resolved as the lookup resolves them, the extra vars parsed as ansible-playbook
parses them (key=value as text, JSON as values), and the same substrings asserted on what the code returns with the
settings its refusal names (refusal_sources, which playbooks/tasks/refuse.yml adds). What only the playbook adds (the
"Refused before any change:" prefix, the role's wording around a filter's finding, nothing changed, no host
contacted) stays proven there, by one case per place a refusal comes from (its SITE cases and the preflight's).
"""
from __future__ import annotations

import importlib
import json
import re

import pytest
import yaml
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.parsing.splitter import parse_kv
from ansible.template import Templar, trust_as_template
from ansible.utils.vars import combine_vars
from ansible.vars.manager import VariableManager

from conftest import ROOT
from test_bad_inputs import (API_KEY, CASES, EC2, ENV_API_KEYS, ENV_TOKENS, HOSTS, HUB, NEURON, OPTS, SECRETS,
                             controller_environment, place)  # noqa: F401 (place: the inventory, a fixture)
from ansible_collections.eagle3.trn2.plugins.module_utils.server.vllm_inputs import vllm_option_problems, vllm_version_of
from ansible_collections.eagle3.trn2.plugins.module_utils.settings import settings as S
from ansible_collections.eagle3.trn2.plugins.module_utils.settings.controller_checks import (cli_secrets_refusal,
                                                                                             eagle3_cli_secrets,
                                                                                             eagle3_cli_text_names,
                                                                                             eagle3_dir_problem)
from ansible_collections.eagle3.trn2.plugins.module_utils.settings.layers import eagle3_merged
from ansible_collections.eagle3.trn2.plugins.module_utils.settings.task_view import checked, names_checked

# (id, extra vars, substrings the refusal must contain): refused by the settings schema or its rules between settings.
SETTINGS_CASES = [
    ("port-text", "eagle3_port=abc", ["eagle3_port must be a TCP port 1024..65535"]),
    ("k-zero", "eagle3_num_speculative_tokens=0", ["eagle3_num_speculative_tokens[0] must be an integer 1..8 (got 0)"]),
    ("k-repeated", "eagle3_num_speculative_tokens=3,3", ["eagle3_num_speculative_tokens must be one or more distinct integers 1..8 (a list, or -e eagle3_num_speculative_tokens=2,3,4)"]),
    ("run-id", {"eagle3_run_id": "bad id!"}, ["eagle3_run_id must be empty (a UTC timestamp) or 1-64 characters of [A-Za-z0-9._-] starting with a letter or digit"]),
    ("prompts-zero", "eagle3_bench_num_prompts=0", ["eagle3_bench_num_prompts must be an integer 1..100000"]),
    ("input-len-tiny", "eagle3_bench_input_len=4", ["eagle3_bench_input_len must be at least 16 tokens (an integer 16..131072)"]),
    ("temperature-negative", "eagle3_bench_temperature=-1", ["eagle3_bench_temperature must be null (the tool's default) or a number 0..2"]),
    ("dataset-unknown", "eagle3_bench_dataset=sharegpt", ["eagle3_bench_dataset must be one of: auto, sonnet, custom"]),
    ("cache-wait-negative", {"eagle3_compile_cache_wait": -5},
     ["eagle3_compile_cache_wait must be seconds 0 (never wait) ..86400"]),
    ("ready-timeout-short", "eagle3_ready_timeout=5", ["eagle3_ready_timeout must be seconds, at least 30 (..86400)"]),
    ("accelerator-unknown", "eagle3_accelerator=gpu", ["eagle3_accelerator", "cpu (rehearsal) or neuron"]),
    ("cache-s3-bucket", {"eagle3_compile_cache_s3_bucket": "My_Bucket"},
     ["eagle3_compile_cache_s3_bucket must be empty (none) or an S3 bucket name"]),
    ("cpu-shares-zero", {"eagle3_podman_cpu_shares": 0}, ["eagle3_podman_cpu_shares must be an integer 2..262144 (podman --cpu-shares)"]),
    ("provider-unknown", "eagle3_provider=docker", ["eagle3_provider must be podman (rehearsal) or ec2"]),
    ("cpu-with-hub-models", "eagle3_model_source=hub", ["eagle3_model_source", "rehearsal with accelerator cpu"]),
    ("venv-relative", "eagle3_venv=opt/venv", ["eagle3_venv must be an absolute path without spaces"]),
    ("gate-rate", {"eagle3_gates": {"acceptance": {"enforce": True, "min_rate": 150}}}, ["min_rate", "0..100"]),
    ("gate-match-rate", {"eagle3_gates": {"parity": {"min_match_rate": 120}}},
     ["eagle3_gates.parity.min_match_rate must be a percentage 0..100 of prompts identical", "got 120"]),
    ("gate-unknown", {"eagle3_gates": {"latency": {"enforce": True}}}, ["eagle3_gates.latency is not a key of eagle3_gates (known: parity, acceptance, speedup, reference, acceptance_band)"]),
    ("server-options-text", "eagle3_server_options=--max-num-seqs=2", ["eagle3_server_options must be a mapping"]),
    ("profile-name-unsafe", {"eagle3_profiles": [{"name": "baseline"}, {"name": "Eagle 3"}]},
     ["eagle3_profiles[1].name must be 1-40 lowercase letters, digits and dashes (it names a systemd unit) (got \"Eagle 3\")"]),
    ("sdk-key-unpinned", {**NEURON, "neuron_sdk_apt_key_fingerprint": "abc"}, ["neuron_sdk_apt_key_fingerprint must be the 40 hex digits (upper case) of the Neuron apt key"]),
    ("instance-without-neuron", {**NEURON, "eagle3_instance_type": "c7i.48xlarge"},
     ["eagle3_instance_type c7i.48xlarge", "no Neuron devices"]),
    ("root-volume-small", {**EC2, "provision_ec2_root_volume_gb": 100}, ["provision_ec2_root_volume_gb", "at least 512"]),
    ("ami-malformed", {**EC2, "provision_ec2_ami_id": "ubuntu-24"}, ["provision_ec2_ami_id must be empty (the SSM parameter's DLAMI) or an AMI id ami-..."]),
    ("capacity-id", {**EC2, "provision_ec2_capacity_reservation_id": "block-1"},
     ["provision_ec2_capacity_reservation_id must be empty or a capacity reservation id cr-..."]),
    ("cache-device", {**NEURON, "vllm_service_cache_device": "nvme1n1"}, ["vllm_service_cache_device must be auto, empty (no cache disk) or a device /dev/..."]),
    # A string, a nesting or nothing where a list of integers 1..8 is expected.
    ("k-text", "eagle3_num_speculative_tokens=2,x", ["eagle3_num_speculative_tokens[1] must be an integer"]),
    ("k-nested", {"eagle3_num_speculative_tokens": [[2, 3]]}, ["eagle3_num_speculative_tokens[0] must be an integer"]),
    ("k-empty", {"eagle3_num_speculative_tokens": []}, ["eagle3_num_speculative_tokens must be one or more distinct integers 1..8 (a list, or -e eagle3_num_speculative_tokens=2,3,4)"]),
    # Server options of the wrong type, refused by the schema before the role's filter reads them.
    ("option-speculative-config", {"eagle3_server_options": {**OPTS, "speculative-config": {"method": "ngram"}}},
     ["eagle3_server_options.speculative-config must be a scalar (string, number, true/false or null)"]),
    ("option-bool-as-text", {"eagle3_server_options": {**OPTS, "enable-prefix-caching": "false"}},
     ["eagle3_server_options.enable-prefix-caching must be true or false"]),
    ("option-int-as-float", {"eagle3_server_options": {**OPTS, "max-num-seqs": 2.5}}, ["eagle3_server_options.max-num-seqs must be an integer"]),
    ("option-int-as-text", {"eagle3_server_options": {**OPTS, "max-model-len": "2k"}}, ["eagle3_server_options.max-model-len must be an integer"]),
    ("method-empty", {"eagle3_speculative_method": ""}, ["eagle3_speculative_method must be a vLLM speculative method such as eagle3"]),
    ("served-name-empty", {"eagle3_served_model_name": ""},
     ["eagle3_served_model_name must be a name without spaces"]),
    ("temperature-text", "eagle3_bench_temperature=hot", ["eagle3_bench_temperature must be null (the tool's default) or a number 0..2"]),
    # A token of two lines from the controller's environment (HF_TOKEN, ENV_TOKENS).
    ("token-two-lines", {**HUB}, ["eagle3_hf_token holds a newline at position 27: a unit file, an environment file, a YAML config or a command line cannot hold it (the value is not shown)"]),
    ("serve-unknown-profile", "eagle3_serve=eagle3-k9",
     ["eagle3_serve must be none, best or one of the run's profiles baseline, eagle3", 'got "eagle3-k9"']),
    ("serve-port-privileged", "eagle3_serve_port=80", ["eagle3_serve_port must be a TCP port 1024..65535"]),
    ("serve-bind-any-podman", "eagle3_serve_bind_address=0.0.0.0",
     ["eagle3_serve_bind_address must be 127.0.0.1 on podman hosts", 'got "0.0.0.0"']),
    ("gate-rate-text", {"eagle3_gates": {"acceptance": {"enforce": True, "min_rate": "thirty"}}},
     ["eagle3_gates.acceptance.min_rate must be a percentage 0..100"]),
    ("hf-endpoint-cleartext", {**HUB, "model_assets_hf_endpoint": "http://hub.example.com"},
     ["model_assets_hf_endpoint must be an https URL", "token is sent to it", 'got "http://hub.example.com"']),
    ("index-url-credentials", {"eagle3_pip_extra_index_urls": ["https://ci:s3cret-pip-token@pypi.example.com/simple"]},
     ["eagle3_pip_extra_index_urls[0] must be an https URL (plain http on 127.0.0.1 only), without credentials"]),
    ("misspelt-setting", {"eagle3_num_speculative_token": [5]},
     ["eagle3_num_speculative_token is not a setting; did you mean eagle3_num_speculative_tokens?"]),
    ("misspelt-setting-text", "eagle3_bench_num_prompt=10",
     ["eagle3_bench_num_prompt is not a setting; did you mean eagle3_bench_num_prompts?"]),
    # A misspelt role input (a name outside the eagle3_ prefix an operator means as a setting)
    ("misspelt-role-input", {"vllm_bench_num_prompt": 10},
     ["vllm_bench_num_prompt is not an input of the role; did you mean vllm_bench_num_prompts?"]),
    ("misspelt-gate-key", {"eagle3_gates": {"acceptance": {"min_rat": 3}}},
     ["eagle3_gates.acceptance.min_rat is not a key of eagle3_gates.acceptance", "did you mean min_rate?"]),
    ("prompts-true", "eagle3_bench_num_prompts=true", ["eagle3_bench_num_prompts must be an integer 1..100000", 'got "true"']),
    ("run-id-newline", {"eagle3_run_id": "badin\n"}, ["eagle3_run_id holds a newline at position 5"]),
    ("stop-timeout-zero", {"eagle3_stop_timeout": 0}, ["eagle3_stop_timeout must be seconds 5..3600", "got 0"]),
    ("rate-fraction", {"eagle3_gates": {"acceptance": {"min_rate": 0.3}}}, ["did you mean 30 (%)?"]),
    ("environment-loader", {"vllm_service_environment": {"LD_PRELOAD": "/tmp/x.so"}},
     ["vllm_service_environment has a key that is not an environment variable name", "eagle3_environment_allow_loader"]),
]
# (id, extra vars, substrings of what the filter vllm_option_problems finds in vllm_service_options, with the settings
# behind the role inputs it names): the role words it as "vllm_service_options (eagle3_server_options) has what vllm
# serve <version> would reject or silently change: <findings>" (proven by option-typo through site.yml).
OPTION_CASES = [
    ("option-of-vllm-bench", {"eagle3_server_options": {**OPTS, "num-prompts": 10}},
     ["num-prompts is not an option of vllm serve 0.29.0"]),
    ("option-typo-neuron", {**NEURON, "eagle3_server_options": {"max-num-seq": 2, "max-model-len": 2048}},
     ["max-num-seq is not an option of vllm serve 0.24.0"]),
    ("option-false-without-no-form", {"eagle3_server_options": {**OPTS, "disable-log-stats": False}},
     ["disable-log-stats: false cannot be passed", "no --no-disable-log-stats"]),
    # Options the role sets from its own variables: given again they would bypass those variables' checks.
    ("option-host", {"eagle3_server_options": {**OPTS, "host": "0.0.0.0"}},
     ["host is set by the role from vllm_service_host", "vllm_service_host is set from eagle3_bind_address"]),
    ("option-port", {"eagle3_server_options": {**OPTS, "port": 9000}},
     ["port is set by the role from vllm_service_port", "vllm_service_port is set from eagle3_port"]),
    ("option-tp-neuron", {**NEURON, "eagle3_server_options": {"max-num-seqs": 2, "tensor-parallel-size": 4}},
     ["tensor-parallel-size is set by the role from vllm_service_tensor_parallel_size", "eagle3_tensor_parallel_size"]),
    ("option-choice", {"eagle3_server_options": {**OPTS, "dtype": "float8"}}, ["dtype must be one of auto,", "(got 'float8')"]),
]
# (id, eagle3_results_dir ({work}: the place's directory of a file and a dangling link), what dir_problem says): the
# preflight words it as "eagle3_results_dir <path> is not writable as a directory on the controller (<problem>)"
# (proven by results-is-a-file through site.yml).
RESULTS_CASES = [
    ("results-not-writable", "/etc/hostname/results", ["hostname is not a directory"]),
    ("results-under-dangling-link", "{work}/dangling/results", ["dangling is a broken symbolic link"]),
    ("results-in-proc", "/proc/eagle3-results", ["nothing can be created in /proc"]),
    ("results-name-too-long", "{work}/" + "x" * 300 + "/results", ["longer than the file system allows"]),
]
# (id, extra vars, substrings of the refusal of a secret on the command line): the preflight's own words (cli_refusal)
# of what the lookup cli_secrets finds in ansible-playbook's command line (token-on-command-line through site.yml).
CLI_SECRET_CASES = [
    ("api-key-on-command-line", "eagle3_serve_api_key=Mx4Qp8Rz2Lk6Wn9Vb3Ty7Hs",
     ["eagle3_serve_api_key given on the ansible-playbook command line", "EAGLE3_API_KEY"]),
]
ENV_LOOKUP = re.compile(r"lookup\('ansible\.builtin\.env', '([A-Za-z0-9_]+)'\)")
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _tasks(path: str) -> list[dict]:
    return yaml.safe_load((ROOT / path).read_text())


class Rehearsal:
    """The rehearsal's settings as the preflight's lookups see them on a host of tests/integration/test_bad_inputs.py's inventory:
    the project's defaults (roles/settings), the inventory's group_vars and host vars, then the case's extra vars."""

    def __init__(self, place):
        self.loader, self.place = DataLoader(), place
        inventory = InventoryManager(loader=self.loader, sources=[str(place / "inventory")])
        variables = VariableManager(loader=self.loader, inventory=inventory)
        self.hostvars = {host: variables.get_vars(host=inventory.get_host(host)) for host in ("localhost", HOSTS[0])}
        self.defaults: dict = {}
        for path in sorted((ROOT / "roles/settings/defaults/main").glob("*.yml")):
            self.defaults = combine_vars(self.defaults, self.loader.load_from_file(str(path), trusted_as_template=True))
        # One templar for every case (its Jinja environment is made once), given the project's filters by their
        # collection names: this process's Ansible has not loaded the collection, and the defaults call them
        # (eagle3_profiles, vllm_version_of).
        self.templar = Templar(loader=self.loader)
        filters = self.templar.environment.filters
        for path in sorted((ROOT / "plugins/filter").glob("*.py")):
            module = importlib.import_module(f"ansible_collections.eagle3.trn2.plugins.filter.{path.stem}")
            for name, function in module.FilterModule().filters().items():
                filters[f"eagle3.trn2.{name}"] = function
        # the controller's environment variables the defaults read (lookup env; an unset one reads as "")
        self.reads = sorted({name for value in self.defaults.values() for name in ENV_LOOKUP.findall(str(value))})
        self._base: dict = {}
        self._cases: dict = {}

    def _templar(self, variables: dict) -> Templar:
        self.templar.available_variables = variables
        return self.templar

    def _resolved(self, host: str, environment: dict) -> tuple[dict, tuple[dict, dict, set]]:
        """The variables of `host` before the case, and (values, unresolved, templated) as the lookup resolves them;
        each default reading the controller's environment (lookup env) reads `environment`."""
        key = (host, tuple(sorted(environment.items())))
        if key not in self._base:
            defaults = {name: trust_as_template(ENV_LOOKUP.sub(lambda m: f"__environment[{m.group(1)!r}]", value))
                        if isinstance(value, str) and ENV_LOOKUP.search(value) else value
                        for name, value in self.defaults.items()}
            variables = combine_vars(combine_vars(defaults, self.hostvars[host]), {"__environment": environment})
            self._base[key] = variables, S.resolve(self._templar(variables), variables, names_checked(variables))
        return self._base[key]

    def values(self, extra, host: str, environment: dict) -> tuple[dict, dict, dict, set, str]:
        """(variables, values, unresolved, templated, the -e argument) of `host` with the case's extra vars: the names
        the case gives and every template that reads one of them (through others too) resolved again; once a case."""
        text = extra if isinstance(extra, str) else json.dumps(extra)
        environment = {name: environment.get(name, "") for name in self.reads}
        key = (text, host, tuple(sorted(environment.items())))
        if key not in self._cases:
            self._cases[key] = self._values(text, host, environment)
        return self._cases[key]

    def _values(self, text: str, host: str, environment: dict) -> tuple[dict, dict, dict, set, str]:
        # as ansible-playbook's load_extra_vars: JSON or YAML when it starts so, else key=value words (text)
        given = self.loader.load(text) if text[:1] in "[{" else parse_kv(text)
        variables, (values, unresolved, templated) = self._resolved(host, environment)
        variables = combine_vars(variables, given)
        changed, grown = set(given), True
        while grown:
            reads = [name for name in templated | set(unresolved)
                     if name not in changed and set(NAME.findall(str(variables[name]))) & changed]
            changed |= set(reads)
            grown = bool(reads)
        again = [name for name in names_checked(variables) if name in changed]
        values = {k: v for k, v in values.items() if k not in changed}
        unresolved = {k: v for k, v in unresolved.items() if k not in changed}
        new_values, new_unresolved, new_templated = S.resolve(self._templar(variables), variables, again)
        return (variables, {**values, **new_values}, {**unresolved, **new_unresolved},
                (templated - changed) | new_templated, text)

    def settings_refusal(self, extra, environment: dict) -> list[str]:
        """What the lookup settings_problems refuses, on the controller first and then on the vLLM host (the plays'
        order), as the preflight calls it."""
        for host in ("localhost", HOSTS[0]):
            variables, values, unresolved, templated, text = self.values(extra, host, environment)
            seen = {name: value for name, value in variables.items() if name != "__environment"}
            found = checked(values, unresolved, templated, seen,
                            eagle3_cli_text_names(["ansible-playbook", "-e", text, "site.yml"]))
            if found:
                return found
        return []


@pytest.fixture(scope="module")
def rehearsal(place) -> Rehearsal:
    return Rehearsal(place)


def environment(place, name: str) -> dict:
    """The controller's environment of a case, as tests/integration/test_bad_inputs.py gives it to ansible-playbook."""
    return controller_environment(place, ENV_TOKENS.get(name, ""), ENV_API_KEYS.get(name, API_KEY))


def assert_refusal(found: list[str], expected: list[str]):
    """`expected` in the refusal with the settings behind the inputs it names, and no 8 characters of a secret."""
    text = " ".join(found)
    text += f" ({'; '.join(S.refusal_sources(text))})"
    assert found, "not refused"
    for part in expected:
        assert part in text, f"{part!r} not in the refusal: {text}"
    shown = [s[i:i + 8] for s in SECRETS for i in range(len(s) - 7) if s[i:i + 8] in text]
    assert shown == [], f"the refusal shows part of a secret: {shown}"


@pytest.mark.parametrize(("case", "extra", "expected"), SETTINGS_CASES, ids=[case[0] for case in SETTINGS_CASES])
def test_the_settings_refuse(rehearsal, place, case, extra, expected):
    assert_refusal(rehearsal.settings_refusal(extra, environment(place, case)), expected)


def test_the_rehearsals_own_settings_pass(rehearsal, place):
    # the cases' refusals are theirs: the rehearsal with no mistake passes, on the controller and the vLLM host
    assert rehearsal.settings_refusal({}, environment(place, "")) == []


RESERVED = next(task for task in _tasks("roles/vllm_service/tasks/preflight.yml")
                if "__vllm_service_reserved" in task.get("vars", {}))["vars"]["__vllm_service_reserved"]


@pytest.mark.parametrize(("case", "extra", "expected"), OPTION_CASES, ids=[case[0] for case in OPTION_CASES])
def test_the_server_options_filter_refuses(rehearsal, place, case, extra, expected):
    # the settings pass: the role's filter is what refuses, on the options and version its defaults make
    # (roles/vllm_service/defaults: eagle3_merged of the defaults and eagle3_server_options, vllm_version_of the pins)
    assert rehearsal.settings_refusal(extra, environment(place, case)) == []
    _, values, *_ = rehearsal.values(extra, HOSTS[0], environment(place, case))
    options = eagle3_merged(values["eagle3_server_options_defaults"], values["eagle3_server_options"])
    version = vllm_version_of(values["eagle3_vllm_packages"][values["eagle3_accelerator"]])
    known = yaml.safe_load((ROOT / f"roles/vllm_service/files/serve_options/{version}.yml").read_text())
    assert_refusal(vllm_option_problems(options, known, RESERVED), expected)


@pytest.mark.parametrize(("case", "path", "expected"), RESULTS_CASES, ids=[case[0] for case in RESULTS_CASES])
def test_the_results_directory_check_refuses(rehearsal, place, case, path, expected):
    path = path.replace("{work}", str(place / "work"))
    assert rehearsal.settings_refusal(f"eagle3_results_dir={path}", environment(place, case)) == []
    assert_refusal([eagle3_dir_problem(path)], expected)


PREFLIGHT_SECRETS = re.search(r"query\('eagle3\.trn2\.cli_secrets', ([^)]*)\)", (ROOT / "playbooks/preflight.yml").read_text())


@pytest.mark.parametrize(("case", "extra", "expected"), CLI_SECRET_CASES, ids=[case[0] for case in CLI_SECRET_CASES])
def test_a_secret_on_the_command_line_is_refused(rehearsal, place, case, extra, expected):
    names = re.findall(r"'([a-z0-9_]+)'", PREFLIGHT_SECRETS.group(1))
    assert rehearsal.settings_refusal(extra, environment(place, case)) == []
    assert_refusal([cli_secrets_refusal(eagle3_cli_secrets(names, ["ansible-playbook", "-e", extra, "site.yml"]))],
                   expected)


def test_each_case_is_in_one_place():
    # an id names one case: here (calling the code) or in tests/integration/test_bad_inputs.py (through the playbook), not both
    here = [case[0] for cases in (SETTINGS_CASES, OPTION_CASES, RESULTS_CASES, CLI_SECRET_CASES) for case in cases]
    assert len(set(here)) == len(here) and set(here).isdisjoint(case[0] for case in CASES)
