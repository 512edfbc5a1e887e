"""Checks the examples of the API document (infra/openapi.yaml): every request and response body
of every operation has one, and every example in the document holds to its own schema.

A body has an example when its media type carries `example` or `examples`, or its schema does
(the schema itself, or the component schema it is a `$ref` to). Every example found is validated:
the media types' (`example`, and each of `examples`), and every `example` of a schema anywhere in
the document (component schemas, their properties, inline schemas, parameters, headers).

The document is OpenAPI 3.0, so its schemas are read as JSON Schema (Draft 2020-12) first:
`nullable: true` becomes a `null` type (or `anyOf` with `null` where the schema has no type),
the keywords JSON Schema does not have (`discriminator`, `example`, `readOnly`, `writeOnly`, ...)
are dropped, and `$ref`s resolve against the document. Formats are asserted (`uuid`,
`date-time`).

A `text/event-stream` body's schema describes one server-sent event, so its example is the
stream as the gateway sends it (a string): it is parsed into events (comment lines skipped),
each event is validated against the schema, and each event's `data` must be JSON. The task an
event carries is validated too: the REST stream's `task` event against `Task`, and an A2A
stream's `{"task": ...}` (or a JSON-RPC response carrying one) against `JsonRpcResponse` and
`A2aTask`.

Prints one line per body without an example and per invalid example, then the summary
`examples: N bodies, N with examples, 0 invalid`; exits 1 if anything is missing or invalid.

Usage: python tests/openapi-examples/check.py [infra/openapi.yaml]
(needs the packages of tests/openapi-examples/requirements.txt)
"""

import json
import pathlib
import sys

import yaml
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

DOCUMENT_URI = "urn:forgebench:openapi"
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")

# Keywords whose values are schemas, by how they hold them.
SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
SCHEMA_SINGLES = (
    "items", "additionalProperties", "not", "contains", "if", "then", "else", "propertyNames",
    "unevaluatedProperties", "unevaluatedItems",
)
# OpenAPI 3.0 keywords that are no JSON Schema assertion.
OPENAPI_ONLY = ("nullable", "discriminator", "example", "xml", "externalDocs", "readOnly",
                "writeOnly", "deprecated")


def json_schema(schema):
    """An OpenAPI 3.0 schema as JSON Schema 2020-12."""
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key in SCHEMA_MAPS:
            out[key] = {name: json_schema(sub) for name, sub in value.items()}
        elif key in SCHEMA_LISTS:
            out[key] = [json_schema(sub) for sub in value]
        elif key in SCHEMA_SINGLES:
            out[key] = json_schema(value)
        elif key == "$ref":
            out[key] = DOCUMENT_URI + value if value.startswith("#") else value
        elif key in OPENAPI_ONLY or key.startswith("x-"):
            continue
        else:
            out[key] = value
    if schema.get("nullable") is True:
        if "type" in out:
            types = out["type"] if isinstance(out["type"], list) else [out["type"]]
            out["type"] = types + ["null"]
            if "enum" in out and None not in out["enum"]:
                out["enum"] = out["enum"] + [None]
        elif any(key in out for key in ("$ref", "allOf", "anyOf", "oneOf")):
            out = {"anyOf": [out, {"type": "null"}]}
    return out


class Checker:
    def __init__(self, document):
        self.document = document
        schemas = document.get("components", {}).get("schemas", {})
        converted = {"components": {"schemas": {n: json_schema(s) for n, s in schemas.items()}}}
        resource = Resource(contents=converted, specification=DRAFT202012)
        self.registry = Registry().with_resource(DOCUMENT_URI, resource)
        self.failures = []

    def resolve(self, node):
        """`node`, its local `$ref` followed (to the end of a chain)."""
        seen = set()
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            reference = node["$ref"]
            if not reference.startswith("#/") or reference in seen:
                break
            seen.add(reference)
            target = self.document
            for part in reference[2:].split("/"):
                target = target[part.replace("~1", "/").replace("~0", "~")]
            node = target
        return node

    def errors(self, schema, value):
        """Why `value` does not hold to the OpenAPI `schema` (empty when it does)."""
        validator = Draft202012Validator(
            json_schema(schema), registry=self.registry,
            format_checker=Draft202012Validator.FORMAT_CHECKER)
        found = []
        for error in sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path)):
            where = "/" + "/".join(str(part) for part in error.absolute_path)
            found.append(f"at {where}: {error.message}")
        return found

    def fail(self, label, reasons):
        for reason in reasons:
            line = f"invalid: {label}: {reason}"
            self.failures.append(line)
            print(line[:600])

    # Bodies ---------------------------------------------------------------------------------

    def bodies(self):
        """(label, media type name, media type object) of every request and response body."""
        for path, item in self.document.get("paths", {}).items():
            for method in METHODS:
                operation = item.get(method)
                if not isinstance(operation, dict):
                    continue
                name = f"{method.upper()} {path}"
                body = self.resolve(operation.get("requestBody"))
                for media_type, media in (body or {}).get("content", {}).items():
                    yield f"{name} request {media_type}", media_type, media
                for status, response in operation.get("responses", {}).items():
                    response = self.resolve(response)
                    for media_type, media in (response or {}).get("content", {}).items():
                        yield f"{name} {status} {media_type}", media_type, media

    def media_examples(self, media):
        """The examples a media type object carries, by name."""
        found = {}
        if "example" in media:
            found["example"] = media["example"]
        for name, example in (media.get("examples") or {}).items():
            example = self.resolve(example)
            if isinstance(example, dict) and "value" in example:
                found[f"examples.{name}"] = example["value"]
        return found

    def schema_has_example(self, schema):
        seen = set()
        while isinstance(schema, dict):
            if "example" in schema:
                return True
            reference = schema.get("$ref")
            if not isinstance(reference, str) or reference in seen:
                return False
            seen.add(reference)
            schema = self.resolve({"$ref": reference})
        return False

    def check_body(self, label, media_type, media):
        examples = self.media_examples(media)
        schema = media.get("schema")
        has_example = bool(examples) or self.schema_has_example(schema)
        if not has_example:
            line = f"missing: {label} has no example"
            self.failures.append(line)
            print(line)
        if schema is None:
            return has_example
        for name, value in examples.items():
            where = f"{label} {name}"
            if media_type.split(";")[0].strip() == "text/event-stream":
                self.check_event_stream(where, schema, value)
            else:
                self.fail(where, self.errors(schema, value))
        return has_example

    # Server-sent events --------------------------------------------------------------------

    def check_event_stream(self, label, schema, value):
        if not isinstance(value, str):
            self.fail(label, ["an event stream's example is the stream as sent: a string"])
            return
        events = parse_event_stream(value)
        if not events:
            self.fail(label, ["the stream holds no event"])
        schema_name = None
        if isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
            schema_name = schema["$ref"].rsplit("/", 1)[-1]
        for number, event in enumerate(events, 1):
            where = f"{label} event {number}"
            self.fail(where, self.errors(schema, event))
            try:
                data = json.loads(event.get("data", ""))
            except ValueError as error:
                self.fail(where, [f"data is not JSON: {error}"])
                continue
            for reference, carried in carried_task(schema_name, event, data):
                self.fail(f"{where} data", self.errors({"$ref": reference}, carried))

    # Schemas --------------------------------------------------------------------------------

    def schema_examples(self):
        """(label, schema) of every schema object of the document that carries `example`."""
        def walk(schema, pointer):
            if not isinstance(schema, dict):
                return
            if "example" in schema:
                yield pointer, schema
            for key in SCHEMA_MAPS:
                for name, sub in (schema.get(key) or {}).items():
                    yield from walk(sub, f"{pointer}/{key}/{name}")
            for key in SCHEMA_LISTS:
                for index, sub in enumerate(schema.get(key) or []):
                    yield from walk(sub, f"{pointer}/{key}/{index}")
            for key in SCHEMA_SINGLES:
                if isinstance(schema.get(key), dict):
                    yield from walk(schema[key], f"{pointer}/{key}")

        def schemas_under(node, pointer):
            """Every schema position of the document: a `schema` member, or a component schema."""
            if isinstance(node, dict):
                for key, value in node.items():
                    at = f"{pointer}/{str(key).replace('~', '~0').replace('/', '~1')}"
                    if key == "schema" and isinstance(value, dict):
                        yield at, value
                    elif key not in ("example", "examples") and not str(key).startswith("x-"):
                        yield from schemas_under(value, at)
            elif isinstance(node, list):
                for index, value in enumerate(node):
                    yield from schemas_under(value, f"{pointer}/{index}")

        roots = list(schemas_under(self.document.get("paths", {}), "#/paths"))
        components = self.document.get("components", {})
        for name, schema in components.get("schemas", {}).items():
            roots.append((f"#/components/schemas/{name}", schema))
        for section in ("responses", "parameters", "requestBodies", "headers"):
            roots.extend(schemas_under(components.get(section, {}), f"#/components/{section}"))
        for pointer, schema in roots:
            yield from walk(schema, pointer)

    def parameter_examples(self):
        """(label, schema, value) of the examples of parameters and headers."""
        def under(node, pointer):
            if isinstance(node, dict):
                if isinstance(node.get("schema"), dict) and ("example" in node or "examples" in node):
                    for name, value in self.media_examples(node).items():
                        yield f"{pointer} {name}", node["schema"], value
                for key, value in node.items():
                    # Media types (`content`) are bodies, checked with them.
                    skip = ("example", "examples", "schema", "content")
                    if key not in skip and not str(key).startswith("x-"):
                        yield from under(value, f"{pointer}/{key}")
            elif isinstance(node, list):
                for index, value in enumerate(node):
                    yield from under(value, f"{pointer}/{index}")

        yield from under(self.document.get("paths", {}), "#/paths")
        for section in ("parameters", "headers"):
            components = self.document.get("components", {}).get(section, {})
            yield from under(components, f"#/components/{section}")

    def run(self):
        bodies = with_examples = 0
        for label, media_type, media in self.bodies():
            bodies += 1
            with_examples += bool(self.check_body(label, media_type, media))
        for pointer, schema in self.schema_examples():
            self.fail(f"{pointer} example", self.errors(schema, schema["example"]))
        for label, schema, value in self.parameter_examples():
            self.fail(label, self.errors(schema, value))
        invalid = sum(line.startswith("invalid:") for line in self.failures)
        print(f"examples: {bodies} bodies, {with_examples} with examples, {invalid} invalid")
        return 0 if not self.failures else 1


def parse_event_stream(text):
    """The events of a `text/event-stream` body, as `{event?, id?, data, retry?}`."""
    events, fields, data = [], {}, []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if line == "":
            if data:
                events.append({**fields, "data": "\n".join(data)})
            fields, data = {}, []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        elif name in ("event", "id"):
            fields[name] = value
        elif name == "retry" and value.isdigit():
            fields[name] = int(value)
    if data:
        events.append({**fields, "data": "\n".join(data)})
    return events


def carried_task(schema_name, event, data):
    """(schema reference, value) of the task an event's data carries, for the streams known."""
    if schema_name == "TaskEvent" and event.get("event") == "task":
        yield "#/components/schemas/Task", data
    if schema_name == "A2aStreamEvent" and isinstance(data, dict):
        if data.get("jsonrpc") == "2.0":
            yield "#/components/schemas/JsonRpcResponse", data
            data = data.get("result")
        if isinstance(data, dict) and "task" in data:
            yield "#/components/schemas/A2aTask", data["task"]


def main():
    default = pathlib.Path(__file__).resolve().parents[2] / "infra" / "openapi.yaml"
    path = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else default
    with open(path, encoding="utf-8") as file:
        document = yaml.safe_load(file)
    version = str(document.get("openapi", ""))
    if not version.startswith("3.0"):
        print(f"examples: {path} declares OpenAPI {version!r}; this checker reads 3.0 schemas")
        return 1
    return Checker(document).run()


if __name__ == "__main__":
    sys.exit(main())
