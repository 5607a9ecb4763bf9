//! A [`Document`]: what a response for one file will be, decided from the snapshot alone: its
//! type, validators, representation, and a body that is not read or rendered until opened.

use std::sync::Arc;

use bytes::Bytes;

use super::compress::{self, Coding};
use crate::site::{Group, ServedPage, SmallDoc, Validators};

pub const XML: &str = "application/xml; charset=utf-8";
pub const TEXT: &str = "text/plain; charset=utf-8";
pub const GZIP: &str = "application/gzip";
pub const ATOM: &str = "application/atom+xml; charset=utf-8";
pub const RSS: &str = "application/rss+xml; charset=utf-8";
pub const XSL: &str = "text/xsl; charset=utf-8";
pub const CSS: &str = "text/css; charset=utf-8";
pub const MARKDOWN: &str = "text/markdown; charset=utf-8";
pub const RSL: &str = "application/rsl+xml; charset=utf-8";

/// The content coding a client gets for documents that can be sent more than one way, as its
/// `Accept-Encoding` decides (see `http::conditional::preferred_coding`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accepts {
    Brotli,
    Gzip,
    Identity,
}

/// A document as the client will get it, before conditional checks.
pub struct Document {
    pub content_type: &'static str,
    /// Strong ETag, quoted.
    pub etag: String,
    pub validators: Validators,
    /// `Content-Encoding`, when the body is encoded for transfer.
    pub encoding: Option<&'static str>,
    /// Whether the representation depends on `Accept-Encoding`.
    pub varies_by_encoding: bool,
    pub body: Body,
}

/// Where a document's bytes come from; nothing is read until [`super::Reader::open`].
pub enum Body {
    /// A small document held in memory.
    Bytes(Bytes),
    /// A sitemap file, rendered from its rows as it streams.
    Page {
        group: Arc<Group>,
        /// Boxed: a page's description is far larger than the other variant.
        served: Box<ServedPage>,
        form: PageForm,
    },
}

/// How a sitemap file is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageForm {
    /// The gzip bytes: `/sitemap-K.xml.gz` itself, or `/sitemap-K.xml` gzip-encoded.
    Gzip,
    /// `/sitemap-K.xml` brotli-encoded.
    Brotli,
    /// `/sitemap-K.xml` to a client that takes no gzip.
    Xml,
    /// `/sitemap-K.txt`: the same entries, one URL per line (rendered for each request).
    Text,
}

impl Document {
    /// A document held in memory, sent as it is.
    pub fn bytes(content_type: &'static str, validators: Validators, body: Bytes) -> Self {
        Self {
            content_type,
            etag: etag(validators, Representation::Identity),
            validators,
            encoding: None,
            varies_by_encoding: false,
            body: Body::Bytes(body),
        }
    }

    /// A small document, compressed as the client prefers (each coding computed once per
    /// version of the document, and only when first asked for).
    pub fn small(content_type: &'static str, doc: &SmallDoc, accepts: Accepts) -> Self {
        let (body, representation) = match accepts {
            Accepts::Brotli => (
                doc.br
                    .get_or_init(|| compress::whole(Coding::Brotli, &doc.body))
                    .clone(),
                Representation::Brotli,
            ),
            Accepts::Gzip => (
                doc.gz
                    .get_or_init(|| compress::whole(Coding::Gzip, &doc.body))
                    .clone(),
                Representation::Gzip,
            ),
            Accepts::Identity => (doc.body.clone(), Representation::Identity),
        };
        Self {
            content_type,
            etag: etag(doc.validators, representation),
            validators: doc.validators,
            encoding: representation.content_encoding(),
            varies_by_encoding: true,
            body: Body::Bytes(body),
        }
    }

    /// `/sitemap-K.xml.gz`: the gzip file itself.
    pub fn gzip_file(group: Arc<Group>, served: ServedPage) -> Self {
        Self::page(group, served, GZIP, None, false, PageForm::Gzip)
    }

    /// `/sitemap-K.xml` (or `/sitemap.xml` of a single file): XML, brotli- or gzip-encoded as
    /// the client prefers.
    pub fn xml_file(group: Arc<Group>, served: ServedPage, accepts: Accepts) -> Self {
        let form = match accepts {
            Accepts::Brotli => PageForm::Brotli,
            Accepts::Gzip => PageForm::Gzip,
            Accepts::Identity => PageForm::Xml,
        };
        let encoding = form.representation().content_encoding();
        Self::page(group, served, XML, encoding, true, form)
    }

    /// `/sitemap-K.txt`: its ETag derives from the XML's fingerprint (the same entries), so it
    /// changes whenever the file does.
    pub fn text_file(group: Arc<Group>, served: ServedPage) -> Self {
        Self::page(group, served, TEXT, None, false, PageForm::Text)
    }

    fn page(
        group: Arc<Group>,
        served: ServedPage,
        content_type: &'static str,
        encoding: Option<&'static str>,
        varies_by_encoding: bool,
        form: PageForm,
    ) -> Self {
        let validators = served.page.validators();
        Self {
            content_type,
            etag: etag(validators, form.representation()),
            validators,
            encoding,
            varies_by_encoding,
            body: Body::Page {
                group,
                served: Box::new(served),
                form,
            },
        }
    }
}

impl PageForm {
    fn representation(self) -> Representation {
        match self {
            PageForm::Gzip => Representation::Gzip,
            PageForm::Brotli => Representation::Brotli,
            PageForm::Xml => Representation::Identity,
            PageForm::Text => Representation::Text,
        }
    }

    /// The compressed file this form is sent from (the XML from the gzip file, decoded), or
    /// `None` for the text sitemap, rendered for each request.
    pub(super) fn cached_as(self) -> Option<Coding> {
        match self {
            PageForm::Gzip | PageForm::Xml => Some(Coding::Gzip),
            PageForm::Brotli => Some(Coding::Brotli),
            PageForm::Text => None,
        }
    }
}

impl super::Revised {
    /// What a page sent as `form` carries when its bytes have `validators` of their own.
    pub(super) fn of(validators: Validators, form: PageForm) -> Self {
        Self {
            etag: etag(validators, form.representation()),
            changed_at: validators.changed_at,
        }
    }
}

/// The bytes an ETag names: the XML (or other document) itself, its gzip or its brotli, or the
/// text sitemap of the same entries.
#[derive(Debug, Clone, Copy)]
enum Representation {
    Identity,
    Gzip,
    Brotli,
    Text,
}

impl Representation {
    /// `Content-Encoding` of a document sent as this representation.
    fn content_encoding(self) -> Option<&'static str> {
        match self {
            Representation::Gzip => Some("gzip"),
            Representation::Brotli => Some("br"),
            Representation::Identity | Representation::Text => None,
        }
    }
}

/// Strong ETag from the fingerprint of the document; other representations get a suffix, so
/// each coding of the same document has an ETag of its own (RFC 9110 §8.8.3: different bytes,
/// different strong tags).
fn etag(validators: Validators, representation: Representation) -> String {
    let suffix = match representation {
        Representation::Identity => "",
        Representation::Gzip => "-gz",
        Representation::Brotli => "-br",
        Representation::Text => "-txt",
    };
    format!("\"{}{suffix}\"", validators.fingerprint.hex())
}
