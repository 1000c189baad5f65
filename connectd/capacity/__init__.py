"""Capacity like MSK Connect's: the policy, the leader's decision, the providers that act on it.

:mod:`~connectd.capacity.policy` (MSK Connect's JSON), :mod:`~connectd.capacity.decision`
(pure), :mod:`~connectd.capacity.load` (a worker's process-tree CPU),
:mod:`~connectd.capacity.providers` (the provider interface) and the built-in providers
:mod:`~connectd.capacity.processes`, :mod:`~connectd.capacity.systemd` and
:mod:`~connectd.capacity.spark`. A cluster worker's part is :mod:`connectd.cluster.capacity`;
docs/capacity.md is the user's guide.
"""
