"""benchmarks/mario_record.py: the blocks, the evaluations and the death histogram of a Mario run, against a run
folder written here with known episodes, by hand; the CSVs round trip; bad input gets one line and exit code 2."""


import pytest
from torch.utils.tensorboard import SummaryWriter

from benchmarks import mario_record

# (step, x_pos, flag): as ppo_mario_cnn.py logs them, two episodes may end at the same step
EPISODES = [(40, 310, 0), (40, 290, 0), (90, 450, 0), (120, 3161, 1), (150, 820, 0), (199, 3161, 1), (230, 305, 0)]
EVALUATIONS = [(100, 640.0, 0.0), (200, 1900.5, 0.5)]


@pytest.fixture
def run(tmp_path):
    folder = tmp_path / "SuperMarioBros-1-1-v0__test__1__1"
    writer = SummaryWriter(str(folder))
    for step, x, flag in EPISODES:
        writer.add_scalar("charts/x_pos", x, step)
        writer.add_scalar("charts/flag_get", float(flag), step)
    for step, x, rate in EVALUATIONS:
        writer.add_scalar("eval/mean_x_pos", x, step)
        writer.add_scalar("eval/flag_rate", rate, step)
    writer.close()
    return folder


def test_episodes_blocks_and_deaths_by_hand(run):
    episodes, evaluations = mario_record.read_run(run)
    assert [(e.step, e.x_pos, e.flag) for e in episodes] == [(s, x, bool(f)) for s, x, f in EPISODES]
    assert [(e.step, e.mean_x_pos, e.flag_rate) for e in evaluations] == EVALUATIONS
    rows = mario_record.block_rows(episodes, 100)  # steps 1-100, 101-200, 201-300
    assert [(r["from"], r["episodes"], r["mean_x"], r["flag_share"]) for r in rows] == [
        (0, 3, (310 + 290 + 450) / 3, 0.0), (100, 3, (3161 + 820 + 3161) / 3, 2 / 3), (200, 1, 305, 0.0)]
    # deaths only (the flag is no death), in bins of 100: 290 | 310 305 | 450 | 820
    assert mario_record.deaths(episodes, 100) == [(0, 0), (100, 0), (200, 1), (300, 2), (400, 1), (500, 0),
                                                   (600, 0), (700, 0), (800, 1)]
    assert mario_record.deaths(episodes, 500, last=3) == [(0, 1), (500, 1)]  # 820 and 305 (3161: the flag)


def test_report_csv_round_trip_and_plot(run, tmp_path, capsys):
    prefix, png = tmp_path / "out" / "mario", tmp_path / "mario.png"
    assert mario_record.main(mario_record.Args(run=run, block=100, bin=100, csv=prefix, plot=png)) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("7 training episodes, 2 at the flag; 2 evaluations")
    assert "| 100 - 200 | 3 | 2381 | 66.7% |" in printed and "| 200 | 1900 | 0.50 |" in printed
    assert "| 300 - 399 | 2 | 40.0% |" in printed and "| 500 - 599 |" not in printed  # empty bins left out
    assert png.stat().st_size > 0
    assert mario_record.main(mario_record.Args(from_csv=prefix, block=100, bin=100)) == 0
    assert capsys.readouterr().out == printed


@pytest.mark.parametrize("args, message", [
    ({}, "give a run folder or --from-csv PREFIX"),
    ({"run": "missing"}, "no run folder at "),
    ({"run": ".", "bin": 0}, "must be positive"),
])
def test_bad_input(args, message, capsys, tmp_path):
    args = {k: (tmp_path / v if k == "run" else v) for k, v in args.items()}
    assert mario_record.main(mario_record.Args(**args)) == 2
    assert message in capsys.readouterr().err


def test_not_a_mario_run(tmp_path):
    writer = SummaryWriter(str(tmp_path / "other"))
    writer.add_scalar("charts/episodic_return", 1.0, 1)
    writer.close()
    with pytest.raises(SystemExit, match="no charts/x_pos in .*: not a run folder of ppo_mario_cnn.py"):
        mario_record.read_run(tmp_path / "other")


def test_a_resumed_run_without_what_the_stopped_process_gave_up(tmp_path, capsys):
    """Two processes: the first logged its update at 100, then the episodes of a rollout that a Ctrl-C gave up
    (130); the second went on from 100. The record holds the run's history and says where it resumed."""
    import time

    folder = tmp_path / "SuperMarioBros-1-1-v0__test__1__1"
    for scalars in ([(40, 310, 0), ("SPS", 100, 1), (130, 999, 1)], [(120, 3161, 1), ("SPS", 200, 1)]):
        writer = SummaryWriter(str(folder))
        for step_or_sps, x_or_step, flag in scalars:
            if step_or_sps == "SPS":
                writer.add_scalar("charts/SPS", 50.0, x_or_step)
            else:
                writer.add_scalar("charts/x_pos", x_or_step, step_or_sps)
                writer.add_scalar("charts/flag_get", float(flag), step_or_sps)
        writer.close()
        time.sleep(1.1)  # (a file is named by the second it was opened in)
    episodes, _ = mario_record.read_run(folder)
    assert [(e.step, e.x_pos, e.flag) for e in episodes] == [(40, 310, False), (120, 3161, True)]
    assert [(e.step, e.x_pos) for e in mario_record.read_run(folder, up_to_step=100)[0]] == [(40, 310)]
    prefix = tmp_path / "out" / "resumed"
    assert mario_record.main(mario_record.Args(run=folder, block=100, csv=prefix)) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("2 training episodes, 1 at the flag; 0 evaluations")
    assert "| env steps | wall min | SPS |" in printed and "| 0 - 100 | " in printed and "| 100 - 200 | " in printed
    assert mario_record.main(mario_record.Args(from_csv=prefix, block=100)) == 0
    assert capsys.readouterr().out == printed
