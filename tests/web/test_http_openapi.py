"""The OpenAPI document names every route with its method, its parameters and the schema of
its body, all made from the proto; /docs shows it in Swagger UI with files this server
serves itself (no CDN), which a headless Chromium renders."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import missing
from tests.web.httpworld import HttpWorld, serve
from tests.web.rest import Rest
from trainyard.web.docs import FILES, swagger_ui_files
from trainyard.web.routes import ROUTES, Reply
from trainyard.web.transcode import method_descriptor


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpWorld]:
    yield from serve("sqlite", tmp_path_factory, None)


@pytest.fixture(scope="module")
def document(world: HttpWorld) -> dict[str, Any]:
    reply = Rest(world.server.http_port).get("/openapi.json")
    assert reply.status == 200 and reply.headers["content-type"] == "application/json"
    data: dict[str, Any] = reply.json()
    return data


def _resolve(document: dict[str, Any], ref: str) -> dict[str, Any]:
    assert ref.startswith("#/components/schemas/"), ref
    schema: dict[str, Any] = document["components"]["schemas"][ref.rsplit("/", 1)[-1]]
    return schema


def test_every_route_is_in_the_document_with_its_method(document: dict[str, Any]) -> None:
    assert document["openapi"].startswith("3.")
    listed = {(path, method.upper()) for path, ops in document["paths"].items()
              for method in ops}
    api = {entry for entry in listed if entry[0].startswith("/api/v1/")}
    assert api == {(route.url, route.method) for route in ROUTES}
    for route in ROUTES:
        op = document["paths"][route.url][route.method.lower()]
        assert op["operationId"] and op["summary"] == route.summary
        assert {"400", "401", "403", "404", "409"} <= set(op["responses"])
        in_path = set(re.findall(r"\{(\w+)\}", route.path))
        named = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
        assert named == in_path, route


def test_request_bodies_reference_the_schemas_made_from_the_proto(
        document: dict[str, Any]) -> None:
    for route in ROUTES:
        op = document["paths"][route.url][route.method.lower()]
        message = method_descriptor(route.rpc).input_type
        if not route.takes_body:
            assert "requestBody" not in op, route
            queried = {p["name"] for p in op.get("parameters", []) if p["in"] == "query"}
            fields = (message.fields_by_name[route.within].message_type if route.within
                      else message).fields
            assert queried | set(re.findall(r"\{(\w+)\}", route.path)) >= \
                {f.name for f in fields}, route
            continue
        schema = op["requestBody"]["content"]["application/json"]["schema"]
        refs = [s["$ref"] for s in schema.get("anyOf", [schema]) if "$ref" in s]
        assert refs == [f"#/components/schemas/{message.name}"], route
        body = _resolve(document, refs[0])
        assert set(body["properties"]) == {f.name for f in message.fields}
        assert body["additionalProperties"] is False  # an unknown key is refused


def test_replies_reference_their_message_or_name_their_stream(
        document: dict[str, Any]) -> None:
    for route in ROUTES:
        content = document["paths"][route.url][route.method.lower()]["responses"]["200"][
            "content"]
        if route.reply is Reply.JSON:
            ref = content["application/json"]["schema"]["$ref"]
            output = method_descriptor(route.rpc).output_type
            assert ref == f"#/components/schemas/{output.name}Out"
            assert set(_resolve(document, ref)["properties"]) == \
                {f.name for f in output.fields}
        else:
            kind = "application/x-tar" if route.reply is Reply.TAR else "text/event-stream"
            assert list(content) == [kind], route


def test_a_waiting_jobs_predicted_start_is_in_the_replies_schemas(
        document: dict[str, Any]) -> None:
    for message in ("TrainingStatusOut", "JobSummaryOut"):
        field = _resolve(document, "#/components/schemas/" + message)["properties"][
            "predicted_start"]
        assert {"$ref": "#/components/schemas/PredictedStartOut"} in field["anyOf"], field
    schema = _resolve(document, "#/components/schemas/PredictedStartOut")
    assert set(schema["properties"]) == {"p50", "p90", "as_of", "cannot_start",
                                         "horizon_seconds"}
    times = [t.get("type") for t in schema["properties"]["p50"]["anyOf"]]
    assert "string" in times


def test_the_docs_page_loads_only_from_this_server(world: HttpWorld) -> None:
    if swagger_ui_files() is None:
        missing("swagger-ui-bundle-v2 (pip install swagger-ui-bundle-v2==5.31.0)")
    rest = Rest(world.server.http_port)
    page = rest.get("/docs")
    assert page.status == 200 and page.headers["content-type"].startswith("text/html")
    html = page.body.decode()
    assert "/openapi.json" in html and "SwaggerUIBundle" in html
    urls = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert urls and all(url.startswith("/docs/assets/") for url in urls), urls
    assert "http://" not in html and "https://" not in html
    for url in urls:
        asset = rest.get(url)
        assert asset.status == 200 and len(asset.body) > 100, url
        assert asset.headers["content-type"].split(";")[0] == FILES[url.rsplit("/", 1)[-1]]
    unknown = rest.get("/docs/assets/index.html")
    assert unknown.status == 404 and unknown.error["code"] == "NOT_FOUND"


def test_a_browser_renders_every_operation_of_the_docs(world: HttpWorld) -> None:
    if swagger_ui_files() is None:
        missing("swagger-ui-bundle-v2 (pip install swagger-ui-bundle-v2==5.31.0)")
    try:
        from selenium import webdriver
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait
    except ImportError:
        missing("selenium")
        return
    driver_path = shutil.which("chromedriver")
    if driver_path is None:
        missing("chromium-driver (apt-get install chromium chromium-driver)")
        return
    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    service = webdriver.ChromeService(executable_path=driver_path)
    browser = webdriver.Chrome(options=options, service=service)
    try:
        origin = f"http://127.0.0.1:{world.server.http_port}"
        browser.get(origin + "/docs")
        WebDriverWait(browser, 30).until(
            lambda b: len(b.find_elements(By.CSS_SELECTOR, ".opblock")) >= len(ROUTES))
        assert len(browser.find_elements(By.CSS_SELECTOR, ".opblock")) == len(ROUTES)
        loaded = browser.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)")
        assert loaded and all(url.startswith(origin + "/") for url in loaded), loaded
    finally:
        browser.quit()
