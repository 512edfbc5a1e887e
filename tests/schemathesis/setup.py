"""Makes the ids schemathesis needs, so every operation reaches its logic instead of a 404:
a tenant with a key of each kind (operator, admin, member, viewer, agent), a bound caller and
callee, a pull task the callee has claimed, a tool, and spare objects for the destructive routes
(an agent to patch and re-point, a binding to revoke, keys to revoke). Prints them as `export`
lines for the config (tests/schemathesis/schemathesis.toml reads them as ${ST_*}).

Usage: python setup.py BASE OPERATOR_KEY
"""

import json
import shlex
import sys
import urllib.error
import urllib.request

base, operator = sys.argv[1], sys.argv[2]


def call(method, path, key, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method)
    request.add_header("Authorization", f"Bearer {key}")
    request.add_header("A2A-Version", "1.0")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request) as response:
            text = response.read()
    except urllib.error.HTTPError as error:
        raise SystemExit(f"setup: {method} {path} answered {error.code}: {error.read()!r}")
    return json.loads(text) if text else None


admin = call("POST", "/v1/tenants", operator, {"name": "fuzz"})["admin_key"]
member = call("POST", "/v1/members", admin, {"name": "fuzz-member", "role": "member"})
viewer = call("POST", "/v1/members", admin, {"name": "fuzz-viewer", "role": "viewer"})
spare_member = call("POST", "/v1/members", admin, {"name": "fuzz-spare", "role": "member"})
spare_member_key = call("POST", f"/v1/members/{spare_member['member_id']}/keys", admin, {})

# The member owns the caller and the callee, so its key manages them as an admin's does.
caller = call("POST", "/v1/agents", member["key"], {"name": "caller"})
callee = call("POST", "/v1/agents", member["key"], {"name": "callee"})
spare = call("POST", "/v1/agents", member["key"], {"name": "spare"})
patched = call("POST", "/v1/agents", member["key"], {"name": "patched"})
bindings = call("POST", f"/v1/agents/{caller['id']}/agents", member["key"],
                {"callees": [callee["name"], spare["name"]]})
spare_binding = next(b["id"] for b in bindings if b["callee_agent_id"] == spare["id"])
caller_key = call("POST", f"/v1/agents/{caller['id']}/keys", member["key"], {})["key"]
callee_key = call("POST", f"/v1/agents/{callee['id']}/keys", member["key"], {})["key"]
spare_key = call("POST", f"/v1/agents/{patched['id']}/keys", member["key"], {})
call("PUT", f"/v1/agents/{callee['id']}/tools/search", member["key"], {"description": "searches"})

message = {"role": "user", "parts": [{"text": "fuzz me"}]}
task = call("POST", f"/v1/agents/{callee['id']}/tasks", caller_key, {"message": message})
claimed = call("GET", "/v1/agents/me/tasks/next?wait=1", callee_key)
assert claimed and claimed["id"] == task["id"], claimed
# A task waiting for the caller's answer: SubscribeToTask is served on it, and its stream ends at
# once (an A2A stream ends at an interrupted state).
asking = call("POST", f"/v1/agents/{callee['id']}/tasks", caller_key,
              {"message": {"role": "user", "parts": [{"text": "ask me"}]}})
asked = call("GET", "/v1/agents/me/tasks/next?wait=1", callee_key)
assert asked and asked["id"] == asking["id"], asked
call("POST", f"/v1/agents/me/tasks/{asking['id']}/result", callee_key,
     {"state": "input_required", "message": {"role": "agent", "parts": [{"text": "which one?"}]}})
# A second task, for the routes that finish one (cancel).
cancelable = call("POST", f"/v1/agents/{callee['id']}/tasks", caller_key,
                  {"message": {"role": "user", "parts": [{"text": "cancel me"}]}})
# A finished task, whose event streams end at once.
done = call("POST", f"/v1/agents/{callee['id']}/tasks", caller_key,
            {"message": {"role": "user", "parts": [{"text": "done"}]}})
call("POST", f"/v1/agents/{callee['id']}/tasks/{done['id']}/cancel", caller_key, {})
# A task nobody finishes (ST_TASK may be answered by the run): its event stream stays open.
still_open = call("POST", f"/v1/agents/{callee['id']}/tasks", caller_key,
                  {"message": {"role": "user", "parts": [{"text": "leave me open"}]}})
# A push config on the claimed task, for the routes that read one.
call("POST", f"/v1/agents/{callee['id']}/a2a/tasks/{task['id']}/pushNotificationConfigs",
     caller_key, {"id": "fuzz-kept", "url": "https://93.184.215.14/forgebench-hook"})
kid = call("GET", "/v1/billing/export/pubkey", admin)["keys"][0]["kid"]

ids = {
    "ST_OPERATOR_KEY": operator,
    "ST_ADMIN_KEY": admin,
    "ST_MEMBER_KEY": member["key"],
    "ST_VIEWER_KEY": viewer["key"],
    "ST_CALLER_KEY": caller_key,
    "ST_CALLEE_KEY": callee_key,
    "ST_CALLER": caller["id"],
    "ST_CALLEE": callee["id"],
    "ST_SPARE": spare["id"],
    "ST_PATCHED": patched["id"],
    "ST_PATCHED_KEY_ID": spare_key["key_id"],
    "ST_SPARE_BINDING": spare_binding,
    "ST_TASK": task["id"],
    "ST_CANCELABLE_TASK": cancelable["id"],
    "ST_DONE_TASK": done["id"],
    "ST_ASKING_TASK": asking["id"],
    "ST_OPEN_TASK": still_open["id"],
    "ST_CONTEXT": still_open["context_id"],
    "ST_PUSH_CONFIG": "fuzz-kept",
    "ST_SPARE_MEMBER": spare_member["member_id"],
    "ST_SPARE_MEMBER_KEY_ID": spare_member_key["key_id"],
    "ST_KID": kid,
    "ST_ROOT_CALL": task["root_call_id"],
}
for name, value in ids.items():
    print(f"export {name}={shlex.quote(value)}")
