//! The bytes of an object version as a stream, wherever they are: read
//! from the erasure set, from the pool holding a tier object, or from a
//! tier outside the deployment. Ends early with an error if the data cannot
//! be read correctly (never with wrong bytes).

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::{Stream, StreamExt, TryStreamExt};
use tokio::sync::mpsc;

use crate::error::Error;

/// Chunks a tier outside the deployment sends ahead of the consumer.
const FORWARD_AHEAD: usize = 1;

/// Stream of an object's bytes.
pub struct ObjectStream(Pin<Box<dyn Stream<Item = Result<Bytes, Error>> + Send>>);

impl ObjectStream {
    /// A stream whose source is found first (e.g. a tier object's record
    /// is resolved): an error finding it is the stream's only item. The
    /// source is looked for when the stream is first polled.
    pub fn deferred<F>(source: F) -> ObjectStream
    where
        F: std::future::Future<Output = Result<ObjectStream, Error>> + Send + 'static,
    {
        ObjectStream(Box::pin(futures::stream::once(source).try_flatten()))
    }

    /// An object stream fed by any stream of chunks (a tier outside the
    /// deployment): a task reads it ahead of the consumer.
    pub fn from_stream<S>(source: S) -> ObjectStream
    where
        S: Stream<Item = Result<Bytes, Error>> + Send + 'static,
    {
        let (tx, rx) = mpsc::channel(FORWARD_AHEAD);
        tokio::spawn(async move {
            let mut source = std::pin::pin!(source);
            while let Some(item) = source.next().await {
                let failed = item.is_err();
                if tx.send(item).await.is_err() || failed {
                    break;
                }
            }
        });
        ObjectStream(Box::pin(receiver_stream(rx)))
    }
}

/// The items of `rx` until its senders are gone.
fn receiver_stream<T: Send + 'static>(rx: mpsc::Receiver<T>) -> impl Stream<Item = T> + Send {
    futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    })
}

impl From<erasure_set::ObjectStream> for ObjectStream {
    fn from(set: erasure_set::ObjectStream) -> ObjectStream {
        ObjectStream(Box::pin(set.map_err(Error::from)))
    }
}

impl Stream for ObjectStream {
    type Item = Result<Bytes, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.as_mut().poll_next(cx)
    }
}
