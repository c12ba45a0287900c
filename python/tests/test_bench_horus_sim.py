"""scripts/bench-horus-sim.py without horus-sim (it is not in CI): argument
and missing-simulator errors, the dataset cut, the parsing of each
simulator's output, the median and ratio arithmetic on canned runs, and one
whole run against stand-ins for both simulators."""
import ast
import importlib.util
import json
import math
import os
import stat
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench-horus-sim.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_horus_sim", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pool_map(app_id, workers):
    return {"app_id": app_id, "worker_count": workers, "worker_to_host_map": list(range(1000, 1000 + workers))}


def dataset_text(*pools):
    data = {"tenants": {"worker_count": sum(pools), "maps": [pool_map(i, n) for i, n in enumerate(pools)]}}
    return "2021-08-03 | INFO - \nNumber of hosts: 27648\n2021-08-03 | INFO - \n" + repr(data) + "\n"


def executable(path, text):
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def fake_horus_sim(root):
    """A directory shaped like horus-sim's whose simulator.py writes the p99
    file the real one writes: 1000 ns per task per worker, so the test can
    see the launcher set NUM_TASK_PER_WORKER."""
    directory = root / "horus-sim"
    (directory / "result-dir").mkdir(parents=True)
    (directory / "result-dir/summary_system.log.small_dataset").write_text(dataset_text(50, 250, 1000))
    (directory / "rtt_results.txt").write_text("rtt\n")
    (directory / "utils.py").write_text("NUM_TASK_PER_WORKER = 160\n")
    (directory / "simulator.py").write_text(textwrap.dedent("""
        import sys, utils
        run_dir = sys.argv[sys.argv.index("-d") + 1]
        assert open(run_dir + "summary_system.log").read().count("worker_count") == 2
        with open(run_dir + "analysis/adaptive_exponential_p99_response_times_0.9_r0.csv", "w") as f:
            f.write("%.2f\\n" % (1000.0 * utils.NUM_TASK_PER_WORKER))
    """))
    return directory


def fake_netsched(root):
    return executable(root / "netsched", f"#!{sys.executable}\n" + textwrap.dedent("""
        import json, re, sys
        args = sys.argv[1:]
        config = open(args[args.index("-c") + 1]).read()
        assert 'preset = "horus-sim"' in config and args[args.index("--threads") + 1] == "1"
        pool = int(re.search(r"sizes = \\[(\\d+)\\]", config).group(1))
        per_worker = int(args[args.index("--tasks-per-worker") + 1])
        run = {"tasks": pool * per_worker, "overall": {"response": {"p99_ns": 650000.0}}}
        print(json.dumps({"runs": [run]}))
    """))


def run(bench, simulator, pool, tasks, cpu_s, short=False, p99_us=600.0):
    return bench.Run(simulator, pool, tasks, cpu_s, p99_us, short)


def canned_runs(bench):
    """Three runs of each (simulator, length) pair: CPU seconds per run."""
    cpu_s = {("horus-sim", False): [40.0, 50.0, 45.0], ("horus-sim", True): [5.0, 6.0, 4.0],
             ("netsched", False): [0.05, 0.04, 0.06], ("netsched", True): [0.010, 0.012, 0.011]}
    return [run(bench, sim, 50, 4000 if short else 40000, c, short=short)
            for (sim, short), runs in cpu_s.items() for c in runs]


def test_missing_horus_sim_is_one_line(bench, tmp_path, capsys):
    assert bench.main(["--horus-sim", str(tmp_path / "absent")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "horus-sim not found" in err


def test_no_horus_sim_given_is_one_line(bench, monkeypatch, capsys):
    monkeypatch.delenv("HORUS_SIM", raising=False)
    assert bench.main([]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--horus-sim DIR" in err


def test_horus_sim_found_from_checkout_root_and_needs_dataset(bench, tmp_path):
    directory = fake_horus_sim(tmp_path)
    assert bench.find_horus_sim(tmp_path) == directory.resolve()
    assert bench.find_horus_sim(directory) == directory.resolve()
    (directory / bench.DATASET).unlink()
    with pytest.raises(bench.BenchError, match="small_dataset"):
        bench.find_horus_sim(directory)


def test_missing_netsched_names_the_build_command(bench, tmp_path):
    with pytest.raises(bench.BenchError, match="cargo build --release -p netsched"):
        bench.find_netsched(tmp_path / "netsched")


def test_python_without_horus_sims_modules_is_refused(bench, tmp_path):
    no_modules = executable(tmp_path / "python", "#!/bin/sh\nexit 1\n")
    with pytest.raises(bench.BenchError, match="numpy, pandas, loguru, docopt"):
        bench.check_horus_sim_python(str(no_modules))


def test_a_python_that_cannot_run_is_named(bench, tmp_path):
    with pytest.raises(bench.BenchError, match="cannot run --python"):
        bench.check_horus_sim_python(str(tmp_path / "no-python"))


def test_cpu_outside_the_affinity_is_refused(bench):
    allowed = os.sched_getaffinity(0)
    assert bench.pinned_cpu(None) == min(allowed)
    assert bench.pinned_cpu(max(allowed)) == max(allowed)
    with pytest.raises(bench.BenchError, match="--cpu 4096 is not among"):
        bench.pinned_cpu(4096)


@pytest.mark.parametrize("argv", [
    ["--pools", "7"], ["--pools", "50,x"], ["--repeat", "0"], ["--tasks", "-5"], ["--load", "1.5"], ["--policy", "jsq"],
])
def test_argument_errors_exit_2(bench, argv):
    with pytest.raises(SystemExit) as exit:
        bench.parse_args(argv)
    assert exit.value.code == 2


def test_too_few_tasks_is_refused_before_looking_for_horus_sim(bench, capsys):
    assert bench.main(["--tasks", "5000", "--pools", "1000", "--horus-sim", "/absent"]) == 2
    err = capsys.readouterr().err
    assert "5 tasks per worker" in err and "not found" not in err


def test_cut_pool_keeps_the_one_pool(bench):
    lines = bench.cut_pool(dataset_text(50, 250, 1000), 250).splitlines()
    assert lines[:3] == dataset_text(50, 250, 1000).splitlines()[:3]
    tenants = ast.literal_eval(lines[3])["tenants"]
    assert tenants["worker_count"] == 250
    assert [m["worker_count"] for m in tenants["maps"]] == [250]
    with pytest.raises(bench.BenchError, match=r"no single pool of 77 workers \(pools: \[50, 250, 1000\]\)"):
        bench.cut_pool(dataset_text(50, 250, 1000), 77)


def test_task_counts(bench):
    assert bench.tasks_per_worker(40000, 50) == 800
    assert bench.tasks_per_worker(40000, 250) == 160
    assert bench.tasks_per_worker(40000, 1000) == 40
    assert bench.short_tasks_per_worker(800) == 80
    assert bench.short_tasks_per_worker(20) == 2


def test_schedule_alternates_and_pairs_short_before_long(bench):
    order = bench.schedule([50, 1000], 2, 40000)
    assert [(rep, pool, sim, per_worker, short) for rep, pool, sim, per_worker, short in order[:4]] == [
        (0, 50, "horus-sim", 80, True), (0, 50, "horus-sim", 800, False),
        (0, 50, "netsched", 80, True), (0, 50, "netsched", 800, False),
    ]
    assert [o[2] for o in order if o[0] == 1 and o[1] == 1000] == ["netsched", "netsched", "horus-sim", "horus-sim"]
    assert len(order) == 2 * 2 * 2 * 2


def test_parse_each_simulators_output(bench):
    summary = json.dumps({"runs": [{"tasks": 40213, "overall": {"response": {"p99_ns": 1312800.0}}}]})
    assert bench.parse_netsched_summary(summary) == (40213, pytest.approx(1312.8))
    with pytest.raises(bench.BenchError, match="2 runs"):
        bench.parse_netsched_summary(json.dumps({"runs": [{}, {}]}))
    assert bench.parse_horus_sim_p99("3310344.83\n") == pytest.approx(3310.34483)
    with pytest.raises(bench.BenchError, match="2 values"):
        bench.parse_horus_sim_p99("1.00, 2.00\n")


def test_medians_and_ratios_on_canned_runs(bench):
    [summary] = bench.summarize(canned_runs(bench))
    horus, netsched = summary.sims["horus-sim"], summary.sims["netsched"]
    # Long runs: 40000 / [40, 50, 45] s -> median 888.9 tasks/s.
    assert horus.rate == pytest.approx(40000 / 45)
    assert horus.cpu_s == [40.0, 50.0, 45.0]
    assert horus.fixed_cpu_s == 5.0
    # Net of the fixed cost: (40000 - 4000) / (median 45 - median 5).
    assert horus.net_rate == pytest.approx(36000 / 40)
    assert netsched.rate == pytest.approx(40000 / 0.05)
    assert netsched.net_rate == pytest.approx(36000 / (0.05 - 0.011))
    assert summary.ratio == pytest.approx((40000 / 0.05) / (40000 / 45))
    assert summary.net_ratio == pytest.approx((36000 / 0.039) / 900)
    report = bench.format_report([summary], 1000)
    assert "900x per CPU-second whole process (target >= 1,000x: not met)" in report
    assert "1,026x net of start-up (met)" in report


def test_noise_that_hides_the_fixed_cost_is_reported_not_divided(bench):
    runs = [r for r in canned_runs(bench) if not (r.simulator == "netsched" and r.short)]
    runs += [run(bench, "netsched", 50, 4000, 0.07, short=True)]
    [summary] = bench.summarize(runs)
    assert math.isnan(summary.sims["netsched"].net_rate)
    assert "n/a net of start-up (unmeasured" in bench.format_report([summary], 1000)


def test_a_pool_without_both_run_lengths_is_an_error(bench):
    runs = [r for r in canned_runs(bench) if not r.short]
    with pytest.raises(bench.BenchError, match="pool 50 lacks"):
        bench.summarize(runs)


def test_child_cpu_is_the_childs_and_failures_name_their_last_line(bench):
    burn = [sys.executable, "-c", "import time\nend = time.process_time() + 0.2\nwhile time.process_time() < end: pass"]
    cpu_s, _ = bench.child_cpu_seconds(burn, min(os.sched_getaffinity(0)))
    assert 0.15 < cpu_s < 2.0
    fail = [sys.executable, "-c", "import sys; sys.exit('first\\nsimulator broke')"]
    with pytest.raises(bench.BenchError, match="exited 1: simulator broke"):
        bench.child_cpu_seconds(fail, min(os.sched_getaffinity(0)))


def test_whole_run_against_stand_ins(bench, tmp_path, monkeypatch, capsys):
    directory = fake_horus_sim(tmp_path)
    netsched = fake_netsched(tmp_path)
    monkeypatch.setattr(bench, "check_horus_sim_python", lambda python: None)
    code = bench.main(["--horus-sim", str(directory), "--netsched", str(netsched),
                       "--pools", "50", "--tasks", "20000", "--repeat", "1"])
    out, err = capsys.readouterr()
    assert code == 0, err
    # horus-sim's stand-in reports 1000 ns per task per worker: 400 per worker at pool 50.
    assert "| 50 | horus-sim | 20,000 |" in out and "| 400 |" in out
    assert "| 50 | netsched | 20,000 |" in out and "| 650 |" in out
    assert out.count("netsched / horus-sim") == 1
    assert err.count(" long: ") == 2 and err.count(" short: ") == 2
