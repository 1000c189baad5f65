"""A connector's transforms and predicates, built from its config and applied in order.

The config keys are Kafka Connect's::

    transforms=route,dropTombstones
    transforms.route.type=org.apache.kafka.connect.transforms.RegexRouter
    transforms.route.regex=(.*)-raw
    transforms.route.replacement=$1
    transforms.dropTombstones.type=Filter
    transforms.dropTombstones.predicate=isTombstone
    predicates=isTombstone
    predicates.isTombstone.type=org.apache.kafka.connect.transforms.predicates.RecordIsTombstone

Building the chain checks all of it at once and raises one
:class:`~connectd.errors.ConfigError` listing every problem, each under its
full key (``transforms.route.regex``): repeated aliases, missing or unknown
classes, a predicate alias that is not defined, ``negate`` without a
predicate, and every bad setting of every transform and predicate.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from connectd.config.definitions import ConfigProblem, Type, parse_value
from connectd.config.properties import Origin
from connectd.errors import ConfigError, PluginError

__all__ = ["TransformationChain", "TransformationStage"]

#: ``find(group, name)``: the class registered as *name* in *group* (``transform`` or ``predicate``).
Finder = Callable[[str, str], type]
_RESERVED = ("type", "predicate", "negate")
_UNKNOWN_KEY = re.compile(r"unknown key '(.*?)'(?: \(did you mean '(.*?)'\?\))?")


class TransformationStage:
    """One transform of a chain, with the predicate (and ``negate``) that decide which records it sees.

    :param alias: the transform's alias in ``transforms``.
    :param transformation: the configured transform.
    :param predicate: the configured predicate, or ``None`` to transform every record.
    :param negate: transform the records the predicate is false for instead.
    """

    __slots__ = ("alias", "transformation", "predicate", "negate", "_apply_batch")

    def __init__(self, alias: str, transformation: Any, predicate: Any = None, negate: bool = False) -> None:
        self.alias = alias
        self.transformation = transformation
        self.predicate = predicate
        self.negate = negate
        batch = getattr(transformation, "apply_batch", None)
        self._apply_batch = batch if callable(batch) else self._one_by_one

    def _one_by_one(self, records: list[Any]) -> list[Any]:
        apply = self.transformation.apply
        return [out for out in map(apply, records) if out is not None]

    def applies_to(self, record: Any) -> bool:
        return self.predicate is None or bool(self.predicate.test(record)) != self.negate

    def apply(self, record: Any) -> Any:
        """The transformed record, *record* itself when the predicate says no, or ``None`` if dropped."""
        if self.predicate is not None and bool(self.predicate.test(record)) == self.negate:
            return record
        return self.transformation.apply(record)

    def apply_batch(self, records: list[Any]) -> list[Any]:
        """:meth:`apply` to each of *records*, in order, leaving out the dropped ones."""
        if self.predicate is None:
            return self._apply_batch(records)
        # Records the transform applies to go to it in runs, so order is kept and batches stay large.
        out: list[Any] = []
        run: list[Any] = []
        run_applies = False
        for record in records:
            applies = self.applies_to(record)
            if applies != run_applies and run:
                out.extend(self._apply_batch(run) if run_applies else run)
                run = []
            run_applies = applies
            run.append(record)
        if run:
            out.extend(self._apply_batch(run) if run_applies else run)
        return out

    def close(self) -> None:
        try:
            close = getattr(self.transformation, "close", None)
            if callable(close):
                close()
        finally:
            close = getattr(self.predicate, "close", None)
            if callable(close):
                close()

    def __repr__(self) -> str:
        condition = ""
        if self.predicate is not None:
            condition = f" if {'not ' if self.negate else ''}{type(self.predicate).__name__}"
        return f"<TransformationStage {self.alias}: {type(self.transformation).__name__}{condition}>"


class TransformationChain:
    """The transforms of a connector, in the order of ``transforms``.

    :param config: the connector config (only ``transforms``, ``predicates`` and
        the keys under ``transforms.`` and ``predicates.`` are read).
    :param find: ``find(group, name)`` returns the class registered as *name* in
        *group* (``"transform"`` or ``"predicate"``) and raises
        :class:`~connectd.errors.PluginError` when there is none, as
        :meth:`connectd.plugins.Registry.find_class` does.
    :param origin: where a key was set (file and line), for problem messages.
    :raises ConfigError: listing every problem in the transforms and predicates.
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        find: Finder,
        *,
        origin: Callable[[str], Origin | None] | None = None,
    ) -> None:
        self._origin = origin or _no_origin
        #: Warnings found while building (unknown and deprecated keys), under their full keys.
        self.warnings: list[ConfigProblem] = []
        self._closed = False
        problems: list[ConfigProblem] = []
        predicate_aliases = self._aliases(config, "predicates", problems)
        transform_aliases = self._aliases(config, "transforms", problems)
        predicates: dict[str, tuple[Any, dict[str, Any]]] = {}
        for alias in predicate_aliases:
            found = self._plugin(config, "predicates", "predicate", alias, find, problems)
            if found is not None:
                predicates[alias] = found
        planned: list[tuple[str, Any, str | None, bool]] = []
        for alias in transform_aliases:
            prefix = f"transforms.{alias}."
            predicate_alias, negate = self._condition(config, prefix, set(predicate_aliases), problems)
            found = self._plugin(config, "transforms", "transform", alias, find, problems)
            if found is not None:
                planned.append((alias, found, predicate_alias, negate))
        self._warn_unlisted(config, "transforms", transform_aliases)
        self._warn_unlisted(config, "predicates", predicate_aliases)
        errors = [problem for problem in problems if problem.is_error]
        if errors:
            self._close_planned(planned, predicates)
            raise ConfigError(errors)
        stages = []
        for alias, (transformation, _), predicate_alias, negate in planned:
            predicate = None
            if predicate_alias is not None:
                # Each transform gets a predicate of its own, as in Kafka Connect.
                checked, predicate_settings = predicates[predicate_alias]
                predicate = type(checked)()
                predicate.configure(predicate_settings)
            stages.append(TransformationStage(alias, transformation, predicate, negate))
        for checked, _ in predicates.values():
            _close_quietly(checked)
        self.stages: tuple[TransformationStage, ...] = tuple(stages)

    # -- building --------------------------------------------------------------------

    def _aliases(self, config: Mapping[str, Any], key: str, problems: list[ConfigProblem]) -> list[str]:
        raw = config.get(key)
        aliases: list[str] = []
        for alias in parse_value(Type.LIST, raw) or []:
            if not alias:
                continue
            if alias in aliases:
                problems.append(ConfigProblem(self._origin(key), key, f"alias {alias!r} is listed twice", str(raw)))
                continue
            aliases.append(alias)
        return aliases

    def _plugin(
        self,
        config: Mapping[str, Any],
        section: str,
        group: str,
        alias: str,
        find: Finder,
        problems: list[ConfigProblem],
    ) -> tuple[Any, dict[str, Any]] | None:
        """A configured instance of the class named by ``<section>.<alias>.type``, and its settings."""
        prefix = f"{section}.{alias}."
        type_key = prefix + "type"
        class_name = config.get(type_key)
        if class_name is None or not str(class_name).strip():
            problems.append(ConfigProblem(self._origin(type_key), type_key, f"is required (the class of {group} {alias!r})"))
            return None
        if isinstance(class_name, type):
            cls = class_name
        else:
            try:
                cls = find(group, str(class_name).strip())
            except PluginError as exc:
                problems.append(ConfigProblem(self._origin(type_key), type_key, str(exc), str(class_name)))
                return None
        method = "apply" if group == "transform" else "test"
        if not callable(getattr(cls, method, None)) or not callable(getattr(cls, "configure", None)):
            problems.append(ConfigProblem(
                self._origin(type_key), type_key,
                f"expected a {group} class (with configure() and {method}()), got {cls.__module__}.{cls.__qualname__}",
                str(class_name),
            ))
            return None
        reserved = _RESERVED if section == "transforms" else ("type",)
        settings = {
            key[len(prefix):]: value
            for key, value in config.items()
            if key.startswith(prefix) and key[len(prefix):] not in reserved
        }
        try:
            instance = cls()
            instance.configure(settings)
        except ConfigError as exc:
            problems.extend(self._prefixed(problem, prefix) for problem in exc.problems)
            return None
        except Exception as exc:  # a plugin's configure() failing in its own way
            key = prefix.rstrip(".")
            problems.append(ConfigProblem(self._origin(key), key, f"{group} failed to configure: {exc!r}"))
            return None
        self.warnings.extend(self._prefixed(problem, prefix) for problem in getattr(instance, "config_warnings", []) or [])
        return instance, settings

    def _condition(
        self, config: Mapping[str, Any], prefix: str, defined: set[str], problems: list[ConfigProblem]
    ) -> tuple[str | None, bool]:
        predicate_key, negate_key = prefix + "predicate", prefix + "negate"
        raw_predicate = config.get(predicate_key)
        predicate = str(raw_predicate).strip() if raw_predicate is not None else ""
        raw_negate = config.get(negate_key)
        negate = False
        if raw_negate is not None and str(raw_negate).strip():
            try:
                negate = parse_value(Type.BOOLEAN, raw_negate)
            except ValueError as exc:
                problems.append(ConfigProblem(self._origin(negate_key), negate_key, str(exc), str(raw_negate)))
            if not predicate:
                problems.append(ConfigProblem(
                    self._origin(negate_key), negate_key,
                    f"is only valid with {predicate_key}, which is not set", str(raw_negate),
                ))
        if not predicate:
            return None, False
        if predicate not in defined:
            listed = ", ".join(sorted(defined)) or "none"
            problems.append(ConfigProblem(
                self._origin(predicate_key), predicate_key,
                f"expected the alias of a predicate listed in predicates (listed: {listed})", predicate,
            ))
            return None, False
        return predicate, negate

    def _prefixed(self, problem: ConfigProblem | str, prefix: str) -> ConfigProblem:
        if isinstance(problem, ConfigProblem) and problem.key is None:
            unknown = _UNKNOWN_KEY.fullmatch(problem.message)
            if unknown is not None:  # ConfigDef's warning names the key in its message
                name, suggestion = unknown.groups()
                message = f"unknown key {prefix + name!r}"
                if suggestion is not None:
                    message += f" (did you mean {prefix + suggestion!r}?)"
                return dataclasses.replace(problem, message=message, origin=problem.origin or self._origin(prefix + name))
        if isinstance(problem, ConfigProblem):
            key = prefix + problem.key if problem.key else prefix.rstrip(".")
            return dataclasses.replace(problem, key=key, origin=problem.origin or self._origin(key))
        key = prefix.rstrip(".")
        return ConfigProblem(self._origin(key), key, str(problem))

    def _warn_unlisted(self, config: Mapping[str, Any], section: str, aliases: list[str]) -> None:
        listed = set(aliases)
        seen: set[str] = set()
        for key in config:
            if not key.startswith(section + "."):
                continue
            alias = key[len(section) + 1:].split(".", 1)[0]
            if alias in listed or alias in seen:
                continue
            seen.add(alias)
            self.warnings.append(ConfigProblem(
                self._origin(key), None,
                f"{key} is ignored: {alias!r} is not listed in {section}", severity="warning",
            ))

    @staticmethod
    def _close_planned(planned: list[tuple[str, Any, str | None, bool]], predicates: Mapping[str, tuple[Any, Any]]) -> None:
        for _, (instance, _), _, _ in planned:
            _close_quietly(instance)
        for instance, _ in predicates.values():
            _close_quietly(instance)

    # -- running -----------------------------------------------------------------------

    def apply(self, record: Any) -> Any:
        """*record* through every stage; ``None`` as soon as one drops it."""
        for stage in self.stages:
            try:
                record = stage.apply(record)
            except Exception as exc:
                exc.add_note(f"in transform {stage.alias!r} ({type(stage.transformation).__name__})")
                raise
            if record is None:
                return None
        return record

    def apply_batch(self, records: list[Any]) -> list[Any]:
        """*records* through every stage, a whole list per stage; dropped records leave the list.

        The result equals ``[r for r in map(apply, records) if r is not None]``.
        """
        records = list(records)
        for stage in self.stages:
            if not records:
                break
            try:
                records = stage.apply_batch(records)
            except Exception as exc:
                exc.add_note(f"in transform {stage.alias!r} ({type(stage.transformation).__name__})")
                raise
        return records

    def close(self) -> None:
        """Close every transform and predicate (once; later calls do nothing)."""
        if self._closed:
            return
        self._closed = True
        first: BaseException | None = None
        for stage in self.stages:
            try:
                stage.close()
            except Exception as exc:  # close the rest before reporting
                first = first or exc
        if first is not None:
            raise first

    @property
    def aliases(self) -> list[str]:
        return [stage.alias for stage in self.stages]

    def __iter__(self) -> Iterator[TransformationStage]:
        return iter(self.stages)

    def __len__(self) -> int:
        return len(self.stages)

    def __repr__(self) -> str:
        return f"TransformationChain({', '.join(map(repr, self.stages))})"


def _no_origin(key: str) -> None:
    return None


def _close_quietly(instance: Any) -> None:
    close = getattr(instance, "close", None)
    if callable(close):
        try:
            close()
        except Exception:  # nothing useful to do with it while reporting config problems
            pass
