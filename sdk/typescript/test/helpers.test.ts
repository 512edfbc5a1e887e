/** The helpers and the reply rules, without a gateway. */

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import {
  MAX_ERROR_CHARS,
  TaskReply,
  artifactText,
  messageText,
  reply,
  resultOf,
  type Artifact,
} from "@seedlinglabs/forgebench-sdk";

describe("artifactText", () => {
  test("joins the text parts of every artifact in order, skipping data and file parts", () => {
    const artifacts: Artifact[] = [
      { name: "a", parts: [{ text: "first" }, { data: { n: 1 } }, { text: "second" }] },
      { name: "b", parts: [{ file: { uri: "s3://bucket/key" } }, { text: "third" }] },
    ];
    assert.equal(artifactText({ artifacts }), "first\nsecond\nthird");
  });

  test("is empty for a task without text artifacts", () => {
    assert.equal(artifactText({ artifacts: [] }), "");
    assert.equal(artifactText({ artifacts: [{ parts: [{ data: "x" }] }] }), "");
  });
});

describe("messageText", () => {
  test("joins the message's text parts", () => {
    assert.equal(messageText({ role: "agent", parts: [{ text: "which" }, { data: 1 }, { text: "invoice?" }] }), "which\ninvoice?");
  });

  test("is empty for no message", () => {
    assert.equal(messageText(null), "");
    assert.equal(messageText(undefined), "");
  });
});

describe("the reply builder", () => {
  test("done puts text and data into one response artifact, before the artifacts given", () => {
    const extra: Artifact = { name: "extra", parts: [{ text: "more" }] };
    assert.deepEqual(reply.done({ text: "t", data: { category: "c" }, artifacts: [extra] }).result, {
      state: "completed",
      artifacts: [{ name: "response", parts: [{ text: "t" }, { data: { category: "c" } }] }, extra],
    });
  });

  test("done without anything completes with no artifacts", () => {
    assert.deepEqual(reply.done().result, { state: "completed", artifacts: [] });
  });

  test("done keeps a falsy data value", () => {
    assert.deepEqual(reply.done({ data: 0 }).result.artifacts, [{ name: "response", parts: [{ data: 0 }] }]);
  });

  test("ask makes an agent question", () => {
    assert.deepEqual(reply.ask("which one?").result, {
      state: "input_required",
      message: { role: "agent", parts: [{ text: "which one?" }] },
    });
  });

  test("ask takes a whole message and makes it the agent's", () => {
    const asked = reply.ask({ role: "user", parts: [{ text: "q" }, { data: { options: [1, 2] } }] }).result;
    assert.deepEqual(asked.message, { role: "agent", parts: [{ text: "q" }, { data: { options: [1, 2] } }] });
  });

  test("fail carries the message as the error, cut to what the gateway keeps", () => {
    assert.deepEqual(reply.fail("it broke").result, { state: "failed", error: "it broke" });
    const long = "é".repeat(MAX_ERROR_CHARS + 10);
    assert.equal(Array.from(reply.fail(long).result.error ?? "").length, MAX_ERROR_CHARS);
    assert.deepEqual(reply.fail("").result, { state: "failed" });
  });
});

describe("what a handler's return value becomes", () => {
  test("a TaskReply is posted as built", () => {
    const built = new TaskReply({ state: "failed", error: "x" });
    assert.equal(resultOf(built), built.result);
  });

  test("a string is one text artifact", () => {
    assert.deepEqual(resultOf("hello"), { state: "completed", artifacts: [{ name: "response", parts: [{ text: "hello" }] }] });
  });

  test("an array is the artifacts", () => {
    const artifacts: Artifact[] = [{ name: "one", parts: [{ text: "1" }] }, { name: "two", parts: [{ data: 2 }] }];
    assert.deepEqual(resultOf(artifacts), { state: "completed", artifacts });
  });

  test("a plain object is one data artifact", () => {
    assert.deepEqual(resultOf({ category: "software" }), {
      state: "completed",
      artifacts: [{ name: "response", parts: [{ data: { category: "software" } }] }],
    });
  });

  test("an object with state is a TaskResultIn; one with only artifacts completes with them", () => {
    assert.deepEqual(resultOf({ state: "failed", error: "e" }), { state: "failed", error: "e" });
    const artifacts = [{ name: "x", parts: [{ text: "y" }] }];
    assert.deepEqual(resultOf({ artifacts }), { state: "completed", artifacts });
  });

  test("nothing completes with no artifacts; a number or boolean is data", () => {
    assert.deepEqual(resultOf(undefined), { state: "completed", artifacts: [] });
    assert.deepEqual(resultOf(null), { state: "completed", artifacts: [] });
    assert.deepEqual(resultOf(42), { state: "completed", artifacts: [{ name: "response", parts: [{ data: 42 }] }] });
    assert.deepEqual(resultOf(false), { state: "completed", artifacts: [{ name: "response", parts: [{ data: false }] }] });
  });

  test("a function is not an answer", () => {
    assert.throws(() => resultOf((() => 1) as unknown as string), TypeError);
  });
});
