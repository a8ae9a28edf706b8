"""Conventions every script of the library shares (DEVELOPERS.md, STYLE.md), checked on every ppo_*.py (each one
listed in course/lessons.py, the first test holds), so a new script is held to them the day it lands."""

import ast

import pytest

from course.lessons import GLOBS, LESSONS, SCRIPTS, cli_fields
from conftest import CLEANRL_TAGS, ROOT, run_script

COMMON_FLAGS = ["--env-id", "--total-timesteps", "--seed", "--capture-video", "--cuda", "--no-cuda", "--resume",
                "--play", "--episodes", "--checkpoint-every"]


# GRPO has no critic (its baseline is the group's mean score): no V(s) in its Agent, nothing of V in its log.
NO_CRITIC = {"grpo_rlhf_tiny.py"}
CRITIC_TAGS = {"losses/value_loss", "losses/explained_variance"}


def parse(script: str) -> ast.Module:
    return ast.parse((ROOT / script).read_text())


def args_fields(tree: ast.Module) -> list[tuple[ast.AnnAssign, ast.stmt | None]]:
    """Each field of the command line (Hyperparameters, then Args) with the statement after it (its docstring)."""
    return cli_fields(tree)


def test_the_lessons_list_is_the_scripts_on_disk():
    """course/lessons.py lists every ppo_*.py once, in an order a reader can follow (each lesson after the neighbour
    it is diffed against; only the first has none), each with the env its Args trains on by default."""
    assert sorted(SCRIPTS) == sorted(path.name for glob in GLOBS for path in ROOT.glob(glob))
    assert len(set(SCRIPTS)) == len(SCRIPTS)
    assert LESSONS[0].neighbour is None
    for k, lesson in enumerate(LESSONS[1:], start=1):
        assert lesson.neighbour in SCRIPTS[:k], f"{lesson.script} comes before its neighbour {lesson.neighbour}"
    for lesson in LESSONS:
        (env_id,) = [field.value.value for field, _ in args_fields(parse(lesson.script)) if field.target.id == "env_id"]
        assert lesson.env_id == env_id, lesson.script


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_args_field_has_a_docstring(script):
    for field, following in args_fields(parse(script)):
        name = field.target.id
        assert isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant) \
            and isinstance(following.value.value, str) and following.value.value.strip(), \
            f"{script}: Args.{name} has no docstring, so --help cannot explain it"


@pytest.mark.parametrize("script", SCRIPTS)
def test_skeleton(script):
    tree = parse(script)
    docstring = ast.get_docstring(tree)
    assert docstring and "Differs from" in docstring and "Usage" in docstring and "arXiv:1707.06347" in docstring
    names = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    assert {"Hyperparameters", "Args", "make_env", "layer_init", "Agent", "save_checkpoint", "load_checkpoint", "play", "train",
            "main"} <= names, f"{script} lacks part of the shared skeleton"
    (agent,) = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Agent"]
    methods = {node.name for node in agent.body if isinstance(node, ast.FunctionDef)}
    critic = script not in NO_CRITIC
    assert {"get_value", "get_action_and_value"} <= methods if critic else "get_value" not in methods
    source = (ROOT / script).read_text()
    for tag in CLEANRL_TAGS - (set() if critic else CRITIC_TAGS):
        assert f'"{tag}"' in source, f"{script} does not log {tag}"
    assert "weights_only=True" in source and "os.replace(" in source  # safe loading, atomic writes


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_lists_every_flag(script, tmp_path):
    result = run_script(script, "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    for flag in COMMON_FLAGS:
        assert flag in result.stdout, f"{script} --help lacks {flag}"
    for field, _ in args_fields(parse(script)):
        if "Suppress" in ast.unparse(field.annotation):  # derived at runtime: deliberately not a flag
            assert f"--{field.target.id.replace('_', '-')} " not in result.stdout
            continue
        assert f"--{field.target.id.replace('_', '-')}" in result.stdout, field.target.id
