"""The balanced assignor's run: build candidates, balance each, polish the finalists, pick one."""

from __future__ import annotations

import numpy as np

from assignors.model import Assignment, GroupSnapshot

from .counts import Window, balance_counts, enforce_count_bound, windows
from .options import LARGE, PEER_SEED_MAX_PARTITIONS, SMALL, BalancedOptions
from .polish import polish
from .problem import Problem
from .search import balance
from .start import greedy, peer_seeds, shed
from .state import State, count_ok, final_key, pinned_moved


def solve(snapshot: GroupSnapshot, opts: BalancedOptions,
          stuck_weigh_production: bool = False) -> Assignment:
    """Assign ``snapshot``'s partitions (see the package docstring); ``stuck_weigh_production``: a
    stuck partition pinned to its owner weighs its production over the horizon there, not nothing
    (:mod:`.utilisation`)."""
    problem = Problem(snapshot, opts, stuck_weigh_production)
    if problem.n_members == 0:
        return {}
    if problem.n_parts == 0:
        return problem.output(None)
    candidates, cap = _candidates(problem)
    chosen = min(_finalists(problem, candidates, cap), key=lambda st: final_key(problem, st))
    return problem.output(chosen.held)


def _improve(problem: Problem, st: State) -> Window:
    """Bring ``st`` into its count windows, then balance it; the windows, for the polish."""
    window = windows(problem, st)
    enforce_count_bound(problem, st, window)
    balance(problem, st, window)
    return window


def _candidates(problem: Problem) -> tuple[list[tuple[State, Window]], float]:
    """Every candidate, balanced, with its count windows, in tie-break order; and the polish cap."""
    tolerance = problem.opts.load_tolerance
    large = problem.n_parts > LARGE
    starts = [greedy(problem, "preferring", sticky=False, cap=(1 + tolerance) * problem.lower_bound,
                     prefer=True)]
    if not large:
        starts.append(greedy(problem, "lpt", sticky=False, cap=0.0, prefer=False))
    peer_max = np.inf
    if problem.n_parts <= PEER_SEED_MAX_PARTITIONS:
        for st in peer_seeds(problem):
            if not pinned_moved(problem, st) and count_ok(problem, st):
                peer_max = min(peer_max, st.max_load())
            starts.append(st)
    candidates = [(st, _improve(problem, st)) for st in starts]
    best = min(st.max_load() for st, _ in candidates)

    # The current assignment, completed: kept as is (when small), and shed down to the cap.
    sticky = greedy(problem, "sticky", sticky=True, cap=np.inf, prefer=True)
    current_max = np.inf
    if problem.current_complete and count_ok(problem, sticky):
        current_max = sticky.max_load()
    sticky_shed = sticky.copy("sticky-shed")
    shed(problem, sticky_shed, min((1 + tolerance) * best, current_max))
    extra = [sticky_shed] if large else [sticky, sticky_shed]
    candidates += [(st, _improve(problem, st)) for st in extra]
    best = min(best, *(st.max_load() for st in extra))
    # Never above the current assignment's max load, nor any valid peer's.
    cap = min((1 + tolerance) * best, max(current_max, best), max(peer_max, best))
    return candidates, cap


def _finalists(problem: Problem, candidates: list[tuple[State, Window]], cap: float) -> list[State]:
    """The distinct candidates within ``cap``, counts evened out and polished.

    Above ``SMALL`` partitions, once one finalist has the least cost any assignment can have, the
    others are not polished: that could only win a tie-break, for seconds of work."""
    finalists: list[State] = []
    seen: set[bytes] = set()
    floor = float(problem.least_costs().sum())
    for st, window in candidates:
        if st.max_load() > cap * (1 + 1e-12):
            continue
        key = st.member_of.tobytes()
        if key in seen:
            continue
        seen.add(key)
        balance_counts(problem, st)
        if not (problem.n_parts > SMALL
                and any(problem.total_cost(f.member_of) <= floor + 1e-9 for f in finalists)):
            polish(problem, st, window, cap)
        finalists.append(st)
    return finalists
