"""spec/dialects.md: the variation points of S3FIFO in the reference (reference/dialects/s3fifo.py),
the dialect rules (DIALECT-1 to DIALECT-9), and the search for an implementation's dialect.

Each variation point is replayed against tests/dialect_model.py, a model written apart from the
reference, alone on the canonical policy (with what it requires); the configuration ones are also
checked against figures measured on the packages that take them (/work's research notes quote the
experiments; the packages' own tests are in tests/test_thirdparty_*.py)."""

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from dialect_model import ModelS3FIFO

from kvspec.reference import S3FIFO, ConfigError, ReplayConfig, make_policy, replay
from kvspec.reference.dialects import CANONICAL, KNOWN_DIALECTS, VARIATIONS, DialectS3FIFO, dialect_for, in_catalogue_order
from kvspec.reference.dialects.s3fifo import dialect_caps
from kvspec.reference.trace import TraceRecord

ROOT = Path(__file__).resolve().parent.parent

# Each S3FIFO clause of spec/dialects.md and its variation point.
S3_CLAUSES = {
    "S3-DIALECT-1": "small-cap-floor", "S3-DIALECT-2": "small-cap-min-1", "S3-DIALECT-3": "main-zero-all-main",
    "S3-DIALECT-4": "main-zero-drop", "S3-DIALECT-5": "small-ratio-open", "S3-DIALECT-6": "ghost-cap-0.9",
    "S3-DIALECT-7": "ghost-cap-capacity", "S3-DIALECT-8": "max-freq-min-1", "S3-DIALECT-9": "promote-at-2",
    "S3-DIALECT-10": "promote-freq-reset", "S3-DIALECT-11": "promote-freq-minus-1", "S3-DIALECT-12": "main-victim-forgotten",
    "S3-DIALECT-13": "freq-unsaturated", "S3-DIALECT-14": "global-eviction", "S3-DIALECT-15": "new-to-main-until-first-eviction",
    "S3-DIALECT-16": "ghost-ignored", "S3-DIALECT-17": "small-refuses-own-size",
}
CONFIGS = [(c, r, f) for c in (1, 2, 3, 5, 6, 10, 15, 16) for r in (0.0, 0.1, 0.25, 0.5, 0.99, 1.0) for f in (0, 1, 3)]


def test_the_clause_table_is_the_catalogue() -> None:
    assert {clause: v.id for v in VARIATIONS.values() if (clause := v.clause).startswith("S3-")} == S3_CLAUSES


def built(variations: frozenset[str], capacity: int, ratio: float, max_freq: int) -> tuple[DialectS3FIFO | None, ModelS3FIFO | None]:
    """The reference's and the model's cache, or None for each that refuses the configuration."""
    try:
        ours: DialectS3FIFO | None = DialectS3FIFO.empty(variations, capacity, ratio, max_freq)
    except ConfigError:
        ours = None
    try:
        model: ModelS3FIFO | None = ModelS3FIFO(variations, capacity, ratio, max_freq)
    except ValueError:
        model = None
    return ours, model


def replayed_alike(variations: frozenset[str], seed: int, traces: int = 60) -> None:
    rng = random.Random(seed)
    for capacity, ratio, max_freq in CONFIGS:
        ours, model = built(variations, capacity, ratio, max_freq)
        assert (ours is None) == (model is None), (capacity, ratio, max_freq)
        if ours is None or model is None:
            continue
        for _ in range(traces // len(CONFIGS) + 1):
            for h in (rng.randint(1, 3 * capacity + 2) for _ in range(40)):
                ours.access(h)
                model.access(h)
                assert (tuple(ours.small.items()), tuple(ours.main.items()), tuple(ours.ghost)) == model.state(), (capacity, ratio, h)


@pytest.mark.parametrize("clause", S3_CLAUSES)
def test_each_S3_DIALECT_variation_point_alone_replays_as_an_independent_model(clause: str) -> None:
    """S3-DIALECT-1 to S3-DIALECT-17, one at a time on the canonical rules (with what each requires):
    the reference's queues, freqs and ghost equal the model's after every access, and both refuse
    the same configurations."""
    variation = VARIATIONS[S3_CLAUSES[clause]]
    replayed_alike(frozenset({variation.id, *variation.requires}), seed=len(clause))


@pytest.mark.parametrize("name", [n for n in KNOWN_DIALECTS if "s3fifo" in KNOWN_DIALECTS[n]])
def test_DIALECT_5_each_known_S3FIFO_dialect_replays_as_the_model(name: str) -> None:
    replayed_alike(dialect_for("s3fifo", name), seed=7)


def test_DIALECT_1_the_dialect_with_no_variation_point_is_the_canonical_policy() -> None:
    rng = random.Random(1)
    for capacity, ratio, max_freq in CONFIGS:
        try:
            canonical = S3FIFO.empty(capacity, ratio, max_freq)
        except ConfigError as refused:
            with pytest.raises(ConfigError, match=refused.clause):
                DialectS3FIFO.empty(CANONICAL, capacity, ratio, max_freq)
            continue
        ours = DialectS3FIFO.empty(CANONICAL, capacity, ratio, max_freq)
        for h in (rng.randint(1, 3 * capacity) for _ in range(200)):
            canonical.access(h)
            ours.access(h)
            assert (canonical.small, canonical.main, canonical.ghost) == (ours.small, ours.main, ours.ghost)


# The sizes s3fifo 0.0.1, s3fifo-cache 0.1.1 and libCacheSim 0.3.5 build (their _small_cap, _main_cap,
# _ghost_cap, or libCacheSim's abort), measured on the packages, with their default knobs.
MEASURED_CAPS = [
    ("s3fifo-pypi", 6, 0.1, (1, 5, 5)), ("s3fifo-pypi", 5, 0.1, (1, 4, 4)), ("s3fifo-pypi", 15, 0.1, (1, 14, 13)),
    ("s3fifo-pypi", 4096, 0.1, (409, 3687, 3686)), ("s3fifo-pypi", 1, 0.1, (0, 1, 0)), ("s3fifo-pypi", 10, 0.0, (1, 9, 9)),
    ("s3fifo-pypi", 10, 1.0, (0, 10, 9)), ("s3fifo-pypi", 2, 0.99, (1, 1, 1)),
    ("s3fifo-cache", 6, 0.1, (1, 5, 6)), ("s3fifo-cache", 15, 0.1, (1, 14, 15)), ("s3fifo-cache", 4096, 0.1, (409, 3687, 4096)),
    ("s3fifo-cache", 1, 0.1, (1, 0, 1)), ("s3fifo-cache", 2, 0.99, (1, 1, 2)), ("s3fifo-cache", 10, 0.0, None), ("s3fifo-cache", 10, 1.0, None),
    ("libcachesim", 6, 0.1, None), ("libcachesim", 10, 1.0, None), ("libcachesim", 10, 0.0, None), ("libcachesim", 2, 0.99, (1, 1, 1)),
]


@pytest.mark.parametrize(("name", "capacity", "ratio", "caps"), MEASURED_CAPS)
def test_S3_DIALECT_1_to_S3_DIALECT_7_give_the_sizes_each_package_builds(name: str, capacity: int, ratio: float,
                                                                      caps: tuple[int, int, int] | None) -> None:
    """S3-DIALECT-1 (floor), S3-DIALECT-2 (at least 1), S3-DIALECT-3 (all to M), S3-DIALECT-4 (M of
    no size), S3-DIALECT-5 (open interval), S3-DIALECT-6 (0.9), S3-DIALECT-7 (capacity); None: refused."""
    dialect = dialect_for("s3fifo", name)
    if caps is None:
        with pytest.raises(ConfigError):
            dialect_caps(capacity, ratio, 3, dialect)
        return
    got = dialect_caps(capacity, ratio, 3, dialect)
    assert (got.small_cap, got.main_cap, got.ghost_cap) == caps


def test_S3_DIALECT_8_refuses_max_freq_0_and_S3_DIALECT_13_accepts_any_and_uses_none() -> None:
    with pytest.raises(ConfigError, match="S3-DIALECT-8"):
        dialect_caps(10, 0.5, 0, frozenset({"max-freq-min-1"}))
    assert dialect_caps(10, 0.5, -5, frozenset({"freq-unsaturated"})).max_freq is None
    cache = DialectS3FIFO.empty(frozenset({"freq-unsaturated"}), 10, 0.5, 0)
    for _ in range(5):
        cache.access(1)
    assert cache.small == {1: 4}  # 0, then four hits, unbounded


def test_S3_DIALECT_14_and_15_fill_M_before_the_first_eviction_and_let_it_pass_main_cap() -> None:
    """s3fifo 0.0.1 at capacity 10, small_ratio 0.2 (small 2): new 1, 2, 3, 4 leave S [1, 2] and M
    [3, 4] (measured on the package); S3-DIALECT-14 then lets promotions pass main_cap."""
    cache = DialectS3FIFO.empty(frozenset({"global-eviction", "new-to-main-until-first-eviction"}), 10, 0.2, 3)
    for h in (1, 2, 3, 4):
        cache.access(h)
    assert (list(cache.small), list(cache.main)) == ([1, 2], [3, 4])
    grown = DialectS3FIFO.empty(frozenset({"global-eviction", "new-to-main-until-first-eviction"}), 10, 0.5, 3)
    for h in [*range(1, 11), *range(1, 6), 11]:  # 6 to 10 go to M; 1 to 5, hit, are promoted past main_cap
        grown.access(h)
    assert len(grown.main) == 9 and grown.caps.main_cap == 5  # measured on s3fifo 0.0.1 (threshold 1): |M| = 9


def test_S3_DIALECT_16_a_ghost_hit_is_admitted_as_a_new_hash_and_S3_DIALECT_17_a_small_queue_of_1_admits_nothing() -> None:
    cache = DialectS3FIFO.empty(frozenset({"ghost-ignored"}), 10, 0.2, 3)
    for h in [1, 2, 3]:
        cache.access(h)
    assert list(cache.ghost) == [1]
    cache.access(1)
    assert 1 in cache.small and 1 not in cache.main  # the canonical rule puts it in M (S3-ACCESS-3)
    lone = DialectS3FIFO.empty(frozenset({"small-cap-floor", "small-refuses-own-size", "global-eviction"}), 10, 0.1, 3)
    for h in range(1, 30):
        lone.access(h)
    assert lone.resident_count() == 0  # measured on libCacheSim 0.3.5: 0 objects after 30 accesses at capacity 10, ratio 0.1


def test_S3_DIALECT_9_to_12_promotion_and_M_victims() -> None:
    """s3fifo-cache 0.1.1 (capacity 10, small 2): 2 hit 3 times, then new 4, promotes 2 with freq 2
    (S3-DIALECT-11); promote-at-2 keeps a block hit once out of M (S3-DIALECT-9); promote-freq-reset
    enters M with 0 (S3-DIALECT-10); a forgotten M victim is in no queue (S3-DIALECT-12)."""
    minus = DialectS3FIFO.empty(frozenset({"promote-freq-minus-1"}), 10, 0.2, 3)
    for h in [2, 3, 2, 2, 2, 4]:
        minus.access(h)
    assert (list(minus.small.items()), list(minus.main.items())) == ([(3, 0), (4, 0)], [(2, 2)])
    for variation, expected_main in (("promote-at-2", []), ("promote-freq-reset", [(1, 0)])):
        cache = DialectS3FIFO.empty(frozenset({variation}), 10, 0.2, 3)
        for h in [1, 2, 1, 3]:
            cache.access(h)
        assert list(cache.main.items()) == expected_main, variation
    forgetting = DialectS3FIFO.empty(frozenset({"main-victim-forgotten"}), 4, 0.5, 3)
    for h in [1, 1, 2, 2, 3, 3, 4, 4, 5, 6, 7]:
        forgetting.access(h)
    assert 1 not in forgetting.main and 1 not in forgetting.ghost and 1 not in forgetting.small


def test_DIALECT_2_to_4_a_set_that_makes_no_dialect_is_refused() -> None:
    with pytest.raises(ConfigError, match="DIALECT-2: unknown variation point"):
        dialect_for("s3fifo", variations=("no-such-point",))
    with pytest.raises(ConfigError, match="DIALECT-2: path-ids is a variation point of lru and fifo"):
        dialect_for("s3fifo", variations=("path-ids",))
    with pytest.raises(ConfigError, match="DIALECT-3: new-to-main-until-first-eviction is defined on top of global-eviction"):
        dialect_for("s3fifo", variations=("new-to-main-until-first-eviction",))
    with pytest.raises(ConfigError, match="DIALECT-4"):
        dialect_for("s3fifo", variations=("ghost-cap-0.9", "ghost-cap-capacity"))


def test_DIALECT_2_the_reference_refuses_a_set_that_makes_no_dialect_whoever_builds_it() -> None:
    """make_policy checks the dialect as the command line does: a library caller cannot replay a
    dialect that is not one, and have its result name it (DIALECT-6)."""
    for policy, dialect, clause in [("s3fifo", {"bogus"}, "DIALECT-2"), ("fifo", {"lru-evict-leaves"}, "DIALECT-2"),
                                    ("lru", {"capacity-0-empty", "capacity-nonpositive-empty"}, "DIALECT-4"),
                                    ("lru", {"lru-evict-leaves"}, "DIALECT-3")]:
        with pytest.raises(ConfigError, match=clause):
            make_policy(ReplayConfig(policy=policy, capacity=10, dialect=frozenset(dialect)))  # type: ignore[arg-type]


def test_DIALECT_5_a_name_and_further_variation_points_make_one_dialect() -> None:
    assert dialect_for("s3fifo", "s3fifo-cache", ("promote-at-2",)) == {*KNOWN_DIALECTS["s3fifo-cache"]["s3fifo"], "promote-at-2"}
    with pytest.raises(ConfigError, match="DIALECT-5: unknown dialect"):
        dialect_for("s3fifo", "redis")
    with pytest.raises(ConfigError, match="DIALECT-5: s3fifo-cache has no lru dialect"):
        dialect_for("lru", "s3fifo-cache")


def test_DIALECT_6_a_result_names_its_dialect_and_the_canonical_one_has_no_such_field() -> None:
    records = [(1, TraceRecord(timestamp=0, input_length=2, output_length=0, hash_ids=[1, 2]))]
    dialect = dialect_for("s3fifo", "libcachesim")
    named = replay(records, ReplayConfig(capacity=10, block_size=1, dialect=dialect))
    assert named.dialect == ["small-cap-floor", "ghost-cap-0.9", "promote-at-2", "promote-freq-reset", "main-victim-forgotten", "freq-unsaturated",
                             "global-eviction", "new-to-main-until-first-eviction", "small-refuses-own-size"]  # spec/dialects.md's order
    assert "dialect" not in replay(records, ReplayConfig(capacity=10, block_size=1)).model_dump(exclude_none=True)
    assert make_policy(ReplayConfig(capacity=10, dialect=dialect)).caps.small_cap == 1


def kvspec(*args: str) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it, without the tests' typeguard, in the tests' folder."""
    return subprocess.run([sys.executable, "-m", "kvspec.conformance.cli", *args], capture_output=True, text=True, timeout=600,
                          cwd=Path(__file__).parent)


def test_DIALECT_7_an_implementation_conforms_to_its_dialect_and_not_to_the_canonical_spec(tmp_path: Path) -> None:
    adapter = "in-process:dialect_model.py:s3fifo_cache_like"
    against = kvspec("certify", "--adapter", adapter, "--dialect", "s3fifo-cache", "--report", str(tmp_path))
    assert against.returncode == 0, against.stdout + against.stderr
    assert f"conforms to the dialect {', '.join(in_catalogue_order(dialect_for('s3fifo', 's3fifo-cache')))} (" in against.stdout
    verdict = json.loads((tmp_path / "report.json").read_text())["policies"][0]
    assert verdict["dialect"] == in_catalogue_order(dialect_for("s3fifo", "s3fifo-cache"))
    assert "S3-DIALECT-11" in verdict["clauses"] and "S3-ADMIT-S-2" not in verdict["clauses"]  # DIALECT-2: replaced
    assert kvspec("certify", "--adapter", adapter).returncode == 3


def test_DIALECT_8_the_search_finds_a_model_s_variation_points_and_no_more(tmp_path: Path) -> None:
    found = kvspec("certify", "--adapter", "in-process:dialect_model.py:promote_at_2_forgetting", "--find-dialect", "--report", str(tmp_path))
    assert found.returncode == 3, found.stderr
    assert "Dialect found: promote-at-2, main-victim-forgotten (replacing S3-ADMIT-S-2, S3-ADMIT-S-3, S3-ADMIT-M-3)" in found.stdout
    report = json.loads((tmp_path / "report.json").read_text())["policies"][0]["found"]
    assert report["dialect"] == ["promote-at-2", "main-victim-forgotten"] and report["failing_examples"] >= 1


def test_DIALECT_8_a_mistake_no_variation_point_names_is_reported_as_unexplained() -> None:
    found = kvspec("certify", "--adapter", "in-process:dialect_model.py:small_evicts_newest", "--find-dialect")
    assert found.returncode == 3, found.stderr
    assert "The search found no set of variation points of spec/dialects.md that explains it" in found.stdout


def test_DIALECT_9_a_dialect_s_corpus_carries_it_and_holds_its_implementation_to_it(tmp_path: Path) -> None:
    """`kvspec fixtures generate --dialect`: replay cases alone, each naming its dialect, whose
    expected values the model of that dialect meets and the canonical reference does not."""
    made = kvspec("fixtures", "generate", "--dialect", "s3fifo-cache", str(tmp_path / "corpus"))
    assert made.returncode == 0, made.stderr
    cases = [json.loads(p.read_text()) for p in sorted((tmp_path / "corpus" / "replay").glob("*.json"))]
    assert cases and all(c["dialect"] == in_catalogue_order(dialect_for("s3fifo", "s3fifo-cache")) for c in cases)
    assert not (tmp_path / "corpus" / "benefit").exists()
    model = kvspec("fixtures", "verify", str(tmp_path / "corpus"), "--adapter", "in-process:dialect_model.py:s3fifo_cache_like")
    assert model.returncode == 0, model.stdout + model.stderr
    assert kvspec("fixtures", "verify", str(tmp_path / "corpus"), "--adapter", "reference").returncode == 3
    over = kvspec("fixtures", "generate", "--dialect", "s3fifo-cache")
    assert over.returncode == 1 and "DIALECT-9" in over.stderr


def test_DIALECT_9_a_dialect_s_corpus_never_replaces_a_full_one_nor_is_empty(tmp_path: Path) -> None:
    full = tmp_path / "full"
    shutil.copytree(ROOT / "spec" / "fixtures", full)  # kvspec's own corpus
    before = sorted(p.name for p in full.rglob("*.json"))
    over = kvspec("fixtures", "generate", "--dialect", "libcachesim", str(full))
    assert over.returncode == 1 and "holds a corpus with cases of other kinds" in over.stderr
    assert sorted(p.name for p in full.rglob("*.json")) == before
    none = kvspec("fixtures", "generate", "--variation", "small-cap-floor,capacity-0-empty", str(tmp_path / "none"))
    assert none.returncode == 1 and "no policy has every variation point" in none.stderr and not (tmp_path / "none").exists()
    empty = kvspec("replay", "--variation", ",")
    assert empty.returncode == 1 and "names an empty variation point" in empty.stderr


def test_DIALECT_8_after_a_dialect_that_fails_the_search_starts_from_the_canonical_spec() -> None:
    """The reference, certified against a dialect it is not in, is found to be the canonical spec."""
    found = kvspec("certify", "--adapter", "reference", "--policy", "lru", "--variation", "capacity-0-empty", "--find-dialect")
    assert found.returncode == 3 and "It conforms to the canonical spec" in found.stdout, found.stdout + found.stderr


def test_DIALECT_7_without_policy_only_the_policies_of_the_dialect_are_certified_and_benefit_has_none() -> None:
    run = kvspec("certify", "--adapter", "reference", "--dialect", "s3fifo-pypi")
    assert run.returncode == 3 and "  s3fifo: DOES NOT CONFORM to the dialect" in run.stdout and "  lru:" not in run.stdout
    benefit = kvspec("certify", "--adapter", "reference", "--policy", "benefit", "--dialect", "libcachesim")
    assert benefit.returncode == 1 and "DIALECT-5: libcachesim has no benefit dialect" in benefit.stderr
