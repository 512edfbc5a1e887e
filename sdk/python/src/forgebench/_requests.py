"""Every route the SDK calls, as plain request descriptions shared by the sync and async clients."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal
from urllib.parse import quote

from ._types import (
    NOT_GIVEN,
    BindingContractPatch,
    BindingLimitsPatch,
    Direction,
    EndpointAuth,
    Message,
    NotGiven,
    Part,
    PolicyAction,
    PolicyPatch,
    SubjectGrantIn,
    TaskResultIn,
    TaskState,
)


@dataclass(frozen=True)
class Request:
    """One call to the gateway.

    `wait` is how long the gateway may hold the request (the client's timeout is stretched by
    it). `repeatable` says the request may be sent again when the connection broke after it was
    sent: the gateway makes it safe (a read, a cancel, an open or reply with a `message_id`).
    """

    method: str
    path: str
    params: Mapping[str, Any] = field(default_factory=dict)
    json: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    wait: int = 0
    repeatable: bool = True
    no_content_ok: bool = False


def _segment(value: str) -> str:
    """A path segment: a callee's name or id, or a task id, escaped."""
    if not value:
        raise ValueError("an agent (a callee) and a task id must not be empty")
    return quote(value, safe="")


def _wait_params(wait: int) -> dict[str, Any]:
    if isinstance(wait, bool) or not isinstance(wait, int):
        raise TypeError("wait must be a whole number of seconds")
    return {"wait": wait} if wait else {}


def _optional_int(name: str, value: int | None) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise TypeError(f"{name} must be a whole number")
    return value


def build_message(
    *,
    text: str | None,
    data: Any,
    parts: Sequence[Part] | None,
    message_id: str,
    role: Literal["user", "agent"] = "user",
) -> Message:
    """A message of `role`: a text part for `text`, a data part for `data`, then `parts`."""
    built: list[Part] = []
    if text is not None:
        built.append({"text": text})
    if data is not None:
        built.append({"data": data})
    built.extend(parts or [])
    if not built:
        raise ValueError("a message needs text=, data= or parts=")
    if not message_id:
        raise ValueError("a message_id must not be empty")
    return {"role": role, "parts": built, "message_id": message_id}


def open_task(
    callee: str,
    message: Message,
    *,
    wait: int,
    context_id: str | None,
    parent_call_id: str | None,
    skill: str | None,
) -> Request:
    """`POST /v1/agents/{callee}/tasks`: always carries a `message_id`, so it is repeatable.

    `skill` names the callee's skill the task is opened for (checked against the binding's
    contract); None sends none.
    """
    body: dict[str, Any] = {"message": message}
    if context_id is not None:
        body["context_id"] = context_id
    if skill is not None:
        if not isinstance(skill, str) or not skill:
            raise ValueError("skill must be a non-empty string (a skill id of the callee's card)")
        body["skill"] = skill
    headers = {"X-Parent-Call": parent_call_id} if parent_call_id is not None else {}
    return Request(
        "POST",
        f"/v1/agents/{_segment(callee)}/tasks",
        params=_wait_params(wait),
        json=body,
        headers=headers,
        wait=wait,
        repeatable="message_id" in message,
    )


def get_task(callee: str, task_id: str, *, wait: int) -> Request:
    """`GET /v1/agents/{callee}/tasks/{task_id}`."""
    return Request(
        "GET",
        f"/v1/agents/{_segment(callee)}/tasks/{_segment(task_id)}",
        params=_wait_params(wait),
        wait=wait,
    )


def cancel_task(callee: str, task_id: str) -> Request:
    """`POST /v1/agents/{callee}/tasks/{task_id}/cancel`: idempotent."""
    return Request("POST", f"/v1/agents/{_segment(callee)}/tasks/{_segment(task_id)}/cancel")


def add_task_message(callee: str, task_id: str, message: Message) -> Request:
    """`POST /v1/agents/{callee}/tasks/{task_id}/messages`: the caller answers a question.

    Repeatable when the message carries a `message_id`: the gateway answers a repeat with the
    task as it stands and records nothing twice.
    """
    return Request(
        "POST",
        f"/v1/agents/{_segment(callee)}/tasks/{_segment(task_id)}/messages",
        json={"message": message},
        repeatable="message_id" in message,
    )


def search_tasks(
    *,
    agent: str | None,
    direction: Direction | None,
    state: TaskState | None,
    context_id: str | None,
    q: str | None,
    since: str | None,
    limit: int | None,
    cursor: str | None,
) -> Request:
    """`GET /v1/tasks` with the filters given (None: not sent)."""
    filters: dict[str, Any] = {
        "agent": agent,
        "direction": direction,
        "state": state,
        "context_id": context_id,
        "q": q,
        "since": since,
        "limit": _optional_int("limit", limit),
        "cursor": cursor,
    }
    return Request(
        "GET", "/v1/tasks", params={k: v for k, v in filters.items() if v is not None}
    )


def agent_card(agent: str) -> Request:
    """`GET /v1/agents/{agent}/.well-known/agent-card.json`."""
    return Request("GET", f"/v1/agents/{_segment(agent)}/.well-known/agent-card.json")


def list_cards(*, limit: int | None, cursor: str | None) -> Request:
    """`GET /v1/agents/cards`: one page of the tenant's cards, by agent name."""
    params: dict[str, Any] = {"limit": _optional_int("limit", limit), "cursor": cursor}
    return Request(
        "GET", "/v1/agents/cards", params={k: v for k, v in params.items() if v is not None}
    )


def claim_next_task(*, wait: int) -> Request:
    """`GET /v1/agents/me/tasks/next`: a Task, or 204 when nothing arrived within `wait`."""
    return Request(
        "GET",
        "/v1/agents/me/tasks/next",
        params=_wait_params(wait),
        wait=wait,
        no_content_ok=True,
    )


def post_result(task_id: str, body: TaskResultIn) -> Request:
    """`POST /v1/agents/me/tasks/{task_id}/result`.

    Repeatable only when its message carries a `message_id` (a question built by `ask`): the
    gateway then answers a repeat with the task. Any other result, repeated after it landed,
    would be refused with `409 task_not_working`.
    """
    message = body.get("message")
    return Request(
        "POST",
        f"/v1/agents/me/tasks/{_segment(task_id)}/result",
        json=body,
        repeatable=message is not None and "message_id" in message,
    )


def report_progress(task_id: str, message: Message) -> Request:
    """`POST /v1/agents/me/tasks/{task_id}/progress`: the callee reports on a task it holds.

    Repeatable when the message carries a `message_id` (a repeat records nothing twice).
    """
    return Request(
        "POST",
        f"/v1/agents/me/tasks/{_segment(task_id)}/progress",
        json={"message": message},
        repeatable="message_id" in message,
    )


def me() -> Request:
    """`GET /v1/agents/me`: the agent the key belongs to."""
    return Request("GET", "/v1/agents/me")


# -- the management routes -----------------------------------------------------------------------
#
# Repeatable (docs/sdks.md, "Safe to repeat"): every GET, PUT and DELETE, and the POSTs the
# gateway makes idempotent (docs/api.md): a grant (re-granting changes nothing), an approval
# (approving an approved binding returns it unchanged) and a signing key's retirement. Not
# repeatable: whatever creates something (a tenant, member, agent, key, signing key), since a
# repeat after a lost answer would create a second one, and the PATCHes.

#: How often the gateway sends a keep-alive comment on an idle event stream (docs/api.md).
STREAM_KEEPALIVE_SECONDS = 15


def _name(what: str, value: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string")
    return quote(value, safe="")


def _drop_not_given(fields: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not NOT_GIVEN}


def create_tenant(name: str) -> Request:
    """`POST /v1/tenants` (operator key)."""
    return Request("POST", "/v1/tenants", json={"name": name}, repeatable=False)


def list_members() -> Request:
    """`GET /v1/members` (admin)."""
    return Request("GET", "/v1/members")


def create_member(name: str, role: str) -> Request:
    """`POST /v1/members` (admin)."""
    return Request("POST", "/v1/members", json={"name": name, "role": role}, repeatable=False)


def create_member_key(member_id: str) -> Request:
    """`POST /v1/members/{member_id}/keys` (admin)."""
    return Request(
        "POST", f"/v1/members/{_name('member_id', member_id)}/keys", repeatable=False
    )


def revoke_member_key(member_id: str, key_id: str) -> Request:
    """`DELETE /v1/members/{member_id}/keys/{key_id}` (admin)."""
    return Request(
        "DELETE",
        f"/v1/members/{_name('member_id', member_id)}/keys/{_name('key_id', key_id)}",
    )


def create_agent(
    name: str,
    *,
    description: str | None | NotGiven,
    owner_member_id: str | None | NotGiven,
    claim_timeout_seconds: int | None | NotGiven,
    input_modes: Sequence[str] | None | NotGiven,
) -> Request:
    """`POST /v1/agents`."""
    body = _drop_not_given(
        {
            "name": name,
            "description": description,
            "owner_member_id": owner_member_id,
            "claim_timeout_seconds": claim_timeout_seconds,
            "input_modes": list(input_modes)
            if isinstance(input_modes, Sequence) and not isinstance(input_modes, str)
            else input_modes,
        }
    )
    return Request("POST", "/v1/agents", json=body, repeatable=False)


def list_agents() -> Request:
    """`GET /v1/agents` (persons)."""
    return Request("GET", "/v1/agents")


def get_agent(agent: str) -> Request:
    """`GET /v1/agents/{agent}`."""
    return Request("GET", f"/v1/agents/{_name('agent', agent)}")


def update_agent(
    agent: str,
    *,
    status: str | NotGiven,
    description: str | None | NotGiven,
    claim_timeout_seconds: int | NotGiven,
    input_modes: Sequence[str] | None | NotGiven,
) -> Request:
    """`PATCH /v1/agents/{agent}`: only the fields given."""
    body = _drop_not_given(
        {
            "status": status,
            "description": description,
            "claim_timeout_seconds": claim_timeout_seconds,
            "input_modes": list(input_modes)
            if isinstance(input_modes, Sequence) and not isinstance(input_modes, str)
            else input_modes,
        }
    )
    if not body:
        raise ValueError("an update needs at least one field")
    return Request("PATCH", f"/v1/agents/{_name('agent', agent)}", json=body, repeatable=False)


def list_agent_keys(agent: str) -> Request:
    """`GET /v1/agents/{agent}/keys`."""
    return Request("GET", f"/v1/agents/{_name('agent', agent)}/keys")


def create_agent_key(agent: str) -> Request:
    """`POST /v1/agents/{agent}/keys`."""
    return Request("POST", f"/v1/agents/{_name('agent', agent)}/keys", repeatable=False)


def revoke_agent_key(agent: str, key_id: str) -> Request:
    """`DELETE /v1/agents/{agent}/keys/{key_id}`."""
    return Request(
        "DELETE", f"/v1/agents/{_name('agent', agent)}/keys/{_name('key_id', key_id)}"
    )


def grant_bindings(caller: str, callees: Sequence[str]) -> Request:
    """`POST /v1/agents/{caller}/agents`: re-granting changes nothing, so it is repeatable."""
    if isinstance(callees, str):
        raise TypeError("callees must be a list of names or ids, not one string")
    return Request(
        "POST", f"/v1/agents/{_name('caller', caller)}/agents", json={"callees": list(callees)}
    )


def list_bindings(agent: str) -> Request:
    """`GET /v1/agents/{agent}/agents`."""
    return Request("GET", f"/v1/agents/{_name('agent', agent)}/agents")


def approve_binding(agent: str, binding_id: str) -> Request:
    """`POST /v1/agents/{agent}/agents/{binding_id}/approve` (`agent` is the callee)."""
    return Request(
        "POST",
        f"/v1/agents/{_name('agent', agent)}/agents/{_name('binding_id', binding_id)}/approve",
    )


def revoke_binding(agent: str, binding_id: str) -> Request:
    """`DELETE /v1/agents/{agent}/agents/{binding_id}`."""
    return Request(
        "DELETE", f"/v1/agents/{_name('agent', agent)}/agents/{_name('binding_id', binding_id)}"
    )


def _terms_patch(what: str, patch: Mapping[str, Any]) -> dict[str, Any]:
    """A binding's `limits` or `contract` merge patch as sent: the fields given, None as null."""
    if not isinstance(patch, Mapping):
        raise TypeError(
            f"{what} must be a dict of the fields to change (a field's None removes its value)"
        )
    body = dict(patch)
    skills = body.get("skills")
    if skills is not None:
        if isinstance(skills, str):
            raise TypeError("skills must be a list of skill ids, not one string")
        body["skills"] = list(skills)
    return body


def update_binding(
    agent: str,
    binding_id: str,
    *,
    limits: BindingLimitsPatch | NotGiven,
    contract: BindingContractPatch | NotGiven,
) -> Request:
    """`PATCH /v1/agents/{agent}/agents/{binding_id}` (admin; `agent` is either side): each of
    `limits` and `contract` is a merge patch (a field None is sent as `null`, which removes its
    value); one left out is not sent. A PATCH: not repeated after a lost answer."""
    body: dict[str, Any] = {}
    if limits is not NOT_GIVEN:
        body["limits"] = _terms_patch("limits", limits)
    if contract is not NOT_GIVEN:
        body["contract"] = _terms_patch("contract", contract)
    return Request(
        "PATCH",
        f"/v1/agents/{_name('agent', agent)}/agents/{_name('binding_id', binding_id)}",
        json=body,
        repeatable=False,
    )


def set_endpoint(
    agent: str,
    url: str | None,
    *,
    auth: EndpointAuth | None | NotGiven,
    clear_auth: bool | NotGiven,
    allow_private_network: bool | NotGiven,
) -> Request:
    """`PUT /v1/agents/{agent}/endpoint`: `url` None goes back to pull."""
    body = _drop_not_given(
        {
            "url": url,
            "auth": dict(auth) if isinstance(auth, Mapping) else auth,
            "clear_auth": clear_auth,
            "allow_private_network": allow_private_network,
        }
    )
    return Request("PUT", f"/v1/agents/{_name('agent', agent)}/endpoint", json=body)


def list_tools(agent: str) -> Request:
    """`GET /v1/agents/{agent}/tools`."""
    return Request("GET", f"/v1/agents/{_name('agent', agent)}/tools")


def put_tool(agent: str, tool: str, description: str, tags: Sequence[str] | None) -> Request:
    """`PUT /v1/agents/{agent}/tools/{tool}`."""
    body: dict[str, Any] = {"description": description}
    if tags is not None:
        if isinstance(tags, str):
            raise TypeError("tags must be a list of strings, not one string")
        body["tags"] = list(tags)
    return Request(
        "PUT", f"/v1/agents/{_name('agent', agent)}/tools/{_name('tool', tool)}", json=body
    )


def delete_tool(agent: str, tool: str) -> Request:
    """`DELETE /v1/agents/{agent}/tools/{tool}`."""
    return Request("DELETE", f"/v1/agents/{_name('agent', agent)}/tools/{_name('tool', tool)}")


def list_delivery_attempts(callee: str, task_id: str) -> Request:
    """`GET /v1/agents/{callee}/tasks/{task_id}/attempts`."""
    return Request("GET", f"/v1/agents/{_segment(callee)}/tasks/{_segment(task_id)}/attempts")


def get_endpoint_health(agent: str) -> Request:
    """`GET /v1/agents/{agent}/endpoint/health` (the agent's owner, an admin or a viewer)."""
    return Request("GET", f"/v1/agents/{_name('agent', agent)}/endpoint/health")


def enable_endpoint(agent: str) -> Request:
    """`POST /v1/agents/{agent}/endpoint/enable` (admin): an endpoint that is not disabled is
    left as it is, so a repeat changes nothing and it is repeatable."""
    return Request("POST", f"/v1/agents/{_name('agent', agent)}/endpoint/enable")


def rfc3339(moment: datetime | str) -> str:
    """`moment` as RFC 3339 text: a timezone-aware `datetime`, or a string sent as it is."""
    if isinstance(moment, datetime):
        if moment.tzinfo is None or moment.utcoffset() is None:
            raise ValueError(
                "a naive datetime names no moment: give an aware one, "
                "e.g. datetime.now(timezone.utc) - timedelta(hours=1)"
            )
        return moment.isoformat()
    if not isinstance(moment, str):
        raise TypeError("since must be an aware datetime or RFC 3339 text")
    if not moment:
        raise ValueError("since must not be empty")
    return moment


def redrive_deliveries(agent: str, since: datetime | str) -> Request:
    """`POST /v1/agents/{agent}/endpoint/redrive` (the agent's owner or an admin): a repeat
    would attempt the waiting deliveries once more, so it is not repeated after a lost answer."""
    return Request(
        "POST",
        f"/v1/agents/{_name('agent', agent)}/endpoint/redrive",
        json={"since": rfc3339(since)},
        repeatable=False,
    )


def replay_delivery(callee: str, task_id: str) -> Request:
    """`POST /v1/agents/{callee}/tasks/{task_id}/replay` (the callee's owner or an admin): a
    repeat could find the first one's attempt under way (a 409), so it is not repeated."""
    return Request(
        "POST",
        f"/v1/agents/{_segment(callee)}/tasks/{_segment(task_id)}/replay",
        repeatable=False,
    )


def replay_notification(callee: str, task_id: str, config_id: str) -> Request:
    """`POST /v1/agents/{callee}/tasks/{task_id}/notifications/{config_id}/replay` (the task's
    caller or an admin): a repeat would send the event once more (or find the first one's send
    under way, a 409), so it is not repeated after a lost answer."""
    return Request(
        "POST",
        f"/v1/agents/{_segment(callee)}/tasks/{_segment(task_id)}"
        f"/notifications/{_name('config_id', config_id)}/replay",
        repeatable=False,
    )


def task_events(callee: str, task_id: str, *, last_event_id: str | int | None) -> Request:
    """`GET /v1/agents/{callee}/tasks/{task_id}/events`: a `text/event-stream`.

    The read timeout is stretched by the keep-alive interval, so an idle stream is not taken
    for a dead one.
    """
    headers = {"Accept": "text/event-stream"}
    if last_event_id is not None:
        headers["Last-Event-ID"] = str(last_event_id)
    return Request(
        "GET",
        f"/v1/agents/{_segment(callee)}/tasks/{_segment(task_id)}/events",
        headers=headers,
        wait=STREAM_KEEPALIVE_SECONDS,
    )


def list_audit(
    *,
    agent: str | None,
    action: str | None,
    outcome: str | None,
    since: str | None,
    limit: int | None,
    cursor: str | None,
) -> Request:
    """`GET /v1/audit` with the filters given (None: not sent)."""
    params: dict[str, Any] = {
        "agent": agent,
        "action": action,
        "outcome": outcome,
        "since": since,
        "limit": _optional_int("limit", limit),
        "cursor": cursor,
    }
    return Request("GET", "/v1/audit", params={k: v for k, v in params.items() if v is not None})


def list_calls(root_call_id: str) -> Request:
    """`GET /v1/calls?root_call_id=`."""
    if not root_call_id:
        raise ValueError("root_call_id must not be empty")
    return Request("GET", "/v1/calls", params={"root_call_id": root_call_id})


def get_signing_keys() -> Request:
    """`GET /v1/billing/export/pubkey`: the JWKS (any key)."""
    return Request("GET", "/v1/billing/export/pubkey")


def rotate_signing_key(purpose: str | None) -> Request:
    """`POST /v1/signing-keys/rotate` (operator key): a new key each time, so not repeatable."""
    body = {"purpose": purpose} if purpose is not None else {}
    return Request("POST", "/v1/signing-keys/rotate", json=body, repeatable=False)


def retire_signing_key(kid: str) -> Request:
    """`POST /v1/signing-keys/{kid}/retire` (operator key): retiring twice changes nothing."""
    return Request("POST", f"/v1/signing-keys/{_name('kid', kid)}/retire")


def get_tenant_settings() -> Request:
    """`GET /v1/tenant/settings` (admin, viewer)."""
    return Request("GET", "/v1/tenant/settings")


def update_tenant_settings(
    *,
    word_search: bool | NotGiven,
    max_call_depth: int | NotGiven,
    refuse_cycles: bool | NotGiven,
    max_fan_out: int | None | NotGiven,
    max_open_in_tree: int | None | NotGiven,
) -> Request:
    """`PATCH /v1/tenant/settings` (admin): only the fields given; `None` for `max_fan_out` or
    `max_open_in_tree` is sent as `null` (no limit)."""
    body = _drop_not_given(
        {
            "word_search": word_search,
            "max_call_depth": max_call_depth,
            "refuse_cycles": refuse_cycles,
            "max_fan_out": max_fan_out,
            "max_open_in_tree": max_open_in_tree,
        }
    )
    return Request("PATCH", "/v1/tenant/settings", json=body, repeatable=False)


def get_tenant_policies() -> Request:
    """`GET /v1/tenant/policies` (admin, viewer)."""
    return Request("GET", "/v1/tenant/policies")


def update_tenant_policies(policies: Mapping[str, PolicyPatch | None]) -> Request:
    """`PATCH /v1/tenant/policies` (admin): a merge patch by name, each value the fields to
    change of that policy (a `PolicyPatch`), or None (sent as `null`) to remove it. A PATCH:
    not repeated after a lost answer."""
    if not isinstance(policies, Mapping):
        raise TypeError("policies must be a dict of policy names to patches (None removes one)")
    body: dict[str, dict[str, Any] | None] = {}
    for name, patch in policies.items():
        if not isinstance(name, str) or not name:
            raise ValueError("a policy's name must be a non-empty string")
        if patch is not None and not isinstance(patch, Mapping):
            raise TypeError(
                f"policy {name!r}: a patch is a dict of the fields to change, or None to remove it"
            )
        body[name] = None if patch is None else dict(patch)
    return Request("PATCH", "/v1/tenant/policies", json={"policies": body}, repeatable=False)


def check_call(
    caller: str,
    callee: str,
    *,
    skill: str | None,
    action: PolicyAction | None,
    depth: int | None,
    root_caller: str | None,
) -> Request:
    """`POST /v1/tenant/policies/check` (admin, viewer): the fields given (None: not sent, the
    gateway's default). It records nothing, so it is repeatable."""
    body: dict[str, Any] = {
        "caller": _agent("caller", caller),
        "callee": _agent("callee", callee),
    }
    optional: dict[str, Any] = {
        "skill": skill,
        "action": action,
        "depth": _optional_int("depth", depth),
        "root_caller": root_caller,
    }
    body.update({k: v for k, v in optional.items() if v is not None})
    return Request("POST", "/v1/tenant/policies/check", json=body)


def _agent(what: str, value: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string (an agent's name or id)")
    return value


def _subjects(subjects: Sequence[SubjectGrantIn]) -> list[SubjectGrantIn]:
    if isinstance(subjects, Mapping | str):
        raise TypeError("subjects must be a list of {'subject', 'agent' | 'member_id'} dicts")
    return list(subjects)


def list_issuers() -> Request:
    """`GET /v1/issuers` (admin, member, viewer)."""
    return Request("GET", "/v1/issuers")


def trust_issuer(
    issuer: str, audience: str, subjects: Sequence[SubjectGrantIn] | None
) -> Request:
    """`POST /v1/issuers` (admin): a second trust of the same pair is a 409, so not repeatable."""
    body: dict[str, Any] = {"issuer": issuer, "audience": audience}
    if subjects is not None:
        body["subjects"] = _subjects(subjects)
    return Request("POST", "/v1/issuers", json=body, repeatable=False)


def update_issuer(issuer_id: str, subjects: Sequence[SubjectGrantIn]) -> Request:
    """`PATCH /v1/issuers/{issuer_id}` (admin): replaces the subjects; a PATCH, not repeated."""
    return Request(
        "PATCH",
        f"/v1/issuers/{_name('issuer_id', issuer_id)}",
        json={"subjects": _subjects(subjects)},
        repeatable=False,
    )


def distrust_issuer(issuer_id: str) -> Request:
    """`DELETE /v1/issuers/{issuer_id}` (admin)."""
    return Request("DELETE", f"/v1/issuers/{_name('issuer_id', issuer_id)}")
