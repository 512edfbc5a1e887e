"""The `serve` loop: claim a task, run the handler, post its reply; until told to stop.

Shared rules of the sync and async loops:

- A claim or a reply that fails for a passing reason (the network, `429`, a `5xx`) is tried
  again after a growing pause; a key the gateway refuses (`401`, `403`) ends `serve` with that
  error, since no retry can mend it.
- A handler that raises fails its task with the exception's message; the loop goes on.
- A reply the gateway refuses as invalid (`400`, `413`, `422`) fails the task with the reason,
  so the caller is not left waiting until the claim deadline.
- A reply refused with `409 task_not_working` (the caller canceled meanwhile, or the claim
  deadline passed) is dropped; the task still counts as handled.
- Stopping is graceful: no new claim starts, but a claim already waiting is let finish, and a
  task it brings is handled like any other (a claimed task is never dropped).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TypeAlias

from . import _requests as requests
from ._errors import (
    APIConnectionError,
    APIStatusError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    InternalServerError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitError,
    UnprocessableEntityError,
)
from ._http import AsyncTransport, SyncTransport
from ._retry import Backoff
from ._task import HandlerResult, Task, TaskReply, reply_from_result
from ._tracing import continued

logger = logging.getLogger("forgebench")

Handler: TypeAlias = Callable[[Task], HandlerResult]
AsyncHandler: TypeAlias = Callable[[Task], "HandlerResult | Awaitable[HandlerResult]"]

#: Errors after which the same claim or reply is tried again.
PASSING_ERRORS: tuple[type[Exception], ...] = (
    APIConnectionError,
    RateLimitError,
    InternalServerError,
)
#: The refusals that say the reply itself was wrong.
INVALID_REPLY_ERRORS: tuple[type[Exception], ...] = (
    BadRequestError,
    PayloadTooLargeError,
    UnprocessableEntityError,
)
#: How many times one reply is posted before the loop gives up on it (about a minute).
MAX_REPLY_ATTEMPTS = 8

DEFAULT_SERVE_WAIT_SECONDS = 20


def continued_trace_of(task: Task) -> contextlib.AbstractContextManager[None]:
    """Runs the handler in the trace the claimed task is in (its `traceparent`), when the
    application has OpenTelemetry."""
    return continued({"traceparent": task.traceparent, "tracestate": task.tracestate})


def error_message(error: BaseException) -> str:
    """The text a failed task gets for `error`: its message, or its type when it has none."""
    return str(error) or type(error).__name__


def check_serve_arguments(max_tasks: int | None, wait: int, concurrency: int) -> None:
    if max_tasks is not None and max_tasks < 0:
        raise ValueError("max_tasks must be None or 0 or more")
    if wait < 0:
        raise ValueError("wait must be 0 or more seconds")
    if concurrency < 1:
        raise ValueError("concurrency must be 1 or more")


class ClaimBudget:
    """How many tasks `serve` may still claim (`max_tasks`), shared by its workers.

    A worker reserves a place before it claims, so together they never claim more than
    `max_tasks`; a claim that brings nothing gives its place back.
    """

    def __init__(self, max_tasks: int | None) -> None:
        self._max_tasks = max_tasks
        self._reserved = 0
        self._handled = 0
        self._lock = threading.Lock()

    @property
    def handled(self) -> int:
        with self._lock:
            return self._handled

    def reserve(self) -> bool:
        with self._lock:
            if self._max_tasks is not None and self._handled + self._reserved >= self._max_tasks:
                return False
            self._reserved += 1
            return True

    def release(self) -> None:
        with self._lock:
            self._reserved -= 1

    def finish(self) -> None:
        with self._lock:
            self._reserved -= 1
            self._handled += 1


def step_after_reply_error(
    task: Task,
    reply: TaskReply,
    error: APIStatusError | APIConnectionError,
    backoff: Backoff,
) -> TaskReply | float | None:
    """What to do after posting `reply` failed with `error`.

    A float: pause that long and post it again. A `TaskReply`: post that instead (the failure
    that replaces an invalid reply). None: stop trying. A refused key raises `error`.
    """
    if isinstance(error, (AuthenticationError, PermissionDeniedError)):
        raise error
    if isinstance(error, PASSING_ERRORS):
        delay = backoff.next_delay()
        logger.warning(
            "forgebench: reply to %s failed (%s); again in %.1f s", task.id, error, delay
        )
        return delay
    if isinstance(error, ConflictError):
        logger.info(
            "forgebench: task %s is no longer working (%s); its reply was dropped",
            task.id,
            error.state or error.code,
        )
        return None
    if isinstance(error, INVALID_REPLY_ERRORS) and reply.state != "failed":
        logger.error("forgebench: the handler's reply to task %s was refused: %s", task.id, error)
        return TaskReply.failed(f"the handler's reply was refused: {error}")
    logger.error("forgebench: the reply to task %s was refused: %s", task.id, error)
    return None


class SyncServer:
    """One `serve` call of the sync client."""

    def __init__(
        self,
        transport: SyncTransport,
        handler: Handler,
        *,
        max_tasks: int | None,
        wait: int,
        concurrency: int,
        stop_event: threading.Event,
    ) -> None:
        self._transport = transport
        self._handler = handler
        self._budget = ClaimBudget(max_tasks)
        self._wait = wait
        self._concurrency = concurrency
        self.stop_event = stop_event

    def run(self) -> int:
        """Serve until `max_tasks` are handled or the stop event is set; the number handled."""
        if self._concurrency == 1:
            self._work()
        else:
            self._run_workers()
        return self._budget.handled

    def _run_workers(self) -> None:
        errors: list[BaseException] = []

        def work() -> None:
            try:
                self._work()
            except BaseException as error:  # handed to the thread that called serve()
                errors.append(error)
                self.stop_event.set()

        workers = [
            threading.Thread(target=work, name=f"forgebench-serve-{number}", daemon=True)
            for number in range(self._concurrency)
        ]
        for worker in workers:
            worker.start()
        try:
            for worker in workers:
                while worker.is_alive():
                    worker.join(0.2)
        except KeyboardInterrupt:
            self.stop_event.set()
            for worker in workers:
                worker.join()
            raise
        if errors:
            raise errors[0]

    def _work(self) -> None:
        backoff = Backoff()
        while not self.stop_event.is_set() and self._budget.reserve():
            try:
                task = self._claim()
            except PASSING_ERRORS as error:
                self._budget.release()
                delay = backoff.next_delay()
                logger.warning("forgebench: claim failed (%s); again in %.1f s", error, delay)
                self.stop_event.wait(delay)
                continue
            except BaseException:
                self._budget.release()
                raise
            backoff.reset()
            if task is None:
                self._budget.release()
                continue
            self._post(task, self._answer(task))
            self._budget.finish()

    def _claim(self) -> Task | None:
        body = self._transport.send(requests.claim_next_task(wait=self._wait))
        return Task(body) if body is not None else None

    def _answer(self, task: Task) -> TaskReply:
        try:
            with continued_trace_of(task):
                return reply_from_result(self._handler(task))
        except Exception as error:
            logger.exception("forgebench: the handler raised on task %s; it fails", task.id)
            return TaskReply.failed(error_message(error))

    def _post(self, task: Task, reply: TaskReply) -> None:
        backoff = Backoff()
        for _attempt in range(MAX_REPLY_ATTEMPTS):
            try:
                self._transport.send(requests.post_result(task.id, reply.to_json()))
                return
            except (APIStatusError, APIConnectionError) as error:
                step = step_after_reply_error(task, reply, error, backoff)
            if step is None:
                return
            if isinstance(step, TaskReply):
                reply = step
            else:
                time.sleep(step)  # a claimed task is answered even when stopping
        logger.error("forgebench: gave up replying to task %s", task.id)


class AsyncStopSignal:
    """A stop flag an async `serve` waits on, settable from any thread."""

    def __init__(self, event: asyncio.Event, loop: asyncio.AbstractEventLoop) -> None:
        self.event = event
        self._loop = loop

    def set(self) -> None:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self.event.set()
        else:
            self._loop.call_soon_threadsafe(self.event.set)

    def is_set(self) -> bool:
        return self.event.is_set()

    async def sleep(self, seconds: float) -> None:
        """Sleep `seconds`, or less when the stop comes first."""
        try:
            await asyncio.wait_for(self.event.wait(), seconds)
        except TimeoutError:
            pass


class AsyncServer:
    """One `serve` call of the async client: `concurrency` workers on one event loop."""

    def __init__(
        self,
        transport: AsyncTransport,
        handler: AsyncHandler,
        *,
        max_tasks: int | None,
        wait: int,
        concurrency: int,
        stop: AsyncStopSignal,
    ) -> None:
        self._transport = transport
        self._handler = handler
        self._budget = ClaimBudget(max_tasks)
        self._wait = wait
        self._concurrency = concurrency
        self.stop = stop

    async def run(self) -> int:
        """Serve until `max_tasks` are handled or the stop is signalled; the number handled."""
        outcomes = await asyncio.gather(
            *(self._work_until_error() for _ in range(self._concurrency)),
            return_exceptions=True,
        )
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        return self._budget.handled

    async def _work_until_error(self) -> None:
        try:
            await self._work()
        except BaseException:
            self.stop.set()  # the other workers finish what they hold, then stop
            raise

    async def _work(self) -> None:
        backoff = Backoff()
        while not self.stop.is_set() and self._budget.reserve():
            try:
                task = await self._claim()
            except PASSING_ERRORS as error:
                self._budget.release()
                delay = backoff.next_delay()
                logger.warning("forgebench: claim failed (%s); again in %.1f s", error, delay)
                await self.stop.sleep(delay)
                continue
            except BaseException:
                self._budget.release()
                raise
            backoff.reset()
            if task is None:
                self._budget.release()
                continue
            await self._post(task, await self._answer(task))
            self._budget.finish()

    async def _claim(self) -> Task | None:
        body = await self._transport.send(requests.claim_next_task(wait=self._wait))
        return Task(body) if body is not None else None

    async def _answer(self, task: Task) -> TaskReply:
        try:
            with continued_trace_of(task):
                result = self._handler(task)
                if inspect.isawaitable(result):
                    result = await result
            return reply_from_result(result)
        except Exception as error:
            logger.exception("forgebench: the handler raised on task %s; it fails", task.id)
            return TaskReply.failed(error_message(error))

    async def _post(self, task: Task, reply: TaskReply) -> None:
        backoff = Backoff()
        for _attempt in range(MAX_REPLY_ATTEMPTS):
            try:
                await self._transport.send(requests.post_result(task.id, reply.to_json()))
                return
            except (APIStatusError, APIConnectionError) as error:
                step = step_after_reply_error(task, reply, error, backoff)
            if step is None:
                return
            if isinstance(step, TaskReply):
                reply = step
            else:
                await asyncio.sleep(step)  # a claimed task is answered even when stopping
        logger.error("forgebench: gave up replying to task %s", task.id)
