"""The Python SDK of the Forgebench A2A gateway.

from forgebench import Forgebench

client = Forgebench(api_key=..., base_url="https://api.forgebench.ai")
task = client.agents.call("invoice-classifier", text="Classify this invoice", wait=30)
"""

from ._async_client import AsyncAgents, AsyncForgebench
from ._client import Agents, Forgebench
from ._errors import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    ForgebenchError,
    InternalServerError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitError,
    ServiceUnavailableError,
    UnprocessableEntityError,
    UnprocessableError,
)
from ._http import HOSTED_URL
from ._pages import CardPage, TaskPage
from ._task import Task, TaskReply
from ._types import Artifact, Direction, FileRef, Message, Part, TaskResultIn, TaskState
from ._version import __version__
from .webhooks import (
    ReplayCache,
    WebhookVerificationError,
    fetch_jwks,
    fetch_jwks_async,
    verify_delivery,
)

__all__ = [
    "APIConnectionError",
    "APIStatusError",
    "APITimeoutError",
    "Agents",
    "Artifact",
    "AsyncAgents",
    "AsyncForgebench",
    "AuthenticationError",
    "BadRequestError",
    "CardPage",
    "ConflictError",
    "Direction",
    "FileRef",
    "Forgebench",
    "ForgebenchError",
    "HOSTED_URL",
    "InternalServerError",
    "Message",
    "NotFoundError",
    "Part",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "RateLimitError",
    "ReplayCache",
    "ServiceUnavailableError",
    "Task",
    "TaskPage",
    "TaskReply",
    "TaskResultIn",
    "TaskState",
    "UnprocessableEntityError",
    "UnprocessableError",
    "WebhookVerificationError",
    "__version__",
    "fetch_jwks",
    "fetch_jwks_async",
    "verify_delivery",
]
