"""A cluster of distributed workers: membership, assignment, the internal topics.

``protocol`` (what members tell each other), ``assignor`` (who runs what,
a pure function), ``membership`` (the Kafka group), ``kafka_log`` and the
stores (the config, status and offset topics), ``herder`` (the distributed
herder that ties them together). See ``docs/cluster.md``.
"""
