//! No loss that nobody sees: the crawl log's socket has a receive buffer sized for bursts, the
//! kernel's drops for it are exported (`sitemapd_access_log_socket_drops_total`) and shown on the
//! status page beside the parse queue's, and every datagram sent is either counted as a line or
//! counted as lost.

use serde_json::Value;

use crate::crawl_log::crawl_log;
use crate::crawl_log_trust::send_from;
use crate::helpers::{eventually, spawn_app, status_page, TestApp, TestDb};

const LOSSES: [&str; 3] = [
    "sitemapd_access_log_socket_drops_total",
    "sitemapd_access_log_queue_dropped_datagrams_total",
    "sitemapd_access_log_untrusted_datagrams_total",
];

async fn start(db: &TestDb) -> TestApp {
    db.migrate().await;
    spawn_app(&db.url, &[("ACCESS_LOG_ADDR", "127.0.0.1:0")]).await
}

fn intake(app: &TestApp) -> Value {
    let status = serde_json::to_value(sitemapd::admin::status::Status::of(&app.app)).unwrap();
    status["access_log"].clone()
}

/// Every loss has its metric from the start, and the status page shows the kernel's drops and
/// the queue's beside each other, with the receive buffer the kernel granted.
#[tokio::test]
async fn the_socket_drops_are_exported_and_shown_beside_the_queues() {
    let db = TestDb::new().await;
    let app = start(&db).await;
    let metrics = app.get("/metrics").await.text().await.unwrap();
    for name in LOSSES {
        assert!(metrics.contains(&format!("{name} 0")), "{name}: {metrics}");
    }
    assert!(
        app.metric("sitemapd_access_log_receive_buffer_bytes").await > 0.0,
        "{metrics}"
    );
    let intake = intake(&app);
    assert_eq!(intake["socket_drops"], 0, "{intake:#}");
    assert_eq!(intake["queue_dropped_datagrams"], 0, "{intake:#}");
    assert!(
        intake["receive_buffer_bytes"].as_u64().unwrap() > 0,
        "{intake:#}"
    );
    let page = reqwest::get(status_page(&app).await)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("dropped by the kernel"), "{page}");
    assert!(page.contains("queue to the parser was full"), "{page}");
}

/// A burst larger than the socket's buffer while the service cannot read (the test's runtime
/// is single-threaded: nothing of the service runs while it sends) is lost in the kernel, and
/// that loss is counted: the lines read plus every loss add up to the datagrams sent.
#[tokio::test]
async fn a_burst_beyond_the_buffer_is_lost_and_every_loss_counted() {
    let db = TestDb::new().await;
    let app = start(&db).await;
    let addr = crawl_log(&app).local_addr();
    // A stranger first (the buffer has room): dropped unread, counted as such.
    send_from("127.0.0.2", addr, "junk from a stranger");
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    const SENT: usize = 50_000;
    for n in 0..SENT {
        let junk = format!("junk line {n} that no web server wrote");
        socket.send_to(junk.as_bytes(), addr).unwrap();
    }
    let accounted = || async {
        let mut sum = app
            .metric("sitemapd_access_log_lines_total{result=\"unparsed\"}")
            .await;
        for name in LOSSES {
            sum += app.metric(name).await;
        }
        sum as usize
    };
    let seen = eventually("every datagram counted, read or lost", accounted, |n| {
        *n == SENT + 1
    })
    .await;
    assert_eq!(seen, SENT + 1);
    let kernel = app.metric("sitemapd_access_log_socket_drops_total").await;
    assert!(kernel > 0.0, "the burst was larger than the buffer");
    assert_eq!(intake(&app)["socket_drops"], kernel as u64);
    assert_eq!(
        app.metric("sitemapd_access_log_untrusted_datagrams_total")
            .await,
        1.0
    );
}
