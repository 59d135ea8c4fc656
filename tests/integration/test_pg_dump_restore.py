"""A plain pg_dump of a real PostgreSQL 15 database restores into sparkwire with psql, with
no error: its SET lines, tables, serial and identity columns (CREATE SEQUENCE … OWNED BY,
ALTER TABLE … ADD GENERATED … AS IDENTITY (SEQUENCE NAME …), SET DEFAULT nextval), COPY
data, setval calls and keys. Then both databases hold the same rows and hand out the same
next values."""

from __future__ import annotations

import subprocess

import psycopg
import pytest

from tests.pgserver import PG_BIN, reference_postgres

SCHEMA = """
CREATE TABLE author (id serial PRIMARY KEY, name text NOT NULL);
CREATE TABLE book (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, author_id int, title text,
                   price numeric(8,2) DEFAULT 0, tags text[]);
CREATE SEQUENCE counter START 100 INCREMENT 5;
INSERT INTO author (name) VALUES ('Ann'), ('Bob'), ('O''Neil');
INSERT INTO book (author_id, title, tags) VALUES (1, 'x', '{a,b}'), (2, 'y', NULL), (3, 'tab	and
newline', '{}');
SELECT nextval('counter');
"""
AFTER = [
    "INSERT INTO author (name) VALUES ('new') RETURNING id",
    "INSERT INTO book (author_id, title) VALUES (4, 'z') RETURNING id",
    "SELECT nextval('counter')",
    "SELECT * FROM author ORDER BY id",
    "SELECT id, author_id, title, price::text, tags::text FROM book ORDER BY id",
    ("SELECT column_name, column_default, is_identity, identity_generation FROM information_schema.columns "
     "WHERE table_name IN ('author', 'book') ORDER BY table_name, ordinal_position"),
]


@pytest.fixture(scope="module")
def postgres():
    with reference_postgres() as pg:
        yield pg


def test_a_pg_dump_restores_with_psql_and_carries_on_like_postgres(server, postgres):
    with psycopg.connect(postgres.dsn, autocommit=True) as c:
        c.execute("DROP DATABASE IF EXISTS dumped")
        c.execute("CREATE DATABASE dumped")
    source = postgres.dsn.replace("dbname=postgres", "dbname=dumped")
    with psycopg.connect(source, autocommit=True) as c:
        for statement in SCHEMA.split(";\n"):
            if statement.strip():
                c.execute(statement)
    dump = subprocess.run([f"{PG_BIN}/pg_dump", "--no-owner", "--no-privileges", "-d", source],
                          capture_output=True, text=True, check=True).stdout
    restored = subprocess.run([f"{PG_BIN}/psql", "-v", "ON_ERROR_STOP=1", "-X", "-q", "-d", server.dsn],
                              input=dump, capture_output=True, text=True, check=False)
    assert restored.returncode == 0, restored.stderr
    assert "ERROR" not in restored.stderr, restored.stderr
    answers = []
    for dsn in (server.dsn, source):
        with psycopg.connect(dsn, autocommit=True) as c:
            answers.append([c.execute(q).fetchall() for q in AFTER])
    assert answers[0] == answers[1]
    assert answers[0][0] == [(4,)] and answers[0][1] == [(4,)] and answers[0][2] == [(105,)]
