//! Web Bot Auth as agents do it, for the signature tests: requests signed by Cloudflare's
//! `web-bot-auth` npm package run with Node (`tests/signer/sign.mjs`, an implementation
//! independent of sitemapd's), and key directories served on loopback by a real HTTP server
//! that counts the requests it answers, or redirects.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

/// The folder of the Node signer, its package installed (by `scripts/test.sh`, or here when
/// missing, as `npm ci` would).
fn signer_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/signer");
    if !dir.join("node_modules/web-bot-auth").exists() {
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--prefix"])
            .arg(&dir)
            .status()
            .expect("npm (Node 20) installs the signer: run ./scripts/test.sh");
        assert!(status.success(), "npm ci --prefix tests/signer");
    }
    dir
}

fn node(args: &[&str]) -> Value {
    let output = Command::new("node")
        .arg(signer_dir().join("sign.mjs"))
        .args(args)
        .output()
        .expect("node runs tests/signer/sign.mjs");
    assert!(
        output.status.success(),
        "sign.mjs {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("sign.mjs prints JSON")
}

/// An Ed25519 key pair as a signing agent keeps it.
#[derive(Clone, Debug)]
pub struct SigningKey {
    /// The private JWK (with `d`).
    pub private: Value,
    /// The public JWK a key directory lists.
    pub public: Value,
}

impl SigningKey {
    /// A new key pair, made by Node.
    pub fn generate() -> Self {
        let pair = node(&["keygen"]);
        Self {
            private: pair["private"].clone(),
            public: pair["public"].clone(),
        }
    }

    /// The RFC 9421 test key (appendix B.1.4), whose private half is published.
    pub fn rfc9421_test_key() -> Self {
        let public = json!({"kty": "OKP", "crv": "Ed25519", "x": "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs"});
        let mut private = public.clone();
        private["d"] = json!("n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU");
        Self { private, public }
    }

    /// The `Signature` and `Signature-Input` headers of a GET of `url` carrying
    /// `Signature-Agent: agent`, valid from `created` to `expires` (unix seconds), labelled
    /// `sig1` and covering `@authority` and `signature-agent` (the package's defaults).
    pub fn sign(
        &self,
        url: &str,
        agent: &str,
        created: i64,
        expires: i64,
    ) -> Vec<(String, String)> {
        self.sign_with(url, agent, created, expires, Options::default())
    }

    /// [`SigningKey::sign`] with another label or other covered components.
    pub fn sign_with(
        &self,
        url: &str,
        agent: &str,
        created: i64,
        expires: i64,
        options: Options<'_>,
    ) -> Vec<(String, String)> {
        let args = json!({
            "jwk": self.private, "url": url, "agent": agent,
            "created": created, "expires": expires,
            "label": options.label, "components": options.components,
        });
        let headers = node(&["sign", &args.to_string()]);
        let mut signed = vec![("signature-agent".to_string(), agent.to_string())];
        for name in ["Signature", "Signature-Input"] {
            let value = headers[name].as_str().expect("a signature header");
            signed.push((name.to_ascii_lowercase(), value.to_string()));
        }
        signed
    }
}

/// How a signature is made besides its URL, agent and times.
#[derive(Clone, Copy, Debug)]
pub struct Options<'a> {
    /// Its label in `Signature-Input` and `Signature`.
    pub label: &'a str,
    /// The components it covers.
    pub components: &'a [&'a str],
}

impl Default for Options<'_> {
    fn default() -> Self {
        Self {
            label: "sig1",
            components: &["@authority", "signature-agent"],
        }
    }
}

/// The headers of one request carrying every signature of `signed` (each made as
/// [`SigningKey::sign`] makes them, with distinct labels and the same `Signature-Agent`), in order.
pub fn all_of(signed: &[Vec<(String, String)>]) -> Vec<(String, String)> {
    let mut headers: Vec<(String, String)> = Vec::new();
    for (name, value) in signed.iter().flatten() {
        match headers.iter_mut().find(|(n, _)| n == name) {
            Some((_, joined)) if name != "signature-agent" => {
                joined.push_str(", ");
                joined.push_str(value);
            }
            Some(_) => {}
            None => headers.push((name.clone(), value.clone())),
        }
    }
    headers
}

/// What a key directory server answers.
#[derive(Clone, Debug)]
pub enum DirectoryAnswer {
    /// The JWKS of these public keys, as `application/http-message-signatures-directory+json`.
    Keys(Vec<Value>),
    /// A `302` to this URL.
    Redirect(String),
}

/// A key directory on loopback: `http://127.0.0.1:port` is the signer origin.
pub struct KeyDirectory {
    pub addr: SocketAddr,
    requests: Arc<AtomicU64>,
    paths: Arc<Mutex<Vec<String>>>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for KeyDirectory {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl KeyDirectory {
    /// A server answering `answer` at any path.
    pub async fn serve(answer: DirectoryAnswer) -> Self {
        Self::serve_at(None, answer).await
    }

    /// A server answering `answer` at `path` only (`404` elsewhere), or at any path.
    pub async fn serve_at(path: Option<&str>, answer: DirectoryAnswer) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(AtomicU64::new(0));
        let paths = Arc::new(Mutex::new(Vec::new()));
        let (counted, asked, only) = (requests.clone(), paths.clone(), path.map(str::to_string));
        let app = axum::Router::new().fallback(move |uri: axum::http::Uri| {
            counted.fetch_add(1, Ordering::SeqCst);
            let target = uri.path_and_query().map_or("/", |t| t.as_str()).to_string();
            asked.lock().unwrap().push(target.clone());
            let answer = match &only {
                Some(only) if *only != target => None,
                _ => Some(answer.clone()),
            };
            async move { respond(answer) }
        });
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            addr,
            requests,
            paths,
            server,
        }
    }

    /// The signer origin whose directory this is.
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The URL of `path` on this server.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Requests this server answered.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }

    /// The paths (and queries) it was asked for, in order.
    pub fn paths(&self) -> Vec<String> {
        self.paths.lock().unwrap().clone()
    }
}

fn respond(answer: Option<DirectoryAnswer>) -> axum::response::Response {
    use axum::response::IntoResponse;
    match answer {
        None => axum::http::StatusCode::NOT_FOUND.into_response(),
        Some(DirectoryAnswer::Keys(keys)) => (
            [
                (
                    "content-type",
                    "application/http-message-signatures-directory+json",
                ),
                ("cache-control", "max-age=86400"),
            ],
            json!({ "keys": keys }).to_string(),
        )
            .into_response(),
        Some(DirectoryAnswer::Redirect(to)) => (
            axum::http::StatusCode::FOUND,
            [("location", to)],
            String::new(),
        )
            .into_response(),
    }
}

/// A registry extension (for `CRAWLERS_FILE`) of one crawler per `(name, signer)` (an origin or a
/// directory URL), each proved by its Web Bot Auth signer only, named in a User-Agent by its own
/// name.
pub fn signer_registry(signers: &[(&str, &str)]) -> tempfile::NamedTempFile {
    let mut text = String::new();
    for (name, origin) in signers {
        text.push_str(&format!(
            "[[crawler]]\nname = \"{name}\"\ntokens = [\"{name}\"]\nuser_agent = [\"{name}\"]\n\
             operator = \"Tests\"\npurpose = \"ai-user\"\nverify_dns = []\nverify_ranges = []\n\
             signature_agent = [\"{origin}\"]\ndocs = [\"https://example.com/{name}\"]\n\n"
        ));
    }
    super::template_file(&text)
}
