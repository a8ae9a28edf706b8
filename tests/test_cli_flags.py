"""Each lesson's command line, held to tests/cli_flags.json: every flag (its spellings; the record keeps --help's order
of issue 58's start) and every default as an empty command line parses it. Moving a field (below the fence, into
another class) must not change either; a flag that changes on purpose is rewritten into the record by `python -m tests.test_cli_flags --write`, and
the diff of tests/cli_flags.json shows it."""

import importlib
import json
import sys
import warnings
from pathlib import Path

import pytest
import tyro

from course.lessons import LESSONS

RECORD = Path(__file__).with_name("cli_flags.json")
SCRIPTS = [lesson.script for lesson in LESSONS]


def command_line(script: str) -> dict:
    """{"flags": [[spelling, ...], ...] in --help's order, "defaults": {field: value}} of a lesson's CLI."""
    module = importlib.import_module(script[: -len(".py")])
    cls = module.one_line_help(module.Args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # (get_parser: tyro's one way to list the flags)
        parser = tyro.extras.get_parser(cls)
    flags = [action.option_strings for action in parser._actions if action.dest != "help"]
    parsed = tyro.cli(cls, args=[])
    defaults = {name: getattr(parsed, name) for name in sorted(parsed.__dataclass_fields__)}
    return {"flags": flags, "defaults": json.loads(json.dumps(defaults, default=str))}


@pytest.mark.parametrize("script", SCRIPTS)
def test_flags_and_defaults_are_the_record(script):
    """The set of flags (a flag may move between Hyperparameters and Args, and so in --help's order) and the defaults."""
    now, record = command_line(script), json.loads(RECORD.read_text())[script]
    assert sorted(now["flags"]) == sorted(record["flags"]) and now["defaults"] == record["defaults"]


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    RECORD.write_text(json.dumps({script: command_line(script) for script in SCRIPTS}, indent=1) + "\n")
