//! Reading a POST Object form up to its file, with the bytes before the
//! file bounded as S3 bounds them: 20 KB of fields and boundaries. Past
//! that the upload is refused with MaxPostPreDataLengthExceeded before
//! anything more is buffered, and a field given twice is refused, so the
//! policy and the object always see the same single value.
//!
//! The bound sits under the multipart parser: [`Gated`] hands the parser
//! at most the budget until the handler has seen the file field begin.
//! When the parser wants more than the budget to find the next field, it
//! is parked (`Pending`) and [`Gate::within`] turns that into the error.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use futures::Stream;

use crate::error::{S3Error, S3Result};

/// An error of a request body stream (the same type as the store's).
pub type BodyError = Box<dyn std::error::Error + Send + Sync>;
/// A request body as the store consumes it (the same type as placement's
/// `BodyStream`).
pub type BodyStream = Pin<Box<dyn Stream<Item = Result<Bytes, BodyError>> + Send>>;

/// Form bytes S3 reads before the file (fields with their boundaries).
pub const MAX_PRE_DATA_BYTES: usize = 20 * 1024;
/// Room for the file part's own headers (name, filename, content type),
/// which arrive before the file data but are not form fields.
const FILE_HEADER_ROOM: usize = 4 * 1024;

#[derive(Default)]
struct GateState {
    /// Bytes handed to the parser so far.
    given: usize,
    /// The file has begun: no more limit.
    open: bool,
    /// The parser asked for more than the budget.
    parked: bool,
    waker: Option<Waker>,
}

/// The shared switch between the body stream and the form reader.
#[derive(Clone, Default)]
pub struct Gate(Arc<Mutex<GateState>>);

impl Gate {
    fn budget() -> usize {
        MAX_PRE_DATA_BYTES + FILE_HEADER_ROOM
    }

    /// Lifts the limit (the file field has begun) and wakes the parser.
    pub fn open(&self) {
        let waker = {
            let mut s = self.0.lock().expect("gate lock");
            s.open = true;
            s.parked = false;
            s.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Awaits `fut` (a step of the parser before the file), failing with
    /// MaxPostPreDataLengthExceeded as soon as the parser is parked at the
    /// budget without an answer.
    pub async fn within<T>(&self, fut: impl Future<Output = T>) -> S3Result<T> {
        let mut fut = std::pin::pin!(fut);
        std::future::poll_fn(|cx| match fut.as_mut().poll(cx) {
            Poll::Ready(v) => Poll::Ready(Ok(v)),
            Poll::Pending if self.0.lock().expect("gate lock").parked => {
                Poll::Ready(Err(S3Error::MaxPostPreDataLengthExceeded))
            }
            Poll::Pending => Poll::Pending,
        })
        .await
    }
}

/// The request body as the parser sees it: within the gate's budget until
/// the gate opens.
pub struct Gated {
    inner: BodyStream,
    held: Option<Bytes>,
    gate: Gate,
}

impl Gated {
    /// Wraps `inner`.
    pub fn new(inner: BodyStream, gate: Gate) -> Gated {
        Gated {
            inner,
            held: None,
            gate,
        }
    }
}

impl Stream for Gated {
    type Item = Result<Bytes, BodyError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let chunk = match this.held.take() {
            Some(c) => c,
            None => match this.inner.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(c))) => c,
                other => return other,
            },
        };
        let mut s = this.gate.0.lock().expect("gate lock");
        if s.open {
            return Poll::Ready(Some(Ok(chunk)));
        }
        let room = Gate::budget() - s.given;
        if room == 0 {
            s.parked = true;
            s.waker = Some(cx.waker().clone());
            this.held = Some(chunk);
            return Poll::Pending;
        }
        let mut chunk = chunk;
        if chunk.len() > room {
            this.held = Some(chunk.split_off(room));
        }
        s.given += chunk.len();
        Poll::Ready(Some(Ok(chunk)))
    }
}

/// The fields before the file (names lower-case) and the file field.
pub struct Form {
    /// Each field once, in form order.
    pub fields: Vec<(String, String)>,
    /// The file; its data streams without limit from here.
    pub file: multer::Field<'static>,
}

/// Reads `body` as a multipart form up to its `file` field.
pub async fn read(body: BodyStream, boundary: String) -> S3Result<Form> {
    let gate = Gate::default();
    let mut form = multer::Multipart::new(Gated::new(body, gate.clone()), boundary);
    let malformed = |e: multer::Error| {
        S3Error::MalformedXml(format!("Malformed multipart/form-data body: {e}"))
    };
    let mut fields: Vec<(String, String)> = Vec::new();
    let mut size = 0;
    loop {
        let Some(mut field) = gate.within(form.next_field()).await?.map_err(malformed)? else {
            return Err(S3Error::IncorrectNumberOfFiles);
        };
        let name = field.name().unwrap_or("").to_ascii_lowercase();
        if name == "file" {
            gate.open();
            return Ok(Form {
                fields,
                file: field,
            });
        }
        if fields.iter().any(|(n, _)| *n == name) {
            return Err(S3Error::InvalidArgument(
                format!(
                    "The form field '{name}' is given more than once; POST takes each field once."
                ),
                Some((name, String::new())),
            ));
        }
        let mut value = Vec::new();
        while let Some(chunk) = gate.within(field.chunk()).await?.map_err(malformed)? {
            value.extend_from_slice(&chunk);
            if size + name.len() + value.len() > MAX_PRE_DATA_BYTES {
                return Err(S3Error::MaxPostPreDataLengthExceeded);
            }
        }
        let value = String::from_utf8(value).map_err(|_| {
            S3Error::InvalidArgument(format!("The form field '{name}' is not UTF-8."), None)
        })?;
        size += name.len() + value.len();
        fields.push((name, value));
    }
}
