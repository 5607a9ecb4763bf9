//! Connections that never make a request: closed within the header timeout whatever they
//! send (nothing, the HTTP/2 preface, half of it), and a flood of them under a low descriptor
//! limit leaves robots.txt and the probes answering.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::helpers::*;

/// Sends `opening` and waits for the server to close the connection; true when it did (a read
/// returns end of file or a reset) within a bound far beyond the 10 s header timeout.
fn closed_by_server(addr: SocketAddr, opening: &'static [u8]) -> bool {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.write_all(opening).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(90)))
        .unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            // HTTP/2 answers the preface with its SETTINGS before closing.
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

#[tokio::test]
async fn connections_that_start_no_request_are_closed() {
    let db = TestDb::on(Backend::Sqlite).await;
    db.migrate().await;
    let app = spawn_app(&db.url, &[]).await;
    let addr = app.addr;
    let openings: [&'static [u8]; 5] = [
        b"",
        b"PRI * HTTP/2",
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        // The preface and an empty SETTINGS frame: a complete HTTP/2 client that never asks.
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00",
        b"GET /robots.txt HTTP/1.1\r\nHost: www.exa",
    ];
    let waits: Vec<_> = openings
        .into_iter()
        .map(|opening| {
            tokio::task::spawn_blocking(move || (opening, closed_by_server(addr, opening)))
        })
        .collect();
    for wait in waits {
        let (opening, closed) = wait.await.unwrap();
        assert!(
            closed,
            "still open after {:?}",
            String::from_utf8_lossy(opening)
        );
    }
}

/// `sitemapd serve` under `prlimit --nofile=256`, on SQLite; killed on drop.
struct Limited {
    child: std::process::Child,
    addr: SocketAddr,
}

impl Drop for Limited {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn serve_with_256_descriptors(db: &TestDb) -> Limited {
    let port = crate::helpers::free_port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let child = std::process::Command::new("prlimit")
        .arg("--nofile=256:256")
        .arg(env!("CARGO_BIN_EXE_sitemapd"))
        .arg("serve")
        .env_clear()
        .current_dir(cwd.path())
        .env("DATABASE_URL", &db.url)
        .env("SITEMAP_BASE_URL", BASE)
        .env("BIND_ADDR", addr.to_string())
        .env("RUST_LOG", "error")
        .spawn()
        .expect("prlimit (util-linux) runs sitemapd");
    let limited = Limited { child, addr };
    let client = &reqwest::Client::new();
    let url = &format!("http://{addr}/readyz");
    let up = eventually(
        "the server to answer /readyz",
        move || async move {
            client
                .get(url)
                .send()
                .await
                .is_ok_and(|r| r.status() == 200)
        },
        |up| *up,
    )
    .await;
    assert!(up, "sitemapd did not come up under prlimit");
    limited
}

#[tokio::test]
async fn five_thousand_idle_connections_leave_robots_txt_answering_under_256_descriptors() {
    let db = TestDb::on(Backend::Sqlite).await;
    db.migrate().await;
    db.insert(&[(1, "/a")]).await;
    let server = serve_with_256_descriptors(&db).await;
    let addr = server.addr;
    let idle = tokio::task::spawn_blocking(move || {
        let mut held = Vec::new();
        for i in 0..5000 {
            let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_secs(5)) else {
                continue;
            };
            if i % 2 == 1 {
                let _ = stream.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
            }
            held.push(stream);
        }
        held
    })
    .await
    .unwrap();
    assert!(idle.len() > 1000, "only {} connections opened", idle.len());
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    for path in ["/robots.txt", "/healthz", "/sitemap.xml"] {
        let resp = client
            .get(format!("http://{addr}{path}"))
            .header("host", "www.example.com")
            .send()
            .await
            .unwrap_or_else(|e| panic!("{path} while {} idle sockets are held: {e}", idle.len()));
        assert_eq!(resp.status(), 200, "{path}");
    }
    drop(idle);
}
