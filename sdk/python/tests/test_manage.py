"""The management routes through the sync client, on the gateway: tenants, members, agents, keys,
bindings, endpoints, tools, a task's events and delivery attempts, audit, calls, signing keys,
tenant settings and tenant policies.

Every operation is called through the SDK; the other side of a test (a callee answering, a push
endpoint) is plain httpx or a local HTTP server.
"""

from __future__ import annotations

import json
import queue
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from gateway import Background, PlainAgent

from forgebench import (
    NOT_GIVEN,
    AuditOutcome,
    AuditPage,
    AuthenticationError,
    BadRequestError,
    BindingContract,
    BindingContractPatch,
    BindingLimits,
    BindingLimitsPatch,
    BindingUsage,
    ConflictError,
    CreatedMember,
    CreatedTenant,
    Forgebench,
    IssuedKey,
    NotFoundError,
    PermissionDeniedError,
    PolicyPatch,
    RateLimitError,
    TaskEvent,
)
from forgebench import _requests as requests
from forgebench._models import EventParser

CALLER = "billing-orchestrator"
CALLEE = "invoice-classifier"


@dataclass
class Tenant:
    """A tenant made through the SDK with the operator key, and its admin's client."""

    base_url: str
    created: CreatedTenant
    admin: Forgebench

    def client(self, key: str) -> Forgebench:
        return Forgebench(api_key=key, base_url=self.base_url, max_retries=0)


@pytest.fixture
def operator(gateway: tuple[str, str]) -> Iterator[Forgebench]:
    with Forgebench(api_key=gateway[1], base_url=gateway[0]) as client:
        yield client


@pytest.fixture
def tenant(gateway: tuple[str, str], operator: Forgebench) -> Iterator[Tenant]:
    created = operator.tenants.create(f"pysdk-manage-{uuid.uuid4().hex[:12]}")
    with Forgebench(api_key=created.admin_key, base_url=gateway[0]) as admin:
        yield Tenant(gateway[0], created, admin)


def bound_pair(tenant: Tenant) -> tuple[str, str]:
    """`billing-orchestrator` bound (approved) to `invoice-classifier`; a key for each."""
    tenant.admin.agents.create(CALLER)
    tenant.admin.agents.create(CALLEE)
    [binding] = tenant.admin.agents.grant(CALLER, [CALLEE])
    assert binding["approved_at"] is not None  # an admin speaks for both sides
    return tenant.admin.agents.issue_key(CALLER).key, tenant.admin.agents.issue_key(CALLEE).key


# -- the requests, without a gateway -----------------------------------------------------------


def test_the_management_requests_send_only_what_is_given() -> None:
    create = requests.create_agent(
        "a",
        description=None,
        owner_member_id=NOT_GIVEN,
        claim_timeout_seconds=60,
        input_modes=("text/plain",),
    )
    assert create.json == {
        "name": "a",
        "description": None,
        "claim_timeout_seconds": 60,
        "input_modes": ["text/plain"],
    }
    assert not create.repeatable
    with pytest.raises(ValueError):
        requests.update_agent(
            "a",
            status=NOT_GIVEN,
            description=NOT_GIVEN,
            claim_timeout_seconds=NOT_GIVEN,
            input_modes=NOT_GIVEN,
        )
    endpoint = requests.set_endpoint(
        "a b", None, auth=NOT_GIVEN, clear_auth=True, allow_private_network=False
    )
    assert (endpoint.method, endpoint.path) == ("PUT", "/v1/agents/a%20b/endpoint")
    assert endpoint.json == {"url": None, "clear_auth": True, "allow_private_network": False}
    assert endpoint.repeatable
    with pytest.raises(TypeError):
        requests.grant_bindings("a", "b")
    assert requests.grant_bindings("a", ["b"]).repeatable
    assert not requests.rotate_signing_key(None).repeatable
    assert requests.retire_signing_key("k").repeatable
    audit = requests.list_audit(
        agent=None, action="agent.", outcome="refused", since=None, limit=2, cursor=None
    )
    assert dict(audit.params) == {"action": "agent.", "outcome": "refused", "limit": 2}
    settings = requests.update_tenant_settings(
        word_search=NOT_GIVEN,
        max_call_depth=8,
        refuse_cycles=NOT_GIVEN,
        max_fan_out=None,
        max_open_in_tree=NOT_GIVEN,
    )
    assert (settings.method, settings.path) == ("PATCH", "/v1/tenant/settings")
    assert settings.json == {"max_call_depth": 8, "max_fan_out": None}  # None clears: a null
    assert not settings.repeatable
    policies = requests.update_tenant_policies(
        {"no-refunds": {"mode": "enforce", "description": None}, "old-rule": None}
    )
    assert (policies.method, policies.path) == ("PATCH", "/v1/tenant/policies")
    assert policies.json == {
        "policies": {"no-refunds": {"mode": "enforce", "description": None}, "old-rule": None}
    }
    assert not policies.repeatable
    with pytest.raises(TypeError):
        requests.update_tenant_policies("no-refunds")  # type: ignore[arg-type]
    check = requests.check_call("a", "b", skill=None, action="read", depth=3, root_caller=None)
    assert (check.method, check.path) == ("POST", "/v1/tenant/policies/check")
    assert check.json == {"caller": "a", "callee": "b", "action": "read", "depth": 3}
    assert check.repeatable  # a check records nothing
    with pytest.raises(ValueError):
        requests.check_call("", "b", skill=None, action=None, depth=None, root_caller=None)
    terms = requests.update_binding("a", "b-1", limits={"max_fan_out": None}, contract=NOT_GIVEN)
    assert (terms.method, terms.path) == ("PATCH", "/v1/agents/a/agents/b-1")
    assert terms.json == {"limits": {"max_fan_out": None}}  # None removes: a null
    assert not terms.repeatable
    opened = requests.open_task(
        "c",
        {"parts": [{"text": "x"}], "message_id": "m"},
        wait=0,
        context_id=None,
        parent_call_id=None,
        skill="lookup",
    )
    assert opened.json["skill"] == "lookup" and opened.repeatable
    events = requests.task_events("c", "t", last_event_id=7)
    assert events.headers["Last-Event-ID"] == "7"
    assert events.headers["Accept"] == "text/event-stream"


def test_the_event_parser_reads_the_stream_format() -> None:
    parser = EventParser()
    lines = [
        ": keep-alive",
        "id: 3",
        "event: artifact",
        'data: {"state": "completed",',
        'data:  "event": 3}',
        "",
        "",
        "event: error",
        'data: {"detail": {"code": "unavailable"}}',
        "",
    ]
    events = [event for line in lines if (event := parser.feed(line)) is not None]
    assert events == [
        TaskEvent(event="artifact", id="3", data={"state": "completed", "event": 3}),
        TaskEvent(event="error", id=None, data={"detail": {"code": "unavailable"}}),
    ]
    assert events[0].state == "completed" and not events[0].is_final
    assert events[1].state is None


def test_secrets_never_show_in_repr() -> None:
    secret = "fb_agt_" + "ab" * 32
    shown = [
        IssuedKey(key_id="k", key=secret),
        CreatedTenant(tenant_id="t", name="n", admin_key=secret),
        CreatedMember(member_id="m", name="n", role="member", key_id="k", key=secret),
    ]
    for value in shown:
        assert secret not in repr(value) and secret not in str(value)


# -- tenants and members -----------------------------------------------------------------------


def test_a_tenant_its_members_and_their_keys(tenant: Tenant) -> None:
    admin = tenant.admin
    assert tenant.created.admin_key.startswith("fb_adm_")
    assert tenant.created.name.startswith("pysdk-manage-")
    [first] = admin.members.list()
    assert first["role"] == "admin"
    [admin_key] = first["keys"]
    assert admin_key["revoked_at"] is None

    dana = admin.members.create("Dana Whitfield", "member")
    assert (dana.name, dana.role, dana.key_id) == ("Dana Whitfield", "member", dana.member_id)
    second = admin.members.issue_key(dana.member_id)
    assert second.key_id != dana.key_id and second.key.startswith("fb_mem_")

    with tenant.client(dana.key) as old, tenant.client(second.key) as new:
        assert old.agents.list() == []  # a member key reads the agents
        revoked = admin.members.revoke_key(dana.member_id, dana.key_id or "")
        assert revoked == {"key_id": dana.key_id, "revoked": True}
        with pytest.raises(AuthenticationError):
            old.agents.list()
        assert new.agents.list() == []  # the other key still works

    by_id = {member["member_id"]: member for member in admin.members.list()}
    keys = {key["key_id"]: key for key in by_id[dana.member_id]["keys"]}
    assert keys[dana.key_id or ""]["revoked_at"] is not None
    assert keys[second.key_id]["revoked_at"] is None
    # the tenant's last live admin key cannot be revoked
    with pytest.raises(ConflictError):
        admin.members.revoke_key(first["member_id"], admin_key["key_id"])
    # only the operator makes tenants
    with pytest.raises((AuthenticationError, PermissionDeniedError)):
        admin.tenants.create("not allowed")


# -- agents and their keys ---------------------------------------------------------------------


def test_an_agent_is_created_read_listed_and_updated(tenant: Tenant) -> None:
    admin = tenant.admin
    made = admin.agents.create(
        CALLEE, description="Classifies invoices", claim_timeout_seconds=120
    )
    other = admin.agents.create("a-first-agent")
    assert (made["name"], made["status"], made["claim_timeout_seconds"]) == (CALLEE, "active", 120)
    assert admin.agents.get(CALLEE) == admin.agents.get(made["id"])
    assert [agent["name"] for agent in admin.agents.list()] == ["a-first-agent", CALLEE]

    updated = admin.agents.update(
        CALLEE, description=None, claim_timeout_seconds=1800, input_modes=["text/plain"]
    )
    assert updated["description"] is None and updated["claim_timeout_seconds"] == 1800
    read = admin.agents.get(made["id"])
    assert read["claim_timeout_seconds"] == 1800 and read.get("input_modes") == ["text/plain"]
    assert admin.agents.card(CALLEE)["defaultInputModes"] == ["text/plain"]
    with pytest.raises(ConflictError):
        admin.agents.create(CALLEE)  # names are unique
    with pytest.raises(NotFoundError):
        admin.agents.get("no-such-agent")
    assert other["id"] != made["id"]


def test_a_key_is_issued_listed_paused_and_revoked(tenant: Tenant) -> None:
    admin = tenant.admin
    admin.agents.create(CALLEE)
    issued = admin.agents.issue_key(CALLEE)
    assert issued.key.startswith("fb_agt_") and issued.key not in repr(issued)
    [listed] = admin.agents.keys(CALLEE)
    assert listed["key_id"] == issued.key_id and listed["revoked_at"] is None

    with tenant.client(issued.key) as agent:
        assert agent.agents.me()["name"] == CALLEE
        assert admin.agents.update(CALLEE, status="paused")["status"] == "paused"
        with pytest.raises(PermissionDeniedError):
            agent.agents.me()  # a paused agent's keys are suspended
        admin.agents.update(CALLEE, status="active")
        assert agent.agents.me()["name"] == CALLEE

        assert admin.agents.revoke_key(CALLEE, issued.key_id) == {
            "key_id": issued.key_id,
            "revoked": True,
        }
        with pytest.raises(AuthenticationError):
            agent.agents.me()
    [revoked] = admin.agents.keys(CALLEE)
    assert revoked["revoked_at"] is not None
    with pytest.raises(NotFoundError):
        admin.agents.revoke_key(CALLEE, issued.key_id)  # already revoked


# -- bindings ----------------------------------------------------------------------------------


def test_a_pending_binding_is_approved_then_revoked(tenant: Tenant) -> None:
    admin = tenant.admin
    dana = admin.members.create("Dana Whitfield", "member")
    with tenant.client(dana.key) as member:
        member.agents.create(CALLER)  # Dana owns the caller, not the callee
    admin.agents.create(CALLEE)
    caller_key = admin.agents.issue_key(CALLER).key

    with tenant.client(dana.key) as member:
        [pending] = member.agents.grant(CALLER, [CALLEE])
    assert pending["approved_at"] is None and not pending["revoked"]
    assert [b["id"] for b in admin.agents.bindings(CALLER)["outbound"]] == [pending["id"]]
    assert [b["id"] for b in admin.agents.bindings(CALLEE)["inbound"]] == [pending["id"]]

    with tenant.client(caller_key) as caller:
        with pytest.raises(PermissionDeniedError):
            caller.agents.call(CALLEE, text="Classify")
        approved = admin.agents.approve(CALLEE, pending["id"])
        assert approved["approved_at"] is not None
        task = caller.agents.call(CALLEE, text="Classify")  # the binding lets it through
        assert task.state == "submitted"
        revoked = admin.agents.revoke_binding(CALLER, pending["id"])
        assert revoked["revoked"] and revoked["id"] == pending["id"]
        with pytest.raises(PermissionDeniedError):
            caller.agents.call(CALLEE, text="Classify again")
    with pytest.raises(ConflictError):
        admin.agents.approve(CALLEE, pending["id"])  # a revoked binding is granted again

    reasons = {
        entry.get("reason")
        for entry in admin.audit.iter(action="task.open", outcome="refused")
    }
    assert reasons >= {"binding_pending", "binding_revoked"}


# -- limits and contracts on a binding (docs/api.md, "Governance") -----------------------------

NO_LIMITS: BindingLimits = {
    "max_call_depth": None,
    "refuse_cycles": None,
    "max_fan_out": None,
    "max_open_in_tree": None,
}
NO_CONTRACT: BindingContract = {
    "skills": None,
    "rate_per_minute": None,
    "max_concurrent": None,
    "daily_quota": None,
}
NOTHING_COUNTED: BindingUsage = {"minute": None, "day": None, "open": None}


def clear_of_a_minute_end() -> None:
    """Waits out the last 10 s of a UTC minute (and so of a UTC day), so that the opens and reads
    of a test that counts a binding's use fall in one minute."""
    second = time.time() % 60
    if second >= 50:
        time.sleep(60.5 - second)


def only_binding(tenant: Tenant) -> dict[str, Any]:
    """The caller's one outbound binding, as the list shows it (with `usage`)."""
    [binding] = tenant.admin.agents.bindings(CALLER)["outbound"]
    return dict(binding)


def test_a_binding_takes_limits_and_a_contract_read_back_and_removed_with_null(
    tenant: Tenant,
) -> None:
    admin = tenant.admin
    admin.agents.create(CALLER)
    admin.agents.create(CALLEE)
    [granted] = admin.agents.grant(CALLER, [CALLEE])
    # every answer shows both objects, every field present; nothing is counted yet
    assert (granted["limits"], granted["contract"]) == (NO_LIMITS, NO_CONTRACT)
    listed = only_binding(tenant)
    assert (listed["limits"], listed["contract"]) == (NO_LIMITS, NO_CONTRACT)
    assert listed["usage"] == NOTHING_COUNTED
    caller_key = admin.agents.issue_key(CALLER).key

    clear_of_a_minute_end()
    updated = admin.agents.update_binding(
        CALLER,
        granted["id"],
        limits={"max_call_depth": 4, "refuse_cycles": True},
        contract={"rate_per_minute": 100, "max_concurrent": 5, "daily_quota": 1_000},
    )
    assert updated["id"] == granted["id"] and not updated["revoked"]
    assert updated["limits"] == {**NO_LIMITS, "max_call_depth": 4, "refuse_cycles": True}
    assert updated["contract"] == {
        **NO_CONTRACT,
        "rate_per_minute": 100,
        "max_concurrent": 5,
        "daily_quota": 1_000,
    }
    # counting starts when the contract is set: a rate, a quota and a concurrency count all three
    assert updated.get("usage") == {"minute": 0, "day": 0, "open": 0}

    with tenant.client(caller_key) as caller:
        task = caller.agents.call(CALLEE, text="Classify INV-1")  # names no skill
    assert task.skill is None
    # the callee's side lists the same binding, its use counting the open task
    [inbound] = admin.agents.bindings(CALLEE)["inbound"]
    assert (inbound["limits"], inbound["contract"]) == (updated["limits"], updated["contract"])
    assert inbound.get("usage") == {"minute": 1, "day": 1, "open": 1}

    # from the callee's side: null removes a value, what the patch leaves out stays
    removed = admin.agents.update_binding(
        CALLEE, granted["id"], limits={"refuse_cycles": None}, contract={"daily_quota": None}
    )
    assert removed["limits"] == {**NO_LIMITS, "max_call_depth": 4}
    assert removed["contract"] == {**NO_CONTRACT, "rate_per_minute": 100, "max_concurrent": 5}
    assert removed.get("usage") == {"minute": 1, "day": 1, "open": 1}
    listed = only_binding(tenant)
    assert (listed["limits"], listed["contract"]) == (removed["limits"], removed["contract"])
    # a patch that changes nothing answers the binding as it is and writes nothing
    same = admin.agents.update_binding(CALLER, granted["id"], contract={"max_concurrent": 5})
    assert (same["limits"], same["contract"]) == (removed["limits"], removed["contract"])
    audited = list(admin.audit.iter(action="binding.contract"))
    assert [(entry["action"], entry["outcome"]) for entry in audited] == [
        ("binding.contract", "allowed"),
        ("binding.contract", "allowed"),
    ]

    # out of range is a 400 and changes nothing
    wrong_limits: list[BindingLimitsPatch] = [
        {"max_call_depth": 0},
        {"max_call_depth": 65},
        {"max_fan_out": 10_001},
    ]
    for limits in wrong_limits:
        with pytest.raises(BadRequestError):
            admin.agents.update_binding(CALLER, granted["id"], limits=limits)
    wrong_contracts: list[BindingContractPatch] = [
        {"rate_per_minute": 0},
        {"skills": []},
        {"daily_quota": 1_000_001},
    ]
    for contract in wrong_contracts:
        with pytest.raises(BadRequestError):
            admin.agents.update_binding(CALLER, granted["id"], contract=contract)
    listed = only_binding(tenant)
    assert (listed["limits"], listed["contract"]) == (removed["limits"], removed["contract"])
    # an unknown binding, or an agent that is neither side, is a 404; a member may not
    admin.agents.create("refund-approver")
    with pytest.raises(NotFoundError):
        admin.agents.update_binding(CALLER, str(uuid.uuid4()), contract={"max_concurrent": 1})
    with pytest.raises(NotFoundError):
        admin.agents.update_binding("refund-approver", granted["id"], limits={"max_fan_out": 1})
    dana = admin.members.create("Dana Whitfield", "member")
    with tenant.client(dana.key) as member, pytest.raises(PermissionDeniedError):
        member.agents.update_binding(CALLER, granted["id"], limits={"max_fan_out": 1})

    # the binding's limits govern its calls: at depth 1 a root call opens, its child is refused
    admin.agents.update_binding(CALLER, granted["id"], limits={"max_call_depth": 1})
    with tenant.client(caller_key) as caller:
        root = caller.agents.call(CALLEE, text="Month-end billing")
        assert root.call_id is not None
        with pytest.raises(PermissionDeniedError):
            caller.agents.call(CALLEE, text="Classify INV-2", parent_call_id=root.call_id)
    [refused] = admin.audit.iter(action="task.open", outcome="refused")
    assert (refused.get("reason"), refused.get("root_call_id")) == ("depth_exceeded", root.call_id)


def test_a_contract_s_skills_refuse_an_open_naming_another_skill_or_none(tenant: Tenant) -> None:
    admin = tenant.admin
    caller_key, _ = bound_pair(tenant)
    admin.agents.put_tool(CALLEE, "lookup", "Looks up an invoice")
    admin.agents.put_tool(CALLEE, "classify", "Classifies an invoice")
    binding_id = only_binding(tenant)["id"]
    limited = admin.agents.update_binding(CALLER, binding_id, contract={"skills": ["lookup"]})
    assert limited["contract"] == {**NO_CONTRACT, "skills": ["lookup"]}
    assert limited.get("usage") == NOTHING_COUNTED  # skills alone count nothing

    with tenant.client(caller_key) as caller:
        task = caller.agents.call(CALLEE, text="Find INV-1", skill="lookup")
        assert task.skill == "lookup"
        assert caller.agents.task(CALLEE, task.id).skill == "lookup"  # the task keeps it
        with pytest.raises(PermissionDeniedError) as another:
            caller.agents.call(CALLEE, text="Classify INV-1", skill="classify")
        with pytest.raises(PermissionDeniedError) as none:
            caller.agents.call(CALLEE, text="Classify INV-1")
        # the gate's one refusal, as for a missing binding
        assert another.value.code == none.value.code == "not_permitted"

        # null removes the list: any skill, or none, goes through
        opened = admin.agents.update_binding(CALLEE, binding_id, contract={"skills": None})
        assert opened["contract"] == NO_CONTRACT
        assert caller.agents.call(CALLEE, text="Classify INV-1", skill="classify").skill == (
            "classify"
        )
        assert caller.agents.call(CALLEE, text="Classify INV-2").skill is None
    refusals = admin.audit.iter(action="task.open", outcome="refused")
    reasons = {entry.get("reason") for entry in refusals}
    assert reasons == {"skill_not_allowed"}


def test_an_open_past_the_contract_s_rate_is_a_429_quota_exceeded_with_retry_after(
    tenant: Tenant,
) -> None:
    admin = tenant.admin
    caller_key, _ = bound_pair(tenant)
    binding_id = only_binding(tenant)["id"]
    clear_of_a_minute_end()
    admin.agents.update_binding(CALLER, binding_id, contract={"rate_per_minute": 1})
    # max_retries=0 (tenant.client): the 429 is raised, not waited out into the next minute
    with tenant.client(caller_key) as caller:
        first = caller.agents.call(CALLEE, text="Classify INV-1")
        with pytest.raises(RateLimitError) as raised:
            caller.agents.call(CALLEE, text="Classify INV-2")
    error = raised.value
    assert (error.status, error.code) == (429, "quota_exceeded")
    # the seconds to the next UTC minute
    assert error.retry_after is not None and 1 <= error.retry_after <= 60, error.retry_after
    assert error.message  # names which bound was reached

    # the refusal opened nothing: the one open is counted, and the log names the reason
    assert only_binding(tenant).get("usage") == {"minute": 1, "day": 1, "open": None}
    allowed = admin.audit.iter(action="task.open", outcome="allowed")
    opened = [entry.get("task_id") for entry in allowed]
    assert opened == [first.id]
    refused = list(admin.audit.iter(action="task.open", outcome="refused"))
    assert [entry.get("reason") for entry in refused] == ["quota_exceeded"]


# -- push endpoint and delivery attempts -------------------------------------------------------


class _Endpoint(BaseHTTPRequestHandler):
    received: queue.Queue[dict[str, str]]

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        type(self).received.put(dict(self.headers.items()))
        answer = json.dumps(
            {"state": "completed", "artifacts": [{"parts": [{"text": "pushed"}]}]}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_a_push_endpoint_is_set_delivered_to_and_cleared(tenant: Tenant) -> None:
    admin = tenant.admin
    caller_key, _ = bound_pair(tenant)
    received: queue.Queue[dict[str, str]] = queue.Queue()
    server = ThreadingHTTPServer(
        ("127.0.0.1", 0), type("Endpoint", (_Endpoint,), {"received": received})
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/a2a"
        secret = "push-secret-" + uuid.uuid4().hex
        saved = admin.agents.set_endpoint(CALLEE, url, auth={"type": "bearer", "secret": secret})
        endpoint = saved.get("endpoint")
        assert endpoint is not None and endpoint["url"] == url
        assert endpoint.get("auth") == {"type": "bearer", "configured": True}
        assert secret not in json.dumps(saved)
        with tenant.client(caller_key) as caller:
            task = caller.agents.call(CALLEE, text="Classify", wait=20)
            assert (task.state, task.artifact_text()) == ("completed", "pushed")
        headers = {name.lower(): value for name, value in received.get(timeout=5).items()}
        assert headers["authorization"] == f"Bearer {secret}"
        [attempt] = admin.agents.attempts(CALLEE, task.id)
        assert (attempt["attempt"], attempt.get("status")) == (1, 200)
    finally:
        server.shutdown()
        server.server_close()

    cleared = admin.agents.set_endpoint(CALLEE, None)
    assert cleared.get("endpoint") is None
    with pytest.raises(PermissionDeniedError):  # the SSRF guard: a metadata address
        admin.agents.set_endpoint(CALLEE, "http://169.254.169.254/a2a")


# -- tools and the card ------------------------------------------------------------------------


def test_a_tool_shows_on_the_card_until_it_is_deleted(tenant: Tenant) -> None:
    admin = tenant.admin
    admin.agents.create(CALLEE)
    assert admin.agents.tools(CALLEE) == []
    tool = admin.agents.put_tool(
        CALLEE, "classify", "Classifies an invoice", tags=["finance", "invoices"]
    )
    assert tool == {
        "name": "classify",
        "description": "Classifies an invoice",
        "tags": ["finance", "invoices"],
    }
    admin.agents.put_tool(CALLEE, "lookup", "Looks up an invoice")
    assert [t["name"] for t in admin.agents.tools(CALLEE)] == ["classify", "lookup"]
    skills = {skill["id"]: skill for skill in admin.agents.card(CALLEE)["skills"]}
    assert skills["classify"]["tags"] == ["finance", "invoices"]
    assert skills["lookup"]["tags"] == ["tool"]  # A2A wants a tag on every skill

    assert admin.agents.delete_tool(CALLEE, "lookup") == {"name": "lookup", "removed": True}
    assert [skill["id"] for skill in admin.agents.card(CALLEE)["skills"]] == ["classify"]
    with pytest.raises(NotFoundError):
        admin.agents.delete_tool(CALLEE, "lookup")
    with pytest.raises(BadRequestError):
        admin.agents.put_tool(CALLEE, "Not A Name", "bad")


# -- a task's events ---------------------------------------------------------------------------


def test_the_events_stream_follows_a_task_to_its_end(tenant: Tenant) -> None:
    caller_key, callee_key = bound_pair(tenant)
    callee = PlainAgent(tenant.base_url, callee_key)
    with tenant.client(caller_key) as caller, tenant.client(callee_key) as callee_sdk:
        task = caller.agents.call(CALLEE, text="Classify")
        streamed: queue.Queue[TaskEvent] = queue.Queue()

        def follow() -> list[TaskEvent]:
            events = []
            for event in caller.agents.events(CALLEE, task.id):
                streamed.put(event)
                events.append(event)
            return events  # the iterator ended: the gateway closed the stream

        follower = Background(follow, name="events")
        first = streamed.get(timeout=10)
        assert first.event == "task" and first.state == "submitted"
        assert first.task is not None and first.task.id == task.id

        claimed = callee.claim_within(20)
        assert claimed["id"] == task.id
        callee_sdk.agents.progress(task.id, "Reading the invoice")
        callee.ask(task.id, "Which cost center?")
        caller.agents.answer(CALLEE, task.id, "4100")
        assert callee.claim_within(20)["id"] == task.id
        callee.complete_with_text(task.id, "software")
        events: list[TaskEvent] = follower.result(timeout=20)

    callee.close()
    names = [event.event for event in events]
    assert names == [
        "task", "status", "progress", "question", "answer", "status", "artifact", "final",
    ]
    ids = [int(event.id or "-1") for event in events]
    assert ids == sorted(ids) and len(set(ids[1:])) == len(ids) - 1
    assert events[2].data["message"]["parts"] == [{"text": "Reading the invoice"}]
    assert events[4].data["message"]["role"] == "user"
    assert events[6].data["artifact"]["parts"] == [{"text": "software"}]
    assert events[-1].state == "completed" and events[-1].is_final

    with tenant.client(caller_key) as caller:
        # resuming after the question gets every later change and no `task` event
        resumed = list(caller.agents.events(CALLEE, task.id, last_event_id=events[3].id))
        assert [event.event for event in resumed] == names[4:]
        assert [event.id for event in resumed] == [event.id for event in events[4:]]
        # a finished task streams its `task` event and ends
        [only] = list(caller.agents.events(task_id=task.id, callee=CALLEE))
        assert only.event == "task" and only.state == "completed" and only.is_final
        with pytest.raises(NotFoundError):
            list(caller.agents.events(CALLEE, str(uuid.uuid4())))
    # a pull task has no delivery attempts
    assert tenant.admin.agents.attempts(CALLEE, task.id) == []


# -- audit, calls ------------------------------------------------------------------------------


def test_the_audit_log_pages_and_records_the_changes(tenant: Tenant) -> None:
    admin = tenant.admin
    made = admin.agents.create(CALLEE)
    key = admin.agents.issue_key(CALLEE)
    admin.agents.revoke_key(CALLEE, key.key_id)

    page = admin.audit.list(limit=1)
    assert isinstance(page, AuditPage) and len(page.entries) == 1
    assert page.next_cursor is not None
    newest = page.entries[0]
    assert (newest["action"], newest["outcome"], newest["target"]) == (
        "agent.key.revoke",
        "allowed",
        made["id"],
    )
    assert newest["actor"].get("kind") == "admin"
    second = admin.audit.list(limit=1, cursor=page.next_cursor)
    assert second.entries[0]["id"] != newest["id"]

    every = list(admin.audit.iter(limit=2))
    actions = [entry["action"] for entry in every]
    assert actions[:3] == ["agent.key.revoke", "agent.key.issue", "agent.create"]
    assert "tenant.create" in actions
    assert len({entry["id"] for entry in every}) == len(every)
    by_agent = list(admin.audit.iter(agent=made["id"], action="agent.create"))
    assert [entry["action"] for entry in by_agent] == ["agent.create"]


def test_calls_list_a_lineage_tree(tenant: Tenant) -> None:
    caller_key, _ = bound_pair(tenant)
    root = str(uuid.uuid4())  # another system's call: taken as the root
    with tenant.client(caller_key) as caller:
        first = caller.agents.call(CALLEE, text="one", parent_call_id=root)
        second = caller.agents.call(CALLEE, text="two", parent_call_id=root)
    calls = tenant.admin.calls.list(root)
    assert [call["task_id"] for call in calls] == [first.id, second.id]
    assert {call["parent_call_id"] for call in calls} == {root}
    assert {call["root_call_id"] for call in calls} == {root}
    assert tenant.admin.calls.list(str(uuid.uuid4())) == []
    with pytest.raises(BadRequestError):
        tenant.admin.calls.list("not-a-call-id")


# -- tenant settings ---------------------------------------------------------------------------


def test_settings_update_reads_back_and_is_audited(tenant: Tenant) -> None:
    admin = tenant.admin
    caller_key, _ = bound_pair(tenant)
    settings = admin.settings.get()
    assert settings["word_search"] is True
    assert settings["tenant_id"] == tenant.created.tenant_id

    assert admin.settings.update(word_search=False)["word_search"] is False
    assert admin.settings.get()["word_search"] is False
    with tenant.client(caller_key) as caller:
        with pytest.raises(ConflictError):
            caller.agents.search_tasks(q="invoice")  # word search is off
        with pytest.raises(PermissionDeniedError):
            caller.settings.get()  # an agent key reads no settings
    assert admin.settings.update()["word_search"] is False  # an empty patch changes nothing
    assert admin.settings.update(word_search=True)["word_search"] is True
    actions = [entry["action"] for entry in admin.audit.iter(action="tenant.word_search")]
    assert actions == ["tenant.word_search.on", "tenant.word_search.off"]
    assert list(admin.audit.iter(action="tenant.call_tree")) == []  # no limit changed


DEFAULT_LIMITS = {
    "max_call_depth": 16,
    "refuse_cycles": False,
    "max_fan_out": None,
    "max_open_in_tree": None,
}


def test_call_tree_limits_round_trip_clear_and_are_audited(tenant: Tenant) -> None:
    admin = tenant.admin
    caller_key, _ = bound_pair(tenant)
    tenant_id = tenant.created.tenant_id
    assert admin.settings.get() == {"tenant_id": tenant_id, "word_search": True, **DEFAULT_LIMITS}

    limits = {
        "max_call_depth": 8,
        "refuse_cycles": True,
        "max_fan_out": 20,
        "max_open_in_tree": 100,
    }
    changed = admin.settings.update(
        max_call_depth=8, refuse_cycles=True, max_fan_out=20, max_open_in_tree=100
    )
    assert changed == {"tenant_id": tenant_id, "word_search": True, **limits}
    assert admin.settings.get() == changed
    # None clears a count limit; a setting left out keeps its value
    cleared = admin.settings.update(max_fan_out=None)
    assert cleared == {**changed, "max_fan_out": None}
    assert admin.settings.get() == cleared
    assert admin.settings.update(max_call_depth=8, max_open_in_tree=100) == cleared  # no change
    for depth in (0, 65):
        with pytest.raises(BadRequestError):
            admin.settings.update(max_call_depth=depth)
    with pytest.raises(BadRequestError):
        admin.settings.update(max_fan_out=0)
    with pytest.raises(BadRequestError):
        admin.settings.update(max_open_in_tree=10_001)
    assert admin.settings.get() == cleared  # a refused patch changes nothing

    # two changes, two entries: the patch that changed nothing wrote none
    audited = list(admin.audit.iter(action="tenant.call_tree"))
    assert [(entry["action"], entry["outcome"]) for entry in audited] == [
        ("tenant.call_tree", "allowed"),
        ("tenant.call_tree", "allowed"),
    ]
    assert all(entry["actor"].get("kind") == "admin" for entry in audited)
    assert list(admin.audit.iter(action="tenant.word_search")) == []

    # the limits govern: at depth 1 a root call opens and its child is refused, with the reason
    admin.settings.update(max_call_depth=1)
    with tenant.client(caller_key) as caller:
        root = caller.agents.call(CALLEE, text="Month-end billing")
        assert root.call_id is not None
        with pytest.raises(PermissionDeniedError):
            caller.agents.call(CALLEE, text="Classify INV-2", parent_call_id=root.call_id)
    [refused] = admin.audit.iter(action="task.open", outcome="refused")
    assert (refused.get("reason"), refused.get("parent_call_id"), refused.get("root_call_id")) == (
        "depth_exceeded",
        root.call_id,
        root.call_id,
    )


# -- tenant policies (docs/api.md, "Tenant policies") ------------------------------------------

NO_REFUNDS = (
    'forbid(principal, action == Action::"open", resource) when { resource.name == "'
    + CALLEE
    + '" && context has skill && context.skill == "refund" };'
)


def policy_entries(tenant: Tenant, outcome: AuditOutcome) -> list[tuple[str, str, str | None]]:
    """The tenant's audit entries of `outcome` a policy decided: (action, outcome, policy)."""
    return [
        (entry["action"], entry["outcome"], entry.get("policy"))
        for entry in tenant.admin.audit.iter(outcome=outcome)
        if entry.get("reason") == "policy"
    ]


def test_a_tried_policy_logs_what_it_would_refuse_and_an_enforced_one_refuses_it(
    tenant: Tenant,
) -> None:
    admin = tenant.admin
    caller_key, _ = bound_pair(tenant)
    assert admin.policies.get() == {"version": 0, "items": []}

    # a new policy is tried unless it says otherwise
    saved = admin.policies.update(
        {"no-refunds": {"policy": NO_REFUNDS, "description": "No refunds through the classifier"}}
    )
    assert saved["version"] == 1
    [tried] = saved["items"]
    assert (tried["name"], tried["policy"], tried["mode"], tried["description"]) == (
        "no-refunds",
        NO_REFUNDS,
        "dry_run",
        "No refunds through the classifier",
    )
    assert tried["updated_at"]
    assert admin.policies.get() == saved
    assert admin.policies.check(CALLER, CALLEE, skill="refund") == {
        "allowed": True,
        "reason": None,
        "policies": [],
        "would_refuse": ["no-refunds"],
    }
    with tenant.client(caller_key) as caller:
        admitted = caller.agents.call(CALLEE, text="Refund INV-1", skill="refund")
    assert admitted.skill == "refund"  # a tried policy refuses nothing
    assert policy_entries(tenant, "would_refuse") == [
        ("task.open", "would_refuse", "no-refunds")
    ]
    assert policy_entries(tenant, "refused") == []

    # enforced by its mode alone: the text and the description stay
    enforced = admin.policies.update({"no-refunds": {"mode": "enforce"}})
    assert enforced["version"] == 2
    [rule] = enforced["items"]
    assert (rule["mode"], rule["policy"], rule["description"]) == (
        "enforce",
        NO_REFUNDS,
        "No refunds through the classifier",
    )
    refused = admin.policies.check(CALLER, CALLEE, skill="refund")
    assert refused == {
        "allowed": False,
        "reason": "policy",
        "policies": ["no-refunds"],
        "would_refuse": [],
    }
    assert admin.policies.check(CALLER, CALLEE, skill="lookup")["allowed"] is True
    with tenant.client(caller_key) as caller:
        with pytest.raises(PermissionDeniedError) as denied:
            caller.agents.call(CALLEE, text="Refund INV-2", skill="refund")
        assert denied.value.code == "not_permitted"  # the gate's one refusal
        assert caller.agents.call(CALLEE, text="Find INV-2", skill="lookup").skill == "lookup"
    assert policy_entries(tenant, "refused") == [("task.open", "refused", "no-refunds")]

    # None removes it: the open goes through again
    assert admin.policies.update({"no-refunds": None}) == {"version": 3, "items": []}
    with tenant.client(caller_key) as caller:
        assert caller.agents.call(CALLEE, text="Refund INV-3", skill="refund").skill == "refund"
    audited = [
        (entry["action"], entry["target"]) for entry in admin.audit.iter(action="tenant.policy")
    ]
    assert audited == [
        ("tenant.policy.remove", "no-refunds"),
        ("tenant.policy.set", "no-refunds"),
        ("tenant.policy.set", "no-refunds"),
    ]


def test_a_policy_is_validated_when_saved_and_only_admins_change_policies(
    tenant: Tenant,
) -> None:
    admin = tenant.admin
    caller_key, _ = bound_pair(tenant)
    wrong: list[dict[str, PolicyPatch | None]] = [
        {"open-all": {"policy": "permit(principal, action, resource);"}},
        # an optional attribute read without `has`
        {
            "unguarded": {
                "policy": 'forbid(principal, action, resource) when { context.skill == "x" };'
            }
        },
        {"garbled": {"policy": "forbid everything"}},
        {"no-text": {"mode": "enforce"}},  # a new policy needs its text
        {"Bad Name": {"policy": NO_REFUNDS}},
    ]
    for policies in wrong:
        with pytest.raises(BadRequestError) as refused:
            admin.policies.update(policies)
        assert refused.value.code == "invalid_request", policies
    # the set is validated whole: a valid policy beside an invalid one is not saved either
    with pytest.raises(BadRequestError):
        admin.policies.update(
            {
                "no-refunds": {"policy": NO_REFUNDS},
                "open-all": {"policy": "permit(principal, action, resource);"},
            }
        )
    assert admin.policies.get() == {"version": 0, "items": []}

    viewer = admin.members.create("Priya Raman", "viewer")
    dana = admin.members.create("Dana Whitfield", "member")
    with tenant.client(viewer.key) as as_viewer:
        assert as_viewer.policies.get()["version"] == 0  # a viewer reads and checks
        assert as_viewer.policies.check(CALLER, CALLEE)["allowed"] is True
        with pytest.raises(PermissionDeniedError):
            as_viewer.policies.update({"no-refunds": {"policy": NO_REFUNDS}})
    for key in (dana.key, caller_key):
        with tenant.client(key) as other:
            with pytest.raises(PermissionDeniedError):
                other.policies.get()
            with pytest.raises(PermissionDeniedError):
                other.policies.update({"no-refunds": {"policy": NO_REFUNDS}})
            with pytest.raises(PermissionDeniedError):
                other.policies.check(CALLER, CALLEE)
    assert admin.policies.get() == {"version": 0, "items": []}

    # the check: an unknown agent is a 404; the binding answers before the policies
    with pytest.raises(NotFoundError):
        admin.policies.check("refund-approver", CALLEE)
    unbound = admin.policies.check(CALLEE, CALLER)
    assert (unbound["allowed"], unbound["reason"]) == (False, "no_binding")


def test_the_check_passes_the_action_the_depth_and_the_root_caller(tenant: Tenant) -> None:
    admin = tenant.admin
    bound_pair(tenant)
    below_the_orchestrator = (
        'forbid(principal, action == Action::"open", resource) when { context.depth >= 2'
        ' && context has root_caller && context.root_caller.name == "' + CALLER + '" };'
    )
    admin.policies.update(
        {"shallow": {"policy": below_the_orchestrator, "mode": "enforce", "description": None}}
    )
    caller_id = admin.agents.get(CALLER)["id"]
    # a root call (depth 1, its own root caller) is allowed; two deep below the caller is not
    assert admin.policies.check(CALLER, CALLEE)["allowed"] is True
    deep = admin.policies.check(CALLER, CALLEE, depth=2, root_caller=caller_id)
    assert (deep["allowed"], deep["reason"], deep["policies"]) == (False, "policy", ["shallow"])
    # the policy forbids opens only; and a deep call with no known root caller passes it
    read = admin.policies.check(CALLER, CALLEE, action="read", depth=2, root_caller=CALLER)
    assert read["allowed"] is True and read["policies"] == []
    assert admin.policies.check(CALLER, CALLEE, action="open", depth=2)["allowed"] is True
    with pytest.raises(BadRequestError):
        admin.policies.check(CALLER, CALLEE, depth=65)
    # the description given as None is none
    [shallow] = admin.policies.get()["items"]
    assert (shallow["mode"], shallow["description"]) == ("enforce", None)


# -- signing keys ------------------------------------------------------------------------------


def test_signing_keys_rotate_and_the_active_one_cannot_be_retired(
    tenant: Tenant, operator: Forgebench
) -> None:
    caller_key, _ = bound_pair(tenant)
    rotated = operator.signing_keys.rotate()
    assert rotated["purpose"] == "card-signing"
    with tenant.client(caller_key) as agent:
        jwks = agent.signing_keys.list()  # any key reads the JWKS
    by_kid = {key["kid"]: key for key in jwks["keys"]}
    assert by_kid[rotated["kid"]].get("purpose") == "card-signing"
    assert {key.get("purpose") for key in jwks["keys"]} >= {"card-signing"}
    assert all(key["kty"] == "OKP" and key["crv"] == "Ed25519" for key in jwks["keys"])

    with pytest.raises(ConflictError):
        operator.signing_keys.retire(rotated["kid"])  # the active key: rotate first
    with pytest.raises(NotFoundError):
        operator.signing_keys.retire("0000000000000000")
    with pytest.raises((AuthenticationError, PermissionDeniedError)):
        tenant.admin.signing_keys.rotate()  # only the operator rotates
    assert rotated["kid"] in {key["kid"] for key in operator.signing_keys.list()["keys"]}
