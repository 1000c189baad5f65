"""``/connectors``: create, read, reconfigure, pause, resume, stop, restart and delete connectors;
their offsets (KIP-875) and the topics they use (KIP-558)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping
from typing import Any

from aiohttp import web

from connectd.cluster.forwarding import FORWARDED_HEADER
from connectd.errors import BadRequestError, ConnectorError, NotFoundError, PluginError, RebalanceInProgressError
from connectd.logging import get_logger
from connectd.rest._keys import CREATE_LOCK, HERDER, INFO
from connectd.rest.error_responses import RestError

__all__ = ["add_routes", "connector_info", "connector_status", "query_flag", "read_json", "string_map"]

log = get_logger(__name__)

_INITIAL_STATES = ("RUNNING", "PAUSED", "STOPPED")


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/connectors", _list)
    router.add_post("/connectors", _create)
    router.add_get("/connectors/{connector}", _get)
    router.add_delete("/connectors/{connector}", _delete)
    router.add_get("/connectors/{connector}/config", _get_config)
    router.add_put("/connectors/{connector}/config", _put_config)
    router.add_patch("/connectors/{connector}/config", _patch_config)
    router.add_get("/connectors/{connector}/status", _status)
    router.add_post("/connectors/{connector}/restart", _restart)
    router.add_put("/connectors/{connector}/pause", _pause)
    router.add_put("/connectors/{connector}/resume", _resume)
    router.add_put("/connectors/{connector}/stop", _stop)
    router.add_get("/connectors/{connector}/tasks", _tasks)
    router.add_get("/connectors/{connector}/tasks-config", _tasks_config)
    router.add_post("/connectors/{connector}/tasks", _put_tasks)
    router.add_put("/connectors/{connector}/fence", _fence)
    router.add_get(r"/connectors/{connector}/tasks/{task:\d+}/status", _task_status)
    router.add_post(r"/connectors/{connector}/tasks/{task:\d+}/restart", _restart_task)
    router.add_get("/connectors/{connector}/topics", _topics)
    router.add_put("/connectors/{connector}/topics/reset", _reset_topics)
    router.add_get("/connectors/{connector}/offsets", _offsets)
    router.add_patch("/connectors/{connector}/offsets", _alter_offsets)
    router.add_delete("/connectors/{connector}/offsets", _reset_offsets)


# --- shapes ---


def _not_found(name: str) -> RestError:
    return RestError(404, f"Connector {name} not found")


def _config(herder: Any, name: str) -> dict[str, str]:
    try:
        return herder.config(name)
    except KeyError:  # unknown, or deleted by another request meanwhile
        raise _not_found(name) from None


def _task_configs(herder: Any, name: str) -> list[dict[str, str]]:
    """The configs the connector gave its tasks, placeholders as written."""
    try:
        return herder.task_configs(name)
    except NotFoundError:
        raise _not_found(name) from None


def _type(herder: Any, config: Mapping[str, str]) -> str:
    try:
        kind = herder.registry.find("connector", config.get("connector.class", "")).kind
    except PluginError:
        return "unknown"
    return kind if kind in ("source", "sink") else "unknown"


def connector_info(herder: Any, name: str) -> dict[str, Any]:
    """Kafka's ConnectorInfo: ``{"name", "config", "tasks": [{"connector", "task"}], "type"}``."""
    config = _config(herder, name)
    tasks = _task_configs(herder, name)
    return {
        "name": name,
        "config": config,
        "tasks": [{"connector": name, "task": i} for i in range(len(tasks))],
        "type": _type(herder, config),
    }


def connector_status(herder: Any, name: str, worker_id: str) -> dict[str, Any]:
    """Kafka's ConnectorStateInfo: ``{"name", "connector", "tasks", "type"}``."""
    config = _config(herder, name)
    status = herder.status.connector(name)
    connector = status.as_rest() if status is not None else {"state": "UNASSIGNED", "worker_id": worker_id}
    tasks = [{"id": task_id, **task.as_rest()} for task_id, task in sorted(herder.status.tasks(name).items())]
    return {"name": name, "connector": connector, "tasks": tasks, "type": _type(herder, config)}


async def read_json(request: web.Request, *, numbers_as_text: bool = False) -> Any:
    """The request's JSON body; 400 when there is none or it does not parse.

    :param numbers_as_text: read each number as the text the body wrote it, for bodies of strings
        (configs): Kafka Connect's Jackson reads a JSON number into a string field so, taking
        ``"tasks.max": 1`` as ``"1"``, and scripts written for it rely on that.
    """
    try:
        text = await request.text()
    except (UnicodeDecodeError, LookupError) as exc:  # bytes not in the charset, or an unknown charset
        raise RestError(400, f"Request body is not valid text: {exc}") from None
    if not text.strip():
        raise RestError(400, "Request body is empty; expected JSON")
    numbers = {"parse_int": str, "parse_float": str} if numbers_as_text else {}
    try:
        return json.loads(text, **numbers)
    except ValueError as exc:
        raise RestError(400, f"Request body is not valid JSON: {exc}") from None
    except RecursionError:
        raise RestError(400, "Request body is nested too deeply to be a connector request") from None


def string_map(value: Any, field: str, *, nulls: bool = False) -> dict[str, Any]:
    """*value* as a config map: a JSON object whose values are strings (or null with *nulls*).

    A boolean is taken as ``"true"`` or ``"false"``, as Kafka Connect's Jackson takes it; numbers
    are text already when the body was read with ``read_json(numbers_as_text=True)``.
    """
    if value is None:
        raise RestError(400, f"{field} is required: a JSON object of string values")
    if not isinstance(value, dict):
        raise RestError(400, f"{field} must be a JSON object of string values, not {_json_type(value)}")
    wrong = sorted(k for k, v in value.items() if not (isinstance(v, (str, bool)) or (nulls and v is None)))
    if wrong:
        allowed = "strings, numbers or booleans" + (" or null" if nulls else "")
        raise RestError(400, f"{field}: values must be {allowed}; these are not: {', '.join(wrong)}")
    return {k: ("true" if v else "false") if isinstance(v, bool) else v for k, v in value.items()}


def _json_type(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "a number",
            float: "a number"}.get(
        type(value), "null")


def _location(request: web.Request, name: str) -> str:
    return str(request.url.with_query(None).with_path(f"/connectors/{name}"))


def query_flag(request: web.Request, key: str, default: bool = False) -> bool:
    """A boolean query parameter: ``true`` or ``false`` in any case; absent or empty is *default*, as in Kafka."""
    value = request.query.get(key, "").strip().lower()
    if not value:
        return default
    if value not in ("true", "false"):
        raise RestError(400, f"{key} must be true or false, not {request.query[key]!r}")
    return value == "true"


def _check_name(body: Mapping[str, Any], name: str) -> None:
    if "name" in body and body["name"] != name:
        raise RestError(400, f"Connector name configuration ({body['name']}) doesn't match connector name in the URL ({name})")


# --- handlers ---


async def _list(request: web.Request) -> web.Response:
    herder = request.app[HERDER]
    names = herder.connectors()
    expand = request.query.getall("expand", [])
    if not expand:
        return web.json_response(names)
    worker_id = request.app[INFO]["worker_id"]
    expanded: dict[str, dict[str, Any]] = {}
    for name in names:
        entry: dict[str, Any] = {}
        try:
            if "status" in expand:
                entry["status"] = connector_status(herder, name, worker_id)
            if "info" in expand:
                entry["info"] = connector_info(herder, name)
        except RestError:  # deleted while listing
            continue
        expanded[name] = entry
    return web.json_response(expanded)


def _check_fields(body: Mapping[str, Any], expected: tuple[str, ...]) -> None:
    """400 for a field the body should not have: Kafka Connect refuses it too (Jackson's
    ``Unrecognized field``), and a misspelt ``initial_state`` must not pass unnoticed."""
    for key in body:
        if key not in expected:
            raise RestError(400, f"Unrecognized field {key!r} in the request body; expected {', '.join(expected)}")


async def _create(request: web.Request) -> web.Response:
    herder = request.app[HERDER]
    body = await read_json(request, numbers_as_text=True)
    if not isinstance(body, dict):
        raise RestError(400, "Request body must be a JSON object with name and config")
    _check_fields(body, ("name", "config", "initial_state"))
    name = body.get("name")
    if not isinstance(name, str) or not name.strip():
        raise RestError(400, "name is required: a non-empty string")
    name = name.strip()
    config = string_map(body.get("config"), "config")
    _check_name(config, name)
    initial = body.get("initial_state")
    if initial is not None:
        if not isinstance(initial, str) or initial.upper() not in _INITIAL_STATES:
            raise RestError(400, f"initial_state must be one of {', '.join(_INITIAL_STATES)}, not {initial!r}")
        initial = initial.upper()
    config["name"] = name
    async with request.app[CREATE_LOCK]:
        if name in herder.connectors():
            raise RestError(409, f"Connector {name} already exists")
        await herder.put(config, initial_state=initial)
    return web.json_response(connector_info(herder, name), status=201, headers={"Location": _location(request, name)})


async def _get(request: web.Request) -> web.Response:
    return web.json_response(connector_info(request.app[HERDER], request.match_info["connector"]))


async def _delete(request: web.Request) -> web.Response:
    await request.app[HERDER].delete(request.match_info["connector"])
    return web.Response(status=204)


async def _get_config(request: web.Request) -> web.Response:
    return web.json_response(_config(request.app[HERDER], request.match_info["connector"]))


async def _put_config(request: web.Request) -> web.Response:
    herder = request.app[HERDER]
    name = request.match_info["connector"]
    config = string_map(await read_json(request, numbers_as_text=True), "config")
    _check_name(config, name)
    if name.strip() and name != name.strip():
        # The herder keeps a connector under its name stripped: "a " would be created as "a",
        # and this answer would be a 404. Kafka keeps such a name as it is.
        raise RestError(400, f"Connector name {name!r} starts or ends with whitespace; "
                             "connectd does not accept such a name in the URL")
    config["name"] = name
    async with request.app[CREATE_LOCK]:
        created = name not in herder.connectors()
        await herder.put(config)
    info = connector_info(herder, name)
    if created:
        return web.json_response(info, status=201, headers={"Location": _location(request, name)})
    return web.json_response(info)


async def _patch_config(request: web.Request) -> web.Response:
    herder = request.app[HERDER]
    name = request.match_info["connector"]
    patch = string_map(await read_json(request, numbers_as_text=True), "config", nulls=True)
    _check_name(patch, name)
    async with request.app[CREATE_LOCK]:
        config = _config(herder, name)
        for key, value in patch.items():
            if value is None:
                config.pop(key, None)
            else:
                config[key] = value
        config["name"] = name
        await herder.put(config)
    return web.json_response(connector_info(herder, name))


async def _status(request: web.Request) -> web.Response:
    herder = request.app[HERDER]
    return web.json_response(connector_status(herder, request.match_info["connector"], request.app[INFO]["worker_id"]))


async def _tasks(request: web.Request) -> web.Response:
    herder = request.app[HERDER]
    name = request.match_info["connector"]
    configs = _task_configs(herder, name)
    return web.json_response([{"id": {"connector": name, "task": i}, "config": config}
                              for i, config in enumerate(configs)])


async def _tasks_config(request: web.Request) -> web.Response:
    # Kafka deprecated it in 3.7 (KIP-970) and removed it in 4.0; scripts written for 3.x still call it.
    herder = request.app[HERDER]
    name = request.match_info["connector"]
    log.warning("rest_deprecated_endpoint", path="/connectors/{connector}/tasks-config",
                replacement="/connectors/{connector}/tasks")
    return web.json_response({f"{name}-{i}": config for i, config in enumerate(_task_configs(herder, name))})


async def _put_tasks(request: web.Request) -> web.Response:
    # Kafka Connect's internal endpoint: the worker running a connector gives the leader its task
    # configs. While the group runs sessioned its Kafka signature is the proof (the forwarding
    # middleware checked it). Under compatible or eager Kafka Connect's workers send none and Kafka
    # checks nothing: so neither does connectd (a Kafka worker in the group must be heard), but says so.
    herder = request.app[HERDER]
    name = request.match_info["connector"]
    if not hasattr(herder, "put_task_configs"):
        raise RestError(404, "Task configs are written by the leader of a Connect cluster; this worker is standalone")
    _unverified(request, herder)
    body = await read_json(request, numbers_as_text=True)
    if not isinstance(body, list) or not all(isinstance(item, dict) for item in body):
        raise RestError(400, "Request body must be a JSON array of task configs")
    await herder.put_task_configs(name, [string_map(item, f"task {i}") for i, item in enumerate(body)])
    return web.Response(status=204)


async def _fence(request: web.Request) -> web.Response:
    # Kafka Connect's internal endpoint (KIP-618): a worker about to start a connector's exactly-once
    # source tasks asks the leader for a round of zombie fencing (connectd.cluster.zombies); signed
    # as _put_tasks' request.
    herder = request.app[HERDER]
    if not hasattr(herder, "fence_zombies"):
        raise RestError(404, "Zombie fencing is the leader's of a Connect cluster; this worker is standalone")
    _unverified(request, herder)
    await herder.fence_zombies(request.match_info["connector"])
    return web.Response(status=204)


def _unverified(request: web.Request, herder: Any) -> None:
    if not getattr(herder, "signs_requests", False) and FORWARDED_HEADER not in request.headers:
        log.warning("internal_request_unverified", path=request.path, remote=request.remote,
                    why="the group does not run connect.protocol=sessioned: requests between workers carry no "
                        "proof, as in Kafka Connect")


async def _task_status(request: web.Request) -> web.Response:
    herder = request.app[HERDER]
    name = request.match_info["connector"]
    task_id = int(request.match_info["task"])
    _config(herder, name)
    status = herder.status.task(name, task_id)
    if status is None:
        raise RestError(404, f"Task {task_id} of connector {name} not found")
    return web.json_response({"id": task_id, **status.as_rest()})


async def _restart(request: web.Request) -> web.Response:
    herder = request.app[HERDER]
    name = request.match_info["connector"]
    include_tasks = query_flag(request, "includeTasks")
    only_failed = query_flag(request, "onlyFailed")
    _config(herder, name)
    plan = await herder.restart(name, include_tasks=include_tasks, only_failed=only_failed)
    if not include_tasks and not only_failed:
        return web.Response(status=204)
    # As Kafka answers: the statuses when the restart was asked, RESTARTING for what it restarted.
    return web.json_response({
        "name": name,
        "connector": plan.connector.as_rest(),
        "tasks": [{"id": task_id, **status.as_rest()} for task_id, status in sorted(plan.tasks.items())],
        "type": _type(herder, _config(herder, name)),
    }, status=202)


async def _restart_task(request: web.Request) -> web.Response:
    await request.app[HERDER].restart_task(request.match_info["connector"], int(request.match_info["task"]))
    return web.Response(status=204)


async def _pause(request: web.Request) -> web.Response:
    await request.app[HERDER].pause(request.match_info["connector"])
    return web.Response(status=202)


async def _resume(request: web.Request) -> web.Response:
    await request.app[HERDER].resume(request.match_info["connector"])
    return web.Response(status=202)


async def _stop(request: web.Request) -> web.Response:
    await request.app[HERDER].stop_connector(request.match_info["connector"])
    return web.Response(status=204)


# --- active topics (KIP-558) ---


def _check_topic_tracking(request: web.Request, *, reset: bool = False) -> None:
    worker = request.app[HERDER].worker
    if not worker.get("topic.tracking.enable"):
        raise RestError(403, "Topic tracking is disabled.")
    if reset and not worker.get("topic.tracking.allow.reset"):
        raise RestError(403, "Topic tracking reset is disabled.")


async def _topics(request: web.Request) -> web.Response:
    _check_topic_tracking(request)
    name = request.match_info["connector"]
    topics = await request.app[HERDER].connector_active_topics(name)
    return web.json_response({name: {"topics": topics}})


async def _reset_topics(request: web.Request) -> web.Response:
    _check_topic_tracking(request, reset=True)
    await request.app[HERDER].reset_active_topics(request.match_info["connector"])
    return web.Response(status=202)


# --- offsets (KIP-875) ---


def _offsets_failed(exc: ConnectorError) -> RestError:
    # Kafka answers a failure to read or write offsets with 500 and what went wrong.
    return RestError(500, str(exc))


def _offsets_answer(confirmed: bool, done: str) -> web.Response:
    if confirmed:
        message = f"The offsets for this connector have been {done} successfully"
    else:
        message = (f"The Connect framework-managed offsets for this connector have been {done} successfully. "
                   "However, if this connector manages offsets externally, they will need to be manually "
                   f"{done} in the system that the connector uses.")
    return web.json_response({"message": message})


def _offset_entries(body: Any) -> list[tuple[Any, Any]]:
    """``{"offsets": [{"partition", "offset"}, …]}`` as ``(partition, offset)`` pairs; 400 naming what is wrong."""
    if not isinstance(body, dict):
        raise RestError(400, f"Request body must be a JSON object with an offsets array, not {_json_type(body)}")
    for key in body:
        if key != "offsets":
            raise RestError(400, f"Unrecognized field {key!r} in the request body; expected offsets")
    offsets = body.get("offsets")
    if offsets is None or offsets == []:
        raise RestError(400, "Partitions / offsets need to be provided for an alter offsets request")
    if not isinstance(offsets, list):
        raise RestError(400, f"offsets must be a JSON array of partition and offset objects, not {_json_type(offsets)}")
    entries = []
    for index, entry in enumerate(offsets):
        if not isinstance(entry, dict):
            raise RestError(400, f"offsets[{index}] must be a JSON object with partition and offset, "
                                 f"not {_json_type(entry)}")
        for key in entry:
            if key not in ("partition", "offset"):
                raise RestError(400, f"offsets[{index}]: unrecognized field {key!r}; expected partition and offset")
        entries.append((entry.get("partition"), entry.get("offset")))
    return entries


@contextlib.contextmanager
def _offsets_errors() -> Iterator[None]:
    """A connector's offsets failing to be read or written is a 500 saying so; 400s, 404s and a
    rebalance's 409 pass."""
    try:
        yield
    except (NotFoundError, BadRequestError, RebalanceInProgressError):
        raise
    except ConnectorError as exc:
        raise _offsets_failed(exc) from None


async def _offsets(request: web.Request) -> web.Response:
    with _offsets_errors():
        pairs = await request.app[HERDER].connector_offsets(request.match_info["connector"])
    return web.json_response({"offsets": [{"partition": partition, "offset": offset} for partition, offset in pairs]})


async def _alter_offsets(request: web.Request) -> web.Response:
    entries = _offset_entries(await read_json(request))
    with _offsets_errors():
        confirmed = await request.app[HERDER].alter_offsets(request.match_info["connector"], entries)
    return _offsets_answer(confirmed, "altered")


async def _reset_offsets(request: web.Request) -> web.Response:
    with _offsets_errors():
        confirmed = await request.app[HERDER].reset_offsets(request.match_info["connector"])
    return _offsets_answer(confirmed, "reset")
