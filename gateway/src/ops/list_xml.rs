//! The ListObjects (v1) and ListObjectsV2 response documents, written
//! directly into one string. A page of 1,000 keys is the largest document
//! the gateway renders on a hot path; generic serialisation of it cost a
//! fifth of a listing's server time (benches/RESULTS.md).

use std::fmt::Write as _;

use placement::Etag;

use crate::headers::push_iso8601;
use s3_wire::xml::{Owner, NS};
use s3_wire::xml_escape::push_escaped;

/// One listed object as it appears in `<Contents>`.
pub(crate) struct ContentsEntry<'a> {
    pub key: &'a str,
    /// Modification time, ns since the epoch.
    pub mtime_ns: u64,
    pub etag: &'a Etag<'a>,
    pub checksum: Option<(&'a str, &'a str)>,
    pub size: u64,
    pub storage_class: &'a str,
    /// Until when an archived object is reported restored, when the
    /// request asked for its restore status.
    pub restore_expiry_ns: Option<u64>,
}

/// A listing document under construction.
pub(crate) struct ListingXml {
    out: String,
    /// The last second rendered (since the epoch) and its text up to the
    /// milliseconds: keys written together share it.
    second: Option<(u64, String)>,
}

impl ListingXml {
    /// Starts a `<ListBucketResult>` document sized for `entries` entries.
    pub fn new(entries: usize) -> ListingXml {
        let mut out = String::with_capacity(512 + entries * 320);
        out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult xmlns=\"");
        out.push_str(NS);
        out.push_str("\">");
        ListingXml { out, second: None }
    }

    /// `<tag>text</tag>` with the text escaped.
    pub fn text(&mut self, tag: &str, text: &str) -> &mut Self {
        self.open(tag);
        push_escaped(&mut self.out, text);
        self.close(tag);
        self
    }

    /// `<tag>text</tag>` when there is a text.
    pub fn opt(&mut self, tag: &str, text: Option<&str>) -> &mut Self {
        if let Some(t) = text {
            self.text(tag, t);
        }
        self
    }

    /// `<tag>value</tag>` for a number or a flag.
    pub fn value(&mut self, tag: &str, value: impl std::fmt::Display) -> &mut Self {
        self.open(tag);
        let _ = write!(self.out, "{value}");
        self.close(tag);
        self
    }

    /// One `<Contents>` element, written in as few appends as its parts
    /// allow (a page has a thousand of them).
    pub fn contents(&mut self, e: &ContentsEntry<'_>, owner: Option<&Owner>) -> &mut Self {
        self.out.push_str("<Contents><Key>");
        push_escaped(&mut self.out, e.key);
        self.out.push_str("</Key><LastModified>");
        self.last_modified(e.mtime_ns);
        self.out.push_str("</LastModified><ETag>&quot;");
        match e.etag {
            Etag::Md5(_) => self.out.push_str(e.etag.as_str(&mut [0; 32])),
            Etag::Text(t) => push_escaped(&mut self.out, t),
        }
        self.out.push_str("&quot;</ETag>");
        if let Some((algorithm, kind)) = e.checksum {
            self.out.push_str("<ChecksumAlgorithm>");
            push_escaped(&mut self.out, algorithm);
            self.out.push_str("</ChecksumAlgorithm><ChecksumType>");
            push_escaped(&mut self.out, kind);
            self.out.push_str("</ChecksumType>");
        }
        self.out.push_str("<Size>");
        self.out.push_str(itoa::Buffer::new().format(e.size));
        self.out.push_str("</Size>");
        if let Some(o) = owner {
            self.open("Owner");
            self.text("ID", &o.id).text("DisplayName", &o.display_name);
            self.close("Owner");
        }
        self.out.push_str("<StorageClass>");
        push_escaped(&mut self.out, e.storage_class);
        self.out.push_str("</StorageClass>");
        if let Some(t) = e.restore_expiry_ns {
            self.out.push_str(
                "<RestoreStatus><IsRestoreInProgress>false</IsRestoreInProgress><RestoreExpiryDate>",
            );
            self.last_modified(t);
            self.out.push_str("</RestoreExpiryDate></RestoreStatus>");
        }
        self.out.push_str("</Contents>");
        self
    }

    /// An ISO 8601 time with milliseconds, the second's text reused from
    /// the key before when it shares it.
    fn last_modified(&mut self, ns: u64) {
        let second = ns / 1_000_000_000;
        let cached = match &mut self.second {
            Some((s, text)) if *s == second => text,
            slot => {
                let mut text = String::with_capacity(24);
                push_iso8601(&mut text, ns);
                // Up to the milliseconds: "YYYY-MM-DDTHH:MM:SS."
                text.truncate(20);
                &mut slot.insert((second, text)).1
            }
        };
        self.out.push_str(cached);
        let millis = (ns / 1_000_000 % 1000) as u32;
        for d in [millis / 100, millis / 10 % 10, millis % 10] {
            self.out.push(char::from(b'0' + d as u8));
        }
        self.out.push('Z');
    }

    /// One `<CommonPrefixes>` element.
    pub fn common_prefix(&mut self, prefix: &str) -> &mut Self {
        self.open("CommonPrefixes");
        self.text("Prefix", prefix);
        self.close("CommonPrefixes");
        self
    }

    /// Closes the document.
    pub fn finish(mut self) -> String {
        self.close("ListBucketResult");
        self.out
    }

    fn open(&mut self, tag: &str) {
        self.out.push('<');
        self.out.push_str(tag);
        self.out.push('>');
    }

    fn close(&mut self, tag: &str) {
        self.out.push_str("</");
        self.out.push_str(tag);
        self.out.push('>');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_become_references() {
        let mut out = String::new();
        push_escaped(&mut out, "a\rb\nc\0d\te<");
        assert_eq!(out, "a&#13;b&#10;c&#0;d\te&lt;");
    }

    proptest::proptest! {
        #[test]
        fn escaping_matches_a_general_escaper(text in "([a-zé/ ]|[<>&\"'])*") {
            let mut out = String::new();
            push_escaped(&mut out, &text);
            proptest::prop_assert_eq!(out, quick_xml::escape::escape(&text));
        }
    }

    #[test]
    fn times_sizes_and_md5_etags_render_as_s3_shows_them() {
        let etag = Etag::Md5([0xab; 16]);
        let second = 1_767_225_600_000_000_000;
        let mut x = ListingXml::new(4);
        for (ns, size) in [
            (second + 5_000_000, 0),
            (second + 999_000_000, 18_446_744_073_709_551_615),
            (second + 1_007_000_000, 10),
            (second - 1_000_000, 7),
        ] {
            x.contents(
                &ContentsEntry {
                    key: "k",
                    mtime_ns: ns,
                    etag: &etag,
                    checksum: None,
                    size,
                    storage_class: "STANDARD",
                    restore_expiry_ns: None,
                },
                None,
            );
        }
        let doc = x.finish();
        let times: Vec<&str> = doc
            .split("<LastModified>")
            .skip(1)
            .map(|t| &t[..24])
            .collect();
        assert_eq!(
            times,
            [
                "2026-01-01T00:00:00.005Z",
                "2026-01-01T00:00:00.999Z",
                "2026-01-01T00:00:01.007Z",
                "2025-12-31T23:59:59.999Z"
            ]
        );
        assert!(doc.contains("<Size>18446744073709551615</Size>"));
        assert!(doc.contains("<Size>0</Size>"));
        assert!(doc.contains(&format!("<ETag>&quot;{}&quot;</ETag>", "ab".repeat(16))));
    }

    #[test]
    fn escapes_text_and_quotes_the_etag() {
        let mut x = ListingXml::new(1);
        x.text("Name", "b").value("IsTruncated", false).contents(
            &ContentsEntry {
                key: "a<&>\"'.txt",
                mtime_ns: 1_767_225_600_000_000_000,
                etag: &Etag::Text("abc".into()),
                checksum: Some(("CRC32", "FULL_OBJECT")),
                size: 7,
                storage_class: "STANDARD",
                restore_expiry_ns: None,
            },
            None,
        );
        x.common_prefix("p/");
        let doc = x.finish();
        assert!(doc.starts_with(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        ));
        assert!(doc.ends_with(
            "<Name>b</Name><IsTruncated>false</IsTruncated><Contents><Key>a&lt;&amp;&gt;&quot;&apos;.txt</Key>\
             <LastModified>2026-01-01T00:00:00.000Z</LastModified><ETag>&quot;abc&quot;</ETag>\
             <ChecksumAlgorithm>CRC32</ChecksumAlgorithm><ChecksumType>FULL_OBJECT</ChecksumType>\
             <Size>7</Size><StorageClass>STANDARD</StorageClass></Contents>\
             <CommonPrefixes><Prefix>p/</Prefix></CommonPrefixes></ListBucketResult>"
        ));
        let parsed: Result<quick_xml::events::Event, _> =
            quick_xml::Reader::from_str(&doc).read_event();
        assert!(parsed.is_ok());
    }
}
