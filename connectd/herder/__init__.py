"""The herder: decides what a worker runs and runs it through the supervisor.

- :mod:`~connectd.herder.base`: :class:`Herder`, the operations the REST API asks for, and
  :class:`HerderBase`, what both herders share (connectors, their tasks, statuses, the watch
  and partition discovery loops);
- :mod:`~connectd.herder.standalone`: :class:`StandaloneHerder`, every connector on this
  worker (the cluster's herder is :mod:`connectd.cluster.herder`);
- :mod:`~connectd.herder.supervision`: each task's states and transitions;
- :mod:`~connectd.herder.runs`: a connector and its tasks as the herder runs them;
- :mod:`~connectd.herder.validation`: checking a connector config, reading a connector file;
- :mod:`~connectd.herder.offsets_admin`: KIP-875's offsets, read and changed.
"""

from connectd.herder.base import Herder, HerderBase, RestartPlan
from connectd.herder.standalone import StandaloneHerder
from connectd.herder.validation import check_connector, load_connector_file, too_many_tasks, validate_connector

__all__ = ["Herder", "HerderBase", "RestartPlan", "StandaloneHerder", "check_connector", "load_connector_file",
           "too_many_tasks", "validate_connector"]
