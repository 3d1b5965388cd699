//! Closed loop: one keep-alive connection sends its next request as soon as the previous answer
//! arrives (wrk, autocannon). Latency runs from the write of the request to the last byte of the
//! answer; connection setup is not part of it.

use std::cell::RefCell;
use std::net::SocketAddr;

use tokio::time::Instant;

use super::exchange::{self, After, StreamCtx, connect_until};
use crate::conn::Conn;
use crate::recorder::Recorder;

/// Runs one closed-loop connection to `addr` until `end`; a reconnect goes to the same address,
/// so a connection keeps its replica.
pub(crate) async fn run_connection(
    ctx: &StreamCtx,
    rec: &RefCell<Recorder>,
    end: Instant,
    addr: SocketAddr,
) {
    let mut conn: Option<Conn> = None;
    let sleep = tokio::time::sleep_until(end);
    tokio::pin!(sleep);
    loop {
        if Instant::now() >= end {
            return;
        }
        let c = match conn.as_mut() {
            Some(c) => c,
            None => match connect_until(ctx, rec, end, addr).await {
                Some(c) => conn.insert(c),
                None => continue,
            },
        };
        match exchange::send(ctx, rec, c, sleep.as_mut(), end, None).await {
            After::Keep => {}
            After::Reconnect => conn = None,
            After::PhaseOver => return,
        }
    }
}
