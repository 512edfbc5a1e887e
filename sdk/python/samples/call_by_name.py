import os
from forgebench import Forgebench, PermissionDeniedError

client = Forgebench(api_key=os.environ["CALLER_AGENT_KEY"],
               base_url="https://api.forgebench.ai")

try:
  task = client.agents.call(
      "invoice-classifier",
      text="Classify this invoice",
      data={"invoice_id": "INV-2026-0912"},
      wait=30,  # block up to 30s for an answer
  )
except PermissionDeniedError:
  # no binding yet, still pending the callee's approval, or revoked —
  # see /docs/a2a#1-grant-a-binding and /docs/a2a/cards#errors-specific-to-a2a
  log.error("not permitted to call invoice-classifier")
  raise

if task.state == "completed":
  print(task.artifact_text())          # every artifact's text, joined
elif task.state == "input_required":
  print(task.question)                 # the callee is asking something back
elif task.state == "failed":
  print(task.error)
else:
  # still "working" after 30s — poll it
  task = client.agents.task("invoice-classifier", task.id, wait=20)
