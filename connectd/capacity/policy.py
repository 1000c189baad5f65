"""A Connect cluster's capacity policy, in MSK Connect's terms.

MSK Connect's ``capacity`` is one of two shapes, and ``GET/PUT /capacity``
reads and writes exactly that JSON::

    {"provisionedCapacity": {"workerCount": 2, "mcuCount": 1}}

    {"autoScaling": {"minWorkerCount": 1, "maxWorkerCount": 4, "mcuCount": 1,
                     "scaleInPolicy": {"cpuUtilizationPercentage": 20},
                     "scaleOutPolicy": {"cpuUtilizationPercentage": 80},
                     "evaluationWindowSeconds": 120, "cooldownSeconds": 300}}

``evaluationWindowSeconds`` and ``cooldownSeconds`` are connectd's (MSK
Connect fixes both); absent, the worker's ``capacity.evaluation.window.ms``
and ``capacity.cooldown.ms`` apply. The worker keys ``capacity.*`` give the
policy of a cluster that was never given one over REST; a ``PUT /capacity``
is stored in the config topic and wins, for every worker and after a
restart (docs/capacity.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connectd.config.worker_keys import MCU_COUNTS

__all__ = ["AUTOSCALING", "MCU_COUNTS", "PROVISIONED", "CapacityPolicy", "PolicyError"]

PROVISIONED = "provisioned"
AUTOSCALING = "autoscaling"
_MAX_WORKERS = 1000


class PolicyError(ValueError):
    """A capacity policy that cannot be used; the message names the field, the value and what was expected."""


@dataclass(frozen=True)
class CapacityPolicy:
    """What the leader keeps the cluster's worker count to.

    :attr mode: :data:`PROVISIONED` (``worker_count`` workers) or :data:`AUTOSCALING` (between
        ``min_workers`` and ``max_workers`` on CPU utilisation).
    :attr mcu_count: each worker's share of the machine: ``mcu_count`` cores and 4 GiB each for its Spark.
    """

    mode: str
    mcu_count: int = 1
    worker_count: int = 1
    min_workers: int = 1
    max_workers: int = 1
    scale_in_cpu: int = 20
    scale_out_cpu: int = 80
    window_s: float = 120.0
    cooldown_s: float = 300.0

    def __post_init__(self) -> None:
        if self.mode not in (PROVISIONED, AUTOSCALING):
            raise PolicyError(f"capacity mode {self.mode!r}: expected {PROVISIONED} or {AUTOSCALING}")
        if self.mcu_count not in MCU_COUNTS:
            raise PolicyError(f"mcuCount {self.mcu_count}: expected one of {', '.join(map(str, MCU_COUNTS))}")
        for name, value in (("workerCount", self.worker_count), ("minWorkerCount", self.min_workers),
                            ("maxWorkerCount", self.max_workers)):
            if not 1 <= value <= _MAX_WORKERS:
                raise PolicyError(f"{name} {value}: expected 1 to {_MAX_WORKERS}")
        if self.min_workers > self.max_workers:
            raise PolicyError(f"minWorkerCount {self.min_workers} is above maxWorkerCount {self.max_workers}")
        for name, value in (("scaleInPolicy.cpuUtilizationPercentage", self.scale_in_cpu),
                            ("scaleOutPolicy.cpuUtilizationPercentage", self.scale_out_cpu)):
            if not 1 <= value <= 100:
                raise PolicyError(f"{name} {value}: expected 1 to 100")
        if self.scale_in_cpu >= self.scale_out_cpu:
            raise PolicyError(f"scaleInPolicy.cpuUtilizationPercentage {self.scale_in_cpu} must be below "
                              f"scaleOutPolicy.cpuUtilizationPercentage {self.scale_out_cpu}")
        if self.window_s <= 0 or self.cooldown_s < 0:
            raise PolicyError(f"evaluationWindowSeconds {self.window_s:g} must be above 0 and cooldownSeconds "
                              f"{self.cooldown_s:g} at least 0")

    @property
    def lowest(self) -> int:
        return self.worker_count if self.mode == PROVISIONED else self.min_workers

    @property
    def highest(self) -> int:
        return self.worker_count if self.mode == PROVISIONED else self.max_workers

    # --- MSK Connect's JSON ---

    @classmethod
    def from_json(cls, body: Any, *, window_s: float = 120.0, cooldown_s: float = 300.0) -> CapacityPolicy:
        """A policy from MSK Connect's ``capacity`` JSON; *window_s* and *cooldown_s* where it has none.

        :raises PolicyError: not one of the two shapes, a field missing, unknown or out of range.
        """
        if not isinstance(body, Mapping):
            raise PolicyError("expected a JSON object with provisionedCapacity or autoScaling")
        shapes = [key for key in ("provisionedCapacity", "autoScaling") if key in body]
        unknown = sorted(set(body) - {"provisionedCapacity", "autoScaling"})
        if unknown:
            raise PolicyError(f"unknown field {unknown[0]!r}; expected provisionedCapacity or autoScaling")
        if len(shapes) != 1:
            raise PolicyError("expected exactly one of provisionedCapacity and autoScaling")
        shape = shapes[0]
        fields = _object(body[shape], shape)
        if shape == "provisionedCapacity":
            _only(fields, shape, ("workerCount", "mcuCount"))
            return cls(PROVISIONED, mcu_count=_int(fields, shape, "mcuCount", 1),
                       worker_count=_int(fields, shape, "workerCount"), window_s=window_s, cooldown_s=cooldown_s)
        _only(fields, shape, ("minWorkerCount", "maxWorkerCount", "mcuCount", "scaleInPolicy", "scaleOutPolicy",
                              "evaluationWindowSeconds", "cooldownSeconds"))
        scale_in = _object(fields.get("scaleInPolicy", {}), f"{shape}.scaleInPolicy")
        scale_out = _object(fields.get("scaleOutPolicy", {}), f"{shape}.scaleOutPolicy")
        _only(scale_in, f"{shape}.scaleInPolicy", ("cpuUtilizationPercentage",))
        _only(scale_out, f"{shape}.scaleOutPolicy", ("cpuUtilizationPercentage",))
        return cls(AUTOSCALING, mcu_count=_int(fields, shape, "mcuCount", 1),
                   min_workers=_int(fields, shape, "minWorkerCount"), max_workers=_int(fields, shape, "maxWorkerCount"),
                   scale_in_cpu=_int(scale_in, f"{shape}.scaleInPolicy", "cpuUtilizationPercentage", 20),
                   scale_out_cpu=_int(scale_out, f"{shape}.scaleOutPolicy", "cpuUtilizationPercentage", 80),
                   window_s=_number(fields, shape, "evaluationWindowSeconds", window_s),
                   cooldown_s=_number(fields, shape, "cooldownSeconds", cooldown_s))

    def to_json(self) -> dict[str, Any]:
        """MSK Connect's ``capacity`` JSON (the form :meth:`from_json` reads)."""
        if self.mode == PROVISIONED:
            return {"provisionedCapacity": {"workerCount": self.worker_count, "mcuCount": self.mcu_count}}
        return {"autoScaling": {
            "minWorkerCount": self.min_workers, "maxWorkerCount": self.max_workers, "mcuCount": self.mcu_count,
            "scaleInPolicy": {"cpuUtilizationPercentage": self.scale_in_cpu},
            "scaleOutPolicy": {"cpuUtilizationPercentage": self.scale_out_cpu},
            "evaluationWindowSeconds": _whole(self.window_s), "cooldownSeconds": _whole(self.cooldown_s)}}

    @classmethod
    def from_worker(cls, worker: Any) -> CapacityPolicy | None:
        """The policy the worker keys ``capacity.*`` give; ``None`` for ``capacity.mode=none``.

        :raises PolicyError: the keys together make no policy (minimum above maximum, …).
        """
        mode = str(worker.get("capacity.mode")).lower()
        if mode == "none":
            return None
        return cls(mode, mcu_count=worker.get("capacity.mcu.count"), worker_count=worker.get("capacity.worker.count"),
                   min_workers=worker.get("capacity.min.worker.count"),
                   max_workers=worker.get("capacity.max.worker.count"),
                   scale_in_cpu=worker.get("capacity.scale.in.cpu.utilization.percentage"),
                   scale_out_cpu=worker.get("capacity.scale.out.cpu.utilization.percentage"),
                   window_s=worker.get("capacity.evaluation.window.ms") / 1000,
                   cooldown_s=worker.get("capacity.cooldown.ms") / 1000)


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise PolicyError(f"{where}: expected a JSON object, not {value!r}")
    return value


def _only(fields: Mapping[str, Any], where: str, known: tuple[str, ...]) -> None:
    unknown = sorted(set(fields) - set(known))
    if unknown:
        raise PolicyError(f"{where}: unknown field {unknown[0]!r}; expected {', '.join(known)}")


def _int(fields: Mapping[str, Any], where: str, name: str, default: int | None = None) -> int:
    value = fields.get(name, default)
    if value is None:
        raise PolicyError(f"{where}.{name} is missing")
    if isinstance(value, bool) or not isinstance(value, int):
        raise PolicyError(f"{where}.{name} {value!r}: expected a whole number")
    return value


def _number(fields: Mapping[str, Any], where: str, name: str, default: float) -> float:
    value = fields.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PolicyError(f"{where}.{name} {value!r}: expected a number of seconds")
    return float(value)


def _whole(seconds: float) -> int | float:
    return int(seconds) if float(seconds).is_integer() else seconds
