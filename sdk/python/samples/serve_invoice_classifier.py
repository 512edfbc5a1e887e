import os
from forgebench import Forgebench

client = Forgebench(api_key=os.environ["CALLEE_AGENT_KEY"],
               base_url="https://api.forgebench.ai")

def handle(task):
  invoice_id = task.data.get("invoice_id")
  if invoice_id is None:
      return task.ask("which invoice_id should I classify?")
  try:
      category = classify(invoice_id, parent_call_id=task.call_id)
  except ClassificationError as exc:
      return task.fail(str(exc))
  return task.done(data={"category": category})

# blocks; returns the number of tasks handled
client.agents.serve(handle, max_tasks=None)
