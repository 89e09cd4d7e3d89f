"""Reviewing proposals (recommendations made in ``approve`` mode) before they run.

- ``diff``: what a recommendation changes, member by member (``rebalancer recommendations --diff``);
- ``expiry``: when a proposal expires (the group's membership or partitions changed since, or it is
  older than ``policy.proposal_expiry_s``), which ``rebalancer approve`` refuses and
  ``rebalancer verify`` reports.
"""
