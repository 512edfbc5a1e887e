CALLEE_ID = "706608c0-4160-452a-86ac-ded1186326ac"

task = client.agents.call(CALLEE_ID, text="Classify this invoice", wait=30)
if task.state == "input_required":
  task = client.agents.call(
      CALLEE_ID,
      text="It's a recurring SaaS charge, category: software",
      context_id=task.context_id,
      wait=30,
  )
