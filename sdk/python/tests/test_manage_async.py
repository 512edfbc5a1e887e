"""The management routes through `AsyncForgebench`, on the gateway: the same surface, awaited.

Every operation is called through the async client at least once; the callee's side of the
event stream test is plain httpx on a thread (tests/gateway.py).
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from gateway import PlainAgent

from forgebench import (
    AsyncForgebench,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    TaskEvent,
)

CALLER = "billing-orchestrator"
CALLEE = "invoice-classifier"
NO_REFUNDS = (
    'forbid(principal, action == Action::"open", resource) when { resource.name == "'
    + CALLEE
    + '" && context has skill && context.skill == "refund" };'
)


def test_async_management_end_to_end(gateway: tuple[str, str]) -> None:
    base_url, operator_key = gateway

    async def run() -> None:
        async with AsyncForgebench(api_key=operator_key, base_url=base_url) as operator:
            created = await operator.tenants.create(f"pysdk-async-{uuid.uuid4().hex[:12]}")
            assert created.admin_key not in repr(created)
            async with AsyncForgebench(api_key=created.admin_key, base_url=base_url) as admin:
                await members(admin, base_url)
                await agents_and_bindings(admin, base_url)
                await settings_audit_and_calls(admin, created.tenant_id)
                await policies(admin)
                await signing_keys(operator, admin)

    asyncio.run(run())


async def members(admin: AsyncForgebench, base_url: str) -> None:
    [first] = await admin.members.list()
    assert first["role"] == "admin"
    viewer = await admin.members.create("Priya Raman", "viewer")
    assert viewer.role == "viewer"
    extra = await admin.members.issue_key(viewer.member_id)
    async with AsyncForgebench(api_key=extra.key, base_url=base_url, max_retries=0) as client:
        assert (await client.settings.get())["word_search"] is True  # a viewer reads settings
        with pytest.raises(PermissionDeniedError):
            await client.settings.update(word_search=False)  # but changes nothing
        revoked = await admin.members.revoke_key(viewer.member_id, extra.key_id)
        assert revoked["revoked"] is True
        with pytest.raises(AuthenticationError):
            await client.settings.get()
    listed = {m["member_id"]: m for m in await admin.members.list()}
    assert len(listed[viewer.member_id]["keys"]) == 2


async def agents_and_bindings(admin: AsyncForgebench, base_url: str) -> None:
    caller = await admin.agents.create(CALLER, description="Runs billing")
    callee = await admin.agents.create(CALLEE, claim_timeout_seconds=300)
    assert [a["name"] for a in await admin.agents.list()] == [CALLER, CALLEE]
    assert (await admin.agents.get(callee["id"]))["claim_timeout_seconds"] == 300
    updated = await admin.agents.update(CALLER, description="Runs month-end billing")
    assert updated["description"] == "Runs month-end billing"

    caller_key = await admin.agents.issue_key(CALLER)
    callee_key = await admin.agents.issue_key(CALLEE)
    assert [k["key_id"] for k in await admin.agents.keys(CALLER)] == [caller_key.key_id]

    [binding] = await admin.agents.grant(CALLER, [CALLEE])
    assert binding["caller_agent_id"] == caller["id"]
    assert binding["callee_agent_id"] == callee["id"]
    approved = await admin.agents.approve(CALLEE, binding["id"])  # already approved: unchanged
    assert approved["approved_at"] == binding["approved_at"]
    assert (await admin.agents.bindings(CALLEE))["inbound"][0]["id"] == binding["id"]
    # limits and a contract of its own, from either side; null removes a value
    terms = await admin.agents.update_binding(
        CALLEE, binding["id"], limits={"max_fan_out": 50}, contract={"max_concurrent": 10}
    )
    assert (terms["limits"]["max_fan_out"], terms["limits"]["max_call_depth"]) == (50, None)
    assert (terms["contract"]["max_concurrent"], terms["contract"]["skills"]) == (10, None)
    assert terms.get("usage") == {"minute": 0, "day": 0, "open": 0}
    cleared = await admin.agents.update_binding(
        CALLER, binding["id"], contract={"max_concurrent": None}
    )
    assert cleared["contract"]["max_concurrent"] is None
    assert cleared["limits"]["max_fan_out"] == 50
    [listed] = (await admin.agents.bindings(CALLER))["outbound"]
    assert (listed["limits"], listed["contract"]) == (cleared["limits"], cleared["contract"])
    assert listed.get("usage") == {"minute": None, "day": None, "open": None}

    tool = await admin.agents.put_tool(CALLEE, "classify", "Classifies an invoice")
    assert tool["tags"] == []
    assert [t["name"] for t in await admin.agents.tools(CALLEE)] == ["classify"]
    assert [s["id"] for s in (await admin.agents.card(CALLEE))["skills"]] == ["classify"]
    assert (await admin.agents.delete_tool(CALLEE, "classify"))["removed"] is True
    # Without tools, the card's one skill is the agent itself (A2A wants at least one).
    assert [s["id"] for s in (await admin.agents.card(CALLEE))["skills"]] == [CALLEE]
    assert (await admin.agents.set_endpoint(CALLEE, None)).get("endpoint") is None

    async with (
        AsyncForgebench(api_key=caller_key.key, base_url=base_url) as as_caller,
        AsyncForgebench(api_key=callee_key.key, base_url=base_url) as as_callee,
    ):
        await events_through_completion(as_caller, as_callee, PlainAgent(base_url, callee_key.key))
        revoked = await admin.agents.revoke_binding(CALLEE, binding["id"])
        assert revoked["revoked"] is True
        with pytest.raises(PermissionDeniedError):
            await as_caller.agents.call(CALLEE, text="refused now")
        await admin.agents.revoke_key(CALLEE, callee_key.key_id)
        with pytest.raises(AuthenticationError):
            await as_callee.agents.me()


async def events_through_completion(
    caller: AsyncForgebench, callee: AsyncForgebench, plain_callee: PlainAgent
) -> None:
    task = await caller.agents.call(CALLEE, text="Classify")
    stream = caller.agents.events(CALLEE, task.id)
    first = await anext(stream)
    assert first.event == "task" and first.state == "submitted"

    claimed = await asyncio.to_thread(plain_callee.claim_within, 20)
    assert claimed["id"] == task.id
    await callee.agents.progress(task.id, "Reading")
    await asyncio.to_thread(plain_callee.complete_with_text, task.id, "software")
    rest: list[TaskEvent] = [event async for event in stream]  # ends with the stream
    plain_callee.close()

    assert [e.event for e in rest] == ["status", "progress", "artifact", "final"]
    assert rest[-1].is_final and rest[-1].state == "completed"
    assert [int(e.id or 0) for e in rest] == sorted(int(e.id or 0) for e in rest)
    # resuming past the progress report
    resumed = [
        e.event async for e in caller.agents.events(CALLEE, task.id, last_event_id=rest[1].id)
    ]
    assert resumed == ["artifact", "final"]
    with pytest.raises(NotFoundError):
        async for _ in caller.agents.events(CALLEE, str(uuid.uuid4())):
            pass
    with pytest.raises(NotFoundError):
        await caller.agents.attempts(CALLEE, task.id)  # not its own: owners, admins read them


async def settings_audit_and_calls(admin: AsyncForgebench, tenant_id: str) -> None:
    assert (await admin.settings.update(word_search=False))["tenant_id"] == tenant_id
    assert (await admin.settings.get())["word_search"] is False
    await admin.settings.update(word_search=True)
    limited = await admin.settings.update(max_fan_out=5, refuse_cycles=True)
    assert (limited["max_fan_out"], limited["refuse_cycles"], limited["max_call_depth"]) == (
        5,
        True,
        16,
    )
    assert (await admin.settings.update(max_fan_out=None))["max_fan_out"] is None
    assert (await admin.settings.get())["refuse_cycles"] is True
    tree = [e["action"] async for e in admin.audit.iter(action="tenant.call_tree")]
    assert tree == ["tenant.call_tree", "tenant.call_tree"]

    page = await admin.audit.list(action="tenant.word_search", limit=100)
    assert [e["action"] for e in page.entries] == [
        "tenant.word_search.on",
        "tenant.word_search.off",
    ]
    actions = [entry["action"] async for entry in admin.audit.iter(limit=3)]
    assert "binding.revoke" in actions and "tenant.create" in actions
    opened = [e async for e in admin.audit.iter(action="task.open", outcome="allowed")]
    [entry] = opened
    call_id = entry.get("call_id")
    assert call_id is not None
    [call] = await admin.calls.list(call_id)  # the task was opened without a parent: a root
    assert (call["call_id"], call["root_call_id"], call["parent_call_id"]) == (
        call_id,
        call_id,
        None,
    )
    assert (await admin.agents.attempts(CALLEE, call["task_id"] or "")) == []


async def policies(admin: AsyncForgebench) -> None:
    assert await admin.policies.get() == {"version": 0, "items": []}
    saved = await admin.policies.update({"no-refunds": {"policy": NO_REFUNDS, "mode": "enforce"}})
    [rule] = saved["items"]
    assert (rule["name"], rule["mode"], rule["description"]) == ("no-refunds", "enforce", None)
    assert await admin.policies.get() == saved
    # the binding was revoked (agents_and_bindings): it answers first; the policy still shows
    assert await admin.policies.check(CALLER, CALLEE, skill="refund") == {
        "allowed": False,
        "reason": "binding_revoked",
        "policies": ["no-refunds"],
        "would_refuse": [],
    }
    tried = await admin.policies.update({"no-refunds": {"mode": "dry_run"}})
    assert (tried["version"], tried["items"][0]["mode"]) == (2, "dry_run")
    checked = await admin.policies.check(CALLER, CALLEE, skill="refund", action="open", depth=1)
    assert (checked["policies"], checked["would_refuse"]) == ([], ["no-refunds"])
    with pytest.raises(BadRequestError):  # a policy may only forbid
        permit_all = "permit(principal, action, resource);"
        await admin.policies.update({"open-all": {"policy": permit_all}})
    with pytest.raises(NotFoundError):
        await admin.policies.check(CALLER, "refund-approver")
    assert await admin.policies.update({"no-refunds": None}) == {"version": 3, "items": []}
    actions = [e["action"] async for e in admin.audit.iter(action="tenant.policy")]
    assert actions == ["tenant.policy.remove", "tenant.policy.set", "tenant.policy.set"]


async def signing_keys(operator: AsyncForgebench, admin: AsyncForgebench) -> None:
    rotated = await operator.signing_keys.rotate("card-signing")
    kids = {key["kid"] for key in (await admin.signing_keys.list())["keys"]}
    assert rotated["kid"] in kids
    with pytest.raises(ConflictError):
        await operator.signing_keys.retire(rotated["kid"])
    with pytest.raises(NotFoundError):
        await operator.signing_keys.retire("ffffffffffffffff")
