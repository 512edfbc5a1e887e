"""Sending a `Request`: authentication, timeouts, retries and typed errors, sync and async."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx

from ._auth import Credential, StaticKey, is_invalid_token
from ._errors import APIConnectionError, APITimeoutError, error_for_response
from ._requests import Request
from ._retry import delay_after_error, delay_after_response
from ._tracing import outgoing_headers
from ._version import __version__

# The hosted service's URL, for callers to pass as `base_url`; never used when none is given.
HOSTED_URL = "https://api.forgebench.ai"
DEFAULT_TIMEOUT_SECONDS = 30.0
DEFAULT_MAX_RETRIES = 2
USER_AGENT = f"forgebench-python/{__version__}"


class _TransportSettings:
    """What both transports share: where, who (a key, or a token provider's tokens), and how
    patiently."""

    def __init__(
        self, credential: str | Credential, base_url: str, timeout: float, max_retries: int
    ) -> None:
        if max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        self._credential = (
            StaticKey(credential) if isinstance(credential, str) else credential
        )
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.max_retries = max_retries

    def __repr__(self) -> str:  # never the key
        return f"{type(self).__name__}(base_url={self.base_url!r})"

    def refreshed_after(self, response: httpx.Response, token: str, refreshed: bool) -> bool:
        """Whether to send the request again with a new token: a provider's token was refused
        as invalid (`401`, `error="invalid_token"`) and none was asked for yet for this request.

        The refused token is forgotten, so the next one comes from the provider. Nothing was
        done by a refused request, so it is sent again whatever it is.
        """
        if refreshed or not self._credential.refreshes or not is_invalid_token(response):
            return False
        self._credential.forget(token)
        return True

    def request_arguments(self, request: Request, token: str) -> dict[str, Any]:
        """The keyword arguments of `httpx.Client.request` for `request`, signed in with `token`."""
        headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/json",
            "User-Agent": USER_AGENT,
            # the application's OpenTelemetry context, when it has one: its trace continues
            **outgoing_headers(),
            **request.headers,
        }
        arguments: dict[str, Any] = {
            "method": request.method,
            "url": self.base_url + request.path,
            "params": dict(request.params),
            "headers": headers,
            # the gateway holds a waiting request up to `wait` seconds before it answers
            "timeout": httpx.Timeout(self.timeout + request.wait, connect=self.timeout),
        }
        if request.json is not None:
            arguments["json"] = request.json
        return arguments

    def delay_before_retry(
        self, request: Request, attempt: int, outcome: httpx.Response | httpx.TransportError
    ) -> float | None:
        """The pause before sending `request` again, or None when it is not sent again."""
        if attempt >= self.max_retries:
            return None
        if isinstance(outcome, httpx.Response):
            return delay_after_response(outcome, attempt, repeatable=request.repeatable)
        return delay_after_error(outcome, attempt, repeatable=request.repeatable)


def _body_of(request: Request, response: httpx.Response) -> Any:
    """The JSON body of a success, None for an allowed 204; a typed error for anything else."""
    if response.status_code == 204 and request.no_content_ok:
        return None
    if not response.is_success:
        raise error_for_response(response)
    return response.json()


def _connection_error(error: httpx.TransportError) -> APIConnectionError:
    if isinstance(error, httpx.TimeoutException):
        return APITimeoutError(f"the gateway did not answer in time: {error}")
    return APIConnectionError(f"could not reach the gateway: {error}")


class SyncTransport(_TransportSettings):
    """Sends requests with an `httpx.Client` (its own, or one the caller passed and owns)."""

    def __init__(
        self,
        credential: str | Credential,
        base_url: str,
        timeout: float,
        max_retries: int,
        http_client: httpx.Client | None,
    ) -> None:
        super().__init__(credential, base_url, timeout, max_retries)
        self._owns_client = http_client is None
        self._client = http_client if http_client is not None else httpx.Client()

    def send(self, request: Request) -> Any:
        """The response body of `request`, retrying what is safe to retry."""
        attempt, refreshed = 0, False
        while True:
            token = self._credential.token()
            try:
                response = self._client.request(**self.request_arguments(request, token))
            except httpx.TransportError as error:
                delay = self.delay_before_retry(request, attempt, error)
                if delay is None:
                    raise _connection_error(error) from error
            else:
                if self.refreshed_after(response, token, refreshed):
                    response.close()
                    refreshed = True
                    continue
                delay = self.delay_before_retry(request, attempt, response)
                if delay is None:
                    return _body_of(request, response)
                response.close()
            time.sleep(delay)
            attempt += 1

    @contextmanager
    def stream(self, request: Request) -> Iterator[httpx.Response]:
        """The response of `request` with its body unread (a stream), retried as `send` is.

        Retries happen only until a success comes; a refusal raises its typed error.
        """
        attempt, refreshed = 0, False
        while True:
            token = self._credential.token()
            try:
                built = self._client.build_request(**self.request_arguments(request, token))
                response = self._client.send(built, stream=True)
            except httpx.TransportError as error:
                delay = self.delay_before_retry(request, attempt, error)
                if delay is None:
                    raise _connection_error(error) from error
            else:
                if self.refreshed_after(response, token, refreshed):
                    response.close()
                    refreshed = True
                    continue
                delay = self.delay_before_retry(request, attempt, response)
                if delay is None:
                    break
                response.close()
            time.sleep(delay)
            attempt += 1
        try:
            if not response.is_success:
                response.read()
                raise error_for_response(response)
            yield response
        except httpx.TransportError as error:
            raise _connection_error(error) from error
        finally:
            response.close()

    def close(self) -> None:
        if self._owns_client:
            self._client.close()


class AsyncTransport(_TransportSettings):
    """Sends requests with an `httpx.AsyncClient` (its own, or one the caller passed and owns)."""

    def __init__(
        self,
        credential: str | Credential,
        base_url: str,
        timeout: float,
        max_retries: int,
        http_client: httpx.AsyncClient | None,
    ) -> None:
        super().__init__(credential, base_url, timeout, max_retries)
        self._owns_client = http_client is None
        self._client = http_client if http_client is not None else httpx.AsyncClient()

    async def send(self, request: Request) -> Any:
        """The response body of `request`, retrying what is safe to retry."""
        attempt, refreshed = 0, False
        while True:
            token = await self._credential.token_async()
            try:
                response = await self._client.request(**self.request_arguments(request, token))
            except httpx.TransportError as error:
                delay = self.delay_before_retry(request, attempt, error)
                if delay is None:
                    raise _connection_error(error) from error
            else:
                if self.refreshed_after(response, token, refreshed):
                    await response.aclose()
                    refreshed = True
                    continue
                delay = self.delay_before_retry(request, attempt, response)
                if delay is None:
                    return _body_of(request, response)
                await response.aclose()
            await asyncio.sleep(delay)
            attempt += 1

    @asynccontextmanager
    async def stream(self, request: Request) -> AsyncIterator[httpx.Response]:
        """The response of `request` with its body unread (a stream); see `SyncTransport.stream`."""
        attempt, refreshed = 0, False
        while True:
            token = await self._credential.token_async()
            try:
                built = self._client.build_request(**self.request_arguments(request, token))
                response = await self._client.send(built, stream=True)
            except httpx.TransportError as error:
                delay = self.delay_before_retry(request, attempt, error)
                if delay is None:
                    raise _connection_error(error) from error
            else:
                if self.refreshed_after(response, token, refreshed):
                    await response.aclose()
                    refreshed = True
                    continue
                delay = self.delay_before_retry(request, attempt, response)
                if delay is None:
                    break
                await response.aclose()
            await asyncio.sleep(delay)
            attempt += 1
        try:
            if not response.is_success:
                await response.aread()
                raise error_for_response(response)
            yield response
        except httpx.TransportError as error:
            raise _connection_error(error) from error
        finally:
            await response.aclose()

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()
