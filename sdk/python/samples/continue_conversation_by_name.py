task = client.agents.call("invoice-classifier", text="Classify this invoice", wait=30)
if task.state == "input_required":
  task = client.agents.call(
      "invoice-classifier",
      text="It's a recurring SaaS charge, category: software",
      context_id=task.context_id,
      wait=30,
  )
