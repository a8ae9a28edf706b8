"""README's results table and "Watch" paragraph (benchmarks/results.py) and agents/README.md (benchmarks/ship.py
readme) are written from the committed record: they are what the record gives today, a drift fails, each statistic
is computed as its docstring says, and a shipped agent's play log is what its --play prints."""

import pytest

from benchmarks import results, ship
from benchmarks.core import launch
from benchmarks.core.stats import active_seconds
from conftest import ROOT


def test_readme_shows_what_the_record_gives():
    assert results.main(["--check"]) == 0, "run python -m benchmarks.results --write"


def test_a_drifted_table_fails_the_check(tmp_path, monkeypatch, capsys):
    readme = tmp_path / "README.md"
    text = (ROOT / "README.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| [`ppo_cartpole.py`](benchmarks/README.md"))
    readme.write_text(text.replace(row, row.replace("500.0", "499.0", 1)))
    record = tmp_path / "record.md"
    record.write_text((ROOT / "benchmarks" / "README.md").read_text())
    monkeypatch.setattr(results, "README", readme)
    monkeypatch.setattr(results, "RECORD", record)
    assert results.main(["--check"]) == 1
    assert "README.md is not the record's" in capsys.readouterr().err
    assert results.main(["--write"]) == 0 and results.main(["--check"]) == 0 and row in readme.read_text()
    record.write_text(record.read_text().replace("| 17 s,", "| 18 s,"))
    assert results.main(["--check"]) == 1  # benchmarks/README.md's table is checked too
    readme.write_text("no markers here\n")
    assert results.main(["--check"]) == 2


def test_every_row_names_its_statistic_seeds_policy_and_processor():
    lines = results.table(record=True).splitlines()[2:]
    assert len(lines) == len(results.ROWS) and len(results.table().splitlines()[2:]) == sum(
        row.readme for row in results.ROWS)
    for line, row in zip(lines, results.ROWS):
        cells = line.strip("|").split(" | ")
        assert cells[9].strip() == row.published, line
        assert cells[1] == (f"`{row.flags}`" if row.flags else "default"), line
        assert "in training" in cells[5] and "last" in cells[5] and "sampled" in cells[5], line
        seeds = int(cells[4].split()[0])
        assert ("+/- over" in cells[5]) == (seeds > 1), line
        assert cells[6] == "-" or "greedy" in cells[6] or "sampled" in cells[6], line
        assert "SPS" in cells[7] and ("launch to exit" in cells[7] or "gaps over 10 min out" in cells[7]), line
        assert cells[8].strip() in results.MACHINES.values(), line
    # where a lesson has a row of its default recipe, one leads its rows (Mario's runs all changed flags)
    by_lesson = {}
    for row in results.ROWS:
        by_lesson.setdefault(results.read_rows(results.RESULTS / row.csvs[0])[0]["script"], []).append(row)
    for script, rows in by_lesson.items():
        assert rows[0].flags == "" or all(row.flags for row in rows), script


def test_active_seconds_leaves_out_stops_and_long_pauses():
    # points at 2 s, then every 10 s; a stop of an hour between 32 and 3632; a 700 s pause between 3652 and 4352
    seconds = [2, 12, 22, 32, 3632, 3642, 3652, 4352, 4362]
    assert active_seconds(seconds, 600) == pytest.approx(2 + 30 + 20 + 10)
    assert active_seconds(seconds, 1000) == pytest.approx(2 + 30 + 20 + 700 + 10)
    assert active_seconds(list(reversed(seconds)), 600) == active_seconds(seconds, 600)
    assert active_seconds([], 600) == 0.0


def test_play_summary_is_the_logs_own(tmp_path, monkeypatch):
    log = tmp_path / "x.play.txt"
    log.write_text("$ python ppo_mario_cnn.py --play agents/x.pt --episodes 2 --no-cuda\n"
                   "episode 1/2: return 10.0, length 5, x position 3161, flag reached\n"
                   "episode 2/2: return 20.0, length 9, x position 400, no flag\n"
                   "mean return over 2 episodes: 15.0 +/- 5.0; mean x position 1780, flag reached in 1/2\n")
    monkeypatch.setattr(results, "AGENTS", tmp_path)
    assert results.play_log("x") == {"command": "python ppo_mario_cnn.py --play agents/x.pt --episodes 2 --no-cuda",
                                     "returns": [10.0, 20.0], "summary": "15.0 +/- 5.0", "how": "sampled",
                                     "flags": (1, 2), "flags_text": ", the flag in 1 of 2"}
    log.write_text(log.read_text().replace("ppo_mario_cnn.py", "ppo_cartpole.py").replace(", flag reached in 1/2", ""))
    assert results.play_log("x")["how"] == "greedy" and results.play_log("x")["flags_text"] == ""
    log.write_text(log.read_text().replace("ppo_cartpole.py", "ppo_mario_cnn.py"))
    log.write_text(log.read_text().replace("over 2 episodes", "over 3 episodes"))
    with pytest.raises(ValueError, match="no summary line for its 2 episodes"):
        results.play_log("x")


def test_every_shipped_agent_has_its_origin_and_a_play_log_of_20_episodes():
    agents = sorted(path.name for path in (ROOT / "agents").glob("*.pt"))
    assert sorted(ship.ORIGINS) == agents
    for name in agents:
        log = results.play_log(name.removesuffix(".pt"))
        assert len(log["returns"]) >= 20 and log["command"].startswith("python ppo_"), name
    assert sorted(results.WATCHED) == sorted(name.removesuffix(".pt") for name in agents)
    assert (ROOT / "agents" / "README.md").read_text() == ship.readme() + "\n", "run python -m benchmarks.ship readme"


def test_a_play_log_is_what_its_play_prints():
    """agents/cartpole.play.txt replayed: the same command prints the same 20 episodes (greedy, seeded)."""
    text = (ROOT / "agents" / "cartpole.play.txt").read_text()
    command, logged = text.split("\n", 1)
    assert command.startswith("$ python ppo_cartpole.py --play agents/cartpole.pt --episodes 20")
    result = launch.run(launch.python_command(*command.split()[2:]), ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout == logged
