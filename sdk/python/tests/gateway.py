"""Plain-httpx helpers that set up a tenant and play the other side of a test.

Nothing here goes through the SDK under test: the tenant, agents, bindings and keys are made
over the management routes, and a test's counterpart (the callee answering, or the caller
opening) talks to the gateway directly.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

CALLER_NAME = "billing-orchestrator"
CALLEE_NAME = "invoice-classifier"


class Principal:
    """An httpx client holding one key; the key is never printed."""

    def __init__(self, base_url: str, key: str) -> None:
        self.base_url = base_url
        self.key = key
        self._http = httpx.Client(
            base_url=base_url, headers={"Authorization": f"Bearer {key}"}, timeout=60.0
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_url!r})"

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return self._http.request(method, path, **kwargs)

    def ok(self, method: str, path: str, **kwargs: Any) -> Any:
        """The JSON body of a 2xx answer; the test fails with the status and body otherwise."""
        response = self.request(method, path, **kwargs)
        assert response.is_success, f"{method} {path} -> {response.status_code} {response.text}"
        return response.json()

    def close(self) -> None:
        self._http.close()


class Admin(Principal):
    """A tenant admin: makes agents, bindings and keys; reads the audit log."""

    def create_agent(self, name: str, **fields: Any) -> dict[str, Any]:
        agent: dict[str, Any] = self.ok("POST", "/v1/agents", json={"name": name, **fields})
        return agent

    def grant(self, caller: str, callees: list[str]) -> list[dict[str, Any]]:
        bindings: list[dict[str, Any]] = self.ok(
            "POST", f"/v1/agents/{caller}/agents", json={"callees": callees}
        )
        return bindings

    def agent_key(self, agent: str) -> str:
        key: str = self.ok("POST", f"/v1/agents/{agent}/keys")["key"]
        return key

    def audit(self, **params: Any) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.ok("GET", "/v1/audit", params=params)["items"]
        return items


class PlainAgent(Principal):
    """An agent speaking the task routes directly, as the counterpart of the SDK under test."""

    def open(
        self, callee: str, message: dict[str, Any], wait: int = 0, **body: Any
    ) -> dict[str, Any]:
        task: dict[str, Any] = self.ok(
            "POST",
            f"/v1/agents/{callee}/tasks",
            params={"wait": wait},
            json={"message": {"role": "user", **message}, **body},
        )
        return task

    def open_data(self, callee: str, data: Any, wait: int = 0) -> dict[str, Any]:
        return self.open(callee, {"parts": [{"data": data}]}, wait=wait)

    def get(self, callee: str, task_id: str, wait: int = 0) -> dict[str, Any]:
        task: dict[str, Any] = self.ok(
            "GET", f"/v1/agents/{callee}/tasks/{task_id}", params={"wait": wait}
        )
        return task

    def cancel(self, callee: str, task_id: str) -> dict[str, Any]:
        task: dict[str, Any] = self.ok("POST", f"/v1/agents/{callee}/tasks/{task_id}/cancel")
        return task

    def claim(self, wait: int = 5) -> dict[str, Any] | None:
        response = self.request("GET", "/v1/agents/me/tasks/next", params={"wait": wait})
        if response.status_code == 204:
            return None
        assert response.status_code == 200, f"claim -> {response.status_code} {response.text}"
        task: dict[str, Any] = response.json()
        return task

    def claim_within(self, seconds: float) -> dict[str, Any]:
        """The next task, claimed within `seconds`; the test fails when none comes."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            task = self.claim(wait=max(1, min(5, int(deadline - time.monotonic()))))
            if task is not None:
                return task
        raise AssertionError(f"no task to claim within {seconds} s")

    def answer(self, task_id: str, body: dict[str, Any]) -> dict[str, Any]:
        task: dict[str, Any] = self.ok("POST", f"/v1/agents/me/tasks/{task_id}/result", json=body)
        return task

    def complete_with_text(self, task_id: str, text: str) -> dict[str, Any]:
        artifact = {"name": "response", "parts": [{"text": text}]}
        return self.answer(task_id, {"state": "completed", "artifacts": [artifact]})

    def ask(self, task_id: str, question: str) -> dict[str, Any]:
        message = {"role": "agent", "parts": [{"text": question}]}
        return self.answer(task_id, {"state": "input_required", "message": message})

    def fail(self, task_id: str, error: str) -> dict[str, Any]:
        return self.answer(task_id, {"state": "failed", "error": error})


@dataclass
class Pair:
    """A fresh tenant with a caller and a callee agent, each with its own key."""

    base_url: str
    admin: Admin
    caller_id: str
    callee_id: str
    caller_key: str = field(repr=False)
    callee_key: str = field(repr=False)
    caller: PlainAgent = field(repr=False)
    callee: PlainAgent = field(repr=False)

    def close(self) -> None:
        for principal in (self.admin, self.caller, self.callee):
            principal.close()


def create_tenant(base_url: str, operator_key: str) -> Admin:
    with httpx.Client(base_url=base_url, timeout=60.0) as http:
        response = http.post(
            "/v1/tenants",
            headers={"Authorization": f"Bearer {operator_key}"},
            json={"name": f"pysdk-{uuid.uuid4().hex[:12]}"},
        )
    assert response.status_code == 201, (
        f"POST /v1/tenants -> {response.status_code} {response.text}"
    )
    return Admin(base_url, response.json()["admin_key"])


def create_pair(base_url: str, operator_key: str, *, bound: bool = True) -> Pair:
    """A tenant with `billing-orchestrator` and `invoice-classifier`, bound when `bound`."""
    admin = create_tenant(base_url, operator_key)
    caller = admin.create_agent(CALLER_NAME)
    callee = admin.create_agent(CALLEE_NAME)
    if bound:
        admin.grant(CALLER_NAME, [CALLEE_NAME])
    caller_key = admin.agent_key(CALLER_NAME)
    callee_key = admin.agent_key(CALLEE_NAME)
    return Pair(
        base_url=base_url,
        admin=admin,
        caller_id=caller["id"],
        callee_id=callee["id"],
        caller_key=caller_key,
        callee_key=callee_key,
        caller=PlainAgent(base_url, caller_key),
        callee=PlainAgent(base_url, callee_key),
    )


class Background:
    """A function run on a thread, whose result or exception the test collects."""

    def __init__(self, target: Callable[[], Any], name: str = "background") -> None:
        self._target = target
        self._result: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._result = self._target()
        except BaseException as error:
            self._error = error

    def result(self, timeout: float) -> Any:
        """The function's return value; raises what it raised, or fails after `timeout`."""
        self._thread.join(timeout)
        assert not self._thread.is_alive(), f"still running after {timeout} s"
        if self._error is not None:
            raise self._error
        return self._result

    def is_alive(self) -> bool:
        return self._thread.is_alive()


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
