"""`make mutate MUTATE_SAMPLE=N`: a seeded sample stratified by file, and the kill rate's 95 % interval."""

import random

import pytest

from tests.support.mutation_report import package, summary, wilson
from tests.support.mutation_sample import allocate, choose, narrowed


def strata_of(sizes: dict[str, int]) -> dict[str, list[str]]:
    return {path: [f"{path}.x_f__mutmut_{i}" for i in range(1, size + 1)] for path, size in sizes.items()}


STRATA = strata_of(
    {"lambdas.store.jobs": 629, "lambdas.store.queue": 102, "lambdas.lifecycle.attempt.backoff": 24}
)


def test_each_file_gets_its_share_of_the_sample() -> None:
    sizes = {"a": 629, "b": 102, "c": 24}
    for seed in range(50):
        shares = allocate(sizes, 100, random.Random(seed))
        assert sum(shares.values()) == 100
        for name, size in sizes.items():
            quota = 100 * size / 755
            assert int(quota) <= shares[name] <= int(quota) + 1
    assert allocate({"a": 60, "b": 40}, 5, random.Random(0)) == {"a": 3, "b": 2}


def test_a_share_is_rounded_up_as_often_as_its_fraction_says() -> None:
    """A file whose quota is 0.5 gets one mutant in about half the samples, not always or never."""
    rounds_up = [allocate({"a": 90, "b": 10}, 5, random.Random(seed))["b"] for seed in range(400)]
    assert set(rounds_up) == {0, 1}
    assert sum(rounds_up) / 400 == pytest.approx(0.5, abs=0.08)


def test_a_sample_larger_than_the_population_is_refused() -> None:
    with pytest.raises(ValueError, match="sample of 11 from 10"):
        allocate({"a": 10}, 11, random.Random(0))


def test_the_same_seed_chooses_the_same_mutants_and_another_seed_others() -> None:
    first = choose(STRATA, 60, seed=7)
    # the strata's order and the members' order do not change the choice
    shuffled = {path: list(reversed(members)) for path, members in reversed(list(STRATA.items()))}
    assert choose(shuffled, 60, seed=7) == first
    assert choose(STRATA, 60, seed=8) != first
    assert len(set(first)) == 60
    assert set(first) <= {name for members in STRATA.values() for name in members}
    per_file = {path: sum(name.startswith(path + ".") for name in first) for path in STRATA}
    sizes = {path: len(members) for path, members in STRATA.items()}
    assert per_file == allocate(sizes, 60, random.Random(7))


def test_the_sample_estimates_the_population_rate_without_weights() -> None:
    """A big file all killed and a small one all surviving: the samples' rates centre on 90 %."""
    strata = strata_of({"lambdas.store.jobs": 90, "lambdas.store.queue": 10})
    killed = set(strata["lambdas.store.jobs"])
    estimates = [len(killed.intersection(choose(strata, 5, seed))) / 5 for seed in range(400)]
    assert sum(estimates) / len(estimates) == pytest.approx(0.9, abs=0.02)


def test_the_interval_holds_the_true_rate_in_about_95_percent_of_samples() -> None:
    rng = random.Random(1)
    rates = {"lambdas.store.jobs": 0.95, "lambdas.store.queue": 0.5, "lambdas.lifecycle.attempt.backoff": 0.1}
    killed = {name for path, members in STRATA.items() for name in members if rng.random() < rates[path]}
    true_rate = len(killed) / sum(len(members) for members in STRATA.values())
    intervals = [wilson(len(killed.intersection(choose(STRATA, 50, seed))), 50) for seed in range(300)]
    assert sum(low <= true_rate <= high for low, high in intervals) / 300 >= 0.93


def test_globs_narrow_the_population_before_choosing() -> None:
    only_queue = narrowed(STRATA, ["lambdas.store.queue.*"])
    assert list(only_queue) == ["lambdas.store.queue"]
    assert len(only_queue["lambdas.store.queue"]) == 102


@pytest.mark.parametrize(
    ("killed", "total", "low", "high"),
    [(0, 10, 0.0, 0.2775), (5, 10, 0.2366, 0.7634), (10, 10, 0.7225, 1.0), (81, 100, 0.7222, 0.8749)],
)
def test_the_wilson_interval_matches_published_values(
    killed: int, total: int, low: float, high: float
) -> None:
    assert wilson(killed, total) == pytest.approx((low, high), abs=1e-4)


def test_the_summary_gives_each_package_its_own_rate() -> None:
    judged = {
        "lambdas.store.jobs.x_a__mutmut_1": "killed",
        "lambdas.store.jobs.x_a__mutmut_2": "survived",
        "lambdas.lifecycle.attempt.worker.xǁWǁrun__mutmut_1": "timeout",
        "lambdas.lifecycle.attempt.worker.xǁWǁrun__mutmut_2": "no tests",
    }
    assert package("lambdas.lifecycle.attempt.worker.xǁWǁrun__mutmut_1") == "lambdas.lifecycle"
    lines = summary(judged)
    assert lines[0] == "all: 2 of 4 killed, 50.0 % (95 % CI 15.0 to 85.0 %)"
    assert lines[1].startswith("lambdas.lifecycle: 1 of 2 killed, 50.0 %")
    assert lines[2].startswith("lambdas.store: 1 of 2 killed, 50.0 %")
    assert lines[3] == "by status: killed 1, no tests 1, survived 1, timeout 1"
