"""A pull callee that plays the A2A compatibility kit's scenarios (its `scenarios/*.feature`):
it claims each task and answers as the scenario its opening message's `messageId` prefix names.
Usage: python callee.py BASE CALLEE_KEY (runs until killed; tests/a2a-tck/run.sh starts it)."""

import sys
import time

import httpx

BASE, KEY = sys.argv[1].rstrip("/"), sys.argv[2]
HEADERS = {"Authorization": f"Bearer {KEY}"}


def said(text):
    return {"role": "agent", "parts": [{"text": text}]}


def artifact(name, part):
    return {"state": "completed", "artifacts": [{"name": name, "parts": [part]}]}


# (messageId prefix, the answer), most specific prefix first.
ANSWERS = [
    ("tck-artifact-file-url", artifact("output.txt", {"file": {
        "uri": "https://example.com/output.txt", "name": "output.txt", "mime": "text/plain"}})),
    # Bytes, as the kit's reference agent answers (`raw` on the A2A edge).
    ("tck-artifact-file", artifact("output.txt", {"file": {
        "uri": "data:text/plain;base64,dGNr", "name": "output.txt", "mime": "text/plain"}})),
    ("tck-artifact-data", artifact("data", {"data": {"key": "value", "count": 42}})),
    ("tck-artifact-text", artifact("text", {"text": "Generated text content"})),
    ("tck-input-required", {"state": "input_required", "message": said("Need more input")}),
    ("tck-reject", {"state": "failed", "error": "rejected"}),
]


def latest_message_id(task):
    """The messageId of the caller's latest message: an answer to a question names the next
    scenario."""
    ids = [m.get("message_id") or "" for m in task.get("history") or [] if m.get("role") == "user"]
    return ids[-1] if ids else ""


def answer(client, task):
    task_id, message_id = task["id"], latest_message_id(task)
    if message_id.startswith("tck-stream"):
        # Streams: working, then an artifact and completed.
        client.post(f"{BASE}/v1/agents/me/tasks/{task_id}/progress", headers=HEADERS,
                    json={"message": said("working")})
        time.sleep(0.3)
        result = artifact("out", {"text": "Stream hello from TCK"})
    elif message_id.startswith(("tck-task-helper", "tck-cancel")):
        return  # left working, for the kit to read or cancel
    else:
        result = next((answer for prefix, answer in ANSWERS if message_id.startswith(prefix)),
                      {"state": "completed", "message": said("Hello from TCK")})
    client.post(f"{BASE}/v1/agents/me/tasks/{task_id}/result", headers=HEADERS, json=result)


def main():
    with httpx.Client(timeout=40) as client:
        while True:
            try:
                claimed = client.get(f"{BASE}/v1/agents/me/tasks/next?wait=20", headers=HEADERS)
            except httpx.HTTPError:
                time.sleep(0.5)
                continue
            if claimed.status_code == 200:
                answer(client, claimed.json())
            else:
                time.sleep(0.2)


if __name__ == "__main__":
    main()
