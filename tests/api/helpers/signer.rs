//! Web Bot Auth as agents do it, for the signature tests: requests signed by Cloudflare's
//! `web-bot-auth` npm package run with Node (`tests/signer/sign.mjs`, an implementation
//! independent of sitemapd's), and key directories served on loopback by a real HTTP server
//! that counts the requests it answers, or redirects.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

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
    /// `Signature-Agent: agent`, valid from `created` to `expires` (unix seconds).
    pub fn sign(
        &self,
        url: &str,
        agent: &str,
        created: i64,
        expires: i64,
    ) -> Vec<(String, String)> {
        let args = json!({
            "jwk": self.private, "url": url, "agent": agent,
            "created": created, "expires": expires,
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
    server: tokio::task::JoinHandle<()>,
}

impl Drop for KeyDirectory {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl KeyDirectory {
    pub async fn serve(answer: DirectoryAnswer) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(AtomicU64::new(0));
        let counted = requests.clone();
        let app = axum::Router::new().fallback(move || {
            counted.fetch_add(1, Ordering::SeqCst);
            let answer = answer.clone();
            async move { respond(answer) }
        });
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            addr,
            requests,
            server,
        }
    }

    /// The signer origin whose directory this is.
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Requests this server answered.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }
}

fn respond(answer: DirectoryAnswer) -> axum::response::Response {
    use axum::response::IntoResponse;
    match answer {
        DirectoryAnswer::Keys(keys) => (
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
        DirectoryAnswer::Redirect(to) => (
            axum::http::StatusCode::FOUND,
            [("location", to)],
            String::new(),
        )
            .into_response(),
    }
}

/// A registry extension (for `CRAWLERS_FILE`) of one crawler per `(name, origin)`, each proved by
/// its Web Bot Auth signer only, named in a User-Agent by its own name.
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
