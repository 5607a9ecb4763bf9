//! The crawl log's UDP socket: bound with a receive buffer sized for bursts
//! ([`RECEIVE_BUFFER_BYTES`], as much of it as `net.core.rmem_max` lets the kernel grant), and the
//! kernel's own count of the datagrams it dropped because that buffer was full (Linux: the
//! `drops` column of `/proc/net/udp` or `/proc/net/udp6` on the socket's inode), read every
//! [`DROPS_EVERY`] into `sitemapd_access_log_socket_drops_total`.

use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::UdpSocket;

use super::metrics::CrawlLogMetrics;

/// The receive buffer asked for: about half a second of a 17,000 datagrams a second flood (the
/// kernel charges each small datagram about 1 KiB of it) while the reading task is away.
/// Linux grants at most twice `net.core.rmem_max`.
pub const RECEIVE_BUFFER_BYTES: usize = 8 << 20;
/// How often the kernel's drop count is read.
pub const DROPS_EVERY: Duration = Duration::from_secs(1);

/// The bound socket, the receive buffer the kernel granted it, and where its drops are counted.
pub struct Bound {
    pub socket: UdpSocket,
    pub receive_buffer: usize,
    pub drops: KernelDrops,
}

/// Binds `addr` with a receive buffer of [`RECEIVE_BUFFER_BYTES`] asked for.
pub fn bind(addr: SocketAddr) -> std::io::Result<Bound> {
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    socket.set_recv_buffer_size(RECEIVE_BUFFER_BYTES)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    let receive_buffer = socket.recv_buffer_size()?;
    let socket: std::net::UdpSocket = socket.into();
    let drops = KernelDrops::of(&socket);
    Ok(Bound {
        socket: UdpSocket::from_std(socket)?,
        receive_buffer,
        drops,
    })
}

/// Says what the kernel granted, and how to get more when it granted less than asked.
pub fn announce(receive_buffer: usize) {
    if receive_buffer >= RECEIVE_BUFFER_BYTES {
        tracing::debug!(receive_buffer, "access log receive buffer");
        return;
    }
    tracing::warn!(
        receive_buffer,
        asked = RECEIVE_BUFFER_BYTES,
        "the kernel granted the access log a smaller receive buffer than asked: bursts may be \
         dropped (counted in sitemapd_access_log_socket_drops_total); raise it with \
         sysctl -w net.core.rmem_max={}",
        RECEIVE_BUFFER_BYTES / 2
    );
}

/// Where the kernel counts one socket's drops: its inode in `/proc/net/udp{,6}`; nowhere
/// (always `None`) off Linux or without `/proc`.
#[derive(Debug, Clone, Copy)]
pub struct KernelDrops {
    inode: Option<u64>,
}

impl KernelDrops {
    fn of(socket: &std::net::UdpSocket) -> Self {
        let link = std::fs::read_link(format!("/proc/self/fd/{}", socket.as_raw_fd()));
        let inode = link
            .ok()
            .and_then(|link| socket_inode(&link.to_string_lossy()));
        Self { inode }
    }

    /// The datagrams the kernel dropped for this socket since it was made, when known.
    pub fn read(&self) -> Option<u64> {
        let inode = self.inode?;
        ["/proc/net/udp", "/proc/net/udp6"]
            .iter()
            .find_map(|table| {
                let text = std::fs::read_to_string(table).ok()?;
                drops_in(&text, inode)
            })
    }

    /// Adds the kernel's new drops to `metrics` every [`DROPS_EVERY`], until the task is dropped.
    pub async fn watch(self, metrics: CrawlLogMetrics) {
        let mut counted = 0;
        let mut every = tokio::time::interval(DROPS_EVERY);
        loop {
            every.tick().await;
            if let Some(total) = self.read() {
                metrics.socket_drops.inc_by(total.saturating_sub(counted));
                counted = counted.max(total);
            }
        }
    }
}

/// `socket:[12345]` (what `/proc/self/fd/N` links to) → 12345.
fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// The `drops` column (the last) of the row of `/proc/net/udp{,6}` whose `inode` (the tenth
/// column) is `inode`.
fn drops_in(table: &str, inode: u64) -> Option<u64> {
    table.lines().skip(1).find_map(|row| {
        let columns: Vec<&str> = row.split_whitespace().collect();
        if columns.get(9)?.parse::<u64>().ok()? != inode {
            return None;
        }
        columns.last()?.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  305: 0100007F:14D4 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 4242 2 0000000000000000 0
  306: 0100007F:14D5 00000000:0000 07 00000000:0006A900 00:00000000 00000000     0        0 4243 2 0000000000000000 112818
";

    #[test]
    fn the_drops_are_read_on_the_sockets_row() {
        assert_eq!(drops_in(TABLE, 4243), Some(112_818));
        assert_eq!(drops_in(TABLE, 4242), Some(0));
        assert_eq!(drops_in(TABLE, 1), None);
        assert_eq!(socket_inode("socket:[4243]"), Some(4243));
        assert_eq!(socket_inode("/dev/null"), None);
    }

    #[tokio::test]
    async fn a_bound_socket_knows_its_buffer_and_its_drops() {
        let bound = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        assert!(bound.receive_buffer > 0);
        if cfg!(target_os = "linux") {
            assert_eq!(bound.drops.read(), Some(0));
        }
    }
}
