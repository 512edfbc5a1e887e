"""Runs the signed-delivery verifier exactly as docs/api.md prints it, on a delivery a test callee
received: the documented snippet is taken from the document itself, so the two cannot drift.

usage: verify_webhook.py API_MD REQUEST_JSON JWKS_JSON MY_URL MY_AGENT_ID [CLOCK_OFFSET_SECONDS]

REQUEST_JSON is {"headers": {name: value}, "body_b64": <the raw body, base64>}. A clock offset
runs the verifier as if that many seconds had passed. Exit 0 and "valid": accepted; exit 1 and
the verifier's reason: rejected; exit 2: the snippet is missing from the document.
"""
import base64
import json
import sys
import time

MARKER = "def from_forgebench("


def documented_snippet(api_md: str) -> str | None:
    """The python code block of the document that defines the verifier."""
    blocks = api_md.split("```python\n")[1:]
    for block in blocks:
        code = block.split("```", 1)[0]
        if MARKER in code:
            return code
    return None


def main() -> int:
    api_md, request_path, jwks_path, my_url, my_agent_id = sys.argv[1:6]
    offset = float(sys.argv[6]) if len(sys.argv) > 6 else 0.0
    with open(api_md) as doc, open(request_path) as request_file, open(jwks_path) as jwks_file:
        snippet = documented_snippet(doc.read())
        request = json.load(request_file)
        jwks = json.load(jwks_file)
    if snippet is None:
        print(f"no python block defining {MARKER} in {api_md}")
        return 2
    if offset:
        real = time.time
        time.time = lambda: real() + offset
    namespace: dict = {}
    exec(compile(snippet, f"{api_md} (verification snippet)", "exec"), namespace)
    headers = {name.lower(): value for name, value in request["headers"].items()}
    body = base64.b64decode(request["body_b64"])
    try:
        namespace["from_forgebench"](headers, body, jwks, my_url, my_agent_id)
    except ValueError as rejection:
        print(f"rejected: {rejection}")
        return 1
    print("valid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
