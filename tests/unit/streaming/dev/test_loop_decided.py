"""benchmarks.loop.decided: the rebalancer's decision delays and its p95 against the oracle from its
first recommendation on, read from a run as run_workload returns it."""

from benchmarks.loop import decided


def _run(events=(), recs=(), ours=(), oracle=()):
    return {"events": list(events), "recommendations": [{"at_s": t} for t in recs],
            "curves": {"rebalancer": list(ours), "oracle": list(oracle)}}


def test_first_decisions_are_counted_from_the_start_and_from_each_event():
    run = _run(events=[(40.0, "c2 leaves"), (80.0, "c2 returns")], recs=[15.0, 22.0, 47.5])
    # the start: 15 s; the leave: 7.5 s; the return: no recommendation before the run ended
    assert decided.first_decisions(run) == [15.0, 7.5, None]
    assert decided.first_decisions(_run()) == [None]


def test_the_window_from_the_first_recommendation_compares_both_curves_over_the_same_samples():
    ours = [(t, 1000.0 if t < 15 else 200.0) for t in range(0, 60, 2)]
    oracle = [(t, 300.0) for t in range(0, 60, 2)]
    t, mine, best = decided.after_first(_run(recs=[15.0, 30.0], ours=ours, oracle=oracle))
    assert (t, mine, best) == (15.0, 200.0, 300.0)
    # no recommendation: nothing to read
    assert decided.after_first(_run(ours=ours, oracle=oracle)) is None
    assert decided.after_first({"recommendations": [{"at_s": 1.0}],
                                "curves": {"rebalancer": ours}}) is None


def test_the_report_lines_give_medians_over_the_runs():
    ours = [(t, 500.0) for t in range(0, 60, 2)]
    oracle = [(t, 250.0) for t in range(0, 60, 2)]
    runs = [_run(recs=[r], ours=ours, oracle=oracle) for r in (10.0, 14.0, 30.0)]
    text = "\n".join(decided.lines(runs))
    assert "after the start: 14 s (3 of 3 runs)" in text
    assert "p95 max lag 500 vs oracle 250 (x2.00)" in text
    assert decided.lines([_run()]) == []


def test_the_end_of_the_run_is_read_over_its_last_seconds():
    ours = [(t, 1000.0 if t < 100 else 150.0) for t in range(0, 121, 2)]
    oracle = [(t, 100.0) for t in range(0, 121, 2)]
    assert decided.at_end(_run(ours=ours, oracle=oracle)) == (150.0, 100.0)
    assert "the last 20 s of the run: p95 max lag 150 vs oracle 100 (x1.50)" in "\n".join(
        decided.lines([_run(ours=ours, oracle=oracle)]))
    assert decided.at_end(_run(ours=ours)) is None
