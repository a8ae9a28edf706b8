"""benchmarks/sb3_reference.py (SB3's Breakout curve from its Monitor files, beside ours) on tiny made-up Monitor
files and curves, worked by hand: parsing, the merge by absolute time, both x axes, the last-N mean at X, our
runs' reach, and the command line on a folder and on a git dir. No network, no training."""

import csv
import shutil
import subprocess

import pytest

from benchmarks import sb3_reference as ref


def monitor(t_start: float, rows: list[tuple[float, int, float]]) -> str:
    """A Monitor file as SB3 writes it: a '#{json}' header, then r,l,t."""
    lines = [f'#{{"t_start": {t_start}, "env_id": "BreakoutNoFrameskip-v4"}}', "r,l,t"]
    return "\n".join(lines + [f"{r},{length},{t}" for r, length, t in rows]) + "\n"


# env 1 starts 0.5 s after env 0: by t alone its first game (t=1.0) would come first, by t_start + t it is second
ENV0 = monitor(100.0, [(1.0, 100, 1.2), (3.0, 200, 5.0)])
ENV1 = monitor(100.5, [(2.0, 150, 1.0), (4.0, 50, 2.0)])


def test_parse_monitor():
    t_start, rows = ref.parse_monitor(ENV0)
    assert t_start == 100.0 and rows == [(1.0, 100, 1.2), (3.0, 200, 5.0)]
    with pytest.raises(ValueError):
        ref.parse_monitor("r,l,t\n1.0,100,1.2\n")


def test_merge_orders_games_by_absolute_time_and_keeps_env_order_on_ties():
    games = ref.merge_monitors([ENV0, ENV1])
    assert [(g.end_time, g.env, g.score, g.length) for g in games] == [
        (101.2, 0, 1.0, 100), (101.5, 1, 2.0, 150), (102.5, 1, 4.0, 50), (105.0, 0, 3.0, 200)]
    tied = ref.merge_monitors([monitor(0.0, [(5.0, 10, 1.0)]), monitor(0.0, [(6.0, 10, 1.0)])])
    assert [g.env for g in tied] == [0, 1]


def test_the_two_x_axes_by_hand():
    games = ref.merge_monitors([ENV0, ENV1])
    assert ref.emulator_frames(games) == [100, 250, 300, 500]  # the running sum of l, in merged order
    # 2 envs, 10 reset frames a game: env 0 90 then 90 + 190; env 1 140 then 140 + 40; each times 2
    assert ref.agent_frames(games, n_envs=2, reset_frames=10) == [180, 280, 360, 560]
    assert ref.RESET_FRAMES == 15.5 + 5 * 8 + 4 * 4 == 71.5


def test_mean_last_at_marks_by_hand():
    frames, scores = [360, 180, 560, 280], [4.0, 1.0, 3.0, 2.0]  # out of order: sorted by frames inside
    assert ref.mean_last(frames, scores, [100, 180, 300, 360, 1000], window=2) == [
        (None, 0), (1.0, 1), (1.5, 2), (3.0, 2), (3.5, 2)]
    assert ref.mean_last(frames, scores, [1000], window=100) == [(2.5, 4)]


def curves_csv(path, rows):
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["script", "label", "env_id", "seed", "kind", "tag", "env_steps", "wall_seconds", "value"])
        for label, seed, kind, steps, value in rows:
            tag = "charts/episodic_return" if kind == "training" else "eval/mean_return"
            writer.writerow(["ppo_breakout_atari.py", label, "BreakoutNoFrameskip-v4", seed, kind, tag, steps, 1.0,
                             value])


def test_read_ours_in_frames_and_how_far_each_run_went(tmp_path):
    path = tmp_path / "runs-curves.csv"
    curves_csv(path, [("a", 1, "training", 100, 1.0), ("a", 1, "training", 200, 3.0),
                      ("a", 1, "evaluation", 250, 9.0), ("a", 2, "training", 150, 5.0)])
    runs = ref.read_ours([path])
    assert runs[("a", 1)] == ref.Run([400.0, 800.0], [1.0, 3.0], 1000.0)  # frames = 4 x env_steps
    assert runs[("a", 2)] == ref.Run([600.0], [5.0], 600.0)
    assert ref.reached(4 * 2_499_584, 10e6) and not ref.reached(8e6, 10e6)


def test_command_line_on_a_folder(tmp_path, capsys):
    folder = tmp_path / "monitors"
    folder.mkdir()
    for env in range(ref.N_ENVS):  # env e: one game of 1,071 frames (999.5 agent frames), scoring e, ending at e + 10 s
        (folder / f"{env}.monitor.csv").write_text(monitor(float(env), [(float(env), 1071, 10.0)]))
    ours = tmp_path / "x-curves.csv"
    curves_csv(ours, [("x", 1, "training", 1000, 7.0), ("x", 1, "evaluation", 2000, 0.0)])
    out = tmp_path / "curve.csv"
    assert ref.main(["--monitors", str(folder), "--ours", str(ours), "--marks", "8000", "16000",
                     "--window", "4", "--out", str(out), "--plot", str(tmp_path / "plots" / "c.png")]) == 0
    assert (tmp_path / "plots" / "c.png").stat().st_size > 10_000
    printed = capsys.readouterr().out
    # our axis: every game at 8 x 999.5 = 7,996 frames, the last 4 are envs 4-7's; the sum of l passes 8,000
    # after 7 games (envs 3-6 are its last 4) and 16,000 after all 8. Ours: one game at 4 x 1,000 frames, and the
    # run went to 4 x 2,000 = 8,000 frames (its evaluation), so no figure at 16,000.
    assert "| 0.008M | 5.5 | 4.5 | 7.0 |" in printed
    assert "| 0.016M | 5.5 | 5.5 | - |" in printed
    with open(out) as f:
        rows = list(csv.DictReader(f))
    assert rows[0] == {"frames": "50000", "mean_last_4": "5.50", "games": "4", "mean_last_4_sum_of_l": "5.50"}


def test_command_line_on_a_git_dir_and_bad_input(tmp_path, capsys):
    if shutil.which("git") is None:
        pytest.skip("no git")
    work = tmp_path / "repo"
    (work / ref.FOLDER).mkdir(parents=True)
    for env in range(ref.N_ENVS):
        (work / ref.FOLDER / f"{env}.monitor.csv").write_text(monitor(0.0, [(2.0, 500, 1.0 + env)]))
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@t"]
    for command in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "monitors"]):
        subprocess.run([*git, *command], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    out = tmp_path / "curve.csv"
    assert ref.main(["--monitors", str(work / ".git"), "--commit", commit, "--out", str(out)]) == 0
    assert f"@ {commit}, {ref.FOLDER}/" in capsys.readouterr().out
    # no such commit there, and a folder without the files: one line on stderr, exit code 2
    assert ref.main(["--monitors", str(work / ".git"), "--out", str(out)]) == 2
    assert ref.main(["--monitors", str(tmp_path / "nothing"), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("sb3_reference.py: ") for line in err)


def test_curves_by_hand_and_the_plot(tmp_path):
    # 2 games per env on 8 envs: env e's games of 1,071 and 571 frames (999.5 and 499.5 agent frames) end in env
    # order, so on our axis each first game sits at 8 x 999.5 = 7,996 frames and each second at 8 x 1,499 = 11,992
    games = ref.merge_monitors([monitor(float(env), [(1.0, 1071, 1.0 + env), (3.0, 571, 10.0 + env)])
                                for env in range(ref.N_ENVS)])
    run = ref.Run([3000.0, 9000.0, 11000.0], [2.0, 4.0, 6.0], 13000.0)
    series = ref.curves(games, {("x", 1): run}, window=2, step=4000)
    # SB3, to its last game (11,992): none by 4,000, the first games' 1.0 at 8,000; its own curve stops there
    assert series["SB3"] == ([8000.0], [1.0])
    # ours to 13,000 frames: at 4,000 the one game (2.0), at 8,000 the same, at 12,000 the last two (4 and 6)
    assert series["x seed 1"] == ([4000.0, 8000.0, 12000.0], [2.0, 2.0, 5.0])
    assert ref.curves(games, {}, window=2, step=2000)["SB3"] == ([8000.0, 10000.0], [1.0, 1.0])
    png = tmp_path / "curves.png"
    ref.plot(series, png, window=2)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_the_docstrings_axis_figures_are_the_committed_curves():
    """The docstring's "by up to 11 ... (9.3M)" and "past 10M by up to 32 (26.25M)": the largest gaps between
    the committed curve's two axes, up to 10M frames and past them."""
    rows = [row for row in csv.DictReader(open(ref.OUT)) if row["mean_last_100"] and row["mean_last_100_sum_of_l"]]
    gaps = [(abs(float(row["mean_last_100"]) - float(row["mean_last_100_sum_of_l"])), int(row["frames"]))
            for row in rows]
    early = max(gap for gap in gaps if gap[1] <= 10_000_000)
    late = max(gap for gap in gaps if gap[1] > 10_000_000)
    assert (round(early[0]), early[1]) == (11, 9_300_000) and (round(late[0]), late[1]) == (32, 26_250_000)
    text = " ".join(ref.__doc__.split())
    assert "by up to 11 between them where the curve climbs fast (9.3M)" in text
    assert "past 10M by up to 32 (26.25M;" in text
