"""`/openapi.json` is generated from the route table: it names every endpoint served, and any
change to it shows up here against a reviewed snapshot (regenerate: UPDATE_SNAPSHOT=1)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from app.gateway.http.endpoints import ENDPOINTS

SNAPSHOT = Path(__file__).with_name("openapi.snapshot.json")


def test_openapi_matches_the_reviewed_snapshot(gateway):
    served = gateway.client(None).get("/openapi.json")
    assert served.status_code == 200
    document = served.json()
    document["info"].pop("version")  # the package version moves on its own
    if os.environ.get("UPDATE_SNAPSHOT"):
        SNAPSHOT.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    assert document == json.loads(SNAPSHOT.read_text()), (
        "the OpenAPI document changed; review the diff and rerun with UPDATE_SNAPSHOT=1"
    )


def test_every_endpoint_of_the_table_is_served_and_described(gateway):
    paths = gateway.client(None).get("/openapi.json").json()["paths"]
    described = {(m.upper(), p) for p, ops in paths.items() for m in ops}
    table = {(e.method, e.path) for e in ENDPOINTS if e.in_schema}
    assert described == table
    assert len(table) == 31
    for endpoint in ENDPOINTS:
        path = endpoint.path.format(
            prompt_id="pr_x", run_id="r", device_id="dv_x", token="t", person_id="ps_x"
        )
        response = gateway.client(None).request(endpoint.method, path)
        # Unknown routes get 404 `not_found` with "no such route"; every declared one is routed.
        assert "no such route" not in response.text, (endpoint.method, path)
        if endpoint.role is not None:
            assert response.status_code == 401, (endpoint.method, path)


def test_no_docs_page_that_would_load_from_a_cdn(gateway):
    assert gateway.client(None).get("/docs").status_code == 404


def test_the_schema_is_not_looser_than_the_validators(gateway):
    """What the gateway refuses, the document refuses too (an empty `questions` was
    schema-valid): checked with a JSON Schema validator against the served document."""
    import jsonschema

    document = gateway.client(None).get("/openapi.json").json()
    # The request's schema, with the document beside it so its $refs resolve.
    root = {**document, **document["components"]["schemas"]["CreatePromptRequest"]}
    validator = jsonschema.Draft202012Validator(root)
    good = {
        "sessionKey": "s",
        "questions": [
            {
                "id": "q",
                "header": "H",
                "question": "Q?",
                "options": [{"label": "A"}, {"label": "B"}],
            }
        ],
    }
    assert validator.is_valid(good)
    refused = [
        {**good, "questions": []},
        {**good, "questions": good["questions"] * 4},
        {**good, "sessionKey": ""},
        {**good, "questions": [{**good["questions"][0], "id": "Not-Snake"}]},
        {**good, "questions": [{**good["questions"][0], "options": [{"label": "A"}]}]},
        {**good, "questions": [{**good["questions"][0], "options": [{"label": "x" * 65}] * 2}]},
    ]
    for body in refused:
        assert not validator.is_valid(body), body
        response = gateway.agent.post("/v1/prompts", json=body)
        assert response.status_code == 422, response.text


def test_how_a_request_is_served_is_said_and_held_when_the_table_is_built():
    """#41: `served=` is explicit on every row; a handler that cannot be served (a plain def:
    every handler is a coroutine, run eagerly when served at once, #42) or a serving path that
    does not exist is refused when the table is built, naming the endpoint."""
    import pytest

    from app.gateway.http.routing import Endpoint

    def plain(call):
        return {}

    async def waits(call):
        return {}

    assert {e.served for e in ENDPOINTS} == {"at_once", "mounted"}
    row = dict(method="GET", path="/x", role=None, summary="X", tag="meta")
    assert Endpoint(handler=waits, served="at_once", **row).at_once
    assert not Endpoint(handler=waits, served="asgi", **row).at_once
    for served in ("at_once", "asgi", "mounted"):  # every handler is a coroutine (#42)
        with pytest.raises(ValueError, match=r"GET /x: its handler is a plain def"):
            Endpoint(handler=plain, served=served, **row)
    with pytest.raises(ValueError, match=r"GET /x: served must be one of"):
        Endpoint(handler=waits, served="later", **row)
    with pytest.raises(TypeError):
        Endpoint("GET", "/x", plain, None, "X", "meta", served="at_once")  # keywords only
