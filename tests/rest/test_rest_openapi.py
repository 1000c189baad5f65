"""``GET /openapi.json``: a valid OpenAPI document listing exactly the application's routes."""

from __future__ import annotations

import re

import pytest

from connectd.rest import create_app
from connectd.rest.openapi import document

schemathesis = pytest.importorskip("schemathesis")

_METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")


def _registered() -> set[tuple[str, str]]:
    app = create_app(object(), worker_id="w", kafka_cluster_id=None, version="1")
    routes = set()
    for route in app.router.routes():
        # add_get also answers HEAD; that is aiohttp's doing, not an operation of the API.
        if route.method == "HEAD":
            continue
        info = route.resource.get_info()
        template = info.get("formatter") or info.get("path")
        routes.add((route.method, re.sub(r"\{(\w+):[^}]*\}", r"{\1}", template)))
    return routes


def _documented(doc: dict) -> set[tuple[str, str]]:
    return {(method.upper(), path) for path, item in doc["paths"].items() for method in item if method in _METHODS}


def test_every_route_is_documented_and_every_documented_route_exists():
    registered, documented = _registered(), _documented(document())
    assert registered - documented == set(), "routes missing from connectd/rest/openapi.py"
    assert documented - registered == set(), "documented routes the application does not have"
    assert ("GET", "/connectors/{connector}/tasks/{task}/status") in registered  # `{task:\d+}` normalised


def test_document_is_valid_openapi():
    schema = schemathesis.openapi.from_dict(document())
    schema.validate()
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == len(_documented(document()))
    # The validator does refuse a broken document: the check above is not vacuous.
    broken = document()
    broken["paths"]["/"]["get"]["responses"] = "none"
    with pytest.raises(ValueError, match="none"):
        schemathesis.openapi.from_dict(broken).validate()


def _refs(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def test_every_reference_resolves_and_every_component_is_used():
    doc = document()
    refs = set(_refs(doc))
    for ref in refs:
        node = doc
        for part in ref.removeprefix("#/").split("/"):
            assert part in node, f"{ref} does not resolve"
            node = node[part]
    for kind in ("schemas", "responses", "parameters"):
        unused = {f"#/components/{kind}/{name}" for name in doc["components"][kind]} - refs
        assert unused == set(), f"unused components: {unused}"


_ERROR_RESPONSES = {"400": "BadRequest", "401": "Unauthorized", "403": "Forbidden", "404": "NotFound",
                    "409": "Conflict", "500": "InternalServerError", "503": "ServiceUnavailable"}


def test_every_operation_documents_its_errors_with_the_shared_schema():
    doc = document()
    for name in _ERROR_RESPONSES.values():
        shared = doc["components"]["responses"][name]["content"]["application/json"]["schema"]
        assert shared == {"$ref": "#/components/schemas/Error"}
    assert doc["components"]["schemas"]["Error"]["required"] == ["error_code", "message"]
    ids = []
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            ids.append(operation["operationId"])
            responses = operation["responses"]
            if path == "/health":  # answered without credentials (security.PUBLIC_PATHS)
                assert operation["security"] == [] and "401" not in responses
            else:
                assert {"401", "500"} <= set(responses), (method, path)
            for status, answer in responses.items():
                if int(status) >= 400 and path != "/health":  # health answers {status, message}
                    assert answer == {"$ref": f"#/components/responses/{_ERROR_RESPONSES[status]}"}, (method, path)
            if "{connector}" in path and not (method == "put" and path.endswith("/config")):
                assert "404" in responses, (method, path)  # an unknown connector
            if "requestBody" in operation:
                assert "400" in responses, (method, path)  # a body that is not JSON
    assert len(ids) == len(set(ids)), "operationIds must be unique"
    assert {"200", "503", "500"} <= set(doc["paths"]["/health"]["get"]["responses"])
    assert "WWW-Authenticate" in doc["components"]["responses"]["Unauthorized"]["headers"]


def test_public_paths_are_the_documented_ones():
    from connectd.rest.security import PUBLIC_PATHS

    doc = document()
    public = {path for path, item in doc["paths"].items() if item.get("get", {}).get("security") == []}
    assert public == set(PUBLIC_PATHS)


def test_served_document(rest):
    async def scenario(http, herder):
        async with http.get("/openapi.json") as r:
            assert r.status == 200 and r.content_type == "application/json"
            return await r.json()

    served = rest(scenario)
    assert served == document("9.9.9")
    assert served["openapi"].startswith("3.1") and served["info"]["version"] == "9.9.9"
    alter = served["paths"]["/connectors/{connector}/offsets"]["patch"]["requestBody"]["content"]["application/json"]
    assert alter["example"]["offsets"][0].keys() == {"partition", "offset"}
