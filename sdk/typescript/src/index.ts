export {
  Forgebench,
  HOSTED_URL,
  API_KEY_VARIABLE,
  URL_VARIABLE,
  DEFAULT_MAX_RETRIES,
  DEFAULT_TIMEOUT_MS,
  type ForgebenchOptions,
} from "./client.js";
export { type Agents, type CallOptions, type RequestOptions, type WaitOptions } from "./agents.js";
export {
  DEFAULT_SERVE_WAIT_SECONDS,
  type ServeHandler,
  type ServeOptions,
} from "./serve.js";
export {
  MAX_ERROR_CHARS,
  RESPONSE_ARTIFACT,
  TaskReply,
  reply,
  resultOf,
  type DoneOptions,
  type HandlerReturn,
  type ReplyBuilder,
} from "./reply.js";
export { artifactText, messageText } from "./text.js";
export {
  APIConnectionError,
  AuthenticationError,
  BadRequestError,
  ConflictError,
  ConnectionError,
  ForgebenchError,
  InternalServerError,
  NotFoundError,
  PayloadTooLargeError,
  PermissionDeniedError,
  RateLimitError,
  ServiceUnavailableError,
  UnprocessableEntityError,
  type ErrorBody,
  type ErrorDetail,
  type ForgebenchErrorOptions,
} from "./errors.js";
export type {
  Artifact,
  DataPart,
  FilePart,
  FileRef,
  Message,
  Part,
  PartData,
  ResultState,
  Role,
  Task,
  TaskResultIn,
  TaskState,
  TaskStatus,
  TextPart,
} from "./types.js";
