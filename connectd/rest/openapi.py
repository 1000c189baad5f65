"""``GET /openapi.json``: an OpenAPI 3.1 description of the whole REST API.

Built in code, next to the handlers it describes: Kafka Connect's request
and response shapes, and every status each route can answer. Errors share
one schema, ``{"error_code": <status>, "message": "…"}``. A test checks
that the document and the application's routes list the same methods and
paths, and the fuzz test (schemathesis) that the answers match it.
"""

from __future__ import annotations

import copy
from typing import Any

from aiohttp import web

from connectd import __version__
from connectd.rest._keys import INFO

__all__ = ["OPENAPI_VERSION", "add_routes", "document"]

OPENAPI_VERSION = "3.1.0"

JSON = "application/json"


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/openapi.json", _serve)


async def _serve(request: web.Request) -> web.Response:
    return web.json_response(document(request.app[INFO]["version"]))


def document(version: str | None = None) -> dict[str, Any]:
    """The OpenAPI document, a new copy each call.

    :param version: shown as ``info.version``; connectd's own version by default.
    """
    if version is None:
        version = __version__
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "connectd REST API",
            "version": version,
            "description": "Kafka Connect's REST API, as a connectd worker answers it. Every error is "
                           '`{"error_code": <HTTP status>, "message": "…"}`. Config values are shown as '
                           "stored: `${provider:path:key}` placeholders are never resolved in an answer. "
                           "With Kafka's BasicAuthSecurityRestExtension in `rest.extension.classes`, every "
                           "route but `GET /health` needs HTTP Basic credentials.",
            "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
        },
        "tags": [{"name": name, "description": text} for name, text in _TAGS],
        # Optional: only a worker with Basic authentication turned on asks for credentials.
        "security": [{}, {"basicAuth": []}],
        "paths": copy.deepcopy(_PATHS),
        "components": copy.deepcopy(_COMPONENTS),
    }


_TAGS = [
    ("worker", "the worker itself"),
    ("connectors", "create, read, reconfigure, pause, resume, stop, restart and delete connectors"),
    ("offsets", "a connector's committed offsets, read and changed while it is STOPPED"),
    ("topics", "the topics a connector has used"),
    ("plugins", "installed connector plugins, their settings, validating a config"),
    ("loggers", "log levels, read and changed at run time"),
    ("capacity", "the cluster's capacity policy (MSK Connect's JSON) and the leader's decisions"),
]


# --- building blocks ---


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], example: Any = None) -> dict[str, Any]:
    media: dict[str, Any] = {"schema": schema}
    if example is not None:
        media["example"] = example
    return {JSON: media}


def _answer(description: str, schema: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    answer: dict[str, Any] = {"description": description}
    if schema is not None:
        answer["content"] = _json(schema)
    answer.update(extra)
    return answer


def _errors(*statuses: int, public: bool = False) -> dict[str, Any]:
    """The error answers *statuses*, plus 500 and, unless *public*, 401 (basic auth on) every route can give."""
    always = {500} if public else {401, 500}
    return {str(status): {"$ref": f"#/components/responses/{_ERROR_RESPONSES[status][0]}"}
            for status in sorted({*statuses, *always})}


_ERROR_RESPONSES = {
    400: ("BadRequest", ("the body is not JSON, a field is missing or of the wrong type, the config is invalid "
                         "(the message lists every problem, one per line), or a query parameter is wrong")),
    401: ("Unauthorized", "basic authentication is on and the request has no valid credentials"),
    403: ("Forbidden", "the worker's configuration forbids the operation"),
    404: ("NotFound", "no such connector, task, plugin or logger; or, setting a log level, no such level (as Kafka)"),
    409: ("Conflict", "the connector already exists, or the cluster is rebalancing (after rest.rebalance.wait.ms) "
                      "or has not assigned the task yet"),
    500: ("InternalServerError", "an unexpected failure; the worker's log has the trace, the answer never does"),
    503: ("ServiceUnavailable", "a request between workers that this worker cannot verify yet: it has not read "
                                "the cluster's session key"),
}


def _operation(operation_id: str, tag: str, summary: str, responses: dict[str, Any], *,
               parameters: list[dict[str, Any]] | None = None, body: dict[str, Any] | None = None,
               description: str | None = None, public: bool = False,
               deprecated: bool = False) -> dict[str, Any]:
    operation: dict[str, Any] = {"operationId": operation_id, "tags": [tag], "summary": summary}
    if description:
        operation["description"] = description
    if deprecated:
        operation["deprecated"] = True
    if public:
        operation["security"] = []  # answered without credentials even when basic auth is on
    if parameters:
        operation["parameters"] = parameters
    if body is not None:
        operation["requestBody"] = body
    operation["responses"] = responses
    return operation


def _path_param(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/parameters/{name}"}


def _body(schema: dict[str, Any], example: Any, description: str) -> dict[str, Any]:
    return {"required": True, "description": description, "content": _json(schema, example)}


def _bool_query(name: str, description: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "description": description,
            "schema": {"type": "boolean", "default": False}}


_CONNECTOR = _path_param("connector")
_TASK = _path_param("task")
_NO_CONTENT = {"description": "done; no body"}
_EXAMPLE_CONFIG = {"connector.class": "FileStreamSource", "file": "/tmp/in.txt", "topic": "lines"}


# --- paths ---

_PATHS: dict[str, Any] = {
    "/": {"get": _operation(
        "serverInfo", "worker", "the worker's version and Kafka cluster",
        {"200": _answer("the worker", _ref("ServerInfo")), **_errors()})},
    "/health": {"get": _operation(
        "healthCheck", "worker", "whether the worker has started and can answer requests",
        {"200": _answer("healthy", _ref("HealthStatus")),
         "503": _answer("still starting", _ref("HealthStatus")),
         "500": _answer("unhealthy", {"anyOf": [_ref("HealthStatus"), _ref("Error")]})},
        public=True)},
    "/metrics": {"get": _operation(
        "metrics", "worker", "this worker's Prometheus metrics (docs/metrics.md)",
        {"200": {"description": "the Prometheus text exposition format",
                 "content": {"text/plain": {"schema": {"type": "string"}}}}, **_errors(404)})},
    "/openapi.json": {"get": _operation(
        "openApi", "worker", "this document",
        {"200": _answer("the OpenAPI document", {"type": "object"}), **_errors()})},
    "/connectors": {
        "get": _operation(
            "listConnectors", "connectors", "the connectors' names, or each one's status and info",
            {"200": _answer("names, or with `expand` a map name → `{status, info}`",
                            {"oneOf": [{"type": "array", "items": {"type": "string"}},
                                       {"type": "object", "additionalProperties": _ref("ConnectorExpanded")}]}),
             **_errors()},
            parameters=[{"name": "expand", "in": "query", "required": False, "style": "form", "explode": True,
                         "description": "`status` and/or `info` (repeat the parameter for both)",
                         "schema": {"type": "array", "items": {"type": "string", "enum": ["status", "info"]}}}]),
        "post": _operation(
            "createConnector", "connectors", "create a connector",
            {"201": _answer("created", _ref("ConnectorInfo"), headers={"Location": {
                "description": "the connector's URL", "schema": {"type": "string"}}}),
             **_errors(400, 409)},
            body=_body(_ref("CreateConnectorRequest"), {"name": "file-source", "config": _EXAMPLE_CONFIG},
                       "the connector's name, config and (optionally) the state it starts in")),
    },
    "/connectors/{connector}": {
        "get": _operation("getConnector", "connectors", "the connector's config and tasks",
                          {"200": _answer("the connector", _ref("ConnectorInfo")), **_errors(404)},
                          parameters=[_CONNECTOR]),
        "delete": _operation("deleteConnector", "connectors", "stop the connector's tasks and forget it",
                             {"204": _NO_CONTENT, **_errors(404, 409)}, parameters=[_CONNECTOR]),
    },
    "/connectors/{connector}/config": {
        "get": _operation("getConnectorConfig", "connectors", "the connector's config as written",
                          {"200": _answer("the config", _ref("ConnectorConfig")), **_errors(404)},
                          parameters=[_CONNECTOR]),
        "put": _operation(
            "putConnectorConfig", "connectors", "create the connector, or replace its config",
            {"200": _answer("replaced", _ref("ConnectorInfo")),
             "201": _answer("created", _ref("ConnectorInfo"), headers={"Location": {
                 "description": "the connector's URL", "schema": {"type": "string"}}}),
             **_errors(400, 409)},
            parameters=[_CONNECTOR],
            body=_body(_ref("ConnectorConfig"), _EXAMPLE_CONFIG,
                       "the whole config; a `name` in it must be the path's")),
        "patch": _operation(
            "patchConnectorConfig", "connectors", "merge keys into the connector's config",
            {"200": _answer("the connector with its new config", _ref("ConnectorInfo")), **_errors(400, 404, 409)},
            parameters=[_CONNECTOR],
            body=_body(_ref("ConnectorConfigPatch"), {"batch.size": "10", "transforms": None},
                       "keys to set; `null` removes a key")),
    },
    "/connectors/{connector}/status": {"get": _operation(
        "getConnectorStatus", "connectors", "the state of the connector and of each task",
        {"200": _answer("the status", _ref("ConnectorStatus")), **_errors(404)}, parameters=[_CONNECTOR])},
    "/connectors/{connector}/restart": {"post": _operation(
        "restartConnector", "connectors", "restart the connector and, optionally, its tasks",
        {"202": _answer("restarting; the status after the restart was started", _ref("ConnectorStatus")),
         "204": _answer("the connector alone restarted (both parameters false)"),
         **_errors(400, 404, 409)},
        parameters=[_CONNECTOR,
                    _bool_query("includeTasks", "restart the tasks too"),
                    _bool_query("onlyFailed", "restart only what is FAILED")])},
    "/connectors/{connector}/pause": {"put": _operation(
        "pauseConnector", "connectors", "PAUSED: tasks stay up but read nothing new",
        {"202": _answer("pausing"), **_errors(404, 409)}, parameters=[_CONNECTOR])},
    "/connectors/{connector}/resume": {"put": _operation(
        "resumeConnector", "connectors", "back to RUNNING from PAUSED or STOPPED",
        {"202": _answer("resuming"), **_errors(404, 409)}, parameters=[_CONNECTOR])},
    "/connectors/{connector}/stop": {"put": _operation(
        "stopConnector", "connectors", "STOPPED: every task shut down, the config kept, offsets editable",
        {"204": _NO_CONTENT, **_errors(404, 409)}, parameters=[_CONNECTOR])},
    "/connectors/{connector}/tasks": {
        "get": _operation(
            "getTaskConfigs", "connectors", "the configs the connector gave its tasks",
            {"200": _answer("one entry per task", {"type": "array", "items": _ref("TaskInfo")}), **_errors(404)},
            parameters=[_CONNECTOR]),
        "post": _operation(
            "putTaskConfigs", "connectors", "internal: a worker gives the cluster's leader new task configs",
            {"204": _NO_CONTENT, **_errors(400, 403, 404, 409, 503)}, parameters=[_CONNECTOR],
            body=_body({"type": "array", "items": {"type": "object", "additionalProperties": {"type": "string"}}},
                       [{"file": "/tmp/in.txt", "topic": "lines"}], "the task configs, one object per task"),
            description="Another worker of a distributed cluster calls it. While the group runs "
                        "connect.protocol=sessioned the request carries Kafka Connect's signature made with the "
                        "cluster's session key (X-Connect-Authorization: the HMAC of the body, and "
                        "X-Connect-Request-Signature-Algorithm), as a Kafka Connect worker sends it: 400 without "
                        "one, 403 for a wrong one, 503 before this worker has the key. Under compatible or eager "
                        "it is unsigned, as Kafka Connect's workers send it, and taken (logged as "
                        "internal_request_unverified). A standalone worker answers 404."),
    },
    "/connectors/{connector}/fence": {"put": _operation(
        "fenceZombies", "connectors", "internal: the leader fences a source connector's zombie tasks",
        {"204": _NO_CONTENT, **_errors(400, 403, 404, 409, 503)}, parameters=[_CONNECTOR],
        description="A worker about to start a connector's tasks with exactly.once.source.support=enabled calls "
                    "it on the leader (KIP-618, docs/exactly-once.md): the leader initialises the transactional "
                    "ids of the connector's previous generation of tasks, then writes a tasks-fencing record to "
                    "the config topic; 204 once done. Signed as POST /connectors/{connector}/tasks; a follower "
                    "forwards it to the leader; 400 for a sink connector, 409 when new task configs were "
                    "committed meanwhile. A standalone worker answers 404.")},
    "/connectors/{connector}/tasks-config": {"get": _operation(
        "getTasksConfig", "connectors", "deprecated: the task configs as a map `<connector>-<task>` → config",
        {"200": _answer("one entry per task", {"type": "object", "additionalProperties": {
            "type": "object", "additionalProperties": {"type": "string"}}}),
         **_errors(404)},
        parameters=[_CONNECTOR], deprecated=True,
        description="Kafka Connect 3.x's form of `GET /connectors/{connector}/tasks` (deprecated by KIP-970, "
                    "removed in Kafka 4.0); kept for the scripts that call it.")},
    "/connectors/{connector}/tasks/{task}/status": {"get": _operation(
        "getTaskStatus", "connectors", "the state of one task",
        {"200": _answer("the task's state", _ref("TaskState")), **_errors(404)}, parameters=[_CONNECTOR, _TASK])},
    "/connectors/{connector}/tasks/{task}/restart": {"post": _operation(
        "restartTask", "connectors", "restart one task",
        {"204": _NO_CONTENT, **_errors(404, 409)}, parameters=[_CONNECTOR, _TASK])},
    "/connectors/{connector}/offsets": {
        "get": _operation(
            "getOffsets", "offsets", "the connector's committed offsets",
            {"200": _answer("the offsets", _ref("ConnectorOffsets")), **_errors(404)}, parameters=[_CONNECTOR],
            description="Source connectors: the partitions and offsets their tasks wrote. Sink connectors: "
                        '`{"kafka_topic", "kafka_partition"}` → `{"kafka_offset"}` of their consumer group. '
                        "500 with what went wrong if they cannot be read."),
        "patch": _operation(
            "alterOffsets", "offsets", "set some of a STOPPED connector's offsets",
            {"200": _answer("changed", _ref("Message")), **_errors(400, 404, 409)}, parameters=[_CONNECTOR],
            body=_body(_ref("AlterOffsetsRequest"),
                       {"offsets": [{"partition": {"filename": "/tmp/in.txt"}, "offset": {"position": 42}}]},
                       "the partitions to change; an `offset` of `null` (or none) forgets that partition"),
            description="400 unless the connector is STOPPED; 500 with what went wrong if they cannot be written."),
        "delete": _operation(
            "resetOffsets", "offsets", "forget every offset of a STOPPED connector",
            {"200": _answer("reset", _ref("Message")), **_errors(400, 404, 409)}, parameters=[_CONNECTOR],
            description="400 unless the connector is STOPPED; 500 with what went wrong if they cannot be written."),
    },
    "/connectors/{connector}/topics": {"get": _operation(
        "getConnectorActiveTopics", "topics", "the topics the connector has used since it was created or reset",
        {"200": _answer("a map with the connector's name as only key", _ref("ConnectorTopics")),
         **_errors(403, 404)},
        parameters=[_CONNECTOR])},
    "/connectors/{connector}/topics/reset": {"put": _operation(
        "resetConnectorActiveTopics", "topics", "empty the connector's set of active topics",
        {"202": _answer("reset"), **_errors(403, 404)}, parameters=[_CONNECTOR])},
    "/connector-plugins": {"get": _operation(
        "listConnectorPlugins", "plugins", "the installed plugins",
        {"200": _answer("one entry per plugin", {"type": "array", "items": _ref("PluginInfo")}), **_errors(400)},
        parameters=[{"name": "connectorsOnly", "in": "query", "required": False,
                     "description": "`false` adds converters, transforms, predicates and config providers",
                     "schema": {"type": "boolean", "default": True}}])},
    "/connector-plugins/{plugin}/config": {"get": _operation(
        "getConnectorConfigDef", "plugins", "the plugin's own declared keys, then for a connector the framework's",
        {"200": _answer("one entry per key", {"type": "array", "items": _ref("ConfigKeyInfo")}), **_errors(404)},
        parameters=[_path_param("plugin")])},
    "/connector-plugins/{plugin}/config/validate": {"put": _operation(
        "validateConfigs", "plugins", "validate a connector config; 200 even when it has errors",
        {"200": _answer("every key with its value and errors", _ref("ConfigInfos")), **_errors(400, 404)},
        parameters=[_path_param("plugin")],
        body=_body(_ref("ConnectorConfig"), _EXAMPLE_CONFIG,
                   "the config; a `connector.class` in it must name the path's plugin"))},
    "/capacity": {
        "get": _operation("getCapacity", "capacity", "the capacity policy in force",
                          {"200": _answer("stored by PUT, else the workers' capacity.* keys", _ref("Capacity")),
                           **_errors(404)},
                          description="404 on a standalone worker, or when the cluster has no policy."),
        "put": _operation("putCapacity", "capacity", "store the cluster's capacity policy in the config topic",
                          {"200": _answer("the policy now in force", _ref("Capacity")), **_errors(400, 404, 409)},
                          body=_body(_ref("Capacity"), {"autoScaling": {
                              "minWorkerCount": 1, "maxWorkerCount": 4, "mcuCount": 1,
                              "scaleInPolicy": {"cpuUtilizationPercentage": 20},
                              "scaleOutPolicy": {"cpuUtilizationPercentage": 80}}},
                              "MSK Connect's capacity: provisionedCapacity or autoScaling")),
        "delete": _operation("deleteCapacity", "capacity", "remove the stored policy: the capacity.* keys apply",
                             {"204": _answer("removed"), **_errors(404, 409)}),
    },
    "/capacity/status": {"get": _operation(
        "getCapacityStatus", "capacity", "the policy, the desired and current worker counts, the last decision",
        {"200": _answer("as this worker read it from the status topic", _ref("CapacityStatus")), **_errors(404)})},
    "/admin/loggers": {"get": _operation(
        "listLoggers", "loggers", "every logger that has a level of its own",
        {"200": _answer("a map logger → level", {"type": "object", "additionalProperties": _ref("LoggerLevel")}),
         **_errors()})},
    "/admin/loggers/{logger}": {
        "get": _operation("getLogger", "loggers", "a logger's effective level",
                          {"200": _answer("the level", _ref("LoggerLevel")), **_errors(404)},
                          parameters=[_path_param("logger")]),
        "put": _operation(
            "setLevel", "loggers", "set a logger's level and its descendants'",
            {"200": _answer("the loggers changed", {"type": "array", "items": {"type": "string"}}),
             "204": _answer("scope=cluster in a cluster: every worker sets it when it reads it from the config topic"),
             **_errors(400, 404, 409)},
            parameters=[_path_param("logger"),
                        {"name": "scope", "in": "query", "required": False,
                         "description": "`worker` (the default) or `cluster` (every worker of a cluster; the same "
                                        "as `worker` on a standalone worker)",
                         "schema": {"type": "string", "enum": ["worker", "cluster"], "default": "worker"}}],
            body=_body(_ref("LoggerLevelRequest"), {"level": "DEBUG"}, "the new level")),
    },
}


# --- components ---

_STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
_NULLABLE_STRING = {"type": ["string", "null"]}
_STATES = ["UNASSIGNED", "RUNNING", "PAUSED", "STOPPED", "FAILED", "RESTARTING"]


def _object(properties: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties,
                              "required": list(properties) if required is None else required}
    schema.update(extra)
    return schema


_SCHEMAS: dict[str, Any] = {
    "Error": _object({"error_code": {"type": "integer", "description": "the HTTP status"},
                      "message": {"type": "string"}}, additionalProperties=False),
    "Message": _object({"message": {"type": "string"}}),
    "ServerInfo": _object({"version": {"type": "string"}, "commit": {"type": "string"},
                           "kafka_cluster_id": _NULLABLE_STRING}),
    "HealthStatus": _object({"status": {"type": "string", "enum": ["healthy", "starting", "unhealthy"]},
                             "message": {"type": "string"}}),
    "ConnectorConfig": {
        "type": "object",
        "description": "a connector config: every value a string (a number or boolean is taken as its "
                       "JSON text, as Kafka Connect takes it)",
        "properties": {"name": {"type": "string"},
                       "connector.class": {"type": "string",
                                           "description": "class name, alias or short class name of the plugin"},
                       "tasks.max": {"type": "string", "description": "a positive integer, as a string"}},
        "additionalProperties": {"type": "string"},
    },
    "ConnectorConfigPatch": {"type": "object", "description": "keys to set; `null` removes the key",
                             "additionalProperties": _NULLABLE_STRING},
    "CreateConnectorRequest": _object(
        {"name": {"type": "string", "minLength": 1}, "config": _ref("ConnectorConfig"),
         "initial_state": {"type": "string", "enum": ["RUNNING", "PAUSED", "STOPPED"], "default": "RUNNING"}},
        required=["name", "config"]),
    "ConnectorType": {"type": "string", "enum": ["source", "sink", "unknown"]},
    "ConnectorTaskId": _object({"connector": {"type": "string"}, "task": {"type": "integer", "minimum": 0}},
                               additionalProperties=False),
    "ConnectorInfo": _object({"name": {"type": "string"}, "config": _STRING_MAP,
                              "tasks": {"type": "array", "items": _ref("ConnectorTaskId")},
                              "type": _ref("ConnectorType")}, additionalProperties=False),
    "ConnectorState": _object({"state": {"type": "string", "enum": _STATES}, "worker_id": {"type": "string"},
                               "trace": {"type": "string", "description": "only when FAILED"}},
                              required=["state", "worker_id"], additionalProperties=False),
    "TaskState": _object({"id": {"type": "integer", "minimum": 0},
                          "state": {"type": "string", "enum": _STATES}, "worker_id": {"type": "string"},
                          "trace": {"type": "string", "description": "only when FAILED"}},
                         required=["id", "state", "worker_id"], additionalProperties=False),
    "ConnectorStatus": _object({"name": {"type": "string"}, "connector": _ref("ConnectorState"),
                                "tasks": {"type": "array", "items": _ref("TaskState")},
                                "type": _ref("ConnectorType")}, additionalProperties=False),
    "ConnectorExpanded": _object({"status": _ref("ConnectorStatus"), "info": _ref("ConnectorInfo")},
                                 required=[], additionalProperties=False),
    "TaskInfo": _object({"id": _ref("ConnectorTaskId"), "config": _STRING_MAP}, additionalProperties=False),
    "ConnectorOffset": _object(
        {"partition": {"type": "object", "description": 'a source partition, or `{"kafka_topic", '
                                                       '"kafka_partition"}` for a sink'},
         "offset": {"type": ["object", "null"], "description": 'a source offset, or `{"kafka_offset"}` for a sink; '
                                                             "`null` (or absent) in a request forgets the partition"}},
        required=["partition"], additionalProperties=False),
    "ConnectorOffsets": _object({"offsets": {"type": "array", "items": _object(
        {"partition": {"type": "object"}, "offset": {"type": ["object", "null"]}})}}, additionalProperties=False),
    "AlterOffsetsRequest": _object({"offsets": {"type": "array", "minItems": 1, "items": _ref("ConnectorOffset")}},
                                   additionalProperties=False),
    "ConnectorTopics": {"type": "object", "additionalProperties": _object(
        {"topics": {"type": "array", "items": {"type": "string"}}})},
    "PluginInfo": _object({"class": {"type": "string"},
                           "type": {"type": "string", "enum": ["source", "sink", "converter", "header_converter",
                                                               "transformation", "predicate", "config_provider"]},
                           "version": {"type": "string"}}),
    "ConfigKeyInfo": _object({
        "name": {"type": "string"},
        "type": {"type": "string", "enum": ["BOOLEAN", "STRING", "INT", "SHORT", "LONG", "DOUBLE", "LIST",
                                            "CLASS", "PASSWORD"]},
        "required": {"type": "boolean"},
        "default_value": _NULLABLE_STRING,
        "importance": {"type": "string", "enum": ["HIGH", "MEDIUM", "LOW"]},
        "documentation": _NULLABLE_STRING,
        "group": _NULLABLE_STRING,
        "width": {"type": "string", "enum": ["NONE", "SHORT", "MEDIUM", "LONG"]},
        "display_name": {"type": "string"},
        "dependents": {"type": "array", "items": {"type": "string"}},
        "order": {"type": "integer"},
    }),
    "ConfigValueInfo": _object({
        "name": {"type": "string"},
        "value": _NULLABLE_STRING,
        "recommended_values": {"type": "array", "items": {"type": "string"}},
        "errors": {"type": "array", "items": {"type": "string"}},
        "visible": {"type": "boolean"},
    }),
    "ConfigInfos": _object({
        "name": {"type": "string"},
        "error_count": {"type": "integer", "minimum": 0},
        "groups": {"type": "array", "items": {"type": "string"}},
        "configs": {"type": "array", "items": _object({"definition": _ref("ConfigKeyInfo"),
                                                       "value": _ref("ConfigValueInfo")})},
    }),
    "LoggerLevel": _object({"level": {"type": "string"},
                            "last_modified": {"type": ["integer", "null"],
                                              "description": "epoch milliseconds of the last change at run "
                                                             "time; null if set at start-up"}}),
    "LoggerLevelRequest": _object({"level": {"type": "string", "description": "TRACE, DEBUG, INFO, WARN, ERROR"}}),
    "Capacity": {"type": "object", "description": "MSK Connect's capacity: exactly one of the two",
                 "properties": {
                     "provisionedCapacity": _object({"workerCount": {"type": "integer", "minimum": 1},
                                                     "mcuCount": {"type": "integer", "enum": [1, 2, 4, 8]}},
                                                    required=["workerCount"]),
                     "autoScaling": _object({
                         "minWorkerCount": {"type": "integer", "minimum": 1},
                         "maxWorkerCount": {"type": "integer", "minimum": 1},
                         "mcuCount": {"type": "integer", "enum": [1, 2, 4, 8]},
                         "scaleInPolicy": _object({"cpuUtilizationPercentage": {"type": "integer"}}, required=[]),
                         "scaleOutPolicy": _object({"cpuUtilizationPercentage": {"type": "integer"}}, required=[]),
                         "evaluationWindowSeconds": {"type": "number", "description": "connectd's"},
                         "cooldownSeconds": {"type": "number", "description": "connectd's"}},
                         required=["minWorkerCount", "maxWorkerCount"])}},
    "CapacityStatus": _object({
        "policy": {"oneOf": [_ref("Capacity"), {"type": "null"}]},
        "source": {"type": ["string", "null"], "description": "config topic or worker config"},
        "provider": _NULLABLE_STRING,
        "desired": {"type": ["integer", "null"]},
        "current": {"type": ["integer", "null"]},
        "last_decision": {"type": ["object", "null"]},
        "workers": {"type": "object", "additionalProperties": {"type": "object"}}}),
}

_COMPONENTS: dict[str, Any] = {
    "schemas": _SCHEMAS,
    "responses": {name: {"description": text, "content": _json(_ref("Error")),
                         **({"headers": {"WWW-Authenticate": {"description": "the Basic challenge",
                                                               "schema": {"type": "string"}}}}
                            if name == "Unauthorized" else {})}
                  for name, text in _ERROR_RESPONSES.values()},
    "parameters": {
        "connector": {"name": "connector", "in": "path", "required": True, "description": "the connector's name",
                      "schema": {"type": "string", "minLength": 1}},
        "task": {"name": "task", "in": "path", "required": True, "description": "the task's number, from 0",
                 "schema": {"type": "integer", "minimum": 0}},
        "plugin": {"name": "plugin", "in": "path", "required": True,
                   "description": "dotted path, alias, Java class name or short class name",
                   "schema": {"type": "string", "minLength": 1}},
        "logger": {"name": "logger", "in": "path", "required": True,
                   "description": "a dotted logger name, or `root`", "schema": {"type": "string", "minLength": 1}},
    },
    "securitySchemes": {"basicAuth": {"type": "http", "scheme": "basic"}},
}
