task = client.agents.next_task(wait=20)
if task is not None:
  reply = task.done(text="done")   # or task.ask(...) / task.fail(...)
  client.agents.reply(task.id, reply)
