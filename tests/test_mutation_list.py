"""The mutation check (tests/mutations.py) is not part of the suite: it takes many minutes. What can drift without
running it is checked here, in milliseconds: every test a mutation names exists, and every text a mutation edits
is in the files it edits. A renamed test or a reworded line would otherwise surface only when someone next runs
the whole check, as "the tests fail unmutated"."""

import ast

import pytest

from conftest import ROOT
from tests.mutations import MUTATIONS


def test_every_test_a_mutation_names_exists():
    for mutation in MUTATIONS:
        for node in mutation.tests:
            path, _, name = node.partition("::")
            assert (ROOT / path).is_file(), f"{mutation.name}: no file {path}"
            if name:
                tree = ast.parse((ROOT / path).read_text())
                names = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
                assert name.split("[")[0] in names, f"{mutation.name}: {path} has no test {name}"


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: m.name)
def test_every_text_a_mutation_edits_is_there(mutation):
    files = mutation.paths(ROOT)
    assert files, f"{mutation.name}: no file matches {mutation.files}"
    for text, _ in mutation.edits:
        assert any(text in path.read_text() for path in files), f"{mutation.name}: {text!r} is in no {mutation.files}"
