//! Starting the service: detect the CPU limit, size loops and pool from it, bind, run the
//! event loops, and stop them gracefully.
//!
//! Every event loop is a tokio *current-thread* runtime on its own OS thread. `single` and
//! `pool` run one (on the main thread); `threads` runs N, all accepting from one shared socket
//! (see [`crate::listener`] for why). Tokio's multi-thread runtime is deliberately not used for
//! `threads`: its work-stealing and per-worker LIFO slot can leave a freshly woken task queued
//! behind a worker that is stuck in inline CPU work, which blurs exactly the behaviour a
//! benchmark of "N loops with inline CPU work" must show (a blocked loop blocks its own
//! connections, and only those).
//!
//! A separate `stats` thread, with a current-thread runtime of its own, samples CPU and RSS and
//! (with `--stats-port`) serves `/stats`, `/healthz` and `/metrics` on a second port: no
//! workload runs there, so a busy event loop cannot delay those reads, and the reads do not
//! queue in front of the workload either. Event-loop lag is still measured on each loop.

use std::io::Write as _;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;

use crate::app::{Service, Settings, app, stats_app};
use crate::config::{Args, Mode, StatsPort};
use crate::connection::{ConnectionCounters, Timeouts};
use crate::listener::{Balance, SharedListener, bind};
use crate::metrics::Metrics;
use crate::pool::Pool;
use crate::server::{self, Limits};
use crate::shutdown::{self, Shutdown};
use crate::stats::{Stats, sample_forever, watch_loop_lag};
use crate::work::calibrate_fib;

/// Stack of each event-loop thread. Only touched pages count towards RSS, and the futures live
/// on the heap, so this is headroom rather than memory use.
const LOOP_STACK: usize = 2 * 1024 * 1024;
/// Connections the statistics listener takes at once: its readers are a few load generators,
/// the operator and a metrics scraper, and a flood of it must not cost the workload many
/// descriptors.
const STATS_MAX_CONNECTIONS: usize = 64;

/// Why the service could not run, with the exit code it maps to.
#[derive(Debug)]
pub struct Failure {
    /// 2 for a configuration the user must change (e.g. a port that cannot be bound), 1 for
    /// anything else.
    pub exit_code: u8,
    /// What went wrong.
    pub error: anyhow::Error,
}

impl Failure {
    fn runtime(error: anyhow::Error) -> Self {
        Failure {
            exit_code: 1,
            error,
        }
    }
}

/// Runs the service until SIGTERM/SIGINT and the grace period are over.
pub fn serve(args: Args) -> Result<(), Failure> {
    let limit = benchmatrix_quota::detect();
    let loop_threads = match args.mode {
        Mode::Threads => args.threads.resolve(limit.detected_cpus),
        Mode::Single | Mode::Pool => 1,
    };
    let pool_size = match args.mode {
        Mode::Pool => args.pool_size.resolve(limit.detected_cpus),
        Mode::Single | Mode::Threads => 0,
    };
    tracing::info!(
        detected_cpus = limit.detected_cpus,
        host_cpus = limit.host_cpus,
        cpu_quota = ?limit.quota_cores,
        source = %limit.source,
        "CPU limit detected: {} CPU(s) from {}",
        limit.detected_cpus,
        limit.source
    );
    tracing::info!(
        mode = args.mode.as_str(),
        loop_threads,
        pool_size,
        queue_depth = args.queue_depth,
        fast_ms = args.fast_ms,
        slow_ms = args.slow_ms,
        offload = ?args.offload,
        offload_threshold_ms = args.offload_threshold_ms,
        header_timeout = ?args.header_timeout,
        idle_timeout = ?args.idle_timeout,
        max_connections = args.max_connections,
        "starting"
    );

    let listener = bind(args.host, args.port).map_err(|e| Failure {
        exit_code: 2,
        error: anyhow::anyhow!("cannot listen on {}:{}: {e}", args.host, args.port),
    })?;
    let local = listener
        .local_addr()
        .map_err(|e| Failure::runtime(e.into()))?;
    let stats_listener = match args.stats_port {
        StatsPort::Off => None,
        StatsPort::Port(port) => Some(bind(args.host, port).map_err(|e| Failure {
            exit_code: 2,
            error: anyhow::anyhow!(
                "cannot listen on {}:{port} for statistics (--stats-port): {e}",
                args.host
            ),
        })?),
    };
    let stats_local = match &stats_listener {
        Some(l) => Some(l.local_addr().map_err(|e| Failure::runtime(e.into()))?),
        None => None,
    };

    let mut stats = Stats::new(args.mode, limit, pool_size, loop_threads);
    if let Some(addr) = stats_local {
        stats = stats.with_stats_port(addr.port());
    }
    let stats = Arc::new(stats);
    let timeouts = Timeouts {
        header: args.header_timeout,
        idle: args.idle_timeout,
    };
    let limits = Limits::new(
        server::fit_descriptor_limit(args.max_connections as usize),
        timeouts,
        Arc::clone(&stats.connections),
    );
    let pool = match args.mode {
        Mode::Pool => Some(
            Pool::start(
                pool_size,
                args.queue_depth as usize,
                Duration::from_millis(args.task_deadline_ms),
                Arc::clone(&stats),
            )
            .context("starting the CPU pool")
            .map_err(Failure::runtime)?,
        ),
        _ => None,
    };
    let service = Arc::new(Service {
        settings: Settings {
            mode: args.mode,
            fast_ms: args.fast_ms,
            slow_ms: args.slow_ms,
            offload: args.offload,
            offload_threshold_ms: args.offload_threshold_ms,
            task_deadline_ms: args.task_deadline_ms,
        },
        stats: Arc::clone(&stats),
        metrics: Metrics::new(Arc::clone(&stats)),
        pool,
        fib_ns_per_call: calibrate_fib(),
    });

    let rt = current_thread_runtime().map_err(Failure::runtime)?;
    let (trigger, shutdown) = shutdown::channel();
    start_stats_thread(
        stats_listener,
        Arc::clone(&service),
        Limits::new(
            STATS_MAX_CONNECTIONS,
            timeouts,
            Arc::new(ConnectionCounters::default()),
        ),
        shutdown.clone(),
    )
    .map_err(Failure::runtime)?;
    let balance = Balance::new(loop_threads);
    let grace = args.grace_period;

    let result = rt.block_on(async {
        let signals = shutdown::on_signal(trigger).context("installing signal handlers")?;
        tokio::spawn(signals);

        let mut others = Vec::with_capacity(loop_threads.saturating_sub(1));
        for index in 1..loop_threads {
            let ctx = LoopContext {
                index,
                listener: listener.try_clone().context("sharing the listener")?,
                balance: Arc::clone(&balance),
                service: Arc::clone(&service),
                limits: Arc::clone(&limits),
                shutdown: shutdown.clone(),
                grace,
            };
            let handle = std::thread::Builder::new()
                .name(format!("loop-{index}"))
                .stack_size(LOOP_STACK)
                .spawn(move || {
                    let rt = current_thread_runtime()?;
                    rt.block_on(run_loop(ctx))
                })
                .context("starting an event-loop thread")?;
            others.push(handle);
        }

        // One line on stdout, once the socket accepts connections: the local runner and the
        // tests wait for it to learn the port. With a statistics port, a second line names it,
        // written together with the first so whoever sees one sees both.
        let mut lines = format!("listening on http://{local}\n");
        if let Some(addr) = stats_local {
            lines.push_str(&format!("statistics on http://{addr}\n"));
        }
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(lines.as_bytes());
        let _ = out.flush();
        drop(out);
        tracing::info!(address = %local, "listening");
        if let Some(addr) = stats_local {
            tracing::info!(address = %addr, "statistics listening (/stats, /healthz, /metrics)");
        }

        let first = run_loop(LoopContext {
            index: 0,
            listener,
            balance,
            service: Arc::clone(&service),
            limits,
            shutdown,
            grace,
        })
        .await;
        for handle in others {
            match handle.join() {
                Ok(r) => r?,
                Err(_) => anyhow::bail!("an event-loop thread panicked"),
            }
        }
        first
    });
    if let Some(pool) = &service.pool {
        pool.close();
    }
    result.map_err(Failure::runtime)?;
    tracing::info!("stopped");
    Ok(())
}

fn current_thread_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("building an event-loop runtime")
}

/// Starts the `stats` thread: CPU/RSS sampling, and the statistics listener when there is one.
/// Its runtime is built here so that a failure stops the start instead of leaving an announced
/// port unserved.
fn start_stats_thread(
    listener: Option<TcpListener>,
    service: Arc<Service>,
    limits: Arc<Limits>,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let rt = current_thread_runtime()?;
    std::thread::Builder::new()
        .name("stats".into())
        .stack_size(LOOP_STACK)
        .spawn(move || {
            rt.block_on(async move {
                tokio::spawn(sample_forever(Arc::clone(&service.stats)));
                let Some(listener) = listener else {
                    return shutdown.wait().await;
                };
                match tokio::net::TcpListener::from_std(listener) {
                    Ok(listener) => {
                        server::serve(listener, stats_app(service), limits, shutdown).await
                    }
                    Err(e) => tracing::error!(error = %e, "cannot serve the statistics port"),
                }
            })
        })
        .context("starting the stats thread")?;
    Ok(())
}

struct LoopContext {
    index: usize,
    listener: TcpListener,
    balance: Arc<Balance>,
    service: Arc<Service>,
    limits: Arc<Limits>,
    shutdown: Shutdown,
    grace: Duration,
}

/// One event loop: serves until shutdown, then drains for at most the grace period.
async fn run_loop(ctx: LoopContext) -> anyhow::Result<()> {
    tokio::spawn(watch_loop_lag(Arc::clone(&ctx.service.stats)));
    let listener = SharedListener::new(&ctx.listener, ctx.index, ctx.balance)
        .context("registering the listener")?;
    drop(ctx.listener);
    let serve = server::serve(listener, app(ctx.service), ctx.limits, ctx.shutdown.clone());
    let grace = ctx.grace;
    let deadline = async move {
        ctx.shutdown.wait().await;
        tokio::time::sleep(grace).await;
    };
    tokio::select! {
        () = serve => {}
        _ = deadline => tracing::warn!(
            loop_index = ctx.index,
            grace_secs = grace.as_secs_f64(),
            "grace period over with requests still in flight; closing them"
        ),
    }
    Ok(())
}
