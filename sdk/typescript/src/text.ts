/** Helpers that read text out of the REST shapes. */

import type { Artifact, Message, Part, Task } from "./types.js";

/** The texts of `parts`, in order; data and file parts have none. */
function textsOf(parts: readonly Part[]): string[] {
  return parts.flatMap((part) => (typeof part.text === "string" ? [part.text] : []));
}

/**
 * Every text part of every artifact of the task, in order, joined with a newline; `""` when the
 * task has no text artifact (a data-only answer, or one not finished yet).
 */
export function artifactText(task: Pick<Task, "artifacts">): string {
  return task.artifacts.flatMap((artifact: Artifact) => textsOf(artifact.parts)).join("\n");
}

/**
 * Every text part of the message, in order, joined with a newline; `""` for no message (a
 * task's `status.message` is `null` unless the callee asked or said something).
 */
export function messageText(message: Message | null | undefined): string {
  return message == null ? "" : textsOf(message.parts).join("\n");
}
