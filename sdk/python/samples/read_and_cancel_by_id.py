CALLEE_ID = "706608c0-4160-452a-86ac-ded1186326ac"

task = client.agents.task(CALLEE_ID, task_id, wait=10)
client.agents.cancel(CALLEE_ID, task_id)
