"""The rehearsal generator's OpenMP wait policy (make_rehearsal_models.py --wait-policy): spin on an idle machine,
sleep on a busy one. It changes the training's time, not its bits (docs/performance.md, "The trained pair": the
same seed trained with each policy wrote files of identical sha256, 137 s against 249 s on 2 idle vCPUs)."""
from __future__ import annotations


import pytest

from conftest import ROOT, load_file

generator = load_file(ROOT / "roles/model_assets/files/make_rehearsal_models.py")


def stat_line(idle: int, busy: int) -> str:
    # /proc/stat's first line: cpu user nice system idle iowait irq softirq steal guest guest_nice (proc(5))
    return f"cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\ncpu0 1 0 0 1 0 0 0 0 0 0\ncpu1 1 0 0 1 0 0 0 0 0 0\nintr 1\n"


@pytest.mark.parametrize(("busy_ticks", "idle_expected"), [(0, 2.0), (100, 1.0), (200, 0.0)])
def test_idle_cpus_counts_the_machine_s_idle_share_over_the_interval(tmp_path, monkeypatch, busy_ticks, idle_expected):
    stat = tmp_path / "stat"
    stat.write_text(stat_line(idle=1000, busy=500))
    # Between the two samples 200 ticks pass on 2 CPUs (100 ticks of wall time), busy_ticks of them busy.
    monkeypatch.setattr(generator.time, "sleep",
                        lambda _s: stat.write_text(stat_line(idle=1000 + 200 - busy_ticks, busy=500 + busy_ticks)))
    assert generator.idle_cpus(1.0, stat) == pytest.approx(idle_expected)


def test_an_unreadable_proc_stat_counts_as_busy(tmp_path):
    assert generator.idle_cpus(0.0, tmp_path / "missing") == 0.0


@pytest.mark.parametrize(("requested", "idle", "policy"), [
    # 1.5 of 2: what the role's own launch of the job left idle in its first second (2026-12-02, trained on rehearsal-1).
    ("auto", 2.0, "ACTIVE"), ("auto", 1.5, "ACTIVE"), ("auto", 1.25, "ACTIVE"),
    # One other busy process on 2 CPUs leaves at most 1.0 idle: spinning there took 1.26 s a step against 0.61 s.
    ("auto", 1.2, "PASSIVE"), ("auto", 1.0, "PASSIVE"), ("auto", 0.0, "PASSIVE"),
    ("active", 0.0, "ACTIVE"), ("passive", 2.0, "PASSIVE"),
])
def test_auto_spins_only_with_an_idle_cpu_for_every_thread(requested, idle, policy):
    assert generator.wait_policy(requested, 2, idle) == policy

