"""kill -9 at random points and resume, at a small size (benchmarks/kill_resume.py runs the big one):
real CLI processes, real store, real plugin tools; nothing committed is lost, every run ends,
and a scripted run's answer after any number of kills equals that of an uninterrupted run."""

from __future__ import annotations

import random

import pytest

from tests.store.conftest import pg_database  # noqa: F401
from tests.support.kill_resume import kill_and_resume


def test_scripted_runs_killed_at_random_points_resume_to_the_same_answer(tmp_path):
    figures = kill_and_resume(
        f"sqlite:///{tmp_path / 'kills.db'}", kills=4, model_kills=0, rng=random.Random(3)
    )
    assert figures.kills == 4
    assert (figures.steps_lost, figures.unfinished, figures.answers_differ) == (0, 0, 0), figures.problems


@pytest.mark.postgres
def test_on_postgresql_too(pg_database):  # noqa: F811 (the fixture, imported above)
    figures = kill_and_resume(pg_database, kills=2, model_kills=0, rng=random.Random(5))
    assert figures.kills == 2
    assert (figures.steps_lost, figures.unfinished, figures.answers_differ) == (0, 0, 0), figures.problems


@pytest.mark.model
def test_a_run_on_the_embedded_model_killed_mid_way_resumes_to_its_end(tmp_path, model_path):
    figures = kill_and_resume(
        f"sqlite:///{tmp_path / 'kills.db'}", kills=0, model_kills=1, rng=random.Random(1)
    )
    assert figures.kills == 1
    assert (figures.steps_lost, figures.unfinished) == (0, 0), figures.problems
