"""notebooks/: each lesson as a Jupyter notebook (tools.notebooks). The committed notebooks are what the lessons give
now; their code cells are the file's code, line for line, and its headings the file's section banners; and each
notebook trains end to end in a Jupyter kernel (nbclient), in the tests' tiny configuration of its lesson, given the
way a learner gives it: by changing `flags` in the last cell."""

import ast
import html
import json
import re
import time

import nbclient
import nbformat
import pytest
import torch

from conftest import ROOT, run_dirs
from course.lessons import LESSONS, SCRIPTS
from tools import notebooks
from test_breakout import TINY as BREAKOUT
from test_cartpole import TINY as CARTPOLE
from test_lstm_memory import TINY as LSTM
from test_masking import TINY as MASKING
from test_lunarlander import TINY as LUNARLANDER
from test_mario import TINY as MARIO
from test_pendulum import TINY as PENDULUM

# The end-to-end tests' tiny configurations, as those tests run each script from its command line; the pixel
# lessons' evaluation after the last update plays one game, not their default 3 (Breakout) or 5 (Mario).
LANGUAGE = ["--pretrain-steps", "30", "--reward-pairs", "64", "--reward-epochs", "1", "--num-envs", "8", "--minibatch-size",
            "4", "--eval-episodes", "8", "--d-model", "16", "--n-heads", "2"]
TINY = {"ppo_cartpole.py": CARTPOLE, "ppo_lunarlander_vec.py": LUNARLANDER, "ppo_pendulum_continuous.py": PENDULUM,
        "ppo_breakout_atari.py": [*BREAKOUT, "--eval-episodes", "1"],
        "ppo_mario_cnn.py": [*MARIO, "--eval-episodes", "1"], "ppo_lstm_memory.py": LSTM, "ppo_action_masking.py": MASKING,
        **{script: [*LANGUAGE, "--total-timesteps", "192"] for script in ("ppo_rlhf_tiny.py", "grpo_rlhf_tiny.py")}}
BANNER = re.compile(r"^# --- (.+?) -{3,}$")


def committed(script: str) -> dict:
    return json.loads(notebooks.path_of(script).read_text(encoding="utf-8"))


def source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def tags(cell: dict) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def test_the_lessons_are_the_scripts():
    assert set(TINY) == set(notebooks.FLAGS) == set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_the_committed_notebook_is_what_its_lesson_gives(script):
    path = notebooks.path_of(script)
    assert path.is_file(), f"no {path.relative_to(ROOT)}: write it with `python -m tools.notebooks`"
    assert path.read_text(encoding="utf-8") == notebooks.text(script), \
        f"{path.relative_to(ROOT)} is not what {script} gives now: rewrite it with `python -m tools.notebooks`"
    nb = committed(script)
    assert all(not cell.get("outputs") and cell.get("execution_count") is None
               for cell in nb["cells"] if cell["cell_type"] == "code"), "a committed notebook keeps no outputs"


def test_check_fails_on_a_drifted_notebook_and_write_mends_it(tmp_path, capsys):
    assert notebooks.main(["--out", str(tmp_path)]) == 0
    assert notebooks.main(["--check", "--out", str(tmp_path)]) == 0
    drifted = notebooks.path_of(SCRIPTS[2], tmp_path)
    drifted.write_text(drifted.read_text().replace("def train(", "def trian("))
    capsys.readouterr()
    assert notebooks.main(["--check", "--out", str(tmp_path)]) == 1
    assert str(drifted) in capsys.readouterr().err
    assert notebooks.main(["--out", str(tmp_path)]) == 0
    assert notebooks.main(["--check", "--out", str(tmp_path)]) == 0


def test_an_out_that_is_a_file_is_refused_in_one_line(tmp_path, capsys):
    (tmp_path / "f").write_text("")
    assert notebooks.main(["--out", str(tmp_path / "f")]) == 2
    err = capsys.readouterr().err
    assert err == f"python -m tools.notebooks: error: --out {tmp_path / 'f'} is a file, not a folder\n"


@pytest.mark.parametrize("script", SCRIPTS)
def test_the_code_cells_are_the_files_code(script):
    """Put back together, the code cells (but the notebook's own) are every line of the file in order, but for the
    module docstring and comment lines that stand alone at the top level (banners, the fence, notes), which are
    Markdown: the same program, to the AST; each comment left out is in a Markdown cell."""
    lines = (ROOT / script).read_text(encoding="utf-8").splitlines()
    tree = ast.parse("\n".join(lines))
    doc = tree.body[0]
    nb = committed(script)
    cells = [source(cell) for cell in nb["cells"] if cell["cell_type"] == "code" and "notebook-only" not in tags(cell)]
    code = [line for cell in cells for line in cell.splitlines() if line.strip()]
    markdown = html.unescape("\n".join(source(cell) for cell in nb["cells"] if cell["cell_type"] == "markdown"))
    markdown = markdown.replace("\\", "")
    k, left_out = 0, []
    for line in lines[doc.end_lineno:]:
        if not line.strip():
            continue
        if k < len(code) and line == code[k]:
            k += 1
        else:
            assert line.startswith("#"), f"{script}: {line!r} is in no code cell (or out of order)"
            left_out.append(line)
    assert k == len(code), f"{script}: the code cells hold lines the file has not: {code[k:k + 3]}"
    for line in left_out:
        text = BANNER.match(line).group(1) if BANNER.match(line) else re.sub(r"^# ?", "", line)
        assert set(text) <= set("=") or text in markdown, f"{script}: the comment {line!r} is in no Markdown cell"
    module = ast.parse("\n".join(cells))
    assert ast.dump(module) == ast.dump(ast.Module(body=tree.body[1:], type_ignores=[])), \
        f"{script}: the code cells are not the file's program"


@pytest.mark.parametrize("script", SCRIPTS)
def test_the_notebook_opens_with_the_docstring_and_has_the_files_sections(script):
    text = (ROOT / script).read_text(encoding="utf-8")
    doc = ast.get_docstring(ast.parse(text))
    nb = committed(script)
    first = html.unescape(source(nb["cells"][0])).replace("\\", "")
    assert first.startswith(f"# {doc.splitlines()[0]}\n")
    words = lambda s: set(re.sub(r"[*`\[\]()]", " ", s).split())  # (Markdown's emphasis, code and links aside)
    assert words(doc) <= words(first), f"{script}: words of the docstring missing: {sorted(words(doc) - words(first))}"
    headings = [source(cell)[3:] for cell in nb["cells"] if cell["cell_type"] == "markdown"
                and source(cell).startswith("## ")]
    banners = [BANNER.match(line).group(1) for line in text.splitlines() if BANNER.match(line)]
    assert [h.split("\n")[0] for h in headings] == banners + ["The plumbing", "Train"]
    # The script's last line is a cell of its own, after the cell that keeps it from running main().
    guard = [i for i, cell in enumerate(nb["cells"]) if source(cell).startswith("if __name__ == ")]
    assert len(guard) == 1 and source(nb["cells"][guard[0] - 1]).endswith('__name__ = "notebook"')


def test_the_training_cell_runs_what_main_runs_before_a_fresh_training():
    calls = {}
    for script in SCRIPTS:
        main = next(node for node in ast.parse((ROOT / script).read_text()).body
                    if isinstance(node, ast.FunctionDef) and node.name == "main")
        calls[script] = notebooks.fresh_run(main)
    mlp = ["check_args(args)", "torch.set_num_threads(1)"]
    pixels = ["args.world_size = int(os.environ.get('WORLD_SIZE', 1))", "check_args(args)", "check_gpus(args)"]
    assert calls == {"ppo_cartpole.py": mlp, "ppo_lunarlander_vec.py": mlp, "ppo_pendulum_continuous.py": mlp,
                     "ppo_breakout_atari.py": pixels, "ppo_mario_cnn.py": pixels, "ppo_lstm_memory.py": mlp, "ppo_action_masking.py": mlp,
                     "ppo_rlhf_tiny.py": mlp, "grpo_rlhf_tiny.py": mlp}
    unknown = ast.parse("def main():\n    if args.seed:\n        check_args(args)\n").body[0]
    with pytest.raises(ValueError, match="no rule for `if args.seed:`"):
        notebooks.fresh_run(unknown)


def default_env_id(script: str) -> str:
    return next(lesson.env_id for lesson in LESSONS if lesson.script == script)


def run_notebook(script: str, flags: list[str], cwd) -> tuple[nbformat.NotebookNode, float]:
    """Execute the committed notebook in a fresh kernel in `cwd`, its last cell's `flags` replaced by `flags`; then,
    as a learner who changed a hyperparameter's default would, its Hyperparameters cell again, parsed by tyro."""
    nb = nbformat.reads(notebooks.path_of(script).read_text(encoding="utf-8"), as_version=4)
    train = nb.cells[-1]
    assert "train" in tags(train)
    train.source, n = re.subn(r"^flags = .*$", f"flags = {flags!r}", train.source, flags=re.M)
    assert n == 1, "the training cell sets `flags` on one line"
    (hyperparameters,) = [cell for cell in nb.cells if cell.source.startswith("@dataclass\nclass Hyperparameters")]
    nb.cells += [nbformat.v4.new_code_cell(hyperparameters.source),
                 nbformat.v4.new_code_cell("print('again:', tyro.cli(Hyperparameters, args=[]).env_id)")]
    start = time.perf_counter()
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=300, resources={"metadata": {"path": str(cwd)}})
    client.execute()
    return nb, time.perf_counter() - start


@pytest.mark.parametrize("script", SCRIPTS)
def test_the_notebook_trains_end_to_end(script, tmp_path):
    flags = TINY[script]
    nb, seconds = run_notebook(script, flags, tmp_path)
    (run_dir,) = run_dirs(tmp_path)  # in the kernel's folder: nothing lands in the repository
    ckpt = torch.load(run_dir / "checkpoint.pt", weights_only=True)
    assert ckpt["global_step"] == int(flags[flags.index("--total-timesteps") + 1])
    assert ckpt["script"] == script  # the plumbing named it after __file__, the notebook's stand-in
    printed = "".join(out.get("text", "") for cell in nb.cells for out in cell.get("outputs", []))
    assert f"checkpoint: runs/{run_dir.name}/checkpoint.pt" in printed
    assert f"again: {default_env_id(script)}" in printed
    print(f"{script}: its notebook ran in {seconds:.1f} s")
