//! Clients that go away: for PUT (new keys and overwrites), UploadPart,
//! CompleteMultipartUpload, CopyObject, DeleteObjects and PutObjectTagging,
//! the connection is closed before the body, in the middle of it, right
//! after it, and while the server writes the records; each window is hit
//! (as the server counts it) in [`trials`] trials, in a versioned and an
//! unversioned bucket. The client then does what an SDK does (retries, or
//! reads), and after recovery every key is read and the history judged;
//! a retagged key keeps its object and has its old tags or its new ones.

use std::time::Duration;

use aws_sdk_s3::types::CompletedPart;

use super::control::{self, Counts};
use super::cut::{cut, Window};
use super::history::{body_of, History, Kind, Outcome};
use super::recorder::Recorder;
use super::workload::Workload;
use super::{assert_linearizable, seed, trials};
use crate::harness::{content_md5, Server};

/// An operation whose client goes away.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cut {
    Put,
    Overwrite,
    UploadPart,
    Complete,
    Copy,
    DeleteObjects,
    Tagging,
}

impl Cut {
    /// The operation's name as the server counts it.
    fn api(self) -> &'static str {
        match self {
            Cut::Put | Cut::Overwrite => "PutObject",
            Cut::UploadPart => "UploadPart",
            Cut::Complete => "CompleteMultipartUpload",
            Cut::Copy => "CopyObject",
            Cut::DeleteObjects => "DeleteObjects",
            Cut::Tagging => "PutObjectTagging",
        }
    }

    /// The windows a client of it can go away in.
    fn windows(self) -> Vec<Window> {
        let commit = Window::Commit(Duration::from_millis(80));
        match self {
            // No request body: the connection closes while the data is
            // copied, or while the records are written.
            Cut::Copy => vec![Window::BeforeBody, commit],
            _ => vec![
                Window::BeforeBody,
                Window::DuringBody,
                Window::AfterBody,
                commit,
            ],
        }
    }

    /// The fault points that hold the server in a window long enough for
    /// the client's close to land there.
    fn holds(self, window: Window) -> &'static [(&'static str, &'static str)] {
        match (self, window) {
            (Cut::DeleteObjects, Window::Commit(_)) => &[
                ("set.delete.removed", "return(sleep:250@disk1)"),
                ("set.record.stored", "return(sleep:250@disk1)"),
            ],
            (Cut::UploadPart, Window::Commit(_)) => &[("part.stored", "return(sleep:250@disk1)")],
            (_, Window::Commit(_)) => &[("set.record.stored", "return(sleep:250@disk1)")],
            (_, Window::AfterBody) => &[("request.received", "return(sleep:250)")],
            (Cut::Copy, Window::BeforeBody) => &[("copy.streamed", "return(sleep:250)")],
            _ => &[],
        }
    }
}

struct Run {
    s: Server,
    h: History,
    w: Workload,
    keys: Vec<(Recorder, String)>,
    /// Keys whose retagging was cut, with the tag value it sent.
    tagged: Vec<(Recorder, String, String)>,
}

impl Run {
    fn value(&mut self) -> u64 {
        self.w.value()
    }

    /// One trial of `op` cut in `window`.
    async fn trial(&mut self, op: Cut, window: Window, n: usize) {
        let r = self.w.recorder();
        let key = format!("{op:?}/{}/{n}", window.phase());
        let note = format!("{op:?} cut {}", window.phase());
        let (v, len) = (self.value(), self.w.size());
        for (point, actions) in op.holds(window) {
            control::set(&self.s, point, actions).await;
        }
        match op {
            Cut::Put | Cut::Overwrite => {
                if op == Cut::Overwrite {
                    let first = self.value();
                    r.put(&key, first, len, "before the cut").await;
                }
                let id = self.h.invoke(&r.name(&key), Kind::Put(v), note);
                let path = format!("/{}/{key}", r.bucket);
                cut(&self.s, "PUT", &path, &[], &body_of(v, len), window).await;
                self.h
                    .complete(id, Outcome::Unknown("connection closed".into()), None, None);
            }
            Cut::UploadPart => {
                let Ok(upload) = r.create_upload(&key).await else {
                    return;
                };
                let id = self.h.invoke(&r.name(&key), Kind::Put(v), note);
                let path = format!("/{}/{key}?partNumber=1&uploadId={upload}", r.bucket);
                let body = body_of(v, len);
                cut(&self.s, "PUT", &path, &[], &body, window).await;
                self.release(op, window).await;
                // The SDK sends the part again, then completes.
                let outcome = match r.upload_part(&key, &upload, 1, body).await {
                    Ok(etag) => {
                        let part = CompletedPart::builder().part_number(1).e_tag(etag).build();
                        r.complete_as(id, &key, &upload, &[part]).await.outcome
                    }
                    Err(e) => {
                        self.h.complete(id, Outcome::Unknown(e.clone()), None, None);
                        Outcome::Unknown(e)
                    }
                };
                assert_eq!(
                    outcome,
                    Outcome::Done,
                    "{key}: the retried part and completion"
                );
                self.keys.push((r, key));
                return;
            }
            Cut::Complete => {
                let Ok((upload, parts)) = r.upload(&key, v, len, 8 << 20).await else {
                    return;
                };
                let id = self.h.invoke(&r.name(&key), Kind::Put(v), note);
                let path = format!("/{}/{key}?uploadId={upload}", r.bucket);
                cut(&self.s, "POST", &path, &[], &complete_xml(&parts), window).await;
                self.release(op, window).await;
                // The SDK sends the completion again: it must succeed.
                let again = r.complete_as(id, &key, &upload, &parts).await;
                assert_eq!(
                    again.outcome,
                    Outcome::Done,
                    "{key}: the retried completion"
                );
                self.keys.push((r, key));
                return;
            }
            Cut::Copy => {
                let source = format!("{key}.source");
                r.put(&source, v, len, "copy source").await;
                self.keys.push((r.clone(), source.clone()));
                let id = self.h.invoke(&r.name(&key), Kind::Put(v), note);
                let path = format!("/{}/{key}", r.bucket);
                let headers = [("x-amz-copy-source", format!("/{}/{source}", r.bucket))];
                cut(&self.s, "PUT", &path, &headers, &[], window).await;
                self.h
                    .complete(id, Outcome::Unknown("connection closed".into()), None, None);
            }
            Cut::DeleteObjects => {
                let doomed: Vec<String> = (0..3).map(|i| format!("{key}.{i}")).collect();
                for d in &doomed {
                    let w = self.value();
                    r.put(d, w, 20_000, "to be deleted").await;
                    self.keys.push((r.clone(), d.clone()));
                }
                let ids: Vec<_> = doomed
                    .iter()
                    .map(|d| self.h.invoke(&r.name(d), Kind::Delete, note.clone()))
                    .collect();
                let xml = delete_xml(&doomed);
                let path = format!("/{}/?delete", r.bucket);
                let md5 = [("content-md5", content_md5(&xml))];
                cut(&self.s, "POST", &path, &md5, &xml, window).await;
                for id in ids {
                    self.h
                        .complete(id, Outcome::Unknown("connection closed".into()), None, None);
                }
            }
            Cut::Tagging => {
                r.put(&key, v, len, "to be retagged").await;
                let tag = format!("{}-{n}", window.phase());
                let xml = format!(
                    "<Tagging><TagSet><Tag><Key>cut</Key><Value>{tag}</Value></Tag></TagSet></Tagging>"
                );
                let path = format!("/{}/{key}?tagging", r.bucket);
                let md5 = [("content-md5", content_md5(xml.as_bytes()))];
                cut(&self.s, "PUT", &path, &md5, xml.as_bytes(), window).await;
                self.tagged.push((r.clone(), key.clone(), tag));
            }
        }
        self.release(op, window).await;
        self.keys.push((r, key));
    }

    /// Clears the fault points holding the window, once the server has
    /// moved on.
    async fn release(&self, op: Cut, window: Window) {
        if op.holds(window).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        for (point, _) in op.holds(window) {
            control::set(&self.s, point, "off").await;
        }
    }
}

/// Checks, after recovery, that each retagged key has no tags or exactly
/// the one its cut request sent; returns what differs, and how many keys
/// have the new tag.
async fn check_tags(endpoint: &str, tagged: &[(Recorder, String, String)]) -> (Vec<String>, usize) {
    let mut wrong = Vec::new();
    let mut new = 0;
    for (r, key, tag) in tagged {
        let r = r.at(endpoint);
        let got = match r
            .c
            .get_object_tagging()
            .bucket(&r.bucket)
            .key(key)
            .send()
            .await
        {
            Ok(out) => out
                .tag_set()
                .iter()
                .map(|t| (t.key().to_string(), t.value().to_string()))
                .collect::<Vec<_>>(),
            Err(e) => {
                wrong.push(format!("{}/{key}: {e:?}", r.bucket));
                continue;
            }
        };
        if got == [("cut".to_string(), tag.clone())] {
            new += 1;
        } else if !got.is_empty() {
            wrong.push(format!("{}/{key}: tags {got:?}, sent cut={tag}", r.bucket));
        }
    }
    (wrong, new)
}

fn complete_xml(parts: &[CompletedPart]) -> Vec<u8> {
    let mut x = String::from("<CompleteMultipartUpload>");
    for p in parts {
        x.push_str(&format!(
            "<Part><PartNumber>{}</PartNumber><ETag>{}</ETag></Part>",
            p.part_number().unwrap(),
            p.e_tag().unwrap()
        ));
    }
    x.push_str("</CompleteMultipartUpload>");
    x.into_bytes()
}

fn delete_xml(keys: &[String]) -> Vec<u8> {
    let mut x = String::from("<Delete>");
    for k in keys {
        x.push_str(&format!("<Object><Key>{k}</Key></Object>"));
    }
    x.push_str("</Delete>");
    x.into_bytes()
}

/// Every operation cut in every window until the server counted
/// [`trials`] disconnects there; then recovery, final reads, a listing,
/// and the checker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_go_away_lose_nothing_and_leave_nothing_half_visible() {
    let seed = seed("disconnects");
    let s = control::server(4, &["--pack-threshold-kib", "64"]);
    let h = History::default();
    let w = Workload::start(&s.endpoint, &h, seed).await;
    let mut run = Run {
        s,
        h: h.clone(),
        w,
        keys: Vec::new(),
        tagged: Vec::new(),
    };
    let want = trials() as u64;
    let started = std::time::Instant::now();
    let mut report = Vec::new();
    for op in [
        Cut::Put,
        Cut::Overwrite,
        Cut::UploadPart,
        Cut::Complete,
        Cut::Copy,
        Cut::DeleteObjects,
        Cut::Tagging,
    ] {
        for window in op.windows() {
            let base = control::counts(&run.s).await;
            let mut n = 0;
            let seen = |c: &Counts| {
                c.disconnects(op.api(), window.phase()) - base.disconnects(op.api(), window.phase())
            };
            loop {
                let now = control::counts(&run.s).await;
                if seen(&now) >= want {
                    break;
                }
                assert!(
                    n < 3 * want as usize,
                    "{op:?} cut {}: the server saw {} of {want} disconnects in {n} trials",
                    window.phase(),
                    seen(&now)
                );
                run.trial(op, window, n).await;
                // Listings taken while the trials go on are judged too.
                if n % 5 == 4 {
                    let r = run.w.recorder();
                    r.list(&format!("{op:?}/")).await.unwrap();
                }
                n += 1;
            }
            report.push(format!("{op:?}/{}: {n} trials", window.phase()));
        }
    }
    eprintln!(
        "disconnects: {} in {:?}",
        report.join(", "),
        started.elapsed()
    );
    // Recovery: heal, restart, read every key, list both buckets.
    let keys = run.keys.iter().map(|(r, k)| (r, k.as_str()));
    let lost = super::recover_and_read(&mut run.s, &h, keys).await;
    let endpoint = run.s.endpoint.clone();
    run.w.moved_to(&endpoint);
    run.w.plain.list("").await.unwrap();
    run.w.versioned.list("").await.unwrap();
    let checked = assert_linearizable(&h, "disconnects");
    assert!(lost.is_empty(), "{lost:?}");
    let (wrong, new) = check_tags(&endpoint, &run.tagged).await;
    assert!(wrong.is_empty(), "{wrong:?}");
    eprintln!(
        "disconnects: {new} of {} cut retaggings took effect",
        run.tagged.len()
    );
    eprintln!(
        "disconnects: {} keys and {} operations checked, 0 violations, {:?} in all",
        checked.keys,
        checked.ops,
        started.elapsed()
    );
}
