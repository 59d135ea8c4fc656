"""README's list of functions and operators and its conformance figures are the catalog's
and CONFORMANCE.md's (tests/readme_catalog.py writes them): a function added to the
catalog, or a new conformance run, must be written into the README too."""

from __future__ import annotations

from tests import readme_catalog


def test_readme_lists_the_catalog_and_the_latest_conformance_run():
    readme = readme_catalog.README.read_text()
    assert readme_catalog.block() in readme, "run `python -m tests.readme_catalog --write`"


def test_every_catalogued_name_is_in_the_block():
    text = readme_catalog.block()
    for f in readme_catalog.FUNCTIONS:
        assert f"`{f.name}`" in text or f"`{f.schema}.{f.name}`" in text, f.name
    for o in readme_catalog.OPERATORS:
        assert f"`{o.name}`" in text, o.name
