"""The README's "Clients" snippets, run as written against a server.

Each fenced block of that section (Python, Java, JavaScript) runs in order against one
server, with only the port changed; what it prints must be what the snippet's
`# → ...` (or `// → ...`) comments say. A snippet that stops working, or prints
something else, fails here before a user copies it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.support import ROOT

JDBC_JAR = "/usr/share/java/postgresql.jar"
NODE_DIR = ROOT / "tests" / "node"
_BLOCK = re.compile(r"^```(python|java|js)\n(.*?)^```", re.DOTALL | re.MULTILINE)
_EXPECTED = re.compile(r"^\s*(?:#|//) → (.*)$", re.MULTILINE)


def _snippets() -> list[tuple[str, str]]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("\n## Clients\n", 1)[1].split("\n## ", 1)[0]
    return [(m.group(1), m.group(2)) for m in _BLOCK.finditer(section)]


SNIPPETS = _snippets()


def _run(language: str, code: str, folder: Path) -> subprocess.CompletedProcess:
    if language == "python":
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    if language == "js":
        node = shutil.which("node")
        if node is None or not (NODE_DIR / "node_modules" / "pg-cursor").is_dir():
            pytest.skip("needs node and tests/node's packages (scripts/install.sh installs them)")
        return subprocess.run([node, "-"], input=code, cwd=NODE_DIR, capture_output=True, text=True, timeout=300, check=False)
    javac, java = shutil.which("javac"), shutil.which("java")
    if javac is None or java is None or not os.path.exists(JDBC_JAR):
        pytest.skip("needs javac and pgjdbc (scripts/install.sh installs them)")
    name = re.search(r"public class (\w+)", code).group(1)
    (folder / f"{name}.java").write_text(code)
    subprocess.run([javac, "-cp", JDBC_JAR, "-d", str(folder), str(folder / f"{name}.java")],
                   check=True, capture_output=True, timeout=300)
    return subprocess.run([java, "-cp", f"{JDBC_JAR}:{folder}", name], capture_output=True, text=True, timeout=300, check=False)


def test_the_section_has_a_snippet_per_client():
    text = "\n".join(code for _, code in SNIPPETS)
    for client in ("import psycopg\n", "import psycopg2", "asyncpg.create_pool", "autoload_with",
                   "import pandas", "jdbc:postgresql", "SUBSCRIBE", "require('pg-cursor')"):
        assert client in text, client


def test_snippets_print_what_the_readme_says(server):
    """In order, on one server: later snippets read what earlier ones wrote."""
    folder = Path(tempfile.mkdtemp(prefix="sparkwire-readme-"))
    try:
        for language, code in SNIPPETS:
            code = code.replace("6875", str(server.port))
            out = _run(language, code, folder)
            assert out.returncode == 0, f"{language} snippet failed:\n{code}\n{out.stdout}{out.stderr}"
            assert out.stdout.splitlines() == _EXPECTED.findall(code), code
    finally:
        shutil.rmtree(folder, ignore_errors=True)
