"""Drives a governed agent through the gate with the official A2A Python SDK (a2a-sdk), as any
third-party A2A 1.0 client would: resolve the agent's card from the gate, verify its signature
with the SDK's own verifier, then over each binding send, read, list, cancel, answer a question
in place, create, read, list and delete a push notification config, ask for an unknown task,
call without a binding, stream a send to its end, and subscribe to an open task (and be
refused for a finished one).

The callee is served by pull through the gateway's REST API (plain HTTP, not the SDK): that side
is the gateway's own protocol, not A2A.

usage: a2a_client.py BASE_URL CALLEE_ID CALLER_KEY CALLEE_KEY STRANGER_KEY PUSH_CALLEE_ID
(the push callee answers every task with the artifact text "pushed")
"""

import asyncio
import json
import sys
import uuid

import httpx
import jwt
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.auth import AuthInterceptor, CredentialService
from a2a.client.errors import A2AClientError
from a2a.types import (
    AuthenticationInfo,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    TaskPushNotificationConfig,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    SubscribeToTaskRequest,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)
from a2a.utils.errors import (
    A2AError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2a.utils.signing import create_signature_verifier

BASE, CALLEE_ID, CALLER_KEY, CALLEE_KEY, STRANGER_KEY, PUSH_CALLEE_ID = sys.argv[1:7]


class Key(CredentialService):
    """The caller's agent key, for whichever scheme the card requires."""

    def __init__(self, key: str):
        self.key = key

    async def get_credentials(self, security_scheme_name, context):
        return self.key


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"FAILED: {what}")
    print(f"ok: {what}")


async def published_keys(http: httpx.AsyncClient) -> dict:
    reply = await http.get(
        f"{BASE}/v1/billing/export/pubkey",
        headers={"Authorization": f"Bearer {CALLER_KEY}"},
    )
    reply.raise_for_status()
    return {key["kid"]: key for key in reply.json()["keys"]}


async def resolve_card(http: httpx.AsyncClient, agent_id: str):
    keys = await published_keys(http)

    def key_provider(kid, jku):
        return jwt.PyJWK(keys[kid])

    resolver = A2ACardResolver(http, f"{BASE}/v1/agents/{agent_id}")
    return await resolver.get_agent_card(
        http_kwargs={"headers": {"Authorization": f"Bearer {CALLER_KEY}"}},
        signature_verifier=create_signature_verifier(key_provider, ["EdDSA"]),
    )


def client_for(card, binding: str, key: str, http: httpx.AsyncClient, streaming: bool = False):
    config = ClientConfig(
        httpx_client=http,
        supported_protocol_bindings=[binding],
        streaming=streaming,
    )
    return ClientFactory(config).create(card, interceptors=[AuthInterceptor(Key(key))])


def message(text: str, task_id: str | None = None) -> Message:
    sent = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text=text)])
    if task_id:
        sent.task_id = task_id
    return sent


async def send(client, sent: Message, immediately: bool = False):
    request = SendMessageRequest(message=sent)
    request.configuration.return_immediately = immediately
    async for response in client.send_message(request):
        return response.task
    raise SystemExit("FAILED: SendMessage answered nothing")


async def serve_one(http: httpx.AsyncClient, answer: dict) -> dict:
    """The pull callee: claims the next task over REST and answers it."""
    auth = {"Authorization": f"Bearer {CALLEE_KEY}"}
    claimed = await http.get(f"{BASE}/v1/agents/me/tasks/next?wait=20", headers=auth)
    check(claimed.status_code == 200, f"the callee claims the task ({claimed.status_code})")
    task = claimed.json()
    result = await http.post(
        f"{BASE}/v1/agents/me/tasks/{task['id']}/result", headers=auth, json=answer
    )
    detail = result.status_code if result.status_code == 200 else result.text
    check(result.status_code == 200, f"the callee answers ({detail})")
    return task


async def over(binding: str, card, http: httpx.AsyncClient) -> None:
    client = client_for(card, binding, CALLER_KEY, http)
    label = f"[{binding}]"

    # A blocking send that the pull callee answers while the client waits.
    done = {"state": "completed", "artifacts": [{"name": "label", "parts": [{"text": "utilities"}]}]}
    task, _ = await asyncio.gather(send(client, message("classify INV-1")), serve_one(http, done))
    check(task.status.state == TaskState.TASK_STATE_COMPLETED, f"{label} the send returns the answered task")
    check(task.artifacts[0].parts[0].text == "utilities", f"{label} with the callee's artifact")

    read = await client.get_task(GetTaskRequest(id=task.id))
    check(read.id == task.id and read.status.state == TaskState.TASK_STATE_COMPLETED, f"{label} GetTask reads it")
    listed = await client.list_tasks(ListTasksRequest(page_size=100))
    check(task.id in [listed_task.id for listed_task in listed.tasks], f"{label} ListTasks lists it")

    # Cancel another; canceling it again is not possible.
    other = await send(client, message("to cancel"), immediately=True)
    check(other.status.state == TaskState.TASK_STATE_SUBMITTED, f"{label} returnImmediately answers at once")
    canceled = await client.cancel_task(CancelTaskRequest(id=other.id))
    check(canceled.status.state == TaskState.TASK_STATE_CANCELED, f"{label} CancelTask cancels")
    try:
        await client.cancel_task(CancelTaskRequest(id=other.id))
        check(False, f"{label} a canceled task is not cancelable")
    except TaskNotCancelableError:
        check(True, f"{label} a canceled task is not cancelable")

    # A push notification config: created, read (never with its credentials), listed, deleted.
    created = await client.create_task_push_notification_config(TaskPushNotificationConfig(
        task_id=other.id, id="sdk-hook", url="http://127.0.0.1:9/hook", token="tok",
        authentication=AuthenticationInfo(scheme="Bearer", credentials="sdk-secret"),
    ))
    check(created.id == "sdk-hook" and created.task_id == other.id, f"{label} a push config is created")
    check(created.authentication.scheme == "Bearer" and not created.authentication.credentials,
          f"{label} its credentials are not echoed")
    read_config = await client.get_task_push_notification_config(
        GetTaskPushNotificationConfigRequest(task_id=other.id, id="sdk-hook"))
    check(read_config.url == "http://127.0.0.1:9/hook" and read_config.token == "tok",
          f"{label} GetTaskPushNotificationConfig reads it")
    configs = await client.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=other.id))
    check([config.id for config in configs.configs] == ["sdk-hook"], f"{label} ListTaskPushNotificationConfigs lists it")
    await client.delete_task_push_notification_config(
        DeleteTaskPushNotificationConfigRequest(task_id=other.id, id="sdk-hook"))
    configs = await client.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=other.id))
    check(len(configs.configs) == 0, f"{label} DeleteTaskPushNotificationConfig deletes it")

    # A question answered in place.
    question = {"state": "input_required", "message": {"role": "agent", "parts": [{"text": "which account?"}]}}
    asked, _ = await asyncio.gather(send(client, message("pay INV-2")), serve_one(http, question))
    check(asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, f"{label} the send stops at the question")
    finished = {"state": "completed", "message": {"role": "agent", "parts": [{"text": "paid"}]}}
    answered, served = await asyncio.gather(
        send(client, message("ACC-9", task_id=asked.id)), serve_one(http, finished)
    )
    check(served["id"] == asked.id, f"{label} the answered task is claimable again")
    check(answered.id == asked.id and answered.status.state == TaskState.TASK_STATE_COMPLETED,
          f"{label} the answer in place continues the same task to its end")

    # An unknown task.
    try:
        await client.get_task(GetTaskRequest(id=str(uuid.uuid4())))
        check(False, f"{label} an unknown task is TaskNotFound")
    except TaskNotFoundError:
        check(True, f"{label} an unknown task is TaskNotFound")

    # No binding: an error, promptly, not a hang.
    stranger = client_for(card, binding, STRANGER_KEY, http)
    try:
        await asyncio.wait_for(send(stranger, message("hello")), timeout=20)
        check(False, f"{label} a caller without a binding is refused")
    except (A2AClientError, A2AError) as error:
        check("403" in str(error) or "not permitted" in str(error).lower(),
              f"{label} a caller without a binding is refused ({type(error).__name__})")


async def serve_steps(http: httpx.AsyncClient, steps: list[dict]) -> None:
    """The pull callee: claims the next task, reports each progress step, then answers it."""
    auth = {"Authorization": f"Bearer {CALLEE_KEY}"}
    claimed = await http.get(f"{BASE}/v1/agents/me/tasks/next?wait=20", headers=auth)
    check(claimed.status_code == 200, f"the callee claims the task ({claimed.status_code})")
    task_id = claimed.json()["id"]
    for step in steps[:-1]:
        await asyncio.sleep(0.3)
        reported = await http.post(
            f"{BASE}/v1/agents/me/tasks/{task_id}/progress", headers=auth, json=step
        )
        check(reported.status_code == 200, f"the callee reports progress ({reported.status_code})")
    await asyncio.sleep(0.3)
    result = await http.post(f"{BASE}/v1/agents/me/tasks/{task_id}/result", headers=auth, json=steps[-1])
    check(result.status_code == 200, f"the callee answers ({result.status_code})")


def kinds(events) -> list[str]:
    return [event.WhichOneof("payload") for event in events]


async def collect(stream) -> list:
    return [event async for event in stream]


async def streaming(binding: str, card, http: httpx.AsyncClient) -> None:
    client = client_for(card, binding, CALLER_KEY, http, streaming=True)
    label = f"[{binding} stream]"
    steps = [
        {"message": {"role": "agent", "parts": [{"text": "reading"}]}},
        {"state": "completed", "artifacts": [{"name": "label", "parts": [{"text": "utilities"}]}]},
    ]
    request = SendMessageRequest(message=message("classify INV-4"))
    events, _ = await asyncio.gather(
        asyncio.wait_for(collect(client.send_message(request)), timeout=30),
        serve_steps(http, steps),
    )
    names = kinds(events)
    check(names[0] == "task", f"{label} the first event is the task ({names})")
    check(names[-1] == "status_update", f"{label} the last event is a status update ({names})")
    check("artifact_update" in names, f"{label} the artifact arrives as an update ({names})")
    last = events[-1].status_update
    check(last.status.state == TaskState.TASK_STATE_COMPLETED, f"{label} the stream ends completed")
    progress = [e.status_update.status.message.parts[0].text for e in events
                if e.WhichOneof("payload") == "status_update" and e.status_update.status.message.parts]
    check("reading" in progress, f"{label} the progress message arrives ({progress})")
    artifact = next(e.artifact_update for e in events if e.WhichOneof("payload") == "artifact_update")
    check(artifact.artifact.parts[0].text == "utilities", f"{label} with the callee's artifact")

    # Subscribe to a task already open, and follow it to its end.
    opened = await send(client_for(card, binding, CALLER_KEY, http), message("classify INV-5"), immediately=True)
    events, _ = await asyncio.gather(
        asyncio.wait_for(collect(client.subscribe(SubscribeToTaskRequest(id=opened.id))), timeout=30),
        serve_steps(http, [{"state": "completed", "message": {"role": "agent", "parts": [{"text": "done"}]}}]),
    )
    names = kinds(events)
    check(names[0] == "task" and events[0].task.id == opened.id, f"{label} a subscription starts with the task")
    check(events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED,
          f"{label} and follows it to its end ({names})")
    try:
        await collect(client.subscribe(SubscribeToTaskRequest(id=opened.id)))
        check(False, f"{label} subscribing to a finished task is UnsupportedOperation")
    except UnsupportedOperationError:
        check(True, f"{label} subscribing to a finished task is UnsupportedOperation")


async def push_callee(http: httpx.AsyncClient) -> None:
    card = await resolve_card(http, PUSH_CALLEE_ID)
    client = client_for(card, "JSONRPC", CALLER_KEY, http)
    task = await send(client, message("classify INV-3"))
    check(task.status.state == TaskState.TASK_STATE_COMPLETED, "a push callee behind the gate answers")
    check(task.artifacts[0].parts[0].text == "pushed", "with its answer as the task's artifact")


async def main() -> None:
    async with httpx.AsyncClient(timeout=60) as http:
        card = await resolve_card(http, CALLEE_ID)
        check(True, "the card resolves and its signature verifies with the SDK's verifier")
        bindings = [interface.protocol_binding for interface in card.supported_interfaces]
        check(bindings[:2] == ["JSONRPC", "HTTP+JSON"], f"the card lists both interfaces ({bindings})")
        check(card.capabilities.streaming, "the card says it streams")
        for binding in ["JSONRPC", "HTTP+JSON"]:
            await over(binding, card, http)
            await streaming(binding, card, http)
        await push_callee(http)
    print(json.dumps({"result": "all passed"}))


asyncio.run(main())
