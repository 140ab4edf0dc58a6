//! Requests whose client goes away: a signed request written to a raw
//! socket, and the connection closed at a chosen moment — before the
//! body, in the middle of it, right after it, or while the server commits
//! (a fault point holds the commit open for a while, and the client
//! closes during it). This is what an SDK that times out, or a killed
//! client, does to a server.

use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::control;
use crate::harness::{signed_head, Server};

/// When the client closes the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    /// After the request head, before any body byte.
    BeforeBody,
    /// After half the body.
    DuringBody,
    /// Right after the last body byte.
    AfterBody,
    /// This long after the last body byte (while the server commits).
    Commit(Duration),
    /// As soon as the server has reached this fault point (one that holds
    /// the commit open) after the last body byte.
    AtPoint(&'static str),
}

impl Window {
    /// The phase the server counts a disconnect in this window under.
    pub fn phase(self) -> &'static str {
        match self {
            Window::BeforeBody => "before_body",
            Window::DuringBody => "during_body",
            Window::AfterBody => "after_body",
            Window::Commit(_) | Window::AtPoint(_) => "commit",
        }
    }
}

/// Sends `method path` (path with its query) with `headers` and `body`,
/// signed with UNSIGNED-PAYLOAD, and closes the connection in `window`.
pub async fn cut(
    s: &Server,
    method: &str,
    path: &str,
    headers: &[(&'static str, String)],
    body: &[u8],
    window: Window,
) {
    let arrived = |c: &control::Counts, point: &str| c.points.get(point).map_or(0, |p| p.0);
    let before = match window {
        Window::AtPoint(point) => arrived(&control::counts(s).await, point),
        _ => 0,
    };
    let head = signed_head(s, method, path, headers, body.len(), &[]);
    let mut sock = TcpStream::connect(&s.addr).await.unwrap();
    sock.set_nodelay(true).unwrap();
    let _ = sock.write_all(head.as_bytes()).await;
    match window {
        Window::BeforeBody => {
            // Let the server read the head and start on the request.
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
        Window::DuringBody => {
            let _ = sock.write_all(&body[..body.len() / 2]).await;
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
        Window::AfterBody => {
            let _ = sock.write_all(body).await;
        }
        Window::Commit(wait) => {
            let _ = sock.write_all(body).await;
            tokio::time::sleep(wait).await;
        }
        Window::AtPoint(point) => {
            let _ = sock.write_all(body).await;
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            while arrived(&control::counts(s).await, point) <= before {
                assert!(
                    std::time::Instant::now() < deadline,
                    "{method} {path} never reached {point}"
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    }
    // A moment for the server to take in what was sent before the close
    // lands (without it, a close right after the body is often seen while
    // the body is still being read).
    tokio::time::sleep(Duration::from_millis(1)).await;
    let _ = sock.shutdown().await;
}
