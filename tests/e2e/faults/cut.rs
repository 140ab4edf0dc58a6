//! Requests whose client goes away: a signed request written to a raw
//! socket, and the connection closed at a chosen moment — before the
//! body, in the middle of it, right after it, or while the server commits
//! (a fault point holds the commit open for a while, and the client
//! closes during it). This is what an SDK that times out, or a killed
//! client, does to a server.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::harness::{Raw, Server, SECRET, USER};

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
}

impl Window {
    /// The phase the server counts a disconnect in this window under.
    pub fn phase(self) -> &'static str {
        match self {
            Window::BeforeBody => "before_body",
            Window::DuringBody => "during_body",
            Window::AfterBody => "after_body",
            Window::Commit(_) => "commit",
        }
    }
}

/// Sends `method path` (path with its query) with `headers` and `body`,
/// signed with UNSIGNED-PAYLOAD, and closes the connection in `window`.
/// Returns what the server answered before the close (usually nothing).
pub async fn cut(
    s: &Server,
    method: &str,
    path: &str,
    headers: &[(&'static str, String)],
    body: &[u8],
    window: Window,
) -> String {
    let mut raw = Raw::new(method, format!("{}{path}", s.endpoint)).body(body.to_vec());
    raw.signed_payload = false;
    for (k, v) in headers {
        raw = raw.header(k, v.clone());
    }
    let req = raw.signed(USER, SECRET, "us-east-1", None);
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    for (k, v) in req.headers() {
        head.push_str(&format!("{}: {}\r\n", k, v.to_str().unwrap()));
    }
    head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
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
    }
    // Whatever arrived already, without waiting for more.
    let mut answer = vec![0u8; 4096];
    let got = match tokio::time::timeout(Duration::from_millis(1), sock.read(&mut answer)).await {
        Ok(Ok(n)) => n,
        _ => 0,
    };
    let _ = sock.shutdown().await;
    drop(sock);
    String::from_utf8_lossy(&answer[..got]).into_owned()
}
