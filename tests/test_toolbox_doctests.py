"""The docstring examples of the toolbox modules run and print what they show."""

import doctest
import importlib

import pytest

MODULES = ["mixture", "kmedoids", "fuzzy", "lvq", "tsvq", "som", "isodata", "selection",
           "metrics"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(f"metriclust.{name}")
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
