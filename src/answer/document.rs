//! A [`Document`]: what a response for one file will be, decided from the snapshot alone: its
//! type, validators, representation, and a body that is not read or rendered until opened.

use std::sync::Arc;

use bytes::Bytes;

use crate::site::{Group, ServedPage, SmallDoc, Validators};

pub const XML: &str = "application/xml; charset=utf-8";
pub const TEXT: &str = "text/plain; charset=utf-8";
pub const GZIP: &str = "application/gzip";
pub const ATOM: &str = "application/atom+xml; charset=utf-8";
pub const RSS: &str = "application/rss+xml; charset=utf-8";
pub const XSL: &str = "text/xsl; charset=utf-8";
pub const MARKDOWN: &str = "text/markdown; charset=utf-8";

/// Which content coding the client accepts for documents that can be sent either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accepts {
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

    /// A small document, gzip-encoded when the client accepts it.
    pub fn small(content_type: &'static str, doc: &SmallDoc, accepts: Accepts) -> Self {
        let (body, representation, encoding) = match accepts {
            Accepts::Gzip => (
                doc.gz
                    .get_or_init(|| super::render::gzip(&doc.body))
                    .clone(),
                Representation::Gzip,
                Some("gzip"),
            ),
            Accepts::Identity => (doc.body.clone(), Representation::Identity, None),
        };
        Self {
            content_type,
            etag: etag(doc.validators, representation),
            validators: doc.validators,
            encoding,
            varies_by_encoding: true,
            body: Body::Bytes(body),
        }
    }

    /// `/sitemap-K.xml.gz`: the gzip file itself.
    pub fn gzip_file(group: Arc<Group>, served: ServedPage) -> Self {
        Self::page(group, served, GZIP, None, false, PageForm::Gzip)
    }

    /// `/sitemap-K.xml` (or `/sitemap.xml` of a single file): XML, gzip-encoded when accepted.
    pub fn xml_file(group: Arc<Group>, served: ServedPage, accepts: Accepts) -> Self {
        match accepts {
            Accepts::Gzip => Self::page(group, served, XML, Some("gzip"), true, PageForm::Gzip),
            Accepts::Identity => Self::page(group, served, XML, None, true, PageForm::Xml),
        }
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
            PageForm::Xml => Representation::Identity,
            PageForm::Text => Representation::Text,
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

/// The bytes an ETag names: the XML (or other document) itself, its gzip, or the text sitemap
/// of the same entries.
#[derive(Debug, Clone, Copy)]
enum Representation {
    Identity,
    Gzip,
    Text,
}

/// Strong ETag from the fingerprint of the document; other representations get a suffix.
fn etag(validators: Validators, representation: Representation) -> String {
    let suffix = match representation {
        Representation::Identity => "",
        Representation::Gzip => "-gz",
        Representation::Text => "-txt",
    };
    format!("\"{}{suffix}\"", validators.fingerprint.hex())
}
