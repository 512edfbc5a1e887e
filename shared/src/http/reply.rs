//! What a route answers with: a buffered body (every route), or a stream of server-sent events
//! (the event-stream routes), as one body type that both the Lambda runtimes and the local
//! gateway send.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::Stream;
use http_body::{Body as HttpBody, Frame, SizeHint};
use lambda_http::{Body, Response};

/// A stream of body chunks, each sent as soon as it is ready.
pub type Chunks = Pin<Box<dyn Stream<Item = Bytes> + Send>>;

/// A route's response body.
pub enum ReplyBody {
    /// The whole body at once.
    Buffered(Body),
    /// Chunks as they come (`text/event-stream`).
    Streamed(Chunks),
}

/// A route's response.
pub type Reply = Response<ReplyBody>;

impl ReplyBody {
    /// The buffered body; a streamed one (which a buffered route never returns) as nothing.
    pub fn into_buffered(self) -> Body {
        match self {
            ReplyBody::Buffered(body) => body,
            ReplyBody::Streamed(_) => Body::Empty,
        }
    }
}

/// A buffered response as a reply.
pub fn buffered(response: Response<Body>) -> Reply {
    response.map(ReplyBody::Buffered)
}

impl HttpBody for ReplyBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            ReplyBody::Buffered(body) => {
                let bytes = match std::mem::replace(body, Body::Empty) {
                    Body::Text(text) => Bytes::from(text),
                    Body::Binary(bytes) => Bytes::from(bytes),
                    _ => return Poll::Ready(None),
                };
                Poll::Ready((!bytes.is_empty()).then(|| Ok(Frame::data(bytes))))
            }
            ReplyBody::Streamed(chunks) => chunks
                .as_mut()
                .poll_next(cx)
                .map(|chunk| chunk.map(|bytes| Ok(Frame::data(bytes)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, ReplyBody::Buffered(Body::Empty))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ReplyBody::Buffered(Body::Text(text)) => SizeHint::with_exact(text.len() as u64),
            ReplyBody::Buffered(Body::Binary(bytes)) => SizeHint::with_exact(bytes.len() as u64),
            ReplyBody::Buffered(_) => SizeHint::with_exact(0),
            ReplyBody::Streamed(_) => SizeHint::default(),
        }
    }
}
