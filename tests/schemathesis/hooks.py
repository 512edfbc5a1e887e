"""schemathesis hooks for scripts/schemathesis.sh (loaded with SCHEMATHESIS_HOOKS=hooks).

Some rules of the API hold over stored state or across fields, so no schema can say them, and a
schema-valid value drawn at random breaks them: a push URL's destination must be one the guard
allows (else a 403), a
task holds at most 5 push configs, a message answers a task only while it waits for input, a
contextId with a taskId must be that task's, only an open task can be canceled. Rather
than excusing every 400 of those operations (which would hide any other refusal), `before_call`
makes the schema-valid (positive) cases keep those rules with real values: cursors issued by the
gateway for the very query of the case (any cursor of the document's shape is taken; an issued
one reaches a real next page), a public IP literal for push URLs, the ids setup.py made,
a task opened for each CancelTask. schemathesis revalidates a case a hook changed, so a negative
case stays negative and a positive one positive.

It also spreads the task routes over the tasks setup.py made, so each method reaches its logic:
GET and POST `a2a/tasks/{task}` alternate between GetTask/CancelTask and SubscribeToTask on a task
waiting for input (its stream ends at once), the REST event stream follows an open task now and
then (bounded by FORGEBENCH_STREAM_MAX_SECONDS), and each JSON-RPC method is pointed at a task it
can act on.

The JSON-RPC binding answers every protocol error in a 200 (A2A 1.0), so the built-in check that
bad requests are refused cannot read its answers: `jsonrpc_answers_as_the_schema_says` does, from
the JSON-RPC body.
"""

import collections
import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request

import schemathesis
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import negative_data_rejection

ENV = os.environ
BASE = ENV["ST_BASE"].rstrip("/")
# A public address literal: vetted without DNS, and nothing is ever delivered in this run.
PUBLIC_URL = "https://93.184.215.14/forgebench-hook"
AGENT_KEYS = (ENV["ST_CALLER_KEY"], ENV["ST_CALLEE_KEY"])
# Cases per operation so far in this run, to alternate targets deterministically.
SEEN = collections.Counter()
# Streams of a task nobody finishes last the stream's whole bound (10 s here): a few per run.
LONG_STREAMS_PER_RUN = 2
LONG_STREAMS = collections.Counter()
# Sends so far (see `hurry`).
SENDS = collections.Counter()

# The cursor parameter of each paged operation, the field of its answer that carries the next
# one, and the size parameter that makes a page of one (so the next cursor exists).
CURSORS = {
    "ListAudit": ("cursor", "next_cursor", "limit"),
    "ListAgentCards": ("cursor", "next_cursor", "limit"),
    "SearchTasks": ("cursor", "next_cursor", "limit"),
    "A2aListTasks": ("pageToken", "nextPageToken", "pageSize"),
}
# JSON-RPC errors that say the request itself is malformed: parse error, invalid request, method
# not found, invalid params.
MALFORMED = {-32700, -32600, -32601, -32602}


def operation_id(case):
    return case.operation.definition.raw.get("operationId")


def is_positive(case):
    meta = case.meta
    return meta is None or meta.generation.mode == GenerationMode.POSITIVE


def request(method, path, query=None, body=None):
    """A call of the run's key, for the ids and cursors a case needs."""
    if query:
        # As schemathesis sends them: booleans as `true`/`false`, lists repeated.
        query = {key: (str(value).lower() if isinstance(value, bool) else value)
                 for key, value in query.items() if value is not None}
    url = BASE + path + ("?" + urllib.parse.urlencode(query, doseq=True) if query else "")
    data = None if body is None else json.dumps(body).encode()
    call = urllib.request.Request(url, data=data, method=method)
    call.add_header("Authorization", f"Bearer {ENV['ST_KEY']}")
    call.add_header("A2A-Version", "1.0")
    if data is not None:
        call.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(call, timeout=10) as response:
            text = response.read()
    except (urllib.error.URLError, TimeoutError):
        return None
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def issued_cursor(case, name, field, size):
    """A cursor the gateway issues for the case's own query, or None when that query has no
    second page."""
    query = {key: value for key, value in (case.query or {}).items() if key != name}
    query[size] = 1
    page = request("GET", case.formatted_path, query)
    if isinstance(page, dict) and isinstance(page.get(field), str) and page[field]:
        return page[field]
    return None


def take_cursor(case):
    name, field, size = CURSORS[operation_id(case)]
    if not case.query or name not in case.query:
        return
    cursor = issued_cursor(case, name, field, size)
    if cursor is None:
        del case.query[name]
    else:
        case.query[name] = cursor


def long_stream_allowed(kind):
    """Whether one more stream that lasts its whole bound fits this run."""
    if LONG_STREAMS[kind] >= LONG_STREAMS_PER_RUN:
        return False
    LONG_STREAMS[kind] += 1
    return True


def hurry(params):
    """Three sends in four answer at once (`returnImmediately`): nothing answers these tasks, so
    a blocking send waits out the whole wait bound (1 s here), and thousands of them would make
    the run long. The fourth still blocks."""
    SENDS["count"] += 1
    if SENDS["count"] % 4 == 0:
        return
    configuration = params.get("configuration")
    if not isinstance(configuration, dict):
        configuration = params["configuration"] = {}
    configuration["returnImmediately"] = True


def keep_message_rules(params, answers):
    """Makes a SendMessage request keep the rules over state and across fields. A message that
    names a taskId answers that task only while it waits for input: with `answers` false (the
    HTTP+JSON binding, where that refusal is a 400) the message opens a task instead; JSON-RPC
    keeps the taskId (its refusals are answers in a 200). A contextId with a taskId must be the
    task's own; without one, any name is a conversation, but each holds at most 100 tasks, so
    the cases share the conversation setup.py made rather than fill one name drawn again. A config sent with an answer
    lands on that task, which holds at most 5. A push URL must resolve to public addresses."""
    message = params.get("message")
    if not isinstance(message, dict):
        return
    hurry(params)
    if not answers:
        message.pop("taskId", None)
    configuration = params.get("configuration")
    push = configuration.get("taskPushNotificationConfig") \
        if isinstance(configuration, dict) else None
    if message.get("taskId"):
        message.pop("contextId", None)
        if isinstance(push, dict):
            configuration.pop("taskPushNotificationConfig")
    elif message.get("contextId"):
        message["contextId"] = ENV["ST_CONTEXT"]
    if isinstance(push, dict):
        push["url"] = PUBLIC_URL


def point_jsonrpc(case):
    """Points a JSON-RPC request's params at a task (and config) its method can act on."""
    body = case.body
    if not isinstance(body, dict) or not isinstance(body.get("params"), dict):
        return
    params, method = body["params"], body.get("method")
    if method == "GetTask":
        params["id"] = ENV["ST_TASK"]
    elif method == "CancelTask":
        # A finished task: TaskNotCancelable, so the claimed task stays open for the others.
        params["id"] = ENV["ST_DONE_TASK"]
    elif method == "SubscribeToTask":
        params["id"] = ENV["ST_ASKING_TASK"]
    elif method in ("SendMessage", "SendStreamingMessage"):
        if method == "SendStreamingMessage" and not long_stream_allowed("jsonrpc"):
            message = params.get("message")
            if isinstance(message, dict):
                # Answering a finished task is refused before a stream starts
                # (UnsupportedOperation): no stream that lasts its whole bound.
                message["taskId"] = ENV["ST_DONE_TASK"]
        keep_message_rules(params, answers=True)
    elif method == "ListTasks":
        if params.get("pageToken"):
            query = {key: value for key, value in params.items() if key != "pageToken"}
            query["pageSize"] = 1
            page = request("POST", case.formatted_path, body={
                "jsonrpc": "2.0", "id": 0, "method": "ListTasks", "params": query})
            token = ((page or {}).get("result") or {}).get("nextPageToken")
            if token:
                params["pageToken"] = token
            else:
                del params["pageToken"]
    elif method == "CreateTaskPushNotificationConfig":
        params["taskId"] = ENV["ST_TASK"]
        params["url"] = PUBLIC_URL
    elif method in ("GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs",
                    "DeleteTaskPushNotificationConfig"):
        params["taskId"] = ENV["ST_TASK"]
        if method == "GetTaskPushNotificationConfig":
            params["id"] = ENV["ST_PUSH_CONFIG"]
        elif method == "DeleteTaskPushNotificationConfig":
            params["id"] = "fuzz-gone"


# A tenant policy that forbids nothing a run does. A schema-valid policy text is not Cedar, and a
# schema-valid name not a policy name: rules no schema can hold (docs/api.md, "Tenant policies").
FUZZ_POLICY = 'forbid(principal, action, resource) when { principal.name == "fuzz-nobody" };'


def keep_policy_rules(body):
    """Gives every policy of a schema-valid change a name of a policy's shape and a policy the
    schema validator takes."""
    policies = body.get("policies")
    if not isinstance(policies, dict):
        return
    kept = {}
    for index, (name, change) in enumerate(policies.items()):
        slug = re.sub(r"[^a-z0-9_-]", "", str(name).lower())[:64]
        if not slug or not slug[0].isalnum():
            slug = f"fuzz-{index}"
        if isinstance(change, dict):
            change["policy"] = FUZZ_POLICY
        kept[slug] = change
    body["policies"] = kept


@schemathesis.hook
def before_call(context, case, kwargs):
    op = operation_id(case)
    SEEN[op] += 1
    turn = SEEN[op]
    positive = is_positive(case)
    path = case.path_parameters
    if op == "SearchTasks" and positive and ENV["ST_KEY"] not in AGENT_KEYS:
        # A person's key names whose tasks it searches (an agent's key searches its own): a rule
        # over the key, which no schema of the query can hold.
        case.query = case.query or {}
        case.query.setdefault("agent", ENV["ST_CALLEE"])
    if op in CURSORS and positive:
        take_cursor(case)
    elif op == "A2aGetTask" and turn % 2 == 0:
        path["task"] = f"{ENV['ST_ASKING_TASK']}:subscribe"
    elif op == "A2aTaskAction" and turn % 2 == 0:
        path["task"] = f"{ENV['ST_ASKING_TASK']}:subscribe"
    elif op == "A2aTaskAction" and positive and ENV["ST_KEY"] == ENV["ST_CALLER_KEY"]:
        # CancelTask on a task opened for it, so it is cancelable (a finished one would be
        # TaskNotCancelable, a rule over the task's state).
        opened = request("POST", f"/v1/agents/{ENV['ST_CALLEE']}/tasks", body={
            "message": {"role": "user", "parts": [{"text": "cancel me"}]}})
        if isinstance(opened, dict) and opened.get("id"):
            path["task"] = f"{opened['id']}:cancel"
    elif op == "TaskEvents" and positive and case.method.upper() == "GET":
        SEEN["TaskEvents, schema-valid"] += 1
        if SEEN["TaskEvents, schema-valid"] % 3 == 2 and long_stream_allowed("rest"):
            path["task_id"] = ENV["ST_OPEN_TASK"]
    elif op in ("SetEndpoint", "A2aCreatePushConfig") and positive and isinstance(case.body, dict):
        case.body["url"] = PUBLIC_URL
        if op == "A2aCreatePushConfig" and case.body.get("taskId"):
            case.body["taskId"] = path.get("task", ENV["ST_TASK"])
    elif op in ("A2aSendMessage", "A2aStreamMessage") and positive and isinstance(case.body, dict):
        keep_message_rules(case.body, answers=False)
    elif op == "A2aJsonRpc" and positive:
        point_jsonrpc(case)
    elif op == "UpdateTenantPolicies" and positive and isinstance(case.body, dict):
        keep_policy_rules(case.body)


@schemathesis.hook
def after_call(context, case, response):
    """A config made in a case is deleted at once, so the task never holds its 5 and refuses the
    next; the policies a case saved are removed at once (a tenant holds 32); a tenant whose word
    search a case turned off has it on again at once, so later
    searches with `q` are not refused for the tenant's state (a rule no schema of the query can
    hold: docs/api.md, "Tenant settings")."""
    op = operation_id(case)
    if response.status_code == 200 and op == "UpdateTenantSettings":
        request("PATCH", "/v1/tenant/settings", body={"word_search": True})
        return
    if response.status_code == 200 and op == "UpdateTenantPolicies":
        # Removed at once, so the tenant never holds its 32 and refuses the next case's new ones.
        saved = request("GET", "/v1/tenant/policies")
        names = [p["name"] for p in saved.get("items", [])] if isinstance(saved, dict) else []
        if names:
            request("PATCH", "/v1/tenant/policies",
                    body={"policies": {name: None for name in names}})
        return
    if response.status_code != 200 or op not in ("A2aCreatePushConfig", "A2aJsonRpc"):
        return
    try:
        answer = json.loads(response.content)
    except ValueError:
        return
    if op == "A2aJsonRpc":
        if not isinstance(case.body, dict) or \
                case.body.get("method") != "CreateTaskPushNotificationConfig":
            return
        answer = answer.get("result") if isinstance(answer, dict) else None
    if isinstance(answer, dict) and answer.get("id") and answer.get("taskId"):
        config = urllib.parse.quote(answer["id"], safe="")
        request("DELETE", f"/v1/agents/{case.path_parameters['agent']}/a2a/tasks/"
                          f"{answer['taskId']}/pushNotificationConfigs/{config}")


@schemathesis.check
def jsonrpc_answers_as_the_schema_says(ctx, response, case):
    """On the JSON-RPC binding, where every protocol error is a 200: a schema-violating request
    is answered with an error object (or a refusal status), never a result or a stream; a
    schema-valid one is never answered as malformed (parse error, invalid request, method not
    found, invalid params). Errors of state (TaskNotFound, UnsupportedOperation, ...) are answers
    like any other."""
    if operation_id(case) != "A2aJsonRpc" or response.status_code != 200:
        return None
    content_type = response.headers.get("content-type", [""])
    content_type = content_type[0] if isinstance(content_type, list) else content_type
    positive = is_positive(case)
    answer = None
    if "text/event-stream" not in content_type:
        try:
            answer = json.loads(response.content)
        except ValueError:
            return None
        if not isinstance(answer, dict):
            return None
    error = None if answer is None else answer.get("error")
    if not positive and error is None:
        # Answered with a result or a stream: the built-in check judges it as it would a 2xx
        # (it knows the negative cases that serialize to valid requests).
        return negative_data_rejection(ctx, response, case)
    if positive and isinstance(error, dict) and error.get("code") in MALFORMED:
        raise AssertionError(
            f"a schema-valid JSON-RPC request was refused as malformed: {error}")
    return None
