"""A config-store listener for tests: it writes down what it is told."""

from __future__ import annotations


class Recorder:
    """A ConfigListener that writes down what it is told."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def on_connector_config(self, connector):
        self.calls.append(("connector", connector))

    def on_task_configs(self, tasks):
        self.calls.append(("tasks", list(tasks)))

    def on_target_state(self, connector):
        self.calls.append(("target", connector))

    def on_restart_request(self, request):
        self.calls.append(("restart", request))

    def on_session_key(self, key):
        self.calls.append(("session", key))

    def on_logger_level(self, namespace, level):
        self.calls.append(("logger", namespace, level))
